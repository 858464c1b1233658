"""Derive MoE decode roofline inputs from observations and a GPU spec (the run that did best, its parallelism)."""

from __future__ import annotations

from typing import Any

from orchestrator import knowledge
from orchestrator.observations import Observations, RunObservation

def compute_peak(spec: knowledge.GpuSpec, caps: knowledge.ArchCaps | None, dtype: str) -> tuple[float | None, str]:
    """The tensor peak a dtype's GEMMs run at on this GPU (FP4 without FP4 MMA runs at the FP8 or BF16 peak;
    weight-only formats at the BF16 peak). Native MMA per compute capability comes from knowledge/dtypes.yaml."""
    t = knowledge.tensor_dtype(dtype)
    cc = caps.cc if caps is not None else spec.cc
    if t == "fp4" and knowledge.native_mma("fp4", cc) is False:
        t = "fp8" if knowledge.native_mma("fp8", cc) else "bf16"
    if t == "fp8" and knowledge.native_mma("fp8", cc) is False:
        t = "bf16"
    key = knowledge.tflops_key(t)
    return (spec.tflops.get(key) if key is not None else None), t


def weight_only(caps: knowledge.ArchCaps | None, dtype: str | None) -> bool:
    """Whether a quantized checkpoint runs weight-only on this architecture (no tensor cores for its dtype):
    FP4 without FP4 MMA, FP8 without FP8 MMA, and weight-only formats (W4A16) everywhere. Such kernels dequantize
    the weights and run BF16 activations."""
    info = knowledge.dtype_info(dtype)
    if info is not None and info.weight_only:
        return True
    if caps is None or not dtype:
        return False
    cls = knowledge.lowp_class(dtype)
    return cls is not None and knowledge.native_mma(cls, caps.cc) is False


def best_run(obs: Observations) -> RunObservation | None:
    runs = [r for r in obs.runs if r.decode_batch]
    if not runs:
        return None
    return max(runs, key=lambda r: r.total_tok_s or r.output_tok_s or 0.0)


def moe_args_from(obs: Observations, spec: knowledge.GpuSpec, caps: knowledge.ArchCaps | None,
                  run: RunObservation | None = None) -> tuple[dict[str, Any], RunObservation] | None:
    """Keyword arguments for `moe_decode_roofline`, or None when the observations lack a needed field."""
    m = obs.model
    if not (m and m.num_experts and m.top_k and m.hidden_size and m.moe_intermediate_size):
        return None
    run = run or best_run(obs)
    if run is None or not spec.mem_bw_gbs:
        return None
    dtype = (m.quantization or "bf16").lower()
    if knowledge.dtype_info(dtype) is None:
        dtype = "bf16"
    peak, _ = compute_peak(spec, caps, dtype)
    if not peak:
        return None
    layers = m.num_moe_layers or m.num_layers or 1
    expert_tp, ep = (1, run.ep) if run.ep > 1 else (run.tp, 1)
    extra = {"act_dtype": "bf16"} if weight_only(caps, dtype) else {}
    return {
        **extra,
        "batch": int(run.decode_batch or 1), "num_experts": m.num_experts, "top_k": m.top_k, "hidden": m.hidden_size,
        "intermediate": m.moe_intermediate_size, "dtype": dtype, "peak_tflops": peak, "bandwidth_gbs": spec.mem_bw_gbs,
        "tp": expert_tp, "ep": ep, "layers": max(1, layers // max(run.pp, 1)),
    }, run
