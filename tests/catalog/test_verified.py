"""Every catalog entry records when it was last checked against its sources and what was checked."""

from __future__ import annotations

import datetime
import re

import pytest

from orchestrator.knowledge.catalog import CatalogError, catalog, load_catalog


def test_every_entry_says_what_was_checked_against_its_sources():
    missing = [e.id for e in catalog() if e.verified is None]
    assert not missing, f"entries without `verified: {{date, what}}`: {missing}"
    for e in catalog():
        assert e.verified is not None and isinstance(e.verified.date, datetime.date)
        assert len(e.verified.what.split()) >= 5, f"{e.id}: `verified.what` should say what was checked"


@pytest.mark.parametrize("verified, needle", [
    ("{date: 2026-12-01}", "what"),
    ("{date: yesterday, what: checked the NCCL source}", "date"),
    ("{date: 2026-12-01, what: ''}", "what"),
])
def test_a_malformed_verified_record_is_a_load_error_naming_the_field(verified, needle):
    text = f"""- id: x-entry
  area: node
  title: t
  signals: [{{log: 'x'}}]
  claim: c
  sources: [https://example.org/a]
  verified: {verified}
"""
    with pytest.raises(CatalogError, match=needle):
        load_catalog({"failure_modes/x.yaml": text})


_SOURCE_FILE = re.compile(r"([\w./-]+\.(?:py|cc|cpp|c|h|hpp|inl|cu|cuh|rs|go|sh))\b")
_OWN = ("prongs/", "orchestrator/", "knowledge/", "tests/")


def _quoted_files(what: str) -> list[str]:
    return [f for f in _SOURCE_FILE.findall(what) if not f.startswith(_OWN)]


def _uncited(entries) -> list[str]:
    out = []
    for e in entries:
        src = " ".join(e.sources)
        miss = sorted({f for f in _quoted_files(e.verified.what) if f.rsplit("/", 1)[-1] not in src})
        if miss:
            out.append(f"{e.id}: {miss}")
    return out


def test_a_file_the_verified_record_quotes_is_a_cited_source():
    """Issue 41 item 5: the file whose code path the record describes is the file the entry cites (at a tag, commit or
    named branch), so a reader can open what was read."""
    bad = _uncited(catalog())
    assert not bad, f"`verified.what` quotes source files the entry does not cite: {bad}"


def test_a_log_entry_names_the_code_that_prints_its_line():
    """An entry that fires on a log line says which program file prints it (and when); a line printed by closed code
    (the NVIDIA driver, the CUDA runtime) cites the vendor's page instead."""
    bad = [e.id for e in catalog() if any(s.log for s in e.signals) and not _quoted_files(e.verified.what)
           and not any("docs.nvidia.com" in u for u in e.sources)]
    assert not bad, f"log entries whose `verified.what` names no file that prints the line: {bad}"


def test_an_uncited_quoted_file_is_caught():
    text = """- id: q-entry
  area: node
  title: t
  signals: [{log: 'q'}]
  claim: c
  sources: [https://github.com/NVIDIA/nccl/blob/v2.30.7-1/src/misc/param.cc]
  verified: {date: 2026-12-01, what: "Printed by src/transport/net_ib/init.cc L27 when the port is down."}
"""
    assert _uncited(load_catalog({"failure_modes/q.yaml": text})) == ["q-entry: ['src/transport/net_ib/init.cc']"]
