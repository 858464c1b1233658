"""What the catalog found in a host's evidence holds for every view of the same evidence (the fleet prong and the
lead look at the same hosts): evaluated once per entry and host basis, again when the basis differs."""

from __future__ import annotations

from support.evidence import SEED_OBS, ev, inventory, obs_ev, seed_evidence

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


def test_a_hosts_facts_are_gathered_once_per_basis(monkeypatch):
    evidence = seed_evidence()
    built = []
    real = signals._host_facts

    def counted(host, items, *a):
        built.append(host)
        return real(host, items, *a)

    monkeypatch.setattr(signals, "_host_facts", counted)
    first = signals.gather(EvidenceView(evidence))
    again = signals.gather(EvidenceView(list(evidence)))
    assert built == ["gpu-box"]
    assert again["gpu-box"] is first["gpu-box"]


def test_other_observations_give_the_host_other_facts():
    """The observations are part of the basis: a view recording other numbers must not see the first view's."""
    evidence = seed_evidence()
    first = signals.gather(EvidenceView(evidence))["gpu-box"]
    other_obs = obs_ev("ev-4.1", {**SEED_OBS, "runs": [{"tp": 2, "pp": 1, "ep": 1, "concurrency": 64,
                                                        "total_tok_s": 99}]})
    second = signals.gather(EvidenceView(evidence[:-1] + [other_obs]))["gpu-box"]
    assert first.get("obs.tp").value == 8
    assert second.get("obs.tp").value == 2 and second.get("obs.tp").evidence_id == "ev-4.1"


def test_gathered_facts_are_those_a_fresh_gather_finds():
    evidence = seed_evidence()
    signals.gather(EvidenceView(evidence))  # fills the memo
    cached = signals.gather(EvidenceView(list(evidence)))["gpu-box"]
    fresh = signals.gather(EvidenceView(seed_evidence()))["gpu-box"]  # the same evidence, new objects: no memo
    assert cached is not fresh
    assert cached.facts == fresh.facts and cached.lines == fresh.lines and cached.basis == fresh.basis
