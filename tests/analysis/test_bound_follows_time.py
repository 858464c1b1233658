"""The bound follows where the time goes (issue 11 item 4).

A GEMM's roofline class is not the workload's bound: decode far below every roof is latency- or communication-bound,
and a parallelism experiment is read in both directions. A catalog failure with a bound (a node fault) sets it.
"""

from __future__ import annotations

import re

from support.evidence import SEED_OBS, ev, inventory, obs_ev, pyenv

from orchestrator.analysis import synthesize
from orchestrator.analysis.synthesis import bound_of
from orchestrator.findings import AgentResult, Agreement, BoundClaim, Finding
from orchestrator.ranks import Rank
from orchestrator.observations import Observations

GLM = SEED_OBS["model"]
QWEN = {"name": "Qwen3-30B-A3B-NVFP4", "quantization": "nvfp4", "num_layers": 48, "num_experts": 128, "top_k": 8,
        "hidden_size": 2048, "moe_intermediate_size": 768}


def words(d) -> str:
    return "\n".join([d.verdict, d.bound_reasoning] + [f"{c.title}. {c.explanation}" for c in d.causes]
                     + [r.action for r in d.recommendations])


def diagnose(obs: dict, *inv):
    evs = list(inv) + [ev("e2", pyenv(), tool="python_env"), obs_ev("e3", obs)]
    return synthesize("why is decode slow?", Observations.model_validate(obs), evs, [])


def test_small_batch_decode_on_pcie_where_tp4_pp2_beats_tp8_is_communication_not_memory():
    obs = {"model": GLM, "runs": [{"tp": 8, "concurrency": 4, "output_tok_s": 95},
                                  {"tp": 4, "pp": 2, "concurrency": 4, "output_tok_s": 140}]}
    d = diagnose(obs, ev("e1", inventory(power=150.0, util=60.0), tool="gpu_inventory"))
    w = words(d)
    assert d.bound == "communication"
    assert re.search(r"all-reduce .{0,40}is implicated", d.bound_reasoning) and "PCIe" in d.bound_reasoning
    assert re.search(r"latency", d.bound_reasoning)  # small messages at batch 4: latency, not bandwidth
    assert not re.search(r"memory-bound", w.replace("not memory-bound", "")), w
    assert d.causes[0].title.startswith("Throughput grows as all-reduce groups shrink")
    assert d.recommendations[0].action.startswith("Reduce the TP degree across PCIe")


def test_the_same_experiment_at_large_batch_still_rules_out_all_reduce():
    d = diagnose(SEED_OBS, ev("e1", inventory(), tool="gpu_inventory"))
    assert d.bound == "memory" and "rules out" in " ".join(c.title for c in d.causes)


def test_batch_1_decode_far_below_every_roof_is_never_memory_bound_one_gpu():
    obs = {"model": QWEN, "runs": [{"tp": 1, "concurrency": 1, "output_tok_s": 60}]}
    d = diagnose(obs, ev("e1", inventory("NVIDIA GeForce RTX 5090", n=1, power=180.0, limit=575.0, util=40.0),
                          tool="gpu_inventory"))
    w = words(d)
    assert d.bound == "latency", d.bound_reasoning
    assert "memory-bound" not in w.replace("not memory- or compute-bound", "")
    assert re.search(r"explains only [0-9.]+ % of each decode step", d.bound_reasoning)
    assert re.search(r"kernel launches|synchronisation", d.bound_reasoning)
    assert any("nsys" in r.action for r in d.recommendations)


def test_batch_1_decode_on_eight_pcie_gpus_points_at_all_reduce_latency():
    obs = {"model": GLM, "runs": [{"tp": 8, "concurrency": 1, "output_tok_s": 30}]}
    d = diagnose(obs, ev("e1", inventory(power=120.0, util=35.0), tool="gpu_inventory"))
    assert d.bound == "communication" and "all-reduces over PCIe" in d.bound_reasoning
    assert "memory-bound" not in words(d).replace("not memory- or compute-bound", "")


