# Small extract in the format of vllm/envs.py (test input for scripts/harvest_settings.py)
import os
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    VLLM_ENABLE_V1_MULTIPROCESSING: bool = True
    VLLM_ALLREDUCE_USE_FLASHINFER: bool = False
    VLLM_CACHE_ROOT: str = os.path.expanduser("~/.cache/vllm")

environment_variables: dict[str, Callable[[], Any]] = {
    # If set, enable multiprocessing in LLM for the V1 code path.
    "VLLM_ENABLE_V1_MULTIPROCESSING": lambda: bool(
        int(os.getenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1"))
    ),
    # Whether to use FlashInfer's fused all-reduce.
    "VLLM_ALLREDUCE_USE_FLASHINFER": lambda: bool(
        int(os.getenv("VLLM_ALLREDUCE_USE_FLASHINFER", "0"))
    ),
    "VLLM_CACHE_ROOT": lambda: os.path.expanduser(
        os.getenv("VLLM_CACHE_ROOT", os.path.join("~", ".cache", "vllm"))
    ),
}
