"""Typed evidence of the serving-engine probe: engines found, their effective configuration, metrics, log state.

Facts (`EngineReport.facts()`, flat dotted keys the catalog's conditions read):
- `engine.count`, and for the primary engine (the first running one, else the first found in a launch script or log):
  `engine.name` (vllm|sglang|trtllm|tgi), `engine.version`, `engine.origin` (process|launch|log), `engine.model`,
  `engine.<setting>` for every effective setting (tp, pp, dp, ep, enforce_eager, cuda_graphs, cuda_graph_max_bs,
  attention_backend, attention_backend_selected, kv_cache_dtype, gpu_memory_utilization, kv_cache_tokens,
  num_gpu_blocks, max_num_seqs, max_num_batched_tokens, chunked_prefill, prefix_caching, quantization,
  scheduler_policy, max_model_len, ...), `engine.<setting>_default` (true when the value is the engine's default),
  `engine.log.*` (preemptions, retracted_reqs, moe_default_config, graphs_captured, graph_capture_s, compile_s,
  kv_usage_max_pct, waiting_max, running_max, gen_tok_s_max, gen_tok_s_mean, prefix_hit_rate_pct,
  cuda_graph_false, fallbacks, stats_samples, max_concurrency, spec_lines, spec_accept_len_mean,
  spec_accepted_tokens, spec_drafted_tokens, spec_positions),
  `engine.metrics_available` (bool).
- `metrics.<name>.by.<value>`: a counter split by how requests ended (`vllm:request_success_total.by.length`).
- `metrics.<name as exposed>`: gauges and counters (e.g. `metrics.vllm:num_preemptions_total`,
  `metrics.vllm:kv_cache_usage_perc`); histograms as `metrics.<name>.{count,mean,p50,p90,p99}` (seconds).
- `env.<NAME>`: the engine process's allowlisted environment (filtered on the host).
Log lines (`log_lines()`): the engine log lines the probe returned, as ("server", path, line_no, line).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from orchestrator.prongs.serving_engine.metrics import MetricSummary
from orchestrator.probes.results import LogSkip, ProbeModel

EngineName = Literal["vllm", "sglang", "trtllm", "tgi"]


ENGINE_LABEL = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM", "tgi": "TGI"}
"""How each engine is named in words."""


class SettingValue(BaseModel):
    value: Any = None
    source: str = ""
    default: bool = False


class EngineMetricsScrape(BaseModel):
    url: str | None = None
    status: int | None = None
    error: str | None = None
    parse_error: str | None = None
    truncated: bool = False
    metrics: dict[str, MetricSummary] = Field(default_factory=dict)


class LogState(BaseModel):
    """What the engine's own log lines show (see orchestrator/prongs/serving_engine/logs.py)."""

    selected_backend: str | None = None
    selected_line: str | None = None
    fallbacks: list[str] = Field(default_factory=list)
    kv_cache_tokens: int | None = None
    num_gpu_blocks: int | None = None
    max_concurrency: float | None = None
    max_concurrency_len: int | None = None
    graphs_captured: bool | None = None
    graph_capture_s: float | None = None
    graph_memory_gib: float | None = None
    weights_gib: float | None = None
    """GPU memory the weights took on one worker (the largest the log shows), GiB."""
    kv_cache_memory_gib: float | None = None
    """vLLM's "Available KV cache memory" on one worker, GiB."""
    eager_line: str | None = None
    preemption_lines: int = 0
    retracted_reqs: int = 0
    moe_default_config_lines: int = 0
    compile_s: float | None = None
    stats_samples: int = 0
    kv_usage_max_pct: float | None = None
    kv_usage_last_pct: float | None = None
    running_max: int | None = None
    waiting_max: int | None = None
    gen_tok_s_max: float | None = None
    gen_tok_s_mean: float | None = None
    prompt_tok_s_max: float | None = None
    prefix_hit_rate_pct: float | None = None
    cuda_graph_false: int = 0
    starts: int = 0
    cold_compile_starts: int = 0
    warm_compile_starts: int = 0
    deepgemm_jit_starts: int = 0
    weights_load_s: float | None = None
    """vLLM "Loading weights took X seconds" (the longest worker)."""
    model_load_s: float | None = None
    """vLLM "Model loading took X GiB and Y seconds": Y, weights and model construction (the longest worker)."""
    init_engine_s: float | None = None
    """vLLM "init engine (profile, create kv cache, warmup model) took X seconds": memory profiling (where
    torch.compile runs), KV cache allocation and warm-up (where CUDA graphs are captured)."""
    start_span_s: float | None = None
    """Seconds from the last start's banner to "Starting vLLM API server" / "Application startup complete.", read
    from the lines' timestamps."""
    spec_lines: int = 0
    """Speculative-decoding stats lines read (vLLM "SpecDecoding metrics: ...", SGLang "Decode batch. ... accept len")."""
    spec_accept_len_mean: float | None = None
    """Mean acceptance length over those lines: tokens emitted per target-model step, the bonus token included (vLLM
    weighted by each interval's drafted tokens; SGLang the mean of its decode lines' "accept len")."""
    spec_accepted_tokens: int | None = None
    spec_drafted_tokens: int | None = None
    """vLLM: the "Accepted: N tokens, Drafted: M tokens" of those lines, summed."""
    spec_positions: int | None = None
    """Tokens drafted per step, read as the length of vLLM's "Per-position acceptance rate" list."""


