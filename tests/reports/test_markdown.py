"""The Markdown report: every section a reader needs, evidence ids resolvable, usage per agent."""

from __future__ import annotations

import re

from orchestrator.render.diagnosis import to_markdown
from reports.sample import sample_diagnosis


def test_markdown_has_every_section_in_order():
    md = to_markdown(sample_diagnosis())
    heads = re.findall(r"^#+ (.+)$", md, re.M)
    assert heads == ["Diagnosis: why is FP8 slow at small batch?", "Causes (ranked)", "Numbers", "Recommendations",
                     "Gaps", "Evidence", "Usage"]
    assert "**Bound:** memory — arithmetic intensity 16 FLOP/B" in md


def test_every_cited_evidence_id_is_listed_in_the_evidence_section():
    d = sample_diagnosis()
    md = to_markdown(d)
    evidence = md.split("## Evidence", 1)[1]
    for eid in d.cited_ids():
        assert f"`{eid}`" in evidence


def test_numbers_show_achieved_against_peak():
    md = to_markdown(sample_diagnosis())
    assert "- HBM bandwidth: 3.1 TB/s of 4.8 TB/s (64.6 %) [ev-4.1]" in md


def test_usage_table_lists_each_agent_and_escapes_pipes():
    d = sample_diagnosis()
    d.usage.agents[0].agent_id = "lead|x"
    md = to_markdown(d)
    assert "| agent | status | calls | tokens | cost | time |" in md
    assert "| lead\\|x | ok | 2 | 5,000 | $0.0000 | 14.0 s |" in md
