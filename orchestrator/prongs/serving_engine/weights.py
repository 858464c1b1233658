"""The dtype of the served weights: the observations' quantization, the engine's --quantization, or the model's name
(read by the serving floors and by the KV-cache fit)."""

from __future__ import annotations

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.prongs.serving_engine.models import EngineInstance

# Weight storage -> (roofline dtype for bytes, tensor dtype for the compute peak).
_WEIGHTS = {"fp8": ("fp8", "fp8"), "fp8_w8a8": ("fp8", "fp8"), "modelopt": ("fp8", "fp8"), "nvfp4": ("nvfp4", "fp4"),
            "modelopt_fp4": ("nvfp4", "fp4"), "mxfp4": ("mxfp4", "fp4"), "awq": ("fp4", "bf16"),
            "awq_marlin": ("fp4", "bf16"), "gptq": ("fp4", "bf16"), "gptq_marlin": ("fp4", "bf16"),
            "w4a16": ("fp4", "bf16"), "int4": ("fp4", "bf16"), "int8": ("int8", "bf16"), "bf16": ("bf16", "bf16"),
            "fp16": ("fp16", "fp16"), "auto": ("bf16", "bf16")}


def weight_dtype(v: EvidenceView, eng: EngineInstance | None, model_name: str | None) -> tuple[str, str, str]:
    """(bytes dtype, compute dtype, where it came from) of the weights: the observations' or the engine's
    quantization, else the model's name."""
    obs_q, _ = v.workload_dtype()
    cands = [(obs_q, "the observations' quantization")]
    if eng is not None:
        cands.append((eng.value("quantization"), "the engine's --quantization"))
    name = (model_name or "").lower()
    for tag in ("nvfp4", "mxfp4", "fp8", "awq", "gptq", "int4"):
        if tag in name.replace("-", "").replace("_", "") or tag in name:
            cands.append((tag, f"the model name {model_name!r}"))
            break
    for q, where in cands:
        if q and str(q).lower() in _WEIGHTS:
            b, c = _WEIGHTS[str(q).lower()]
            return b, c, where
    return "bf16", "bf16", "no quantization named: BF16 weights assumed"
