"""GEMM fidelity: the decode-sized points the question is about are held long enough to see their power and clock."""

from __future__ import annotations

from orchestrator.prongs.tensor_core_specs.arithmetic import attach_gemm_arithmetic
from orchestrator.observations import parse_observations
from orchestrator.prongs.tensor_core_specs.probe import HOLD_S, gemm_params
from orchestrator.prongs.tensor_core_specs.models import ClockSample, GemmPoint, GemmSweep
from orchestrator.render.summaries import gemm_text

OBS = parse_observations({
    "model": {"name": "Qwen3-30B-A3B-FP8", "quantization": "fp8", "num_layers": 48, "num_experts": 128, "top_k": 8,
              "hidden_size": 2048, "moe_intermediate_size": 768},
    "runs": [{"tp": 2, "batch": 8}, {"tp": 2, "batch": 600}],
})


def test_the_decode_points_of_the_question_are_held():
    p = gemm_params(OBS, 60)
    # batch 8: 8*8/128 = 0.5 -> 16; batch 600: 37.5 -> 48
    assert p["hold_m"] == [16, 48] and p["hold_s"] == HOLD_S >= 1.0
    assert set(p["hold_m"]) <= set(p["m"])
    plain = gemm_params(None, 60)
    assert plain["hold_m"] == [16]  # nothing said about decode: the smallest M


def _point(**kw) -> GemmPoint:
    base = dict(shape="gate_up", dtype="bf16", m=16, n=1536, k=2048, ms=0.01, flops=1e8, bytes=6.4e6, tflops=10.0,
                gbps=640.0, t0_s=1.00, t1_s=1.02)
    return GemmPoint(**{**base, **kw})


def test_power_and_clock_of_a_held_point_come_from_its_hold():
    samples = [ClockSample(t_s=t / 10, power_w=100.0, sm_clock_mhz=1980.0) for t in range(0, 10)]  # idle before
    samples += [ClockSample(t_s=1.0 + t / 10, power_w=420.0 + t, sm_clock_mhz=1900.0) for t in range(1, 11)]
    sweep = GemmSweep(power_limit_w=700.0, samples=samples, points=[
        _point(hold_t0_s=1.05, hold_t1_s=2.05, hold_s=1.0, hold_calls=90000, hold_ms=0.0105),
        _point(m=4096, t0_s=0.21, t1_s=0.23),  # not held: its own 20 ms window (no sample in it)
    ])
    out = attach_gemm_arithmetic(sweep, None)
    held, plain = out.points
    assert held.power_samples == 10 and held.mean_power_w == 425.5 and held.mean_sm_clock_mhz == 1900.0
    assert abs(held.fraction_of_power_limit - 425.5 / 700) < 1e-9
    assert plain.power_samples == 0 and plain.mean_power_w is None and plain.fraction_of_power_limit is None
    text = gemm_text(out.model_copy(update={"available": True}))
    assert "held gate_up bf16 M=16 for 1.0 s (90000 GEMMs, 0.0105 ms each): 426 W of 700 W (61%), SM 1900 MHz" in text
