# --- prelude (orchestrator/probes/scripts/_prelude.py): helpers every probe script shares, sent ahead of each one ---
# stdlib only, Python >= 3.8, read-only. One reviewed copy instead of drifting ones: a script never redefines these
# names (tests/probes/test_probe_scripts.py checks it).
import os
import re

# A server is recognized by its entry point, not by a word anywhere in its command line (grep, editors, tests).
MODULES = (("sglang.launch_server", "sglang"), ("sglang.srt", "sglang"), ("tensorrt_llm", "tensorrt_llm"),
           ("vllm.entrypoints", "vllm"), ("vllm.", "vllm"))
SCRIPTS = {"vllm": "vllm", "sglang": "sglang", "trtllm-serve": "tensorrt_llm", "trtllm-llmapi-launch": "tensorrt_llm"}


def server_kind(argv):
    """vllm / sglang / tensorrt_llm when argv starts one of their servers, else None."""
    for i, arg in enumerate(argv[:-1]):
        if arg == "-m":
            mod = argv[i + 1]
            for prefix, kind in MODULES:
                if mod.startswith(prefix):
                    return kind
    # the program itself, or the script a Python interpreter runs (`python3 /usr/bin/vllm serve`); never an argument
    # of another program (`grep vllm`)
    starts = argv[:2] if argv and os.path.basename(argv[0]).startswith("python") else argv[:1]
    for arg in starts:
        kind = SCRIPTS.get(os.path.basename(arg))
        if kind:
            return kind
    return None


def listdir(path):
    """Sorted names in a directory; [] when it cannot be listed (permissions, vanished)."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def size_of(path):
    """The file's size in bytes; None when it cannot be read (a missing size is not a zero size)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return None


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


# --- end of prelude ---------------------------------------------------------------------------------------------------
