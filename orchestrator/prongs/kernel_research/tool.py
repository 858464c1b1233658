"""Tool `kernel_inventory`: which kernels the installed libraries carry for this GPU architecture."""

from __future__ import annotations

from pydantic import BaseModel, Field

from orchestrator.render.summaries import summarize_kernels
from orchestrator.tools.base import Tool, ToolContext, ToolOutput
from orchestrator.tools.probes import kernels_call, probe_output, record_host_refusal, refused_python


class KernelInventoryInput(BaseModel):
    arch: str | None = Field(default=None, description="sm_XX to look for (default: GPU 0's compute capability).")
    python: str | None = Field(default=None, description="Interpreter path.")


class KernelInventoryTool(Tool):
    name = "kernel_inventory"
    on_host = True
    description = (
        "What installed libraries carry for this GPU architecture: per-arch tile candidates in sources, backends "
        "declared for the compute capability, FlashInfer JIT-cache arch dirs, archs compiled into .so (cuobjdump)."
    )
    Input = KernelInventoryInput
    timeout_s = 240.0

    async def run(self, args: KernelInventoryInput, ctx: ToolContext) -> ToolOutput:
        host = ctx.host()
        if (refused := refused_python(ctx, host, self.name, args.python)) is not None:
            return refused
        k = await kernels_call(host, args.arch, args.python or ctx.inputs.python)
        record_host_refusal(ctx, self.name, args.python or ctx.inputs.python, k)
        return probe_output(k, summarize_kernels(k), host)
