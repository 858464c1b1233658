"""The serving-engine tool: which engines run on the host, their effective configuration, metrics and log state."""

from __future__ import annotations


from pydantic import BaseModel, Field

from orchestrator.probes.engine import engine_report
from orchestrator.probes.engine_cmdline import ENGINE_LABEL
from orchestrator.probes.engine_models import EngineInstance, EngineReport
from orchestrator.tools.base import Tool, ToolContext, ToolOutput, ToolRegistry


# The settings an engineer reads first, in table order, with their labels.
CONFIG_ROWS = [
    ("tp", "tensor parallel (TP)"), ("pp", "pipeline parallel (PP)"), ("dp", "data parallel (DP)"),
    ("ep", "expert parallel (EP)"), ("cuda_graphs", "CUDA graphs"), ("enforce_eager", "enforce_eager"),
    ("cuda_graph_max_bs", "largest captured batch"), ("attention_backend", "attention backend (configured)"),
    ("attention_backend_selected", "attention backend (selected, log)"), ("kv_cache_dtype", "KV cache dtype"),
    ("gpu_memory_utilization", "GPU memory for weights+KV"), ("kv_cache_tokens", "KV cache size (tokens)"),
    ("num_gpu_blocks", "KV cache blocks"), ("block_size", "KV block size"), ("max_num_seqs", "max running requests"),
    ("max_num_batched_tokens", "per-step token budget (prefill chunk)"), ("chunked_prefill", "chunked prefill"),
    ("prefix_caching", "prefix caching"), ("quantization", "quantization"), ("scheduler_policy", "scheduler policy"),
    ("max_model_len", "max model length"), ("backend", "backend"),
]

METRIC_ROWS = [
    ("vllm:num_requests_running", "running"), ("vllm:num_requests_waiting", "waiting"),
    ("vllm:kv_cache_usage_perc", "KV usage (0-1)"), ("vllm:gpu_cache_usage_perc", "KV usage (0-1, V0)"),
    ("vllm:num_preemptions_total", "preemptions"), ("sglang:num_running_reqs", "running"),
    ("sglang:num_queue_reqs", "waiting"), ("sglang:token_usage", "KV usage (0-1)"),
    ("sglang:num_retracted_requests_total", "retracted (preempted)"), ("sglang:cache_hit_rate", "prefix cache hit rate"),
    ("tgi_queue_size", "waiting"), ("tgi_batch_current_size", "running"),
    ("trtllm_kv_cache_utilization", "KV usage (0-1)"),
]
HIST_ROWS = [
    "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds", "vllm:request_prefill_time_seconds",
    "vllm:request_decode_time_seconds", "vllm:request_queue_time_seconds", "sglang:time_to_first_token_seconds",
    "sglang:inter_token_latency_seconds", "trtllm_time_to_first_token_seconds", "trtllm_time_per_output_token_seconds",
    "tgi_request_queue_duration", "tgi_request_mean_time_per_token_duration",
]


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list):
        return ",".join(str(x) for x in v[:12]) + ("..." if len(v) > 12 else "")
    return "unknown" if v is None else str(v)


def config_rows(e: EngineInstance) -> list[tuple[str, str, str]]:
    """(label, value, source) for the configuration table."""
    rows = []
    for key, label in CONFIG_ROWS:
        s = e.settings.get(key)
        if s is None:
            continue
        rows.append((label, _fmt(s.value), s.source))
    return rows


def summarize_engines(r: EngineReport) -> str:
    if not r.available:
        return f"engine_config unavailable on {r.host}: {r.reason}"
    if not r.engines:
        return r.reason or "no serving engine found"
    lines = []
    for e in r.engines:
        head = f"{ENGINE_LABEL.get(e.name, e.name)}{' ' + e.version if e.version else ''} ({e.origin}: {e.where}"
        head += f", port {e.port})" if e.port else ")"
        lines.append(head + (f" serving {e.model}" if e.model else ""))
        if e.command:
            lines.append(f"  command: {e.command[:400]}")
        for label, value, source in config_rows(e):
            lines.append(f"  {label}: {value}  [{source}]")
        if e.env:
            lines.append("  env: " + ", ".join(f"{k}={v}" for k, v in sorted(e.env.items())[:30]))
        elif e.origin == "process" and not e.env_readable:
            lines.append("  env: not readable (another user's process)")
        if e.metrics is not None:
            if e.metrics.error:
                lines.append(f"  /metrics: {e.metrics.url}: {e.metrics.error}")
            else:
                ms = e.metrics.metrics
                vals = [f"{label} {ms[n].value:g}" for n, label in METRIC_ROWS if n in ms and ms[n].value is not None]
                lines.append(f"  /metrics ({e.metrics.url}, {len(ms)} metrics): " + (", ".join(vals) or "none of note"))
                for n in HIST_ROWS:
                    h = ms.get(n)
                    if h is not None and h.count:
                        lines.append(f"    {n}: n={h.count:g} mean {_fmt(h.mean)} p50 {_fmt(h.p50)} "
                                     f"p90 {_fmt(h.p90)} p99 {_fmt(h.p99)} s")
        if e.log is not None:
            lg = e.log
            bits = []
            if lg.selected_backend:
                bits.append(f"selected attention backend {lg.selected_backend}")
            if lg.fallbacks:
                bits.append(f"{len(lg.fallbacks)} backend fallback line(s)")
            if lg.kv_cache_tokens:
                bits.append(f"KV cache {lg.kv_cache_tokens:,} tokens")
            if lg.graphs_captured:
                bits.append(f"CUDA graphs captured in {lg.graph_capture_s:g} s")
            if lg.eager_line:
                bits.append("eager mode")
            if lg.preemption_lines:
                bits.append(f"{lg.preemption_lines} preemption/retraction line(s)")
            if lg.moe_default_config_lines:
                bits.append(f"{lg.moe_default_config_lines} default-MoE-config warning(s)")
            if lg.stats_samples:
                bits.append(f"{lg.stats_samples} stats lines: KV usage max {_fmt(lg.kv_usage_max_pct)}%, "
                            f"waiting max {_fmt(lg.waiting_max)}, running max {_fmt(lg.running_max)}, "
                            f"generation {_fmt(lg.gen_tok_s_mean)} tok/s mean")
            lines.append("  log: " + ("; ".join(bits) or "nothing engine-specific"))
    if r.missing_logs:
        lines.append("missing logs: " + ", ".join(r.missing_logs))
    return "\n".join(lines)


class EngineConfigInput(BaseModel):
    paths: list[str] = Field(default_factory=list, description=(
        "Engine logs or launch scripts on the host (default: the run's --log paths)."))
    metrics: bool = Field(default=True, description="Fetch the engine's /metrics over loopback on the host.")


class EngineConfigTool(Tool):
    name = "engine_config"
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


def register(registry: ToolRegistry) -> None:
    registry.add(EngineConfigTool())
