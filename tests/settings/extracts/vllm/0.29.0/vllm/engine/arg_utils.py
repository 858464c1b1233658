# Small extract in the format of vllm/engine/arg_utils.py
from vllm.config import ModelConfig, get_field


class EngineArgs:
    """Arguments for vLLM engine."""

    enforce_eager: bool = ModelConfig.enforce_eager
    max_model_len: int | None = get_field(ModelConfig, "max_model_len")
    max_num_seqs: int | None = None
    cpu_offload_gb: float = 0
