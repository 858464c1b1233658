"""The one environment allowlist the node and engine probes share (scripts/_environ.py keep_env)."""

from __future__ import annotations

from orchestrator.probes import scripts


def _keep_env():
    ns: dict = {}
    exec(compile(scripts.prelude() + scripts.environ(), "_environ.py", "exec"), ns)  # its patterns are the prelude's
    return ns["keep_env"]


def test_engine_and_interconnect_variables_pass_and_secrets_do_not():
    keep = _keep_env()
    for name in ("NCCL_IB_HCA", "NCCL_IB_PKEY", "VLLM_MAX_NUM_BATCHED_TOKENS", "UCX_TLS", "NVSHMEM_BOOTSTRAP",
                 "TGI_X", "MAX_BATCH_TOTAL_TOKENS", "TORCHINDUCTOR_CACHE_DIR"):
        assert keep(name, "1"), name
    for name in ("HF_TOKEN", "VLLM_API_KEY", "VLLM_SECRETKEY", "NCCL_PASSWORD", "TORCH_AUTH", "CUDA_PRIVATE_X",
                 "HOME", "PATH", "AWS_SECRET_ACCESS_KEY", "SGLANG_SESSION"):
        assert not keep(name, "1"), name
    for value in ("hf_abcdefghijkl", "sk-ant-0123456789", "https://user:pw@mirror/x", "-----BEGIN PRIVATE KEY",
                  "https://BareToken@mirror/x", "http://TOKEN@proxy:3128"):  # any userinfo is a credential
        assert not keep("VLLM_EXTRA", value), value  # an allowed name with a secret-looking value is dropped too


def test_no_probe_script_keeps_its_own_list_and_the_readers_get_the_shared_one():
    for name in ("node", "engine"):
        text = scripts._read(name)
        assert "ENV_PREFIXES = " not in text and "SECRET_NAME = " not in text, name
        assert "def keep_env(" in scripts.load(name), name
    assert "def keep_env(" not in scripts.load("caches")  # only the scripts that read environments carry it
