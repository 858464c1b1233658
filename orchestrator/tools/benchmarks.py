"""Tools `gemm_benchmark` and `comm_benchmark`: the measurement probes, refused unless the user asked for `--measure`.

Both put load on the GPU; production boxes are investigated load-free by default (DESIGN.md, Hosts and tools).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from orchestrator.probes.benchmarks import run_comm_probe, run_gemm_probe
from orchestrator.probes.measure_models import CommSweep, GemmSweep
from orchestrator.tools.base import Tool, ToolContext, ToolFailure, ToolOutput

if TYPE_CHECKING:
    from orchestrator.tools.base import ToolRegistry


class GemmInput(BaseModel):
    budget_s: float | None = Field(None, gt=0, le=600, description="Time budget in seconds (default: settings).")
    n: int | None = Field(None, gt=0, description="N of one extra shape to time (with k); default: the model's "
                                                  "expert shapes from the observations.")
    k: int | None = Field(None, gt=0, description="K of that shape.")


class CommInput(BaseModel):
    budget_s: float | None = Field(None, gt=0, le=600, description="Time budget in seconds (default: settings).")


def _refuse_unless_measure(ctx: ToolContext, name: str) -> None:
    if not ctx.inputs.measure:
        raise ToolFailure(f"{name} loads the GPU and runs only when the user passes --measure "
                          f"(or `investigate probe --{'gemm' if name.startswith('gemm') else 'comm'}`)")


def gemm_text(sw: GemmSweep) -> str:
    """A compact table of the sweep for the model."""
    if not sw.available:
        return f"GEMM sweep on {sw.host} skipped: {sw.reason}"
    head = (f"GEMM sweep on {sw.host}: {sw.gpu_name} (CC {sw.compute_cap}), torch {sw.torch_version}, "
            f"{len(sw.points)}/{sw.planned_points} points in {sw.elapsed_s} s")
    lines = [head]
    if sw.dtypes_skipped:
        lines.append("skipped: " + "; ".join(f"{k}: {v}" for k, v in sw.dtypes_skipped.items()))
    if sw.reason:
        lines.append(f"note: {sw.reason}")
    if sw.peaks:
        lines.append(f"peaks ({sw.peaks.source}): {sw.peaks.dense_tflops} TFLOPS, {sw.peaks.mem_bw_tbs} TB/s")
    lines.append("shape dtype M N K ms TFLOPS GB/s %peak %roofline bound W MHz")
    for p in sw.points:
        def f(x, fmt):
            return "-" if x is None else format(x, fmt)
        lines.append(f"{p.shape} {p.dtype} {p.m} {p.n} {p.k} {p.ms:.4f} {p.tflops:.1f} {p.gbps:.0f} "
                     f"{f(p.fraction_of_peak, '.1%')} {f(p.fraction_of_roofline, '.1%')} {p.bound or '-'} "
                     f"{f(p.mean_power_w, '.0f')} {f(p.mean_sm_clock_mhz, '.0f')}")
    for p in sw.points:
        if p.hold_s is not None:
            limit = f" of {sw.power_limit_w:.0f} W ({p.fraction_of_power_limit:.0%})" if (
                sw.power_limit_w and p.fraction_of_power_limit is not None) else ""
            power = (f"{p.mean_power_w:.0f} W{limit}, SM {p.mean_sm_clock_mhz:.0f} MHz over {p.power_samples} samples"
                     if p.mean_power_w is not None and p.mean_sm_clock_mhz is not None else "no power samples")
            lines.append(f"held {p.shape} {p.dtype} M={p.m} for {p.hold_s:.1f} s ({p.hold_calls} GEMMs, "
                         f"{p.hold_ms:.4f} ms each): {power}")
    for h in sw.holds_skipped:
        lines.append(f"not held: {h}")
    return "\n".join(lines)


def comm_text(sw: CommSweep) -> str:
    if not sw.available:
        return f"all-reduce sweep on {sw.host} skipped: {sw.reason}"
    lines = [f"all-reduce sweep on {sw.host}: {sw.backend}, world {sw.world_size}, groups {sw.group_sizes}, "
             f"torch {sw.torch_version}, nccl {sw.nccl_version}, {sw.elapsed_s} s"]
    if sw.reason:
        lines.append(f"note: {sw.reason}")
    lines.append("group bytes us algbw_GB/s busbw_GB/s correct")
    for p in sw.points:
        lines.append(f"{p.group_size}x{p.groups} {p.bytes} {p.ms * 1e3:.1f} {p.algbw_gbps or 0:.2f} "
                     f"{p.busbw_gbps or 0:.2f} {p.correct}")
    if sw.topology_raw:
        lines += ["nvidia-smi topo -m:", sw.topology_raw.rstrip()]
    return "\n".join(lines)


class GemmBenchmark(Tool):
    name = "gemm_benchmark"
    description = ("Time GEMMs on the investigated GPU over M=16..16384 for the model's expert shapes in bf16, fp8 "
                   "and FP4 where native; returns TFLOPS, GB/s, fraction of dense peak and of the roofline, power "
                   "and clocks. Loads the GPU: only available with --measure.")
    Input = GemmInput
    timeout_s = 900.0  # the probe bounds itself to its budget; this only guards a hung host

    async def run(self, args: GemmInput, ctx: ToolContext) -> ToolOutput:
        _refuse_unless_measure(ctx, self.name)
        host = ctx.host()
        budget = args.budget_s or ctx.settings.gemm_budget_s
        params = None
        if args.n and args.k:
            params = {"shapes": [{"name": "requested", "n": args.n, "k": args.k}]}
        sw = await run_gemm_probe(host, python=ctx.inputs.python,
                                  observations=ctx.inputs.parsed_observations(), budget_s=budget, params=params)
        return ToolOutput(text=gemm_text(sw), data=sw.model_dump(mode="json"), untrusted=True, host=host.name)


class CommBenchmark(Tool):
    name = "comm_benchmark"
    description = ("Measure all-reduce latency and bus bandwidth across the investigated host's GPUs (NCCL; gloo "
                   "across CPU processes without GPUs) for the decode message sizes and the TP group sizes of the "
                   "observations, with nvidia-smi topo -m. Loads the GPUs: only available with --measure.")
    Input = CommInput
    timeout_s = 900.0

    async def run(self, args: CommInput, ctx: ToolContext) -> ToolOutput:
        _refuse_unless_measure(ctx, self.name)
        host = ctx.host()
        budget = args.budget_s or ctx.settings.comm_budget_s
        sw = await run_comm_probe(host, python=ctx.inputs.python,
                                  observations=ctx.inputs.parsed_observations(), budget_s=budget)
        return ToolOutput(text=comm_text(sw), data=sw.model_dump(mode="json"), untrusted=True, host=host.name)


def register(registry: "ToolRegistry") -> None:
    registry.add(GemmBenchmark())
    registry.add(CommBenchmark())
