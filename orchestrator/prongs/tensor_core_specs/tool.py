"""Tools `gemm_benchmark` and `comm_benchmark`: the measurement probes, refused unless the user asked for `--measure`.

Both put load on the GPU; production boxes are investigated load-free by default (--measure allows them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from orchestrator.prongs.tensor_core_specs.probe import run_comm_probe, run_gemm_probe
from orchestrator.render.summaries import comm_text, gemm_text
from orchestrator.tools.base import Tool, ToolContext, ToolFailure, ToolOutput

if TYPE_CHECKING:
    pass


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


class GemmBenchmark(Tool):
    name = "gemm_benchmark"
    on_host = True
    description = ("Time GEMMs on the investigated GPU over M=16..16384 for the model's expert shapes in bf16, fp8 "
                   "and FP4 where native; returns TFLOPS, GB/s, fraction of dense peak and of the roofline, power "
                   "and clocks. Loads the GPU: only available with --measure.")
    Input = GemmInput
    timeout_s = 900.0  # the probe bounds itself to its budget; this only guards a hung host

    async def run(self, args: GemmInput, ctx: ToolContext) -> ToolOutput:
        _refuse_unless_measure(ctx, self.name)
        host = ctx.host()
        budget = args.budget_s or ctx.settings.gemm_budget_s
        # an investigation measures GPUs: with none on the host the script says so before it imports torch
        params: dict = {"require_gpu": True}
        if args.n and args.k:
            params["shapes"] = [{"name": "requested", "n": args.n, "k": args.k}]
        sw = await run_gemm_probe(host, python=ctx.inputs.python,
                                  observations=ctx.inputs.parsed_observations(), budget_s=budget, params=params,
                                  measure_wait_s=ctx.settings.measure_wait_s)
        return ToolOutput(text=gemm_text(sw), data=sw.model_dump(mode="json"), untrusted=True, host=host.name)


class CommBenchmark(Tool):
    name = "comm_benchmark"
    on_host = True
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
                                  observations=ctx.inputs.parsed_observations(), budget_s=budget,
                                  measure_wait_s=ctx.settings.measure_wait_s, params={"require_gpu": True})
        return ToolOutput(text=comm_text(sw), data=sw.model_dump(mode="json"), untrusted=True, host=host.name)
