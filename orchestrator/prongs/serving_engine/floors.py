"""Serving latency against the roofline: prefill (TTFT) and decode (ITL/TPOT) apart, each with what bounds it.

Pure functions of (model shape, GPU peaks, parallelism, measured batch and lengths). The arithmetic:

- Prefill of L input tokens is one large GEMM pass: 2 x P_active x L FLOPs spread over TP x PP GPUs, against the
  dense tensor peak of the weight dtype; weights are read once. At L in the hundreds and above its intensity is
  far above the ridge: prefill is compute-bound, and the TTFT floor is the compute time of one prefill (queueing
  and chunking under load come on top).
- A decode step generates one token for each of B running requests: it reads every weight byte the step touches
  once (all of a dense model; for MoE the shared part plus the experts the batch routes to) plus the KV cache of
  the batch, and does 2 x P_active x B FLOPs. Its intensity is ~B x 2 / bytes-per-weight FLOP/B: below the ridge
  (memory-bound) until B reaches hundreds; the ITL floor is max(bytes / bandwidth, FLOPs / peak) per GPU. With TP
  each step also runs 2 all-reduces per layer (communication), and a small batch that is far above its floor with
  CUDA graphs off is launch-bound (latency).
A floor is a lower bound: what the measured latency cannot beat on this GPU; the ratio says how far off it runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from orchestrator.analysis.roofline import bytes_per_elem, experts_touched

LAUNCH_BOUND_RATIO = 3.0
"""A decode step this many times its memory floor, at a small batch, with CUDA graphs off: launch-bound."""
FAR_RATIO = 5.0
"""A phase this many times its roofline floor is not bound by that roof: the GPU work the floor counts is a fifth of
the time or less (well-run decode sits within 1.5-3x of its memory floor, prefill within 2x of its compute floor), so
the time goes elsewhere and the phase is never called compute- or memory-bound."""
BELOW_RATIO = 0.8
"""A phase measured under this share of its floor is not what the floor counts (floors are lower bounds at peak speed;
real kernels reach 50-90 % of them): no compute or memory bound can be read from it (the request account's
BELOW_FLOOR)."""
NEAR_RATIO = 3.0
"""A phase at least this far above its floor spends two thirds of its time outside the work the floor counts: on GPUs
that idle most of the window (the resource account), it is read as far (no compute or memory bound), since both
figures then say the time goes elsewhere."""


@dataclass
class ModelShape:
    total_params: float
    """Parameters streamed per step at full expert coverage."""
    active_params: float
    """Parameters each token goes through (= total for a dense model)."""
    num_experts: int | None = None
    top_k: int | None = None
    expert_params: float = 0.0
    """Parameters in routed experts (MoE only)."""
    source: str = ""


_SIZE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)[Bb](?![a-zA-Z])")
_ACTIVE = re.compile(r"[-_]A(\d+(?:\.\d+)?)[Bb]\b")


def shape_from_observations(model) -> ModelShape | None:
    """Parameters from the observations' model block: active_params_b, the layer shapes, or the name ("70B",
    "30B-A3B"). None when nothing gives a size."""
    if model is None:
        return None
    name = model.name or ""
    if model.hidden_size and model.num_layers and (model.intermediate_size or model.moe_intermediate_size):
        h, n = model.hidden_size, model.num_layers
        attn = 4 * h * h
        if model.num_experts and model.num_experts > 1 and model.moe_intermediate_size:
            e, k, i = model.num_experts, model.top_k or 1, model.moe_intermediate_size
            moe_layers = model.num_moe_layers or n
            expert = 3 * h * i
            dense_mlp = 3 * h * (model.intermediate_size or 0) * (n - moe_layers)
            total = n * attn + dense_mlp + moe_layers * e * expert
            active = n * attn + dense_mlp + moe_layers * k * expert
            return ModelShape(total, active, e, k, moe_layers * e * expert,
                              "layer shapes from the observations (attention ~4H^2, experts 3HI each)")
        total = n * (attn + 3 * h * (model.intermediate_size or 0))
        return ModelShape(total, total, source="layer shapes from the observations (attention ~4H^2, MLP 3HI)")
    if model.active_params_b:
        active = model.active_params_b * 1e9
        named = shape_from_name(name)
        total = max(named.total_params if named else active, active)
        return ModelShape(total, active, model.num_experts, model.top_k, expert_params=total - active,
                          source="active_params_b from the observations" + (" and the model name" if named else ""))
    return shape_from_name(name)


def shape_from_name(name: str | None) -> ModelShape | None:
    """"Llama-3.1-70B-Instruct" -> 70e9 dense; "Qwen3-30B-A3B" -> 30e9 total, 3e9 active."""
    if not name:
        return None
    act = _ACTIVE.search(name)
    rest = name.replace(act.group(0), "") if act else name
    m = _SIZE.search(rest)
    if not m:
        return None
    total = float(m.group(1)) * 1e9
    if act:
        return ModelShape(total, float(act.group(1)) * 1e9, expert_params=total - float(act.group(1)) * 1e9,
                          source=f"parameter count from the model name {name!r}")
    return ModelShape(total, total, source=f"parameter count from the model name {name!r}")


@dataclass
class PhaseFloor:
    phase: str
    """prefill | decode"""
    tokens: int
    """Prefill: input tokens of one request; decode: the batch (tokens per step)."""
    flops: float
    bytes: float
    intensity: float
    ridge: float
    bound: Literal["compute", "memory"]
    floor_ms: float
    compute_ms: float
    memory_ms: float


def _per_gpu(x: float, gpus: int) -> float:
    return x / max(gpus, 1)


def prefill_floor(shape: ModelShape, input_len: int, *, dtype: str, peak_tflops: float, bandwidth_gbs: float,
                  gpus: int = 1) -> PhaseFloor:
    """One request's prefill alone: FLOPs 2 x P_active x L, weights read once (split over the GPUs)."""
    b = bytes_per_elem(dtype)
    flops = _per_gpu(2.0 * shape.active_params * input_len, gpus)
    nbytes = _per_gpu(shape.total_params * b if shape.expert_params == 0 else
                      (shape.active_params + shape.expert_params * _touched_fraction(shape, input_len)) * b, gpus)
    return _floor("prefill", input_len, flops, nbytes, peak_tflops, bandwidth_gbs)


