"""Arithmetic of the measurement probes: GEMM FLOPs, bytes, roofline fractions; all-reduce bandwidth; per-token times.

Pure functions over numbers and the models of `prongs/tensor_core_specs/models.py`; no I/O. Units: times in seconds unless a
name says ms, bandwidth in bytes/s unless a name says GB/s or TB/s (decimal: 10^9, 10^12).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel

from orchestrator import knowledge
from orchestrator.prongs.tensor_core_specs.models import ClockSample, CommPoint, CommSweep, GemmPoint, GemmSweep, Peaks

OUTPUT_BYTES = 2.0
"""Every timed GEMM writes bf16 (fp8/fp4 GEMMs too: `out_dtype=torch.bfloat16`); fp32 on the CPU sanity path."""

def dtype_of_quantization(quantization: str | None) -> str:
    """The GEMM dtype a model's quantization label implies (bf16 when unknown or weight-only): dtypes.yaml."""
    info = knowledge.dtype_info(quantization)
    if info is None or info.weight_only:
        return "bf16"
    return info.name


def gemm_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def gemm_bytes(m: int, n: int, k: int, dtype: str, out_bytes: float | None = None) -> float:
    """Minimum traffic of one GEMM: A (M×K) and B (K×N) in dtype read once, C (M×N) written once."""
    b = knowledge.bytes_per_element(dtype)
    ob = out_bytes if out_bytes is not None else (4.0 if dtype == "fp32" else OUTPUT_BYTES)
    return m * k * b + k * n * b + m * n * ob


def tflops(flops: float, seconds: float) -> float:
    return flops / seconds / 1e12


def gbps(nbytes: float, seconds: float) -> float:
    return nbytes / seconds / 1e9


def roofline_tflops(intensity: float, peak_tflops: float, bw_tbs: float) -> float:
    """The attainable TFLOPS at an arithmetic intensity: min(peak, intensity × bandwidth)."""
    return min(peak_tflops, intensity * bw_tbs)


def ridge(peak_tflops: float, bw_tbs: float) -> float:
    """FLOP/byte where the memory roof meets the compute roof."""
    return peak_tflops / bw_tbs


def roofline_time_s(m: int, n: int, k: int, dtype: str, peak_tflops: float, bw_tbs: float) -> float:
    """Best-case time of one GEMM: the larger of its compute time at peak and its traffic time at full bandwidth."""
    return max(gemm_flops(m, n, k) / (peak_tflops * 1e12), gemm_bytes(m, n, k, dtype) / (bw_tbs * 1e12))


class PointArithmetic(BaseModel):
    intensity: float
    peak_tflops: float | None = None
    roofline_tflops: float | None = None
    fraction_of_peak: float | None = None
    fraction_of_roofline: float | None = None
    bound: Literal["memory", "compute"] | None = None


def point_arithmetic(point: GemmPoint, peaks: Peaks | None) -> PointArithmetic:
    """Intensity, and where the peaks for the point's dtype are known, its fractions of peak and of its roofline."""
    intensity = point.flops / point.bytes
    peak = peaks.dense_tflops.get(point.dtype) if peaks else None
    bw = peaks.mem_bw_tbs if peaks else None
    if peak is None or bw is None:
        return PointArithmetic(intensity=intensity, peak_tflops=peak,
                               fraction_of_peak=(point.tflops / peak) if peak else None)
    roof = roofline_tflops(intensity, peak, bw)
    return PointArithmetic(
        intensity=intensity,
        peak_tflops=peak,
        roofline_tflops=roof,
        fraction_of_peak=point.tflops / peak,
        fraction_of_roofline=point.tflops / roof,
        bound="memory" if intensity * bw < peak else "compute",
    )


def window_stats(samples: list[ClockSample], t0: float | None,
                 t1: float | None) -> tuple[float | None, float | None, int]:
    """Mean power (W), mean SM clock (MHz) and the number of samples taken between t0 and t1."""
    if t0 is None or t1 is None:
        return None, None, 0
    inside = [s for s in samples if t0 <= s.t_s <= t1]

    def mean(vals: list[float]) -> float | None:
        return sum(vals) / len(vals) if vals else None

    return (mean([s.power_w for s in inside if s.power_w is not None]),
            mean([s.sm_clock_mhz for s in inside if s.sm_clock_mhz is not None]), len(inside))


def attach_gemm_arithmetic(sweep: GemmSweep, peaks: Peaks | None) -> GemmSweep:
    """A copy of the sweep whose points carry intensity, fractions, bound and the power/clock seen while they ran."""
    points = []
    for p in sweep.points:
        a = point_arithmetic(p, peaks)
        held = p.hold_t0_s is not None and p.hold_t1_s is not None
        power, clock, n = window_stats(sweep.samples, *((p.hold_t0_s, p.hold_t1_s) if held else (p.t0_s, p.t1_s)))
        frac = power / sweep.power_limit_w if held and power is not None and sweep.power_limit_w else None
        points.append(p.model_copy(update={**a.model_dump(), "mean_power_w": power, "mean_sm_clock_mhz": clock,
                                           "power_samples": n, "fraction_of_power_limit": frac}))
    return sweep.model_copy(update={"points": points, "peaks": peaks})


# --- all-reduce ------------------------------------------------------------------------------------------------


def algbw_gbps(nbytes: float, seconds: float) -> float:
    return nbytes / seconds / 1e9


