"""The fuzz pass: every input a user or a host can hand the tool, hostile or broken, ends in a result or one clean
error line, never a traceback, a hang or a memory blow-up.

Kinds (tests/fuzz/corpus/<kind>/, tests/fuzz/harness.py says what reads each): transcripts (show, report .html/.md),
observations, --bench/--baseline files, --baseline-log, engine logs (the log parser, the catalog's signals),
a served process's config YAML (engine configuration, settings audit), Kineto traces (.json, .json.gz) and nsys
exports (the up-front --trace check and the analysis), the configurations of the layers in front of the engine
(`--path-config` files and what the path probe reads: nginx, HAProxy, Envoy/Istio, LiteLLM, Ray Serve, Triton,
systemd units). The corpus holds seeds and every break found so far; a seeded
mutator (tests/fuzz/mutate.py) adds hostile variants of the seeds, the same ones every run. Everything runs in one
child process under a 2 GiB address-space limit, each input under a 5 s alarm.

    FUZZ_SEED=7 FUZZ_MUTANTS=20 python -m pytest tests/fuzz/test_fuzz.py   # explore further by hand

A failing input is left in the test's temporary folder (the failure names it): add it to the corpus, named after
what it does, with the fix.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the fuzz helpers
from fuzz.bounded import run_bounded  # noqa: E402
from fuzz.mutate import mutate_file  # noqa: E402

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
SEED = int(os.environ.get("FUZZ_SEED", "38"))
SCALE = int(os.environ.get("FUZZ_MUTANTS", "1"))
MUTANTS = {"observations": 60, "bench": 60, "baseline_log": 24, "log": 30, "config": 60, "trace": 100, "nsys": 40,
           "transcript": 30, "path_config": 40}
"""Mutants per kind at FUZZ_MUTANTS=1: with the corpus ~460 inputs, ~5 s of CPU here (each kind's mutants were run
40x over, 5,569 inputs, before this pass went in: what they found is in the corpus as fuzz-*)."""
MEMORY_MB = 2048


def _inputs(tmp: Path, counts: dict[str, int] | None = None) -> list[tuple[str, str]]:
    rng = random.Random(SEED)
    out: list[tuple[str, str]] = []
    for kind in sorted(MUTANTS):
        files = sorted((CORPUS / kind).iterdir())
        out += [(kind, str(f)) for f in files]
        seeds = [f for f in files if f.name.startswith("seed")]
        for i in range((counts or MUTANTS)[kind] * SCALE):
            d = tmp / kind / f"{i:03d}"
            d.mkdir(parents=True)
            out.append((kind, str(mutate_file(kind, rng.choice(seeds), d, rng))))
    return out


def test_the_corpus_has_every_kind_with_seeds():
    for kind in MUTANTS:
        names = [f.name for f in (CORPUS / kind).iterdir()]
        assert any(n.startswith("seed") for n in names), kind
    assert len(list(CORPUS.glob("*/*"))) >= 45


def test_the_mutator_is_deterministic(tmp_path):
    few = {k: 4 for k in MUTANTS}
    a = [Path(p).read_bytes() for _, p in _inputs(tmp_path / "a", few) if "/corpus/" not in p]
    b = [Path(p).read_bytes() for _, p in _inputs(tmp_path / "b", few) if "/corpus/" not in p]
    assert a == b and len(a) == sum(few.values()) * SCALE


def test_every_input_ends_in_a_result_or_one_clean_line(tmp_path):
    inputs = _inputs(tmp_path)
    listing = tmp_path / "inputs.json"
    listing.write_text(json.dumps(inputs))
    res = run_bounded(f"import sys; sys.path.insert(0, {str(HERE)!r}); import harness; "
                      f"harness.main(['harness', {str(listing)!r}])", mem_mb=MEMORY_MB, timeout_s=240)
    ends = [json.loads(ln) for ln in res.out.splitlines() if ln.startswith("{")]
    assert not res.timed_out and res.rc == 0, (res.rc, res.timed_out, res.err[-3000:], ends[-3:])
    assert len(ends) == len(inputs), (len(ends), len(inputs), res.err[-3000:])
    bad = [e for e in ends if e["end"] not in ("ok", "clean")]
    assert not bad, "inputs that did not end in a result or one clean line (kept under " + str(tmp_path) + "):\n" + \
        "\n".join(f"{e['kind']} {e['path']}: {e['end']}: {e.get('detail', '')}" for e in bad)
    by_kind: dict[str, set[str]] = {}
    for e in ends:
        by_kind.setdefault(e["kind"], set()).add(e["end"])
    for kind in ("trace", "nsys", "observations", "bench", "config", "transcript", "path_config"):
        assert "ok" in by_kind[kind], (kind, by_kind[kind])  # the seeds still read: the pass tests the readers
    assert res.peak_mb < MEMORY_MB, res.peak_mb