def test_a_well_fed_batch_stays_memory_bound():
    obs = {"model": QWEN, "runs": [{"tp": 1, "concurrency": 64, "total_tok_s": 3000}]}
    d = diagnose(obs, ev("e1", inventory("NVIDIA GeForce RTX 5090", n=1), tool="gpu_inventory"))
    assert d.bound == "memory"


def _f(fid, **kw):
    return Finding(id=fid, claim=kw.pop("claim", f"{fid} claim. More."), evidence=["e1"], **kw)


def test_a_catalog_fault_with_a_bound_sets_it_and_ranks_first():
    # as the MoE roofline rule makes it: it states the bound without leading, and beside a fault says what it would say
    moe = _f("moe-decode-memory-bound", bound="memory", short="memory short", category="roofline", confidence=0.8,
             sets_bound=BoundClaim(rank=Rank.MOE_ROOFLINE, bound="memory", leads=False, words="memory short"),
             agrees=[Agreement(tier=Rank.CATALOG, unless_bound="memory",
                               words="(The decode roofline alone would say memory-bound: memory short.)")])
    node = _f("gpu-power-limit-lowered", rule="catalog", entry="gpu-power-limit-lowered", bound="compute",
              severity="high", confidence=0.8, category="node", title="GPU power limit set below its default")
    bound, why, setter = bound_of([moe, node])
    assert (bound, setter) == ("compute", node) and why.startswith("GPU power limit set below its default:")
    assert "would say memory-bound" in why
    # weak or secondary catalog findings do not
    assert bound_of([moe, node.model_copy(update={"severity": "medium"})])[0] == "memory"
    assert bound_of([moe, node.model_copy(update={"secondary": True})])[0] == "memory"
    # a communication fault the parallelism experiment rules out does not either
    comm = node.model_copy(update={"bound": "communication"})
    gemm = _f("parallelism-rules-out-allreduce", bound="gemm", category="observation", rules_out=["communication"])
    assert bound_of([moe, comm, gemm])[0] == "memory"
    assert bound_of([moe, comm])[0] == "communication"


def test_an_agents_gemm_bound_on_a_bound_setting_finding_is_unknown_in_the_diagnosis():
    # `gemm` (memory or compute not settled) is a finding's bound, not a diagnosis's; and an agent's own finding
    # under the id of a rule's sets no bound: the rank is the rule's to give, not the id's
    evs = [ev("e1", inventory(), tool="gpu_inventory")]
    for fid in ("decode-far-below-every-roof", "moe-decode-memory-bound", "serving-decode-vs-roofline"):
        agent = _f(fid, bound="gemm", short="the agent's reading")
        d = synthesize("why is decode slow?", None, evs,
                       [AgentResult(agent_id="a2", name="kernels", status="ok", findings=[agent])])
        assert d.bound == "unknown", fid


def test_a_communication_fault_leads_the_experiment_that_implicates_all_reduce():
    """The experiment says where the time goes (communication); a catalog fault of that bound the evidence shows says
    why, and is ranked first."""
    comm = _f("parallelism-points-at-communication", bound="communication", category="communication",
              claim="TP2 barely beats one GPU.",
              sets_bound=BoundClaim(rank=Rank.COMM_EXPERIMENT, bound="communication", words="TP2 barely beats one GPU."))
    p2p = _f("nccl-p2p-disabled", rule="catalog", entry="nccl-p2p-disabled", bound="communication", severity="high",
             confidence=0.8, category="interconnect", title="NCCL peer-to-peer disabled", short="P2P is off.")
    bound, why, setter = bound_of([comm, p2p])
    assert (bound, setter) == ("communication", p2p)
    assert why == "TP2 barely beats one GPU. NCCL peer-to-peer disabled explains it: P2P is off."
    assert bound_of([comm])[2] is comm  # without a fault, the experiment leads
