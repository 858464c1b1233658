"""Python environment of the serving interpreter: library versions, torch's CUDA and arch list."""

from __future__ import annotations

from typing import Any

from orchestrator.hosts.base import Host
from orchestrator.probes.kernels import resolve_interpreter
from orchestrator.probes.results import PythonEnv
from orchestrator.probes.runner import ProbeUnavailable, run_script

PACKAGES = [
    "torch", "triton", "pytorch-triton", "flashinfer-python", "flashinfer", "flashinfer-cubin", "flashinfer-jit-cache",
    "vllm", "sglang", "sgl-kernel", "tensorrt-llm", "tensorrt", "nvidia-cutlass", "nvidia-cutlass-dsl", "deep-gemm",
    "deep-ep", "transformers", "nvidia-nccl-cu12", "nvidia-nccl-cu13", "nvidia-cublas-cu12", "nvidia-cudnn-cu12",
    "cuda-python",
]
"""Distributions looked for (normalized names)."""


def env_from_output(data: dict[str, Any]) -> PythonEnv:
    """Pure: a PythonEnv from the pyenv script's output."""
    tv = data.get("torch_version_py") or {}
    arch = data.get("torch_arch") or {}
    env = PythonEnv(
        interpreter=data.get("interpreter"),
        python_version=data.get("python_version"),
        virtualenv=data.get("virtualenv"),
        packages=dict(data.get("packages") or {}),
        torch_cuda=tv.get("cuda") or arch.get("cuda"),
        torch_arch_list=list(arch.get("arch_list") or []),
    )
    if "torch" in env.packages and not env.torch_arch_list and arch.get("error"):
        env.reason = f"torch CUDA arch list unavailable: {arch['error'][:200]}"
    env.timings = {k: float(v) for k, v in (data.get("timings") or {}).items() if isinstance(v, (int, float))}
    return env


async def collect_python_env(host: Host, python: str | None = None) -> PythonEnv:
    """Versions of torch, triton, flashinfer, vllm, sglang, tensorrt_llm, CUTLASS, deep_gemm under the serving python."""
    try:
        interp = await resolve_interpreter(host, python)
        data = await run_script(host, interp.path, "pyenv", {"packages": PACKAGES, "import_torch": True,
                                                             "import_timeout_s": 30})
    except ProbeUnavailable as exc:
        return PythonEnv(host=host.name, available=False, reason=str(exc), interpreter=python,
                         interpreter_source="--python" if python else None)
    env = env_from_output(data)
    env.host = host.name
    env.interpreter_source = interp.source
    env.interpreters_seen = interp.seen
    env.commands = [f"{interp.path} - < pyenv.py"]
    return env
