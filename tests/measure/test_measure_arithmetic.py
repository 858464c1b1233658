"""The sweep arithmetic against hand-computed values (H200 datasheet peaks: bf16 989 TFLOPS, 4.8 TB/s)."""

from __future__ import annotations

import pytest

from orchestrator.prongs.tensor_core_specs import arithmetic as ar
from orchestrator.prongs.tensor_core_specs.models import CommPoint, CommSweep, GemmPoint, GemmSweep, Peaks, ClockSample

H200 = Peaks(gpu="NVIDIA H200", dense_tflops={"bf16": 989.0, "fp8": 1979.0}, mem_bw_tbs=4.8, source="test")


def test_flops_are_two_mnk():
    assert ar.gemm_flops(16, 4096, 7168) == 939_524_096


@pytest.mark.parametrize(
    "dtype,expected",
    [
        ("bf16", 16 * 7168 * 2 + 7168 * 4096 * 2 + 16 * 4096 * 2),  # 59_080_704
        ("fp8", 16 * 7168 + 7168 * 4096 + 16 * 4096 * 2),  # 29_605_888
    ],
)
def test_bytes_count_operands_in_dtype_and_bf16_output(dtype, expected):
    assert ar.gemm_bytes(16, 4096, 7168, dtype) == expected


def test_fp4_bytes_include_their_block_scales():
    # 1024x1024 operands: 2 * 1024^2 * (0.5 + 1/16) for NVFP4, (0.5 + 1/32) for MXFP4, plus the bf16 output.
    assert ar.gemm_bytes(1024, 1024, 1024, "nvfp4") == 1_179_648 + 2_097_152
    assert ar.gemm_bytes(1024, 1024, 1024, "mxfp4") == 1_114_112 + 2_097_152


def _point(m, n, k, dtype, ms):
    flops, nbytes = ar.gemm_flops(m, n, k), ar.gemm_bytes(m, n, k, dtype)
    return GemmPoint(shape="s", dtype=dtype, m=m, n=n, k=k, ms=ms, flops=flops, bytes=nbytes,
                     tflops=ar.tflops(flops, ms / 1e3), gbps=ar.gbps(nbytes, ms / 1e3), t0_s=1.0, t1_s=2.0)


def test_small_m_point_is_memory_bound_and_judged_against_bandwidth():
    p = _point(16, 4096, 7168, "bf16", 0.015)
    assert p.tflops == pytest.approx(62.6349397)
    assert p.gbps == pytest.approx(3938.7136)
    a = ar.point_arithmetic(p, H200)
    assert a.intensity == pytest.approx(15.90239, rel=1e-5)
    assert a.bound == "memory"
    assert a.roofline_tflops == pytest.approx(15.90239 * 4.8, rel=1e-5)
    # memory-bound: the fraction of the roofline is achieved bytes/s over the bandwidth
    assert a.fraction_of_roofline == pytest.approx(3938.7136 / 4800)
    assert a.fraction_of_peak == pytest.approx(62.6349397 / 989)


def test_large_m_point_is_compute_bound_and_judged_against_peak():
    p = _point(8192, 8192, 8192, "bf16", 1.5)
    a = ar.point_arithmetic(p, H200)
    assert a.bound == "compute"
    assert a.roofline_tflops == 989.0
    assert a.fraction_of_roofline == pytest.approx(2 * 8192**3 / 1.5e-3 / 1e12 / 989)
    assert ar.ridge(989.0, 4.8) == pytest.approx(206.04, rel=1e-4)


def test_unknown_peaks_leave_fractions_empty():
    p = _point(16, 4096, 7168, "nvfp4", 0.01)
    a = ar.point_arithmetic(p, H200)
    assert a.fraction_of_peak is None and a.fraction_of_roofline is None and a.bound is None


def test_attach_adds_power_and_clock_seen_while_the_point_ran():
    sweep = GemmSweep(points=[_point(16, 4096, 7168, "bf16", 0.015)], samples=[
        ClockSample(t_s=0.5, power_w=100, sm_clock_mhz=1000),
        ClockSample(t_s=1.2, power_w=300, sm_clock_mhz=1980),
        ClockSample(t_s=1.8, power_w=500, sm_clock_mhz=1800),
    ])
    out = ar.attach_gemm_arithmetic(sweep, H200)
    assert out.points[0].mean_power_w == 400 and out.points[0].mean_sm_clock_mhz == 1890
    assert out.peaks == H200 and out.points[0].bound == "memory"


def test_busbw_follows_nccl_tests_convention():
    # 1 MiB in 0.1 ms: algbw 10.48576 GB/s; 8 ranks: x 2*7/8
    assert ar.algbw_gbps(1_048_576, 1e-4) == pytest.approx(10.48576)
    assert ar.busbw_gbps(1_048_576, 1e-4, 8) == pytest.approx(18.35008)
    assert ar.busbw_gbps(1_048_576, 1e-4, 1) == 0.0
    sw = ar.attach_comm_arithmetic(CommSweep(points=[CommPoint(group_size=2, bytes=1_048_576, dtype="bf16", ms=0.1)]))
    assert sw.points[0].busbw_gbps == pytest.approx(10.48576)


def test_allreduce_time_interpolates_log_log_and_extrapolates_by_bytes():
    pts = [CommPoint(group_size=2, bytes=1024, dtype="bf16", ms=0.01),
           CommPoint(group_size=2, bytes=4096, dtype="bf16", ms=0.04)]
    assert ar.allreduce_seconds(pts, 2, 2048) == pytest.approx(2e-5)
    assert ar.allreduce_seconds(pts, 2, 512) == pytest.approx(1e-5)
    assert ar.allreduce_seconds(pts, 2, 8192) == pytest.approx(8e-5)
    assert ar.allreduce_seconds(pts, 4, 2048) is None


def test_moe_routing_counts():
    assert ar.tokens_per_expert(512, 8, 256) == 16.0
    assert ar.experts_touched(512, 8, 256) == pytest.approx(256, abs=1e-3)
    assert ar.experts_touched(1, 8, 256) == pytest.approx(8.0)


def test_step_cost_dense_hand_computed():
    # batch 8, TP2, 2 layers, hidden 1024, intermediate 4096, 10 us per all-reduce, bf16 at 1000 TFLOPS / 1 TB/s.
    c = ar.step_cost(batch=8, tp=2, num_layers=2, hidden=1024, allreduce_s=10e-6, dtype="bf16",
                     peak_tflops=1000, bw_tbs=1.0, intermediate=4096)
    assert c.comm_s_per_step == pytest.approx(40e-6)
    # gate_up (8 x 4096 x 1024) moves 8_470_528 B, down (8 x 1024 x 2048) 4_243_456 B: memory time dominates
    assert c.gemm_s_per_step == pytest.approx(2 * (8_470_528 + 4_243_456) / 1e12)
    assert c.dominant == "communication"
    assert c.comm_s_per_token == pytest.approx(5e-6)
    assert c.message_bytes == 1024 * 8 * 2


def test_step_cost_needs_model_sizes():
    assert ar.step_cost(batch=8, tp=2, num_layers=2, hidden=1024, allreduce_s=1e-5, dtype="bf16",
                        peak_tflops=1, bw_tbs=1) is None


def test_quantization_labels_map_to_gemm_dtypes():
    assert ar.dtype_of_quantization("NVFP4") == "nvfp4"
    assert ar.dtype_of_quantization("fp8") == "fp8"
    assert ar.dtype_of_quantization(None) == "bf16"
