"""What the catalog found in a host's evidence holds for every view of the same evidence (the fleet prong and the
lead look at the same hosts): evaluated once per entry and host basis, again when the basis differs."""

from __future__ import annotations

from support.evidence import SEED_OBS, ev, inventory, obs_ev, seed_evidence

from orchestrator.analysis import facts, signals
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
    real = facts._host_facts

    def counted(host, items, *a):
        built.append(host)
        return real(host, items, *a)

    monkeypatch.setattr(facts, "_host_facts", counted)
    first = facts.gather(EvidenceView(evidence))
    again = facts.gather(EvidenceView(list(evidence)))
    assert built == ["gpu-box"]
    assert again["gpu-box"] is first["gpu-box"]


def test_other_observations_give_the_host_other_facts():
    """The observations are part of the basis: a view recording other numbers must not see the first view's."""
    evidence = seed_evidence()
    first = facts.gather(EvidenceView(evidence))["gpu-box"]
    other_obs = obs_ev("ev-4.1", {**SEED_OBS, "runs": [{"tp": 2, "pp": 1, "ep": 1, "concurrency": 64,
                                                        "total_tok_s": 99}]})
    second = facts.gather(EvidenceView(evidence[:-1] + [other_obs]))["gpu-box"]
    assert first.get("obs.tp").value == 8
    assert second.get("obs.tp").value == 2 and second.get("obs.tp").evidence_id == "ev-4.1"


def test_gathered_facts_are_those_a_fresh_gather_finds():
    evidence = seed_evidence()
    facts.gather(EvidenceView(evidence))  # fills the memo
    cached = facts.gather(EvidenceView(list(evidence)))["gpu-box"]
    fresh = facts.gather(EvidenceView(seed_evidence()))["gpu-box"]  # the same evidence, new objects: no memo
    assert cached is not fresh
    assert cached.facts == fresh.facts and cached.lines == fresh.lines and cached.basis == fresh.basis


def test_entries_that_read_no_observation_are_not_evaluated_again_for_a_view_with_observations(monkeypatch):
    """The fleet prong's view has no observations, the lead's has them: only entries that read `obs.*` facts (or
    scope a workload dtype) are evaluated again; what they find follows the observations."""
    from orchestrator.knowledge.catalog import catalog

    evidence = seed_evidence()
    without = [e for e in evidence if e.kind != "observations"]
    calls = _counting(monkeypatch)
    signals.catalog_findings(EvidenceView(without))
    n = len(calls)
    with_obs = {f.id for f in signals.catalog_findings(EvidenceView(evidence))}
    again = calls[n:]
    readers = {e.id for e in catalog() if e.signals and signals.reads_observations(e)}
    assert again and set(again) <= readers  # observation readers only, each once
    assert len(again) == len(set(again))
    fresh_calls = _counting(monkeypatch)
    fresh = {f.id for f in signals.catalog_findings(EvidenceView(seed_evidence()))}  # new objects: nothing kept
    assert fresh == with_obs and len(fresh_calls) > len(again)


def test_which_entries_read_observations():
    from orchestrator.knowledge.catalog import Entry

    def entry(**kw):
        return Entry.model_validate({"id": "x", "title": "t", "area": "node", "claim": "c",
                                     "sources": ["https://example.org/s"], **kw})
    assert not signals.reads_observations(entry(signals=[{"when": [{"fact": "gpu.*.power.limit_w", "lt": 1}]}]))
    assert signals.reads_observations(entry(signals=[{"when": [{"fact": "obs.tp", "gt": 1}]}]))
    assert signals.reads_observations(entry(signals=[{"when": [{"fact": "gpu.0.power.draw_w",
                                                                "gt_fact": "obs.gpu.power_w"}]}]))
    assert signals.reads_observations(entry(signals=[{"when": [{"fact": "gpu.0.cc", "eq": "9.0"}]}],
                                            scope={"dtypes": ["fp8"]}))
