"""Rules read on hosts other than the seed case: each change with a positive and a negative case.

B200 (SM100: FP4 tensor cores, tcgen05), A100 (SM80: no FP8/FP4 tensor cores), H200 (SM90: FP8, no FP4),
RTX 5090 (SM120, one GPU); dense models; communication-bound experiments; power near the limit.
"""

from __future__ import annotations

from support.evidence import RTX, SEED_OBS, ev, inventory, no_caches, obs_ev, pyenv, seed_evidence

from orchestrator import knowledge
from orchestrator.knowledge.catalog import catalog
from orchestrator.analysis import agent_findings, synthesize
from orchestrator.analysis import rules as R
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.analysis.moe_inputs import moe_args_from
from orchestrator.analysis.roofline import moe_decode_roofline
from orchestrator.findings import AgentResult
from orchestrator.observations import Observations
from orchestrator.probes.results import AutotuneReport, CacheFile, GpuInfo, GpuInventory, LogMatch, LogScan

B200, A100, H200 = "NVIDIA B200", "NVIDIA A100-SXM4-80GB", "NVIDIA H200"
GLM_FP8 = {**SEED_OBS, "model": {**SEED_OBS["model"], "name": "GLM-FP8", "quantization": "fp8"}}
DENSE = {"model": {"name": "Llama-3.1-70B", "quantization": "fp8", "num_layers": 80, "hidden_size": 8192},
         "runs": [{"tp": 2, "concurrency": 64, "total_tok_s": 2000}]}
COMM = {**SEED_OBS, "runs": [{"tp": 8, "concurrency": 512, "total_tok_s": 40},
                             {"tp": 4, "pp": 2, "concurrency": 512, "total_tok_s": 88}],
        "gpu": {"power_w": 140, "power_limit_w": 600, "utilization_pct": 100}}


def view(*evs):
    return EvidenceView(list(evs))


def ids(found):
    return {f.id for f in found}


def text(found):
    return " ".join(f.claim + " " + " ".join(f.recommendations) for f in found)


def log(*pairs):
    return LogScan(files=["/var/log/vllm.log"], matches=[
        LogMatch(path="/var/log/vllm.log", line_no=i + 1, line=line, signature_id=sig) for i, (sig, line) in enumerate(pairs)])


MARLIN_LINE = ("vllm-fp4-marlin-fallback", "GPU does not have native support for FP4 computation, using Marlin")


# --- known-issue log lines are read for the GPU they were seen on -------------------------------------------------


def test_sm120_log_issue_keeps_its_documented_cause_on_sm120():
    f = R.catalog_signals(view(ev("e1", inventory()), ev("e2", log(MARLIN_LINE))))
    assert f[0].title == "FP4 checkpoint falls back to Marlin on SM120"
    assert "checked only compute capability 10" in f[0].claim and f[0].confidence == 0.8


def test_sm120_log_issue_on_b200_does_not_claim_the_sm120_cause():
    f = R.catalog_signals(view(ev("e1", inventory(B200, "10.0", nvlink=True)), ev("e2", log(MARLIN_LINE))))
    t = text(f)
    assert "SM120" not in f[0].title and "weight-only Marlin" in f[0].title
    assert "does not apply to CC 10.0" in t and "Upgrade vLLM to a release with the SM120" not in t
    assert "e1" in f[0].evidence  # the claim about this GPU cites the inventory


def test_issue_without_an_elsewhere_reading_does_not_fire_off_its_ccs():
    line = ("flashinfer-sm89-tactics-on-sm120",  # flashinfer PR #4013's line: only the SM120 entry knows it
            "RuntimeError: [MXFP8 SM120 gemm Runner] Failed to initialize cutlass MXFP8 gemm on sm120. Error: Error Internal")
    on = R.catalog_signals(view(ev("e1", inventory()), ev("e2", log(line))))
    off = R.catalog_signals(view(ev("e1", inventory(H200, "9.0")), ev("e2", log(line))))
    assert on[0].confidence == 0.8 and not on[0].secondary
    assert [f.id for f in off] == ["unclassified-log-lines"]  # the documented cause concerns SM120 only: on CC 9.0 the line is not that issue, only an unexplained line


def test_generic_log_fix_texts_do_not_name_sm12x():
    for e in catalog():
        if e.signals and not e.scope.ccs:  # applies on every GPU (or on those outside SM12x): its advice must too
            assert not any("SM12" in fx for fx in e.all_fixes()), e.id


# --- configuration risks follow the workload's dtype ----------------------------------------------------------------


