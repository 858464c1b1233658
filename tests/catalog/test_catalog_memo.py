"""What the catalog found in a host's evidence holds for every view of the same evidence (the fleet prong and the
lead look at the same hosts): evaluated once per entry and host basis, again when the basis differs."""

from __future__ import annotations

from support.evidence import ev, inventory, seed_evidence

from orchestrator.analysis import signals
from orchestrator.analysis.evidence_view import EvidenceView


def _counting(monkeypatch):
    calls = []
    real = signals.evaluate_entry

    def counted(entry, hf):
        calls.append(entry.id)
        return real(entry, hf)

    monkeypatch.setattr(signals, "evaluate_entry", counted)
    return calls


def test_a_second_view_of_the_same_evidence_reuses_the_first_ones_evaluation(monkeypatch):
    evidence = seed_evidence()
    calls = _counting(monkeypatch)
    first = signals.catalog_findings(EvidenceView(evidence))
    n = len(calls)
    assert n > 10
    again = signals.catalog_findings(EvidenceView(list(evidence)))
    assert len(calls) == n  # nothing evaluated again
    assert [f.model_dump() for f in again] == [f.model_dump() for f in first]


def test_other_evidence_for_the_host_is_evaluated_afresh(monkeypatch):
    evidence = seed_evidence()
    calls = _counting(monkeypatch)
    before = {f.id for f in signals.catalog_findings(EvidenceView(evidence))}
    n = len(calls)
    capped = ev("ev-9.1", inventory(power=250.0, limit=300.0), tool="gpu_inventory", agent="a9")
    after = signals.catalog_findings(EvidenceView(evidence + [capped]))
    assert len(calls) > n  # a new basis: the entries ran again
    assert {f.id for f in after} >= before - {"unclassified-log-lines"}