def busbw_gbps(nbytes: float, seconds: float, n: int) -> float:
    """NCCL-tests' bus bandwidth of an all-reduce: algbw × 2(n−1)/n (0 for a group of one)."""
    return algbw_gbps(nbytes, seconds) * 2.0 * (n - 1) / n


def attach_comm_arithmetic(sweep: CommSweep) -> CommSweep:
    points = []
    for p in sweep.points:
        s = p.ms / 1e3
        points.append(p.model_copy(update={
            "algbw_gbps": algbw_gbps(p.bytes, s) if s > 0 else None,
            "busbw_gbps": busbw_gbps(p.bytes, s, p.group_size) if s > 0 else None,
        }))
    return sweep.model_copy(update={"points": points})


def allreduce_seconds(points: list[CommPoint], group_size: int, nbytes: float) -> float | None:
    """Time of one all-reduce of nbytes in groups of group_size, interpolated log-log between measured sizes.

    Outside the measured range the nearest size is scaled linearly in bytes above it (bandwidth-bound) and held flat
    below it (latency-bound). None when that group size was not measured.
    """
    pts = sorted((p for p in points if p.group_size == group_size and p.ms > 0 and p.correct is not False),
                 key=lambda p: p.bytes)
    if not pts:
        return None
    if nbytes <= pts[0].bytes:
        return pts[0].ms / 1e3
    if nbytes >= pts[-1].bytes:
        return pts[-1].ms / 1e3 * nbytes / pts[-1].bytes
    for lo, hi in zip(pts, pts[1:]):
        if lo.bytes <= nbytes <= hi.bytes:
            if hi.bytes == lo.bytes:
                return lo.ms / 1e3
            f = (math.log(nbytes) - math.log(lo.bytes)) / (math.log(hi.bytes) - math.log(lo.bytes))
            return math.exp(math.log(lo.ms) + f * (math.log(hi.ms) - math.log(lo.ms))) / 1e3
    return None  # pragma: no cover - the loop covers the range


# --- per-token model times -------------------------------------------------------------------------------------


def tokens_per_expert(batch: int, top_k: int, num_experts: int) -> float:
    return batch * top_k / num_experts


def experts_touched(batch: int, top_k: int, num_experts: int) -> float:
    """Expected experts hit by a batch under uniform routing: E(1 − (1 − k/E)^B)."""
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** batch)


class StepCost(BaseModel):
    """Per decode step and per token, along one token's path through every layer."""

    batch: int
    layers: int
    message_bytes: float
    allreduces_per_step: int
    comm_s_per_step: float
    gemm_s_per_step: float
    gemm_scope: str
    """What the GEMM time counts (a lower bound: the listed GEMMs only)."""

    @property
    def comm_s_per_token(self) -> float:
        return self.comm_s_per_step / self.batch

    @property
    def gemm_s_per_token(self) -> float:
        return self.gemm_s_per_step / self.batch

    @property
    def dominant(self) -> Literal["communication", "gemm"]:
        return "communication" if self.comm_s_per_step > self.gemm_s_per_step else "gemm"


def tp_message_bytes(hidden: int, batch: int, elem_bytes: float = 2.0) -> float:
    """One TP all-reduce of decode: the hidden states of every sequence in the batch (bf16)."""
    return hidden * batch * elem_bytes


def step_cost(
    *,
    batch: int,
    tp: int,
    num_layers: int,
    hidden: int,
    allreduce_s: float,
    dtype: str,
    peak_tflops: float,
    bw_tbs: float,
    num_experts: int | None = None,
    top_k: int | None = None,
    moe_intermediate: int | None = None,
    intermediate: int | None = None,
    num_moe_layers: int | None = None,
    ep: int = 1,
) -> StepCost | None:
    """Communication against GEMM time per decode step for one configuration.

    TP pays 2 all-reduces per transformer layer (after attention and after the MLP). The GEMM time is the roofline
    time of the MLP/expert GEMMs of one GPU's shard (gate_up N=2I/tp K=H, down N=H K=I/tp) over all layers; attention
    and shared-expert GEMMs are left out, so it is a lower bound. None when the model's sizes are missing.
    """
    comm = 2 * num_layers * allreduce_s
    if num_experts and top_k and moe_intermediate:
        m = max(1, math.ceil(tokens_per_expert(batch, top_k, num_experts)))
        touched = experts_touched(batch, top_k, num_experts) / max(ep, 1)
        i_shard = max(1, moe_intermediate // tp)
        per_layer = touched * (roofline_time_s(m, 2 * i_shard, hidden, dtype, peak_tflops, bw_tbs)
                               + roofline_time_s(m, hidden, i_shard, dtype, peak_tflops, bw_tbs))
        layers = num_moe_layers or num_layers
        scope = (f"expert GEMMs only ({touched:.0f} experts touched per GPU, {m} token{'' if m == 1 else 's'} each, "
                 f"{layers} MoE layers); a lower bound")
    elif intermediate:
        i_shard = max(1, intermediate // tp)
        per_layer = (roofline_time_s(batch, 2 * i_shard, hidden, dtype, peak_tflops, bw_tbs)
                     + roofline_time_s(batch, hidden, i_shard, dtype, peak_tflops, bw_tbs))
        layers = num_layers
        scope = "MLP GEMMs only; a lower bound"
    else:
        return None
    return StepCost(
        batch=batch, layers=num_layers, message_bytes=tp_message_bytes(hidden, batch),
        allreduces_per_step=2 * num_layers, comm_s_per_step=comm, gemm_s_per_step=per_layer * layers,
        gemm_scope=scope,
    )