def test_fp4_moe_risks_apply_to_fp4_workloads_only():
    fp4 = R.catalog_signals(view(ev("e1", inventory()), ev("e2", pyenv()), obs_ev("e3")))
    fp8 = R.catalog_signals(view(ev("e1", inventory()), ev("e2", pyenv()), obs_ev("e3", GLM_FP8)))
    assert "vllm-b12x-sm120" in ids(fp4)
    assert "vllm-b12x-sm120" not in ids(fp8) and "flashinfer-sm120-fp8xfp4-moe-single-tile" not in ids(fp8)


def test_fp8xfp4_single_tile_risk_not_raised_for_nvfp4_w4a4():
    assert "flashinfer-sm120-fp8xfp4-moe-single-tile" not in ids(
        R.catalog_signals(view(ev("e1", inventory()), ev("e2", pyenv()), obs_ev("e3"))))
    mx = {**SEED_OBS, "model": {**SEED_OBS["model"], "quantization": "mxfp4"}}
    assert "flashinfer-sm120-fp8xfp4-moe-single-tile" in ids(
        R.catalog_signals(view(ev("e1", inventory()), ev("e2", pyenv()), obs_ev("e3", mx))))


# --- weight-only FP8/FP4 where the tensor cores lack the dtype -----------------------------------------------------


def test_fp8_on_a100_runs_weight_only():
    f = R.fp4_without_tensor_cores(view(ev("e1", inventory(A100, "8.0", 4, nvlink=True)), ev("e2", pyenv()),
                                        obs_ev("e3", GLM_FP8)))
    assert ids(f) == {"fp8-no-native-mma"} and "no FP8 tensor cores" in f[0].claim and "312" in f[0].claim
    assert "BF16/BF16" not in f[0].claim and f[0].category == "kernel"


def test_fp8_on_h200_and_fp4_on_b200_run_natively():
    assert R.fp4_without_tensor_cores(view(ev("e1", inventory(H200, "9.0")), obs_ev("e3", GLM_FP8))) == []
    assert R.fp4_without_tensor_cores(view(ev("e1", inventory(B200, "10.0")), obs_ev("e3"))) == []


def test_fp4_on_h200_names_bf16_ceiling_and_fp8_only_as_upper_bound():
    f = R.fp4_without_tensor_cores(view(ev("e1", inventory(H200, "9.0")), obs_ev("e3")))
    assert "BF16 peak (989" in f[0].claim and "FP8 peak (1,979" in f[0].claim


def test_w4a16_is_not_claimed_as_fp4():
    w4a16 = {**SEED_OBS, "model": {**SEED_OBS["model"], "quantization": "w4a16"}}
    assert R.fp4_without_tensor_cores(view(ev("e1", inventory(A100, "8.0")), obs_ev("e3", w4a16))) == []


def test_weight_only_roofline_counts_bf16_activations():
    obs = Observations.model_validate(GLM_FP8)
    a100, h200 = knowledge.gpu_spec(A100), knowledge.gpu_spec(H200)
    wo, _ = moe_args_from(obs, a100, knowledge.arch_caps("8.0"))
    native, _ = moe_args_from(obs, h200, knowledge.arch_caps("9.0"))
    assert wo["act_dtype"] == "bf16" and "act_dtype" not in native
    r_wo, r_nat = moe_decode_roofline(**wo), moe_decode_roofline(**{**wo, "act_dtype": None})
    assert r_wo.intensity < r_nat.intensity  # wider activations, same weights: lower FLOP/B


# --- MoE decode advice is for this GPU ------------------------------------------------------------------------------


def test_moe_backends_recommended_are_this_gpus():
    b200 = text(R.moe_decode_memory_bound(view(ev("e1", inventory(B200, "10.0", nvlink=True)), obs_ev("e3"))))
    sm120 = text(R.moe_decode_memory_bound(view(*seed_evidence())))
    a100 = text(R.moe_decode_memory_bound(view(ev("e1", inventory(A100, "8.0", 4)), obs_ev("e3", GLM_FP8))))
    assert "trtllm-gen" in b200 and "b12x" not in b200 and "SM12x" not in b200
    assert "b12x" in sm120 and "trtllm-gen" not in sm120
    assert "Marlin FP8" in a100 and "b12x" not in a100 and "DeepGEMM" not in a100


def test_ep_advice_needs_more_than_one_gpu():
    one = {**SEED_OBS, "runs": [{"tp": 1, "concurrency": 64, "total_tok_s": 3000}]}
    single = R.moe_decode_memory_bound(view(ev("e1", inventory("NVIDIA GeForce RTX 5090", "12.0", 1)), obs_ev("e3", one)))
    multi = R.moe_decode_memory_bound(view(*seed_evidence()))
    assert "expert-parallel" not in text(single) and "expert-parallel" in text(multi)


