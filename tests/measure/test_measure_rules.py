"""The measurement rules on hand-built sweeps: decode-M efficiency, roofline distance, comm vs GEMM."""

from __future__ import annotations

from orchestrator.prongs.tensor_core_specs import arithmetic as ar
from orchestrator.prongs.tensor_core_specs.rules import measure_findings
from orchestrator.evidence import Evidence
from orchestrator.observations import parse_observations
from orchestrator.prongs.tensor_core_specs.models import CommPoint, CommSweep, GemmPoint, GemmSweep, Peaks

H200 = Peaks(gpu="NVIDIA H200", dense_tflops={"bf16": 989.0, "fp8": 1979.0}, mem_bw_tbs=4.8, source="datasheet")
OBS = parse_observations({
    "model": {"quantization": "bf16", "num_layers": 60, "num_experts": 256, "top_k": 8, "hidden_size": 7168,
              "moe_intermediate_size": 2048},
    "runs": [{"tp": 2, "concurrency": 512}],
})


def _point(m, n, k, dtype, ms):
    flops, nbytes = ar.gemm_flops(m, n, k), ar.gemm_bytes(m, n, k, dtype)
    return GemmPoint(shape="gate_up", dtype=dtype, m=m, n=n, k=k, ms=ms, flops=flops, bytes=nbytes,
                     tflops=ar.tflops(flops, ms / 1e3), gbps=ar.gbps(nbytes, ms / 1e3))


def _gemm_ev(decode_ms, large_ms=0.687195, eid="ev-3.1"):
    sweep = GemmSweep(device="cuda", gpu_name="NVIDIA H200", dtypes=["bf16"], points=[
        _point(16, 4096, 7168, "bf16", decode_ms), _point(8192, 4096, 7168, "bf16", large_ms)])
    sweep = ar.attach_gemm_arithmetic(sweep, H200)
    return Evidence(id=eid, agent_id="a", tool="gemm_benchmark", data=sweep.model_dump(mode="json"))


def _ids(findings):
    return [f.id for f in findings]


def test_decode_gemm_near_its_memory_roofline_says_weight_traffic_limits_it():
    # 59_080_704 B in 0.0148 ms = 3.99 TB/s: 83 % of 4.8 TB/s
    fs = measure_findings([_gemm_ev(0.0148)], OBS)
    assert "gemm-at-decode-m" in _ids(fs) and "gemm-memory-bound-near-roofline" in _ids(fs)
    assert "gemm-far-below-roofline" not in _ids(fs)
    main = next(f for f in fs if f.id == "gemm-at-decode-m")
    assert main.evidence == ["ev-3.1"]
    assert main.data["tokens_per_expert"] == 16 and main.bound == "memory"
    assert 0.82 < main.data["fraction_of_roofline"] < 0.84
    assert "16.0 tokens per expert" in main.claim and "memory-bound" in main.claim


def test_decode_gemm_far_below_roofline_blames_the_kernel():
    fs = measure_findings([_gemm_ev(0.06)], OBS)  # ~0.98 TB/s: 20 % of the roofline
    far = next(f for f in fs if f.id == "gemm-far-below-roofline")
    assert far.category == "kernel" and far.recommendations and far.evidence == ["ev-3.1"]
    assert "gemm-memory-bound-near-roofline" not in _ids(fs)


def test_large_m_efficiency_is_judged_against_the_dense_peak():
    good = measure_findings([_gemm_ev(0.0148)], None)  # 8192x4096x7168 in 0.687 ms = 700 TFLOPS, 71 %
    assert _ids(good) == ["gemm-best-efficiency"]
    assert "71%" in good[0].claim
    low = measure_findings([_gemm_ev(0.0148, large_ms=2.0)], None)  # 240 TFLOPS, 24 %
    assert _ids(low) == ["gemm-low-peak-efficiency"] and low[0].recommendations


