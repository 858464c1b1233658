"""Every log-pattern signal of the catalog matches the line its library really prints, and no near miss of it.

tests/knowledge/real_lines.yaml holds, per (entry, pattern), lines built from the library's format string at a named
version (file and line, or commit URL) and near misses. The patterns are taken through the catalog's own compiled
regex (case-insensitive search), as the log scan applies them.

A pattern for a program whose settings the project harvests (vLLM, SGLang, NCCL, TGI, TensorRT-LLM, PyTorch:
knowledge/settings) also records, under `releases`, the format string and a line at the harvested releases, the
newest one always: a pattern written from an old release keeps being checked against the current one, and a pattern
that matches no harvested release fails (a log signal that can never fire on a current engine).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from orchestrator.knowledge import settings as kb
from orchestrator.knowledge.catalog import catalog, expand_tables

DATA = Path(__file__).with_name("real_lines.yaml")
RECORDS = yaml.safe_load(DATA.read_text(encoding="utf-8"))
VERSIONED = re.compile(r"^https://\S+/(blob|tree)/[0-9a-f]{7,40}/\S+|^https://\S+/blob/v[\d.]+\S*/\S+"
                       r"|^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$|^https://docs\.nvidia\.com/\S+$")


HARVESTED = {"vLLM": "vllm", "SGLang": "sglang", "NCCL": "nccl", "TGI": "tgi", "TensorRT-LLM": "tensorrt_llm",
             "PyTorch": "pytorch"}
"""A record's `library` (its start) -> the harvested project whose releases it must cover."""


def _project(rec: dict) -> str | None:
    lib = str(rec["library"])
    return next((p for name, p in HARVESTED.items() if lib.startswith(name) and p in kb.projects()), None)


def _signals() -> list[tuple[str, str]]:
    return [(e.id, s.log) for e in catalog() for s in e.signals if s.log]


def _compiled(entry_id: str, pattern: str) -> re.Pattern[str]:
    entry = catalog().get(entry_id)
    assert entry is not None, f"real_lines.yaml names an entry the catalog does not have: {entry_id}"
    for s in entry.signals:
        if s.log == expand_tables(pattern):
            rx = s.compiled()
            assert rx is not None
            return rx
    raise AssertionError(f"{entry_id}: the catalog has no log signal {pattern!r} (real_lines.yaml is stale)")


def _ids(rec: dict) -> str:
    return f"{rec['entry']}:{rec['pattern'][:40]}"


def test_every_log_signal_has_a_real_line_and_a_near_miss():
    have = {(r["entry"], expand_tables(r["pattern"])) for r in RECORDS if r.get("lines") and r.get("near_misses")}
    missing = [f"{e}: {p}" for e, p in _signals() if (e, p) not in have]
    assert not missing, "log signals with no real line / near miss in tests/knowledge/real_lines.yaml:\n" + "\n".join(missing)


@pytest.mark.parametrize("rec", RECORDS, ids=_ids)
def test_record_names_its_library_version_and_a_versioned_source(rec):
    for key in ("library", "version", "source", "format"):
        assert str(rec.get(key) or "").strip(), f"{_ids(rec)}: no {key}"
    for url in [rec["source"], *rec.get("sources_more", [])]:
        assert VERSIONED.match(url), f"{_ids(rec)}: {url} is not pinned to a tag, commit, issue or vendor doc"


@pytest.mark.parametrize("rec", RECORDS, ids=_ids)
def test_the_pattern_matches_every_real_line(rec):
    rx = _compiled(rec["entry"], rec["pattern"])
    missed = [line for line in rec["lines"] if not rx.search(line)]
    assert not missed, f"{_ids(rec)} misses the library's real line(s): {missed}"


@pytest.mark.parametrize("rec", RECORDS, ids=_ids)
def test_the_pattern_matches_the_line_of_every_release_recorded(rec):
    rx = _compiled(rec["entry"], rec["pattern"])
    for version, rel in (rec.get("releases") or {}).items():
        assert VERSIONED.match(rel["source"]), f"{_ids(rec)} at {version}: {rel['source']} is not pinned"
        missed = [line for line in rel.get("lines", []) if not rx.search(line)]
        assert not missed, f"{_ids(rec)} misses the line {rec['library']} {version} prints: {missed}"


HARVESTED_RECORDS = [r for r in RECORDS if _project(r)]


@pytest.mark.parametrize("rec", HARVESTED_RECORDS, ids=_ids)
def test_a_harvested_programs_pattern_is_checked_against_its_newest_release(rec):
    project = _project(rec)
    assert project is not None
    newest = kb.project_data(project)["versions"][-1]
    releases = {str(k): v for k, v in (rec.get("releases") or {}).items()}
    assert newest in releases, (f"{_ids(rec)}: no line of {rec['library']} {newest}, the newest harvested release "
                                f"(releases: {sorted(releases)}); read the format string there")
    rel = releases[newest]
    assert rel.get("format") and (rel.get("lines") or rel.get("absent")), f"{_ids(rec)} at {newest}: format and lines"


@pytest.mark.parametrize("rec", HARVESTED_RECORDS, ids=_ids)
def test_a_pattern_matches_at_least_one_harvested_release(rec):
    project = _project(rec)
    assert project is not None
    harvested = set(kb.project_data(project)["versions"])
    rx = _compiled(rec["entry"], rec["pattern"])
    hits = [str(v) for v, rel in (rec.get("releases") or {}).items()
            if str(v) in harvested and any(rx.search(line) for line in rel.get("lines") or [])]
    assert hits, f"{_ids(rec)} matches no line of any harvested {rec['library']} release: it can never fire today"


def test_a_stale_pattern_is_caught():
    rec = {"entry": "sglang-decode-above-cuda-graph-max-bs", "library": "SGLang",
           "releases": {"0.5.23": {"format": "f'Decode batch{iter_msg}, #running-req: ...'", "lines": [
               "[2026-11-30 18:02:11 TP0] Decode batch, #running-req: 300, #token: 1, token usage: 0.5, cuda graph: "
               "False, gen throughput (token/s): 1.0, #queue-req: 0"]}}}
    old = re.compile(r"Decode batch\. #running-req: (\d+),.*cuda graph: False", re.IGNORECASE)
    assert not any(old.search(line) for rel in rec["releases"].values() for line in rel["lines"])


@pytest.mark.parametrize("rec", RECORDS, ids=_ids)
def test_the_pattern_matches_no_near_miss(rec):
    rx = _compiled(rec["entry"], rec["pattern"])
    hit = [line for line in rec["near_misses"] if rx.search(line)]
    assert not hit, f"{_ids(rec)} matches near miss(es) it must not: {hit}"


def test_no_two_records_for_one_signal():
    keys = [(r["entry"], r["pattern"]) for r in RECORDS]
    assert len(keys) == len(set(keys))