def test_near_the_memory_floor_says_tuning_has_little_left():
    fast = {**SEED_OBS, "runs": [{"tp": 8, "concurrency": 512, "total_tok_s": 15000}]}
    near = R.moe_decode_memory_bound(view(ev("e1", inventory()), obs_ev("e3", fast)))
    far = R.moe_decode_memory_bound(view(*seed_evidence()))
    assert "close to the floor" in near[0].claim and "close to the floor" not in far[0].claim


# --- fused-MoE tuned configs only where the Triton fused MoE runs --------------------------------------------------


def _stale(e: int = 256):
    return AutotuneReport(persisted_any=True, device_name=H200, files=[CacheFile(
        format="vllm_fused_moe", path=f"/c/E={e},N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8.json",
        metadata_mismatch=["triton_version"], expert_shape={"E": e, "N": 256, "dtype": "fp8_w8a8"})])


def test_stale_moe_config_matters_for_this_moe_models_fp8_only():
    h = ev("e1", inventory(H200, "9.0"))
    assert "tuned-config-stale" in ids(R.autotune_mismatch(view(h, ev("e2", _stale()), obs_ev("e3", GLM_FP8))))
    assert R.autotune_mismatch(view(h, ev("e2", _stale()), obs_ev("e3", DENSE))) == []       # dense model
    assert R.autotune_mismatch(view(h, ev("e2", _stale(128)), obs_ev("e3", GLM_FP8))) == []  # other model's E
    assert R.autotune_mismatch(view(h, ev("e2", _stale()), obs_ev("e3"))) == []              # NVFP4 MoE kernels


def test_missing_moe_config_is_secondary_for_fp4_and_absent_for_dense():
    rep = ev("e2", AutotuneReport(tuned_config_for_device=False, device_name=RTX))
    fp8 = R.moe_config_missing(view(ev("e1", inventory()), rep, obs_ev("e3", GLM_FP8)))
    fp4 = R.moe_config_missing(view(ev("e1", inventory()), rep, obs_ev("e3")))
    assert fp8[0].confidence == 0.7 and fp8[0].recommendations
    assert fp4[0].secondary and not fp4[0].recommendations and "matters little" in fp4[0].claim
    assert R.moe_config_missing(view(ev("e1", inventory()), rep, obs_ev("e3", DENSE))) == []


def test_autotune_not_persisted_is_secondary_on_weight_only_paths():
    a = R.autotune_not_persisted(view(ev("e1", inventory(A100, "8.0")), ev("e2", pyenv()), ev("e4", no_caches(A100)),
                                      obs_ev("e3", GLM_FP8)))
    b = R.autotune_not_persisted(view(ev("e1", inventory(H200, "9.0")), ev("e2", pyenv()), ev("e4", no_caches(H200)),
                                      obs_ev("e3", GLM_FP8)))
    assert a[0].secondary and "heuristics" in a[0].claim
    assert not b[0].secondary and b[0].confidence == 0.8


def test_rules_that_dropped_a_finding_with_fuller_context_win_over_an_agents_partial_view():
    evs = [ev("ev-1", inventory(H200, "9.0")), ev("ev-2", _stale()), obs_ev("ev-3", DENSE)]
    partial = agent_findings(evs[:2], None)  # the autotune agent never saw the observations
    assert "tuned-config-stale" in ids(partial)
    d = synthesize("why slow?", Observations.model_validate(DENSE), evs,
                   [AgentResult(agent_id="a2", name="autotune", status="ok", findings=partial)])
    assert not any("MoE" in c.title for c in d.causes)
    model_made = R.Finding(id="llm-1", claim="model-made finding", evidence=["ev-1"], data={"title": "by a model"})
    d2 = synthesize("q", None, evs, [AgentResult(agent_id="a2", name="x", status="ok", findings=[model_made])])
    assert any(c.title == "by a model" for c in d2.causes)


# --- communication-bound experiments --------------------------------------------------------------------------------


def test_comm_advice_follows_the_topology():
    pcie = text(R.parallelism_scaling(view(ev("e1", inventory()), obs_ev("e3", COMM))))
    nvl = text(R.parallelism_scaling(view(ev("e1", inventory(B200, "10.0", nvlink=True)), obs_ev("e3", COMM))))
    assert "across PCIe" in pcie and "NVLink" not in pcie.split("Profile")[0]
    assert "across PCIe" not in nvl and "NVLink" in nvl