class EngineInstance(BaseModel):
    name: EngineName
    origin: Literal["process", "launch", "log"] = "process"
    where: str = ""
    """`pid 1234`, or `launch script PATH:LINE`, or `log PATH`."""
    pid: int | None = None
    port: int | None = None
    version: str | None = None
    model: str | None = None
    command: str = ""
    """The command line (secret-looking flag values masked on the host)."""
    settings: dict[str, SettingValue] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    env_readable: bool = True
    metrics: EngineMetricsScrape | None = None
    log: LogState | None = None

    @property
    def label(self) -> str:
        return ENGINE_LABEL.get(self.name, self.name) + (f" {self.version}" if self.version else "")

    def value(self, key: str) -> Any:
        s = self.settings.get(key)
        return s.value if s is not None else None


class EngineLogLine(BaseModel):
    path: str
    line_no: int
    line: str


class EngineReport(ProbeModel):
    kind: Literal["engine_config"] = "engine_config"
    engines: list[EngineInstance] = Field(default_factory=list)
    log_files: list[str] = Field(default_factory=list)
    missing_logs: list[str] = Field(default_factory=list)
    lines: list[EngineLogLine] = Field(default_factory=list)
    truncated_logs: bool = False
    skipped_logs: list[LogSkip] = Field(default_factory=list)
    """Logs larger than the byte budget: the lines between their start and their end, not read."""

    @property
    def primary(self) -> EngineInstance | None:
        for e in self.engines:
            if e.origin == "process":
                return e
        return self.engines[0] if self.engines else None

    def facts(self) -> dict[str, str | int | float | bool]:
        out: dict[str, str | int | float | bool] = {"engine.count": len(self.engines)}
        e = self.primary
        if e is None:
            return out
        out["engine.name"] = e.name
        out["engine.origin"] = e.origin
        if e.version:
            out["engine.version"] = e.version
        if e.model:
            out["engine.model"] = e.model
        if e.port is not None:
            out["engine.port"] = e.port
        for key, s in e.settings.items():
            v = s.value
            if isinstance(v, (bool, int, float, str)):
                out[f"engine.{key}"] = v
            elif isinstance(v, list):
                out[f"engine.{key}"] = ",".join(str(x) for x in v)
            elif v is None:
                continue
            else:
                continue
            out[f"engine.{key}_default"] = s.default
            out[f"engine.{key}_source"] = s.source
        if e.log is not None:
            for k, v in e.log.model_dump().items():
                if v is None or isinstance(v, list):
                    continue
                out[f"engine.log.{k}"] = v
            out["engine.log.fallbacks"] = len(e.log.fallbacks)
            if e.log.fallbacks:
                out["engine.log.fallback_line"] = e.log.fallbacks[0]
            out["engine.log.preemptions"] = e.log.preemption_lines
            out["engine.log.moe_default_config"] = e.log.moe_default_config_lines
        out["engine.metrics_available"] = bool(e.metrics and e.metrics.metrics)
        if e.metrics:
            for name, m in e.metrics.metrics.items():
                if m.type == "histogram":
                    for k in ("count", "mean", "p50", "p90", "p99"):
                        v = getattr(m, k)
                        if v is not None:
                            out[f"metrics.{name}.{k}"] = v
                elif m.value is not None:
                    out[f"metrics.{name}"] = m.value
                for label, x in m.by.items():
                    out[f"metrics.{name}.by.{label}"] = x
        for k, v in e.env.items():
            out[f"env.{k}"] = v
        return out

    def log_lines(self) -> list[tuple[str, str, int, str]]:
        return [("server", ln.path, ln.line_no, ln.line) for ln in self.lines]
