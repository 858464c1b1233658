# --- environment allowlist (orchestrator/probes/scripts/_environ.py): sent after the prelude with the scripts that
# read other processes' environments (node, engine, settings), so they share one list; its secret patterns
# (SECRET_NAME, SECRET_VALUE) are the prelude's. stdlib only, Python >= 3.8.

# What of a process's environment may leave the host (node and engine probes; one list): the engines', PyTorch's,
# CUDA's and the interconnect's own variables, never a name or a value that looks like a secret.
ENV_PREFIXES = ("VLLM_", "SGLANG_", "SGL_", "TRTLLM_", "TLLM_", "TORCH_", "TORCHINDUCTOR_", "PYTORCH_", "CUDA_", "NCCL_",
                "TRITON_", "FLASHINFER_", "DG_", "TGI_", "NVSHMEM_", "UCX_")
ENV_EXACT = ("ATTENTION", "PREFIX_CACHING", "USE_PREFIX_CACHING", "MAX_BATCH_PREFILL_TOKENS", "MAX_BATCH_TOTAL_TOKENS",
             "MAX_CONCURRENT_REQUESTS", "NUM_SHARD", "QUANTIZE", "CUDA_GRAPHS", "KV_CACHE_DTYPE", "MAX_INPUT_TOKENS",
             "MAX_TOTAL_TOKENS", "MODEL_ID")


def keep_env(name, value=""):
    """Whether an environment variable may leave the host (the allowlist above, no secret-looking name or value)."""
    if len(name) > 100 or SECRET_NAME.search(name) or SECRET_VALUE.search(value):
        return False
    return name.startswith(ENV_PREFIXES) or name in ENV_EXACT


# --- end of environment allowlist -------------------------------------------------------------------------
