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


def _held_bytes(fill) -> int:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    fill()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return held


def test_the_cache_is_bounded_in_bytes_whatever_the_strings_hold():
    """Short strings of wide characters (4 bytes each in CPython), each with a secret so that the cache keeps a
    redacted copy beside the key: an entry-count bound kept 8192 x (8 + 8) KiB = 134 MB of them (here 1,000 of them,
    16 MB, against a cap of 4 MiB)."""
    from orchestrator import redact as redact_mod

    cap = getattr(redact_mod, "CACHE_BYTES", 4 * 2**20)

    def fill():
        for i in range(1_000):
            out = redact(f"{i:06d} password=hunter2secret " + "\U0001F525" * 2000)
            assert "hunter2secret" not in out

    held = _held_bytes(fill)
    assert held < cap * 1.25 + 1_000_000, f"{held / 1e6:.1f} MB kept (cap {cap / 1e6:.1f} MB)"
    cache = getattr(redact_mod, "_CACHE", None)
    assert cache is not None and 0 < cache.bytes <= cap


def test_the_least_recently_used_strings_leave_first(monkeypatch):
    from orchestrator import redact as redact_mod

    cache = redact_mod._ByteLRU(10_000)
    for i in range(100):
        cache.put(f"k{i:03d}" + "x" * 200, f"v{i}")
        cache.get("k000" + "x" * 200)  # kept in use: never evicted
    assert cache.bytes <= 10_000 and len(cache) < 100
    assert cache.get("k000" + "x" * 200) == "v0" and cache.get("k001" + "x" * 200) is None
    assert cache.get("k099" + "x" * 200) == "v99"
    cache.put("huge", "y" * 20_000)  # larger than the whole cache: not kept, nothing evicted for it
    assert cache.get("huge") is None and cache.get("k099" + "x" * 200) == "v99"


def test_a_long_output_redaction_already_passed_is_recognised_by_its_digest(monkeypatch):
    """A run redacts each tool output three or four times (result, event, fingerprint, model-call event): the second
    time a long text's digest answers; a text that still holds a secret is redacted every time."""
    from orchestrator import redact as redact_mod

    scans = []
    real = redact_mod._redact
    monkeypatch.setattr(redact_mod, "_redact", lambda t: scans.append(len(t)) or real(t))
    secret = "line with password=hunter2secret in it\n" + "GPU 0 util 98 % power 330 W\n" * 5000
    once = redact(secret)
    assert "hunter2secret" not in once and len(scans) == 2  # a second pass shows the first's output is a fixed point
    assert redact(once) is once and len(scans) == 2  # its own output: known, not scanned again
    assert redact(secret) == once and len(scans) == 4  # the secret-bearing text itself is never taken as clean
    clean = "GPU 1 util 97 % power 331 W\n" * 5000
    assert redact(clean) is clean and redact(clean) is clean and len(scans) == 5
    assert redact(clean + "token=ghp_" + "a" * 36) != clean + "token=ghp_" + "a" * 36  # one more character: scanned


def test_the_digests_of_clean_outputs_are_bounded_and_hold_no_text():
    from orchestrator import redact as redact_mod

    held = _held_bytes(lambda: [redact(f"{i:06d} " + "GPU 0 util 98 % " * 300) for i in range(6000)])
    assert len(redact_mod._CLEAN._d) <= redact_mod._CLEAN.max_entries
    assert held < 2_000_000, f"{held / 1e6:.1f} MB kept"  # 4096 digests of 16 bytes, not 6000 texts of 4.8 KB


# Each line needs a second pass of the patterns: the first judges a match in a context that its neighbour's
# replacement changes (a query value after a URL's user name; a random token that swallows `/NAME=` up to the name).
SECOND_PASS_LINES = {
    "https://Tok3nAbCdEf0123456789xyZ@hooks.internal/v1/push?sig=SigQ8KCHxYk7953Lx7KlyfHoSMR13IuWNiIO":
        "SigQ8KCHxYk7953Lx7KlyfHoSMR13IuWNiIO",
    "mE7LwUPN64xQJuKIxcE0cMmWZAgrdSdyKEn9k/HF_TOKEN=assignSecret11x": "assignSecret11x",
    "1lW6oShgvLJd7UaY4z6Z9ipxGag9Ye1DLjl7Ka7h/db.example.com:5432:appdb:alice:pgpassSecret7x": "pgpassSecret7x",
}


async def test_a_model_driven_run_reading_a_long_log_records_no_secret_a_second_pass_removes(tmp_path):
    """The redaction of a long tool output is remembered by its digest; were a one-pass result remembered as clean,
    the transcript would record what the second pass removes (the model is shown the same text)."""
    import json

    from orchestrator.api import investigate
    from orchestrator.models.doubles import DoublesBackend, FunctionModel, call, respond
    from orchestrator.tools.registry import default_registry
    from support.core import write_agents

    log = tmp_path / "server.log"
    filler = "".join(f"INFO 12-01 12:00:{i % 60:02d} Avg prompt throughput: {i}.0 tokens/s\n" for i in range(60))
    log.write_text(filler + "".join(f"ERROR push failed: {line}\n" for line in SECOND_PASS_LINES) + filler)
    assert len(log.read_text()) > CACHED_CHARS_FOR_TEST
    agents = write_agents(tmp_path / "agents", {}, lead_tools=("read_file",))
    shown: list[str] = []

    def lead(req):
        if not any(m.role == "assistant" for m in req.messages):
            return respond(call("read_file", path=str(log)))
        seen = "\n".join(b.content for b in req.messages[-1].content)
        shown.append(seen)
        cause = {"title": "what I saw", "explanation": seen[-3000:], "confidence": 0.5, "evidence": ["ev-0.1"]}
        return respond(call("submit_diagnosis", verdict="echo", causes=[cause]))

    path = tmp_path / "run.jsonl"
    result = await investigate("why slow?", backend=DoublesBackend({"lead": FunctionModel(lead)}),
                               agents_dirs=[agents], registry=default_registry(), transcript=path)
    assert result.status == "ok", result.error
    transcript = path.read_text()
    assert "hooks.internal" in transcript and "example.com:5432:appdb" in transcript  # the log was read, recorded
    assert shown and "hooks.internal" in shown[0]
    for secret in SECOND_PASS_LINES.values():
        assert secret not in transcript, secret
        assert secret not in shown[0], secret
        assert secret not in json.dumps(result.diagnosis.model_dump(mode="json")), secret


CACHED_CHARS_FOR_TEST = 2048


def test_the_cache_bound_counts_each_entrys_own_cost():
    """Short strings (an agent id, a tool name): the map's slot, order link and size pair cost more than the string.
    Counting the strings alone, 300,000 of them held 16.8 MB in a cache of 4 MiB. (REDTEAM's huge_outputs_memory
    checked an lru_cache that is gone; this pins what replaced it.)"""
    from orchestrator import redact as redact_mod

    cap = redact_mod.CACHE_BYTES
    redact_mod._CACHE.clear()
    held = _held_bytes(lambda: [redact(f"a{i}") for i in range(40_000)])
    assert held < cap * 1.25 + 1_000_000, f"{held / 1e6:.1f} MB kept (cap {cap / 1e6:.1f} MB)"
    assert redact_mod._CACHE.bytes <= cap