def _touched_fraction(shape: ModelShape, tokens: int) -> float:
    if not shape.num_experts or not shape.top_k:
        return 1.0
    return experts_touched(tokens, shape.num_experts, shape.top_k) / shape.num_experts


def decode_floor(shape: ModelShape, batch: int, *, dtype: str, peak_tflops: float, bandwidth_gbs: float,
                 gpus: int = 1, kv_bytes_per_token: float = 0.0, context_len: int = 0) -> PhaseFloor:
    """One decode step of `batch` tokens: touched weights + the batch's KV read once, 2 x P_active x B FLOPs."""
    b = bytes_per_elem(dtype)
    if shape.expert_params:
        dense = shape.total_params - shape.expert_params
        weights = (dense + shape.expert_params * _touched_fraction(shape, batch)) * b
    else:
        weights = shape.total_params * b
    kv = batch * context_len * kv_bytes_per_token
    nbytes = _per_gpu(weights + kv, gpus)
    flops = _per_gpu(2.0 * shape.active_params * batch, gpus)
    return _floor("decode", batch, flops, nbytes, peak_tflops, bandwidth_gbs)


def _floor(phase: str, tokens: int, flops: float, nbytes: float, peak_tflops: float, bw_gbs: float) -> PhaseFloor:
    if peak_tflops <= 0 or bw_gbs <= 0:
        raise ValueError("peak and bandwidth must be positive")
    compute = flops / (peak_tflops * 1e12) * 1e3
    memory = nbytes / (bw_gbs * 1e9) * 1e3
    ridge = peak_tflops * 1e12 / (bw_gbs * 1e9)
    intensity = flops / nbytes if nbytes else float("inf")
    return PhaseFloor(phase, tokens, flops, nbytes, intensity, ridge, "compute" if intensity >= ridge else "memory",
                      max(compute, memory), compute, memory)


