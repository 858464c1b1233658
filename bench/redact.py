"""Redaction of one long tool output: passes to a fixed point against one pass, or against another redact.py.

    python bench/redact.py [--mb 18] [--repeat 3] [--against OLD_REDACT_PY]

Builds a server log of about 18 MB (vLLM-like lines) in three shapes: a secret on every line (`api_key=` and a URL
with credentials), a secret on one line in a thousand, and none. For each, times (best of N, on a fresh digest
cache) `redact()` (passes until one changes nothing, so that a text remembered as clean by its digest is one that a
further pass would leave as it is) against one pass of the patterns (`_redact`), or against `redact()` of another
copy of the module (`git show REV:orchestrator/redact.py > old.py`); and the second call of `redact()` on its own
output, answered by the digest. The modules are loaded from their files (stdlib only), so this runs on any Python
3.11+ without the package installed. Prints a table and the ratios.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import time
from pathlib import Path

ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def log(mb: float, every: int, seed: int = 1) -> str:
    r = random.Random(seed)
    lines, size, i = [], 0, 0
    while size < mb * 1e6:
        line = (f"INFO 12-01 12:00:{i % 60:02d} [engine.py:{i % 900}] Avg prompt throughput: {i % 977}.1 tokens/s, "
                f"Running: 12 reqs, GPU KV cache usage: 41.2%")
        if (i + 1) % every == 0:
            tok = "".join(r.choice(ALPHABET) for _ in range(32))
            line += f" api_key={tok} client=https://u{i}:{tok}@proxy.internal:3128"
        lines.append(line + "\n")
        size += len(line) + 1
        i += 1
    return "".join(lines)


def best(module, fn, text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        module._CLEAN.clear()
        t = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=18.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", type=Path, help="another redact.py to time redact() of (default: one pass of this)")
    a = ap.parse_args()
    new = load(Path(__file__).resolve().parent.parent / "orchestrator" / "redact.py", "redact_new")
    old = load(a.against, "redact_old") if a.against else None
    other = "old redact() s" if old else "one pass s"
    print(f"{'log':<24} {'MB':>5} {other:>15} {'redact() s':>11} {'ratio':>6} {'again s':>8}")
    for name, every in (("a secret on every line", 1), ("one line in 1,000", 1000), ("no secret", 10**12)):
        text = log(a.mb, every)
        base = best(old, old.redact, text, a.repeat) if old else best(new, new._redact, text, a.repeat)
        fixed = best(new, new.redact, text, a.repeat)
        out = new.redact(text)
        t = time.perf_counter()
        assert new.redact(out) is out
        again = time.perf_counter() - t
        print(f"{name:<24} {len(text) / 1e6:>5.1f} {base:>15.2f} {fixed:>11.2f} {fixed / base:>6.2f} {again:>8.3f}")


if __name__ == "__main__":
    main()
