"""Every catalog entry records when it was last checked against its sources and what was checked."""

from __future__ import annotations

import datetime

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
