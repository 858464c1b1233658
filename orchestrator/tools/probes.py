"""Probe tools shared by several prongs (GPU inventory, power, Python environment, log scan), and the helpers every
probe tool uses (a refused interpreter, one shared call per host and arguments, the output).

Each returns a compact summary as text (`orchestrator/render/summaries.py`) and the probe model as `data` (untrusted:
it carries host content).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from orchestrator.hosts.base import Host
from orchestrator.prongs.autotune.probe import collect_autotune_caches, expert_shape_from_observations
from orchestrator.probes.gpu import INVENTORY_KEY, collect_gpu_inventory, gpu_inventory
from orchestrator.prongs.kernel_research.probe import collect_kernel_inventory
from orchestrator.probes.logscan import scan_logs
from orchestrator.probes.results import ProbeModel
from orchestrator.probes.power import sample_power
from orchestrator.probes.pyenv import collect_python_env, pyenv_key
from orchestrator.knowledge import log_signatures
from orchestrator.probes.interpreter import name_refusal
from orchestrator.probes.session import shared, start
from orchestrator.render.summaries import (
    summarize_gpus, summarize_logs, summarize_power, summarize_pyenv,
)
from orchestrator.tools.base import Tool, ToolContext, ToolFailure, ToolOutput, ToolRegistry

if TYPE_CHECKING:
    from orchestrator.inputs import RunInputs
    from orchestrator.settings import Settings

POWER_INTERVAL_S = 0.5
"""Seconds between power samples when the call does not say (PowerSampleInput's default)."""


# --- shared probe calls: one run per host and arguments (probes/session.py); the prefetch uses the same keys ---------


def _power(host: Host, duration_s: float, interval_s: float, *, prefetch: bool = False) -> Any:
    key = ("power_sample", float(duration_s), float(interval_s))
    call = (start if prefetch else shared)
    return call(host, key, lambda: sample_power(host, duration_s=duration_s, interval_s=interval_s), once=True)


def _python_env(host: Host, python: str | None, *, prefetch: bool = False) -> Any:
    return (start if prefetch else shared)(host, pyenv_key(python), lambda: collect_python_env(host, python))


def autotune_call(host: Host, python: str | None, device_name: str | None, shape: dict[str, Any] | None,
              extra_paths: list[str], *, prefetch: bool = False) -> Any:
    key = ("autotune_caches", python, device_name, repr(sorted((shape or {}).items())), tuple(extra_paths))
    return (start if prefetch else shared)(host, key, lambda: collect_autotune_caches(
        host, python, device_name=device_name, expert_shape=shape, extra_paths=extra_paths))


def kernels_call(host: Host, arch: str | None, python: str | None, *, prefetch: bool = False) -> Any:
    return (start if prefetch else shared)(host, ("kernel_inventory", arch, python),
                                           lambda: collect_kernel_inventory(host, arch=arch, python=python))


def default_probe_calls(inputs: "RunInputs", settings: "Settings", host: Host, tools: set[str]) -> list[Any]:
    """Zero-argument coroutines that start each named probe tool's default call (as an offline plan's `args: {}`
    makes it) on the run's host, for `orchestrator.prefetch`."""
    python = inputs.python
    calls: list[Any] = []
    if python and name_refusal(python) is not None:  # the tools refuse it (and record why): nothing to prefetch
        tools = tools - {"python_env", "autotune_caches", "kernel_inventory"}
    if "gpu_inventory" in tools:
        calls.append(lambda: start(host, INVENTORY_KEY, lambda: collect_gpu_inventory(host), once=True))
    if "power_sample" in tools:
        calls.append(lambda: _power(host, settings.power_sample_s, POWER_INTERVAL_S, prefetch=True))
    if "python_env" in tools:
        calls.append(lambda: _python_env(host, python, prefetch=True))
    if "autotune_caches" in tools:
        shape = shape_of(inputs)
        calls.append(lambda: autotune_call(host, python, None, shape, [], prefetch=True))
    if "kernel_inventory" in tools:
        calls.append(lambda: kernels_call(host, None, python, prefetch=True))
    if "resource_account" in tools:
        from orchestrator.prongs.resource_account.tool import prefetch_call

        calls.append(lambda: prefetch_call(host, settings.account_sample_s))
    return calls


def probe_output(model: ProbeModel, text: str, host: Host) -> ToolOutput:
    return ToolOutput(text=text, data=model.model_dump(mode="json"), untrusted=True, host=host.name)


def refused_python(ctx: ToolContext, host: Host, tool: str, python: str | None) -> ToolOutput | None:
    """A model-named interpreter that is not one is refused (and recorded) before anything runs."""
    if not python:
        return None
    why = name_refusal(python)
    if why is None:
        return None
    ctx.refuse(tool, python, why)
    return ToolOutput(text=f"refused by the read-only policy: {why}", is_error=True, host=host.name)


def record_host_refusal(ctx: ToolContext, tool: str, python: str | None, model: ProbeModel) -> None:
    """An interpreter refused on the host (not there, not a python) is a policy refusal too."""
    reason = getattr(model, "reason", None) or ""
    if not model.available and python and reason.startswith(f"interpreter {python!r}"):
        ctx.refuse(tool, python, reason)


# --- tools ---------------------------------------------------------------------------------------------------------


class GpuInventoryInput(BaseModel):
    pass


class GpuInventoryTool(Tool):
    name = "gpu_inventory"
    on_host = True
    description = (
        "GPUs on the investigated host from nvidia-smi: count, names, compute capability, driver/CUDA, memory, power "
        "draw vs limit, SM clocks vs max, utilization, throttle reasons, and topology (NVLink vs PCIe)."
    )
    Input = GpuInventoryInput

    async def run(self, args: GpuInventoryInput, ctx: ToolContext) -> ToolOutput:
        host = ctx.host()
        inv = await gpu_inventory(host)
        return probe_output(inv, summarize_gpus(inv), host)


class PowerSampleInput(BaseModel):
    duration_s: float | None = Field(default=None, gt=0, le=30, description="How long to watch (default: settings).")
    interval_s: float = Field(default=0.5, gt=0.05, le=5, description="Seconds between samples.")


class PowerSampleTool(Tool):
    name = "power_sample"
    on_host = True
    description = "Sample power draw, SM clock and utilization of every GPU for a few seconds (read-only, no load)."
    Input = PowerSampleInput

    async def run(self, args: PowerSampleInput, ctx: ToolContext) -> ToolOutput:
        host = ctx.host()
        duration = args.duration_s or ctx.settings.power_sample_s
        p = await _power(host, duration, args.interval_s)
        return probe_output(p, summarize_power(p), host)


class PythonEnvInput(BaseModel):
    python: str | None = Field(default=None, description="Interpreter path (default: --python, else a running server's).")


class PythonEnvTool(Tool):
    name = "python_env"
    on_host = True
    description = (
        "Versions of torch (CUDA, arch list), triton, flashinfer, vllm, sglang, tensorrt_llm, CUTLASS and deep_gemm "
        "under the serving interpreter, and which interpreter was used."
    )
    Input = PythonEnvInput

    async def run(self, args: PythonEnvInput, ctx: ToolContext) -> ToolOutput:
        host = ctx.host()
        if (refused := refused_python(ctx, host, self.name, args.python)) is not None:
            return refused
        env = await _python_env(host, args.python or ctx.inputs.python)
        record_host_refusal(ctx, self.name, args.python or ctx.inputs.python, env)
        return probe_output(env, summarize_pyenv(env), host)


def shape_of(inputs: "RunInputs") -> dict[str, Any] | None:
    try:
        return expert_shape_from_observations(inputs.parsed_observations())
    except Exception:  # observations are validated at the CLI; a bad one must not break the probe
        return None


class LogScanInput(BaseModel):
    paths: list[str] = Field(default_factory=list, description="Log files on the host (default: the run's --log paths).")


class LogScanTool(Tool):
    name = "log_scan"
    on_host = True
    description = "Match server log files on the host against known-issue signatures; returns matching lines with numbers."
    Input = LogScanInput

    async def run(self, args: LogScanInput, ctx: ToolContext) -> ToolOutput:
        host = ctx.host()
        paths = args.paths or list(ctx.inputs.logs)
        if not paths:
            raise ToolFailure("no log files to scan: pass paths, or run with --log PATH")
        s = await scan_logs(host, paths, log_signatures())
        return probe_output(s, summarize_logs(s), host)


def register(registry: ToolRegistry) -> None:
    """Add the shared probe tools (each prong's own are in its record, orchestrator/prongs/)."""
    for tool in (GpuInventoryTool(), PowerSampleTool(), PythonEnvTool(), LogScanTool()):
        registry.add(tool)
