"""Every pattern of the serving-engine log parser matches the line each engine release prints.

tests/knowledge/engine_log_lines.yaml holds, per pattern (RX_* of orchestrator/prongs/serving_engine/logs.py; a list
constant per alternative), the format string read at each release's source, lines built from it and the value the
parser reads. A pattern with no record, a record line it misses, a wrong value, or a near miss it matches fails; so
does a pattern that matches no harvested release (knowledge/settings/<program>.json), unless the record says why it is
kept for older hosts (`legacy_only`), and a pattern whose program's newest harvested release is not recorded, unless the
record says that release no longer prints the message (`absent_in_newest`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from orchestrator.knowledge import settings as kb
from orchestrator.prongs.serving_engine import logs

DATA = Path(__file__).with_name("engine_log_lines.yaml")
RECORDS: list[dict] = yaml.safe_load(DATA.read_text(encoding="utf-8"))
RELEASE_URL = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/blob/(v[\d.]+|[0-9a-f]{7,40})/\S+$")


def _patterns() -> dict[str, re.Pattern[str]]:
    out: dict[str, re.Pattern[str]] = {}
    for name in dir(logs):
        val = getattr(logs, name)
        if not name.startswith("RX_"):
            continue
        if isinstance(val, re.Pattern):
            out[name] = val
        elif isinstance(val, list) and val and all(isinstance(x, re.Pattern) for x in val):
            out.update({f"{name}[{i}]": rx for i, rx in enumerate(val)})
    return out


PATTERNS = _patterns()


def _versions(program: str) -> list[str]:
    return [str(v) for v in kb.project_data(program).get("versions") or []] if program in kb.projects() else []


def _ids(rec: dict) -> str:
    return f"{rec['pattern']}:{rec['program']}"


def test_every_parser_pattern_has_a_record():
    have = {r["pattern"] for r in RECORDS}
    missing = sorted(set(PATTERNS) - have)
    assert not missing, f"log patterns with no record in {DATA.name}: {missing}"
    stale = sorted(have - set(PATTERNS))
    assert not stale, f"{DATA.name} names patterns the parser does not have: {stale}"


@pytest.mark.parametrize("rec", RECORDS, ids=_ids)
def test_record_lines_match_and_give_the_value(rec):
    rx = PATTERNS[rec["pattern"]]
    bad = []
    for key in ("releases", "legacy"):
        for ver, r in (rec.get(key) or {}).items():
            assert r.get("source") and r.get("format"), f"{rec['pattern']} {ver}: no source or format string"
            if key == "releases":
                assert RELEASE_URL.match(str(r["source"])), f"{rec['pattern']} {ver}: source not at a tag or commit"
            for i, ln in enumerate(r.get("lines") or []):
                m = rx.search(ln)
                if not m:
                    bad.append(f"{key} {ver}: misses {ln!r}")
                elif "value" in r and m.groups() and i == 0:  # the value is the first line's
                    got = next((g for g in m.groups() if g is not None), None)
                    if got != str(r["value"]):
                        bad.append(f"{key} {ver}: reads {got!r}, not {r['value']!r}, from {ln!r}")
    for ln in rec.get("near_misses") or []:
        if rx.search(ln):
            bad.append(f"matches the near miss {ln!r}")
    assert not bad, f"{rec['pattern']} ({rec['program']}): " + "; ".join(bad)


@pytest.mark.parametrize("rec", RECORDS, ids=_ids)
def test_record_covers_the_harvested_releases(rec):
    harvested = _versions(rec["program"])
    recorded = [str(v) for v in rec.get("releases") or {}]
    if not harvested:
        pytest.skip(f"{rec['program']}: no harvested releases")
    outside = [v for v in recorded if v not in harvested]
    assert not outside, f"{rec['pattern']}: `releases` names {outside}, not harvested releases {harvested} (use `legacy`)"
    if not recorded:
        base = rec["pattern"].split("[")[0]
        if base != rec["pattern"] and any(r.get("releases") for r in RECORDS if r["pattern"].split("[")[0] == base):
            return  # an alternative kept for older releases, beside one the current releases print
        assert rec.get("legacy_only"), (
            f"{rec['pattern']} ({rec['program']}) matches no harvested release {harvested}: record the current "
            "release's line, or say under legacy_only why a pattern no current release prints is kept")
        return
    assert rec.get("absent_in_newest") or harvested[-1] in recorded, (
        f"{rec['pattern']} ({rec['program']}): the newest harvested release {harvested[-1]} is not recorded")


def test_each_pattern_matches_a_harvested_release_or_says_why_not():
    """A pattern (a list constant: all its alternatives) that no harvested release's line matches is dead on current
    engines; the few kept for hosts on older releases say why, and a new one fails until it is reviewed here."""
    by_base: dict[str, list[dict]] = {}
    for r in RECORDS:
        by_base.setdefault(r["pattern"].split("[")[0], []).append(r)
    dead = sorted(p for p, recs in by_base.items() if not any(rec.get("releases") for rec in recs))
    reasons = {p: [rec["legacy_only"] for rec in by_base[p] if rec.get("legacy_only")] for p in dead}
    assert all(reasons.values()), f"patterns no harvested release prints, with no reason to keep them: {dead}"
    assert dead == ["RX_GPU_BLOCKS"], f"legacy-only patterns changed (review them): {dead}"


def _parse(text: str) -> logs.ParsedLog:
    return logs.parse_log_lines(("engine.log", i + 1, ln) for i, ln in enumerate(text.splitlines()))


def test_sglang_0523_start_lines_give_settings_kv_and_graphs():
    p = _parse(
        "[2026-05-01 10:00:00] server_args={'model_path': 'Qwen/Qwen3-8B', 'tp_size': 8, 'cuda_graph_max_bs_decode': "
        "256, 'mem_fraction_static': 0.85, 'disable_cuda_graph': False, 'disable_radix_cache': False}\n"
        "[2026-05-01 10:00:12 TP0] Load weight end. elapsed=40.02 s, type=Qwen3ForCausalLM, avail mem=60.50 GB, "
        "mem usage=15.20 GB.\n"
        "[2026-05-01 10:00:20 TP0] Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, #tokens: "
        "1200000, KV size: 60.00 GB, avail mem=10.00 GB\n"
        "[2026-05-01 10:00:40 TP0] Capture target decode CUDA graph end. elapsed=18.02 s, mem usage=0.90 GB, avail "
        "mem=9.80 GB.\n")
    s = {k: v.value for k, v in p.settings.items()}
    assert s["tp"] == 8 and s["cuda_graph_max_bs"] == 256 and s["gpu_memory_utilization"] == 0.85
    assert s["cuda_graphs"] is True and s["prefix_caching"] is True and s["model"] == "Qwen/Qwen3-8B"
    assert p.state.starts == 1 and p.state.weights_gib == 15.2 and p.state.kv_cache_tokens == 1200000
    assert p.state.graphs_captured and p.state.graph_capture_s == 18.02 and p.state.eager_line is None


def test_vllm_033_banner_version_and_phases():
    p = _parse(
        "(APIServer pid=1) INFO 06-02 10:00:01 [startup.py:33] vLLM server version 0.33.0, serving model m\n"
        "(EngineCore pid=240) INFO 06-02 10:00:45 [core.py:406] init engine (profile, create kv cache, warmup model) "
        "took 34.11 s (compilation: 28.11 s)\n"
        "(EngineCore pid=240) INFO 06-02 10:00:30 [backends.py:418] Compiling a graph for compile range (1, 2048) "
        "takes 12.02 s\n"
        "(APIServer pid=1) INFO 06-02 10:00:50 [entry.py:139] Starting vLLM server on http://0.0.0.0:8000\n")
    assert p.version == "0.33.0"
    assert p.state.starts == 1 and p.state.init_engine_s == 34.11 and p.state.cold_compile_starts == 1
    assert p.state.start_span_s == 49


def test_tgi_pretty_args_start_a_run():
    p = _parse("2025-09-01T10:00:00.000000Z  INFO text_generation_launcher: Args {\n"
               '    model_id: "Qwen/Qwen3-8B",\n')
    assert p.state.starts == 1
