"""Roofline math for a GEMM and for MoE decode: pure functions of shapes, dtypes and a GPU's peaks."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from orchestrator import knowledge
from orchestrator.knowledge import UnknownDtype  # noqa: F401  (re-exported: callers catch it from here)


def bytes_per_elem(dtype: str) -> float:
    """Bytes per element including block-scale overhead, from the dtype table (knowledge/dtypes.yaml)."""
    return knowledge.bytes_per_element(dtype)


def activation_dtype(weight_dtype: str) -> str:
    """The activation dtype a weight format usually runs with (NVFP4 W4A4, weight-only formats BF16): dtypes.yaml."""
    return knowledge.activation_dtype(weight_dtype)


Bound = Literal["memory", "compute"]


class GemmRoofline(BaseModel):
    m: int
    n: int
    k: int
    dtype: str
    flops: float
    bytes: float
    intensity: float
    """FLOP per byte."""
    peak_tflops: float
    bandwidth_gbs: float
    ridge: float
    """FLOP per byte where the memory and compute roofs meet."""
    bound: Bound
    time_floor_us: float
    attainable_tflops: float
    """min(peak, intensity x bandwidth)."""


def gemm_roofline(
    m: int, n: int, k: int, dtype: str, peak_tflops: float, bandwidth_gbs: float,
    *, act_dtype: str | None = None, out_dtype: str = "bf16",
) -> GemmRoofline:
    """Roofline of C[M,N] = A[M,K] x W[N,K]: flops 2MNK, bytes NK*b_w + MK*b_a + MN*b_o."""
    if min(m, n, k) <= 0:
        raise ValueError("M, N and K must be positive")
    if peak_tflops <= 0 or bandwidth_gbs <= 0:
        raise ValueError("peak and bandwidth must be positive")
    b_w = bytes_per_elem(dtype)
    b_a = bytes_per_elem(act_dtype or dtype)
    b_o = bytes_per_elem(out_dtype)
    flops = 2.0 * m * n * k
    nbytes = n * k * b_w + m * k * b_a + m * n * b_o
    intensity = flops / nbytes
    ridge = peak_tflops * 1e12 / (bandwidth_gbs * 1e9)
    t_compute = flops / (peak_tflops * 1e12)
    t_memory = nbytes / (bandwidth_gbs * 1e9)
    return GemmRoofline(
        m=m, n=n, k=k, dtype=dtype, flops=flops, bytes=nbytes, intensity=intensity, peak_tflops=peak_tflops,
        bandwidth_gbs=bandwidth_gbs, ridge=ridge, bound="memory" if intensity < ridge else "compute",
        time_floor_us=max(t_compute, t_memory) * 1e6,
        attainable_tflops=min(peak_tflops, intensity * bandwidth_gbs * 1e9 / 1e12),
    )


class MoeDecodeRoofline(BaseModel):
    batch: int
    num_experts: int
    top_k: int
    hidden: int
    intermediate: int
    dtype: str
    tp: int
    ep: int
    layers: int
    peak_tflops: float
    bandwidth_gbs: float
    tokens_per_expert: float
    """B*k/E: the average M of each expert GEMM."""
    experts_touched: float
    """E*(1-(1-k/E)^B): experts with at least one token in a step (uniform routing)."""
    weight_bytes_per_layer: float
    """Expert weight bytes one GPU streams per MoE layer per step (gate+up and down of the touched experts)."""
    flops_per_layer: float
    intensity: float
    ridge: float
    bound: Bound
    time_floor_per_layer_us: float
    time_floor_per_step_ms: float
    tokens_per_s_ceiling: float
    """batch / step floor: the MoE GEMMs alone cannot do better."""
    tile_m: int
    tile_waste: float
    act_dtype: str | None = None
    """Activation dtype when it differs from the weights' usual pairing (weight-only kernels run BF16 activations)."""
    """Fraction of MMA rows wasted when tokens per expert are padded up to tile_m."""


def experts_touched(batch: int, num_experts: int, top_k: int) -> float:
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** batch)


def tile_waste(rows: float, tile_m: int) -> float:
    """Share of a tile_m-row MMA tile that does no useful work when only `rows` rows are real."""
    if rows <= 0:
        return 1.0
    import math

    padded = math.ceil(rows / tile_m) * tile_m
    return 1.0 - rows / padded


def moe_decode_roofline(
    *, batch: int, num_experts: int, top_k: int, hidden: int, intermediate: int, dtype: str,
    peak_tflops: float, bandwidth_gbs: float, tp: int = 1, ep: int = 1, layers: int = 1, tile_m: int = 16,
    act_dtype: str | None = None,
) -> MoeDecodeRoofline:
    """Per-GPU roofline of one decode step's MoE GEMMs.

    Each touched expert streams gate+up (2*I x H) and down (H x I) weights once; TP shards I over tp GPUs,
    EP splits the experts over ep GPUs. FLOPs are 2 x tokens routed x expert weight elements.
    """
    if min(batch, num_experts, top_k, hidden, intermediate, tp, ep, layers) <= 0:
        raise ValueError("batch, experts, top_k, hidden, intermediate, tp, ep, layers must be positive")
    b_w = bytes_per_elem(dtype)
    b_a = bytes_per_elem(act_dtype or activation_dtype(dtype))
    tpe = batch * top_k / num_experts
    touched = experts_touched(batch, num_experts, top_k)
    elems_per_expert = 3 * hidden * intermediate / tp
    touched_per_gpu = touched / ep
    w_bytes = touched_per_gpu * elems_per_expert * b_w
    routed_per_gpu = batch * top_k / ep
    flops = 2.0 * routed_per_gpu * elems_per_expert
    # activations in (gate/up: H per token, down: I/tp per token) and out (2I/tp + H per token), bf16 out
    act_bytes = routed_per_gpu * (hidden + intermediate / tp) * b_a + routed_per_gpu * (2 * intermediate / tp + hidden) * 2
    nbytes = w_bytes + act_bytes
    intensity = flops / nbytes
    ridge = peak_tflops * 1e12 / (bandwidth_gbs * 1e9)
    t = max(flops / (peak_tflops * 1e12), nbytes / (bandwidth_gbs * 1e9))
    step_ms = t * layers * 1e3
    return MoeDecodeRoofline(
        batch=batch, num_experts=num_experts, top_k=top_k, hidden=hidden, intermediate=intermediate, dtype=dtype,
        tp=tp, ep=ep, layers=layers, peak_tflops=peak_tflops, bandwidth_gbs=bandwidth_gbs,
        tokens_per_expert=tpe, experts_touched=touched, weight_bytes_per_layer=w_bytes,
        flops_per_layer=flops, intensity=intensity, ridge=ridge, bound="memory" if intensity < ridge else "compute",
        time_floor_per_layer_us=t * 1e6, time_floor_per_step_ms=step_ms,
        tokens_per_s_ceiling=batch / (step_ms / 1e3) if step_ms > 0 else 0.0,
        tile_m=tile_m, tile_waste=tile_waste(tpe, tile_m), act_dtype=act_dtype,
    )
