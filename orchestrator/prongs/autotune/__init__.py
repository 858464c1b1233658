"""Autotune inspection: what the autotuners on the GPU host chose and persisted (FlashInfer, TensorRT-LLM,
vLLM/SGLang tuned MoE configs, Triton, Inductor, TunableOp). Its findings come from the core rules
(`analysis/rules.py`: autotune_not_persisted, autotune_fallback, autotune_mismatch, moe_config_missing)."""

from orchestrator.prong import Prong

PRONG = Prong(
    name="autotune",
    agent="autotune-inspection",
    tools=("orchestrator.prongs.autotune.tool:AutotuneCachesTool",),
)
