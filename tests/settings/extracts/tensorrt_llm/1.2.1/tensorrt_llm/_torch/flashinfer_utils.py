# Small extract in the format of tensorrt_llm/_torch/flashinfer_utils.py
import os


def get_env_enable_pdl() -> bool:
    return os.environ.get("TRTLLM_ENABLE_PDL", "1") == "1"
