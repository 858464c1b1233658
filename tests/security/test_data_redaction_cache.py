"""Issue 23: the redaction cache keeps short strings only; a run's large tool outputs are not held after it."""

from __future__ import annotations

import gc
import tracemalloc

from orchestrator.redact import redact


def test_redacting_large_outputs_does_not_keep_them():
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(60):  # 60 distinct 512 KiB tool outputs, as a run's logs and listings are
        out = redact(f"log {i} " + "x y z GPU 0 util 98% " * 26_000)
        assert out.startswith(f"log {i} ")
        del out
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert held < 4_000_000, f"{held / 1e6:.1f} MB kept after redacting"


def test_short_strings_are_still_answered_from_the_cache():
    s = "a short line with password=hunter2secret"
    assert redact(s) == redact(s) == "a short line with password=[REDACTED]"
