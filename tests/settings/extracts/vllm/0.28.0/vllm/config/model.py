# Small extract in the format of vllm/config/model.py
from dataclasses import field


class ModelConfig:
    enforce_eager: bool = False
    """Whether to always use eager-mode PyTorch."""
    max_model_len: int = field(default=None)
    """Model context length."""
