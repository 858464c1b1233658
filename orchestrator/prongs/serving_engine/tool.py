"""The serving-engine tool: which engines run on the host, their effective configuration, metrics and log state."""

from __future__ import annotations


from pydantic import BaseModel, Field

from orchestrator.prongs.serving_engine.probe import engine_report
from orchestrator.render.summaries import summarize_engines
from orchestrator.tools.base import Tool, ToolContext, ToolOutput


class EngineConfigInput(BaseModel):
    paths: list[str] = Field(default_factory=list, description=(
        "Engine logs or launch scripts on the host (default: the run's --log paths)."))
    metrics: bool = Field(default=True, description="Fetch the engine's /metrics over loopback on the host.")


class EngineConfigTool(Tool):
    name = "engine_config"
    on_host = True
    description = (
        "Find the serving engines on the host (vLLM, SGLang, TensorRT-LLM, TGI: running processes, else launch scripts "
        "and logs) and report each one's EFFECTIVE configuration with where every value came from (flag, config file, "
        "log, or the engine's default): TP/PP/DP/EP, CUDA graphs / enforce_eager, attention backend configured and "
        "selected, KV cache dtype and size, max running requests, prefill token budget, chunked prefill, prefix "
        "caching, quantization, scheduler policy; the allowlisted env (VLLM_*, NCCL_*, ...); its Prometheus /metrics "
        "(KV usage, preemptions, running/waiting, TTFT/ITL histograms) and its log state (preemptions, graph capture, "
        "default MoE configs, stats lines). Read-only."
    )
    Input = EngineConfigInput

    async def run(self, args: EngineConfigInput, ctx: ToolContext) -> ToolOutput:
        host = ctx.host()
        paths = args.paths or list(ctx.inputs.logs)
        r = await engine_report(host, paths, metrics=args.metrics)
        return ToolOutput(text=summarize_engines(r), data=r.model_dump(mode="json"), untrusted=True, host=host.name)