def test_low_power_with_comm_pattern_points_at_communication_not_gemms():
    comm = R.power_vs_limit(view(ev("e1", inventory()), obs_ev("e3", COMM)))
    gemm = R.power_vs_limit(view(*seed_evidence()))
    assert "communication" in comm[0].title and "nsys" in text(comm) and "ncu" not in text(comm)
    assert "communication" not in gemm[0].title and "ncu" in text(gemm)


def test_communication_bound_ranks_gemm_side_findings_behind():
    evs = [ev("ev-1", inventory()), ev("ev-2", pyenv()), ev("ev-4", no_caches()), obs_ev("ev-3", COMM)]
    d = synthesize("why does TP8 scale badly?", Observations.model_validate(COMM), evs, [])
    assert d.bound == "communication"
    # the GEMM side ranks behind (or, past the five ranked causes, under also noticed)
    gemm_side = ("memory-bound", "tcgen05", "GEMMs sit")
    first_gemm = next((i for i, c in enumerate(d.causes) if any(g in c.title for g in gemm_side)), len(d.causes))
    assert first_gemm > 0 and any(g in a.title for a in d.causes[first_gemm:] + d.also_noticed for g in gemm_side)
    assert all("communication" in c.title.lower() or "pcie" in c.title.lower() or "power" in c.title.lower()
               for c in d.causes[:first_gemm])
    seed = synthesize("q", Observations.model_validate(SEED_OBS), seed_evidence(), [])
    assert seed.bound == "memory" and seed.causes[1].title.startswith("Decode MoE GEMMs")


# --- power near the limit, dense models, verdict text ---------------------------------------------------------------


def _inv_clocks(cur: float):
    return GpuInventory(host="b", gpus=[GpuInfo(index=i, name=B200, compute_cap="10.0", power_draw_w=980,
                                                power_limit_w=1000, utilization_pct=100, sm_clock_mhz=cur,
                                                sm_clock_max_mhz=1965) for i in range(8)])


def test_power_limited_reads_the_inventory_clocks():
    hot = {"gpu": {"power_w": 980, "power_limit_w": 1000, "utilization_pct": 100}}
    capped = R.power_vs_limit(view(ev("e1", _inv_clocks(1500)), obs_ev("e3", hot)))
    full = R.power_vs_limit(view(ev("e1", _inv_clocks(1965)), obs_ev("e3", hot)))
    assert "held down" in capped[0].claim and "e1" in capped[0].evidence
    assert "not throttled" in full[0].claim


def test_dense_model_gets_no_moe_advice_and_a_clean_verdict():
    evs = [ev("ev-1", inventory(H200, "9.0", 2, nvlink=True)), ev("ev-2", pyenv()), ev("ev-4", _stale()),
           obs_ev("ev-3", DENSE)]
    d = synthesize("why is Llama slow?", Observations.model_validate(DENSE), evs, [])
    assert "MoE" not in d.verdict and "  " not in d.verdict
    unknown = synthesize("q", None, [ev("ev-1", inventory(H200, "9.0")), ev("ev-2", _stale())], [])
    assert unknown.bound == "unknown" and "limits throughput. Ranked causes" in unknown.verdict


def _node_health(enforced: float, reasons: dict[str, bool]):
    from orchestrator.prongs.node_health.models import GpuHealth, NodeHealth

    return NodeHealth(host="gpu-box", gpus=[GpuHealth(index=i, name=B200, utilization_pct=100, power_draw_w=980,
                                                      power_enforced_w=enforced, power_default_w=1000,
                                                      clocks_event=dict(reasons)) for i in range(8)])


def test_a_gpu_at_its_default_limit_under_full_load_is_not_a_cause():
    """"Near the power limit: compute-heavy, clocks may be capped" was ranked in 56 staged diagnoses (first in six):
    a busy GPU at its default limit with only the software power cap active runs as designed, and its advice
    (check the clocks-event reasons) asked for what node health had read. A lowered limit or another reason keeps
    it a cause."""
    hot = {"gpu": {"power_w": 980, "power_limit_w": 1000, "utilization_pct": 100}}
    cap = {"sw_power_cap": True, "gpu_idle": False, "hw_slowdown": False}
    (f,) = R.power_vs_limit(view(ev("e1", _inv_clocks(1500)), ev("e2", _node_health(1000, cap)), obs_ev("e3", hot)))
    assert f.informational and f.recommendations == [] and f.sets_bound is None and "e2" in f.evidence
    assert "by design" in f.claim and "held down" not in f.claim
    for node in (_node_health(800, cap), _node_health(1000, {**cap, "hw_slowdown": True})):
        (g,) = R.power_vs_limit(view(ev("e1", _inv_clocks(1500)), ev("e2", node), obs_ev("e3", hot)))
        assert not g.informational and g.recommendations and g.sets_bound is not None
