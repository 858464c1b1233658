"""The narrow-dtype-vs-bf16 rule: a shortfall against the byte advantage is a finding; a full delivery is context."""

from __future__ import annotations

from orchestrator.prongs.tensor_core_specs.arithmetic import gemm_bytes
from orchestrator.prongs.tensor_core_specs.rules import _dtype_speedup_findings
from orchestrator.observations import parse_observations
from orchestrator.prongs.tensor_core_specs.models import GemmPoint, GemmSweep

OBS = parse_observations({"model": {"num_experts": 64, "top_k": 8, "hidden_size": 4096, "moe_intermediate_size": 1024,
                                    "num_layers": 32, "quantization": "fp8"},
                          "runs": [{"tp": 1, "batch": 128}]})  # 16 tokens per expert


def sweep(fp8_ms: float) -> GemmSweep:
    common = dict(shape="up", m=16, n=2048, k=4096, flops=2 * 16 * 2048 * 4096)
    pts = [GemmPoint(dtype="bf16", ms=0.010, tflops=26.8, gbps=1700, bytes=gemm_bytes(16, 2048, 4096, "bf16"), **common),
           GemmPoint(dtype="fp8", ms=fp8_ms, tflops=26.8, gbps=1700, bytes=gemm_bytes(16, 2048, 4096, "fp8"), **common)]
    return GemmSweep(host="h", gpu_name="G", device="cuda", points=pts, dtypes=["bf16", "fp8"])


def test_fp8_delivering_little_of_its_byte_advantage_is_a_kernel_finding():
    (f,) = _dtype_speedup_findings("ev-1.1", sweep(0.0080), OBS, "", 0.0)
    assert f.id == "fp8-vs-bf16-at-decode" and f.data["speedup"] == 1.25
    assert f.recommendations and not f.secondary and "delivers" in f.claim


def test_fp8_delivering_its_byte_advantage_is_context_without_recommendations():
    (f,) = _dtype_speedup_findings("ev-1.1", sweep(0.0052), OBS, "", 0.0)
    assert f.data["speedup"] > 1.9 and f.secondary and not f.recommendations


def test_no_bf16_reference_no_finding():
    s = sweep(0.005)
    s.points = [p for p in s.points if p.dtype == "fp8"]
    assert _dtype_speedup_findings("ev-1.1", s, OBS, "", 0.0) == []
