# Small extract in the format of tensorrt_llm/llmapi/llm_args.py (test input for scripts/harvest_settings.py)
from typing import Optional

from pydantic import Field


class KvCacheConfig(StrictBaseModel):
    enable_block_reuse: bool = Field(default=True, description="Controls if KV cache blocks can be reused for different requests.")
    free_gpu_memory_fraction: Optional[float] = Field(default=0.9, description="The fraction of GPU memory fraction that should be allocated for the KV cache.")


class CudaGraphConfig(StrictBaseModel):
    max_batch_size: int = Field(default=0, description="Maximum batch size for CUDA graphs.")


class TorchLlmArgs(BaseLlmArgs):
    kv_cache_config: KvCacheConfig = Field(default_factory=KvCacheConfig, description="KV cache config.")
    cuda_graph_config: Optional[CudaGraphConfig] = Field(default_factory=CudaGraphConfig, description="CUDA graph config.")
    disable_overlap_scheduler: bool = Field(default=False, description="Disable the overlap scheduler.")
