# --- environment allowlist (orchestrator/probes/scripts/_environ.py): sent after the prelude with the scripts that
# read other processes' environments (node, engine), so they share one list. stdlib only, Python >= 3.8.
import re

# What of a process's environment may leave the host (node and engine probes; one list): the engines', PyTorch's,
# CUDA's and the interconnect's own variables, never a name or a value that looks like a secret.
ENV_PREFIXES = ("VLLM_", "SGLANG_", "SGL_", "TRTLLM_", "TLLM_", "TORCH_", "TORCHINDUCTOR_", "PYTORCH_", "CUDA_", "NCCL_",
                "TRITON_", "FLASHINFER_", "DG_", "TGI_", "NVSHMEM_", "UCX_")
ENV_EXACT = ("ATTENTION", "PREFIX_CACHING", "USE_PREFIX_CACHING", "MAX_BATCH_PREFILL_TOKENS", "MAX_BATCH_TOTAL_TOKENS",
             "MAX_CONCURRENT_REQUESTS", "NUM_SHARD", "QUANTIZE", "CUDA_GRAPHS", "KV_CACHE_DTYPE", "MAX_INPUT_TOKENS",
             "MAX_TOTAL_TOKENS", "MODEL_ID")
# A name part that says "secret" (HF_TOKEN, VLLM_API_KEY), not one that merely contains the letters
# (MAX_NUM_BATCHED_TOKENS, NCCL_IB_PKEY); and words that say it anywhere in the name (VLLM_SECRETKEY).
SECRET_NAME = re.compile(r"(^|_)(TOKEN|PASS|KEY|APIKEY|AUTH|SESSION|SIGNATURE)(_|$)"
                         r"|SECRET|PASSW|CREDENTIAL|PRIVATE|COOKIE", re.I)
SECRET_VALUE = re.compile(r"hf_[A-Za-z0-9]{8,}|sk-[A-Za-z0-9_\-]{8,}|(?:AKIA|ASIA)[A-Z0-9]{12,}|gh[pousr]_[A-Za-z0-9]{8,}"
                          r"|xox[bpase]-|-----BEGIN|://[^/\s:@]+:[^/\s@]+@|eyJ[A-Za-z0-9_\-]{10,}\.")


def keep_env(name, value=""):
    """Whether an environment variable may leave the host (the allowlist above, no secret-looking name or value)."""
    if len(name) > 100 or SECRET_NAME.search(name) or SECRET_VALUE.search(value):
        return False
    return name.startswith(ENV_PREFIXES) or name in ENV_EXACT


# --- end of environment allowlist -------------------------------------------------------------------------
