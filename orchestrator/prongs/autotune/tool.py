"""Tool `autotune_caches`: what the autotuners on the host chose and persisted."""

from __future__ import annotations

from pydantic import BaseModel, Field

from orchestrator.hosts.policy import extra_path_refusal
from orchestrator.hosts.resolve import check_on_host
from orchestrator.render.summaries import summarize_autotune
from orchestrator.tools.base import Tool, ToolContext, ToolOutput
from orchestrator.tools.probes import autotune_call, probe_output, record_host_refusal, refused_python, shape_of


class AutotuneCachesInput(BaseModel):
    python: str | None = Field(default=None, description="Interpreter path (default: --python, else a running server's).")
    device_name: str | None = Field(default=None, description="GPU name to match configs against (default: nvidia-smi).")
    extra_paths: list[str] = Field(default_factory=list, description="More cache files or directories to inspect.")


class AutotuneCachesTool(Tool):
    name = "autotune_caches"
    on_host = True
    description = (
        "Inventory every autotune cache and tuned config (FlashInfer, TensorRT-LLM, vLLM/SGLang fused-MoE, vLLM's "
        "FlashInfer cache, Triton, Inductor, TunableOp): what exists, ops/shapes/tactics, fallback tactic -1, "
        "metadata mismatches, and whether a tuned config exists for this exact GPU and expert shape."
    )
    Input = AutotuneCachesInput

    async def run(self, args: AutotuneCachesInput, ctx: ToolContext) -> ToolOutput:
        host = ctx.host()
        if (refused := refused_python(ctx, host, self.name, args.python)) is not None:
            return refused
        if args.extra_paths:  # walked and parsed on the host: never a credential directory
            why = next((w for w in map(extra_path_refusal, args.extra_paths) if w), None)
            if why is None:
                why, resolved = await check_on_host(host, ["cat"], list(args.extra_paths))
                why = why or next((extra_path_refusal(real) for kind, real in resolved
                                   if kind != "n" and extra_path_refusal(real)), None)
            if why is not None:
                ctx.refuse(self.name, " ".join(args.extra_paths), why)
                return ToolOutput(text=f"refused by the read-only policy: {why}", is_error=True, host=host.name)
        shape = shape_of(ctx.inputs)
        r = await autotune_call(host, args.python or ctx.inputs.python, args.device_name, shape, args.extra_paths)
        record_host_refusal(ctx, self.name, args.python or ctx.inputs.python, r)
        return probe_output(r, summarize_autotune(r), host)
