"""Rules for a host without a GPU: say so and what FP4 needs, and claim nothing about a GPU."""

from __future__ import annotations

from support.evidence import ev, inventory
from orchestrator import knowledge
from orchestrator.analysis import synthesize
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.analysis.rules import dtype_native_support, no_gpu_on_host
from orchestrator.probes.results import GpuInventory


def no_gpu() -> GpuInventory:
    return GpuInventory(host="local", available=False, reason="nvidia-smi is not on PATH")


def knowledge_ev(eid: str, query: str):
    return ev(eid, tool="knowledge_search", data={"kind": "knowledge", "query": query, "hits": knowledge.search(query)})


def test_no_gpu_on_host_is_said_with_the_fix():
    found = no_gpu_on_host(EvidenceView([ev("ev-1.1", no_gpu(), tool="gpu_inventory")]))
    assert [f.id for f in found] == ["no-gpu-on-host"] and found[0].evidence == ["ev-1.1"]
    assert "--host" in found[0].recommendations[0]


def test_no_gpu_rule_is_silent_when_the_host_has_gpus():
    assert no_gpu_on_host(EvidenceView([ev("ev-1.1", inventory(), tool="gpu_inventory")])) == []


def test_fp4_native_support_comes_from_the_knowledge_evidence_when_no_gpu_is_known():
    view = EvidenceView([ev("ev-1.1", no_gpu(), tool="gpu_inventory"), knowledge_ev("ev-2.1", "why is FP4 slow")])
    found = dtype_native_support(view)
    assert len(found) == 1 and found[0].evidence == ["ev-2.1"]
    assert "compute capability 10.0, 10.3, 12.0, 12.1" in found[0].claim


def test_dtype_rule_leaves_a_known_gpu_to_the_gpu_rules():
    view = EvidenceView([ev("ev-1.1", inventory(), tool="gpu_inventory"), knowledge_ev("ev-2.1", "why is FP4 slow")])
    assert dtype_native_support(view) == []


def test_dtype_rule_needs_a_dtype_in_the_question():
    view = EvidenceView([knowledge_ev("ev-2.1", "autotune cache vllm")])
    assert dtype_native_support(view) == []


def test_no_gpu_diagnosis_verdict_says_what_was_established_and_claims_no_gpu_facts():
    evidence = [ev("ev-1.1", no_gpu(), tool="gpu_inventory"), knowledge_ev("ev-2.1", "why is FP4 slow")]
    d = synthesize("why is FP4 slow", None, evidence, [])
    assert d.verdict.startswith("No cause of the slowness is supported by the evidence.")
    assert "no usable NVIDIA GPU" in d.verdict and d.bound == "unknown" and d.causes == []
    assert any("--host" in r.action for r in d.recommendations)
    assert not any(n.unit in ("TFLOPS", "W") for n in d.numbers)
