"""Python environment of the serving interpreter: library versions, torch's CUDA and arch list."""

from __future__ import annotations

from typing import Any

from orchestrator.hosts.base import Host
from orchestrator.probes.interpreter import Interpreter
from orchestrator.prongs.kernel_research.probe import resolve_interpreter
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


PARAMS: dict[str, Any] = {"packages": PACKAGES, "import_torch": True, "import_timeout_s": 30}
"""The pyenv script's parameters (the same whether it runs alone or chained in the host survey)."""
TIMEOUT_S = 120.0


def pyenv_key(python: str | None) -> tuple[str, str | None]:
    """The probe session's key of the Python environment under `python` (the host survey fills it for None)."""
    return ("python_env", python)


def env_from(host: Host, python: str | None, interp: Interpreter | None,
             data: dict[str, Any] | ProbeUnavailable) -> PythonEnv:
    """The PythonEnv of the pyenv script's JSON under `interp`, or unavailable with why there is none."""
    if isinstance(data, ProbeUnavailable) or interp is None:
        return PythonEnv(host=host.name, available=False, reason=str(data), interpreter=python,
                         interpreter_source="--python" if python else None)
    env = env_from_output(data)
    env.host = host.name
    env.interpreter_source = interp.source
    env.interpreters_seen = interp.seen
    env.commands = [f"{interp.path} -I -S - < pyenv.py"]
    if interp.gap:
        env.reason = "; ".join(filter(None, [env.reason, interp.gap]))
    return env


async def collect_python_env(host: Host, python: str | None = None) -> PythonEnv:
    """Versions of torch, triton, flashinfer, vllm, sglang, tensorrt_llm, CUTLASS, deep_gemm under the serving python."""
    try:
        interp = await resolve_interpreter(host, python)
        data = await run_script(host, interp.path, "pyenv", interp.script_params(PARAMS), timeout_s=TIMEOUT_S,
                                isolated=True)
    except ProbeUnavailable as exc:
        return env_from(host, python, None, exc)
    return env_from(host, python, interp, data)
