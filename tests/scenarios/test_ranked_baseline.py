"""The ranking regression check (harness.judge against ranked.json, support/scorecard.py): a change to relevance or
ranking that moves a case's expected finding out of the ranked causes fails that case, and every change of a case's
ranked causes is printed before and after. Pure: no host is staged."""

from __future__ import annotations

import json

from harness import Case, judge

from orchestrator.diagnosis import Cause, Noticed, SubmittedDiagnosis
from support.scorecard import ranking_changes, record

CASE = Case.model_validate({"id": "x", "class": "node", "source": "https://example.org/x", "question": "why slow?",
                            "symptom": "throughput", "expect": {"causes": ["power (limit|cap)", "GPU 3"]}})


def _d(ranked: list[str], noticed: list[str] = ()) -> SubmittedDiagnosis:
    return SubmittedDiagnosis(verdict="v", causes=[Cause(title=t, explanation="e", confidence=0.8, evidence=["ev-1"])
                                                   for t in ranked],
                              also_noticed=[Noticed(title=t, note="n", evidence=["ev-1"]) for t in noticed])


def test_a_finding_moved_to_also_noticed_fails_the_case_that_expected_it_ranked(tmp_path):
    recorded = judge(CASE, tmp_path / "case.yaml", _d(["Near the power limit on GPU 3"]), [], [], {})
    assert recorded.held == ["power (limit|cap)", "GPU 3"] and not recorded.failures
    baseline = {"node/x": {"ranked": recorded.ranked, "held": recorded.held}}
    # the words still say it (also noticed is among them), so the case's own expectations pass: only the check fails
    demoted = judge(CASE, tmp_path / "case.yaml", _d(["Something else"], ["Near the power limit on GPU 3"]), [], [],
                    baseline)
    assert [f for f in demoted.failures if "lost the expected finding" in f] == [
        f for f in demoted.failures if "power (limit|cap)" in f or "GPU 3" in f] and len(demoted.failures) == 2
    kept = judge(CASE, tmp_path / "case.yaml", _d(["Something else", "Near the power limit on GPU 3"]), [], [],
                 baseline)
    assert not kept.failures  # reordered, still ranked


def test_the_scorecard_prints_each_changed_ranking_before_and_after(tmp_path):
    scores = [("node", "a", True, [], {"ranked": ["B", "A"], "held": [], "before": ["A", "B"]}),
              ("node", "b", True, [], {"ranked": ["A at 650 W"], "held": [], "before": ["A at 648 W"]}),
              ("node", "c", True, [], {"ranked": ["C"], "held": [], "before": None})]
    lines = "\n".join(ranking_changes(scores))
    assert "node/a:\n    before: A | B\n    after:  B | A" in lines
    assert "node/b" not in lines  # the same cause with another figure is not a change
    assert "not recorded: node/c" in lines
    path = tmp_path / "ranked.json"
    assert record(scores, path) == 3 and json.loads(path.read_text())["node/c"] == {"ranked": ["C"], "held": []}