@dataclass
class PhaseVerdict:
    phase: str
    measured_ms: float
    measured_label: str
    """e.g. "median ITL (vllm bench serve, concurrency 64)"."""
    floor: PhaseFloor
    ratio: float
    """measured / floor."""
    bound: Literal["compute", "memory", "latency", "communication"]
    """What bounds this phase at the measured batch."""
    reason: str


def question_phase(question: str) -> str | None:
    """Which phase a question asks about: prefill (TTFT, prompt processing), decode (ITL/TPOT, tokens/s per user),
    or None when it does not say."""
    q = question.lower()
    pre = re.search(r"\b(ttft|time to first token|first token|prefill|prompt processing|long prompts?|input tokens)\b", q)
    dec = re.search(r"\b(itl|tpot|inter[- ]token|decode|decoding|per[- ]token|tokens?/s per user|generation speed|"
                    r"output tokens?|streaming)\b", q)
    if pre and not dec:
        return "prefill"
    if dec and not pre:
        return "decode"
    return None


def judge_decode(measured_ms: float, label: str, floor: PhaseFloor, *, cuda_graphs: bool | None, tp: int,
                 nvlink: bool | None, far: float = FAR_RATIO) -> PhaseVerdict:
    ratio = measured_ms / floor.floor_ms if floor.floor_ms > 0 else float("inf")
    bound: Literal["compute", "memory", "latency", "communication"]
    if cuda_graphs is False and floor.tokens <= 64 and ratio >= LAUNCH_BOUND_RATIO:
        bound, reason = "latency", (f"{ratio:.1f}x its memory floor at batch {floor.tokens} with CUDA graphs off: "
                                    "each step launches every kernel from the CPU, so decode is launch-bound")
    elif tp > 1 and nvlink is False and ratio >= 2.0:
        bound, reason = "communication", (f"{ratio:.1f}x its floor at TP{tp} over PCIe: two all-reduces per layer "
                                          "per step cost more than the weight reads")
    elif ratio >= far:
        bound, reason = "latency", (f"{ratio:.1f}x its {floor.bound} floor at batch {floor.tokens}: the weight and KV "
                                    f"reads the floor counts are {100 / ratio:.0f} % of each step, so the step's time "
                                    "is spent elsewhere (the host's scheduling and launches, queueing, preemption and "
                                    "recomputation, communication), not in a memory or compute limit")
    else:
        bound = floor.bound
        reason = (f"intensity {floor.intensity:.0f} FLOP/B against a ridge of {floor.ridge:.0f}: "
                  + ("memory-bound (weights and KV streamed each step)" if bound == "memory" else "compute-bound"))
    return PhaseVerdict("decode", measured_ms, label, floor, ratio, bound, reason)


def judge_prefill(measured_ms: float, label: str, floor: PhaseFloor, far: float = FAR_RATIO) -> PhaseVerdict:
    ratio = measured_ms / floor.floor_ms if floor.floor_ms > 0 else float("inf")
    if ratio >= far:
        reason = (f"{ratio:.0f}x one prefill's {floor.bound} floor for {floor.tokens} prompt tokens: the prefill's GPU "
                  f"work is {100 / ratio:.1f} % of the TTFT, so the request waits elsewhere (queueing behind other "
                  "requests, chunked prefill interleaved with decode, tokenization or the host), not on a compute or "
                  "memory limit")
        return PhaseVerdict("prefill", measured_ms, label, floor, ratio, "latency", reason)
    reason = (f"{floor.tokens} prompt tokens at {floor.intensity:.0f} FLOP/B against a ridge of {floor.ridge:.0f}: "
              + ("compute-bound" if floor.bound == "compute" else "memory-bound (a short prompt)"))
    return PhaseVerdict("prefill", measured_ms, label, floor, ratio, floor.bound, reason)