def test_unavailable_or_error_sweeps_give_no_findings():
    skipped = Evidence(id="ev-1", agent_id="a", tool="gemm_benchmark",
                       data=GemmSweep(available=False, reason="no CUDA GPU", device="cpu").model_dump())
    error = Evidence(id="ev-2", agent_id="a", tool="gemm_benchmark", is_error=True, data={"kind": "gemm_sweep"})
    assert measure_findings([skipped, error], OBS) == []


def _comm_ev(ms_small, ms_large):
    pts = [CommPoint(group_size=2, bytes=1 << 20, dtype="bf16", ms=ms_small, correct=True),
           CommPoint(group_size=2, bytes=1 << 24, dtype="bf16", ms=ms_large, correct=True),
           CommPoint(group_size=1, bytes=1 << 20, dtype="bf16", ms=0.005, correct=True)]
    sw = ar.attach_comm_arithmetic(CommSweep(available=True, backend="nccl", world_size=2, devices=["NVIDIA H200"] * 2,
                                             points=pts))
    return Evidence(id="ev-4.1", agent_id="b", tool="comm_benchmark", data=sw.model_dump(mode="json"))


def test_fast_allreduce_leaves_the_gemms_dominant():
    # message 7168*512*2 = 7 MiB; ~30 us each, 120 per step = 3.6 ms vs ~ 60 layers x 256 experts of weight reads
    fs = measure_findings([_comm_ev(0.02, 0.06)], OBS)
    cmp_ = next(f for f in fs if f.id == "comm-vs-gemm")
    assert cmp_.data["dominant"] == "gemm" and "GEMMs dominate" in cmp_.claim
    assert cmp_.data["message_bytes"] == 7168 * 512 * 2 and cmp_.data["allreduces_per_step"] == 120
    assert cmp_.evidence == ["ev-4.1"] and not cmp_.recommendations
    measured = [f for f in fs if f.id == "comm-allreduce-measured"]
    assert [f.data["group_size"] for f in measured] == [2, 1]


def test_slow_allreduce_is_called_out_as_exceeding_the_gemms_best_case():
    fs = measure_findings([_comm_ev(2.0, 30.0), _gemm_ev(0.0148)], OBS)
    cmp_ = next(f for f in fs if f.id == "comm-vs-gemm")
    assert cmp_.data["dominant"] == "communication" and cmp_.recommendations
    assert cmp_.evidence == ["ev-4.1", "ev-3.1"]  # the GEMM sweep's peaks were used


def test_unmeasured_group_size_is_not_extrapolated():
    obs = parse_observations({**OBS.model_dump(exclude_none=True), "runs": [{"tp": 8, "concurrency": 512}]})
    assert "comm-vs-gemm" not in _ids(measure_findings([_comm_ev(0.02, 0.06)], obs))


def test_wrong_allreduce_sums_are_reported():
    ev = _comm_ev(0.02, 0.06)
    ev.data["points"][0]["correct"] = False
    assert "comm-allreduce-wrong-sum" in _ids(measure_findings([ev], None))



def test_allreduce_within_a_factor_of_two_of_the_gemm_floor_is_called_comparable():
    base = next(f for f in measure_findings([_comm_ev(0.02, 0.06)], OBS) if f.id == "comm-vs-gemm")
    # the counted time is the measured one minus the groups-of-one baseline: scale the measurements so that the
    # counted time equals the GEMM floor
    wanted = base.data["allreduce_s"] / base.data["ratio"] + base.data["harness_overhead_s"]
    scale = wanted / base.data["allreduce_raw_s"]
    cmp_ = next(f for f in measure_findings([_comm_ev(0.02 * scale, 0.06 * scale)], OBS) if f.id == "comm-vs-gemm")
    assert 0.5 < cmp_.data["ratio"] < 2 and cmp_.data["dominant"] == "comparable"
    assert "comparable" in cmp_.claim and cmp_.recommendations
