"""What engines print about themselves, read back from their logs (formats as the engines print them).

- vLLM: "Initializing a V1 LLM engine (v0.11.0) with config: model=..., tensor_parallel_size=8, ...enforce_eager=True"
  (vllm/v1/engine/core.py), "non-default args: {...}" (vllm/entrypoints/utils.py), "Using FLASH_ATTN attention backend
  out of potential backends: [...]" / "Using Flash Attention backend on V1 engine." / "Using XFormers backend."
  (vllm/platforms/cuda.py, attention/selector.py), "Cannot use FlashAttention-2 backend for Volta and Turing GPUs.",
  "GPU KV cache size: 34,952 tokens" and "# GPU blocks: 2184" (vllm/v1/core/kv_cache_utils.py, V0 executor),
  "Maximum concurrency for 8,192 tokens per request: 4.27x", "Graph capturing finished in 8 secs, took 0.31 GiB"
  (gpu_model_runner.py), "Cudagraph is disabled under eager mode", the 5 s stats line "Engine 000: Avg prompt
  throughput: X tokens/s, Avg generation throughput: Y tokens/s, Running: N reqs, Waiting: M reqs, GPU KV cache
  usage: Z%, Prefix cache hit rate: W%" (vllm/v1/metrics/loggers.py; V0: "Running: N reqs, Swapped: S reqs, Pending:
  P reqs, GPU KV cache usage: Z%, CPU KV cache usage: C%."), V0's "Sequence group 0 is preempted by
  PreemptionMode.RECOMPUTE mode because there is not enough KV cache space." (core/scheduler.py).
- vLLM speculative decoding, every stats interval: "SpecDecoding metrics: Mean acceptance length: 1.08, Accepted
  throughput: 3.21 tokens/s, Drafted throughput: 120.00 tokens/s, Accepted: 32 tokens, Drafted: 400 tokens,
  Per-position acceptance rate: 0.060, 0.015, ..., Avg Draft acceptance rate: 8.0%" (vllm/v1/spec_decode/metrics.py,
  SpecDecodingLogging.log; v0.9 began "SpecDecoding metrics: Draft acceptance rate: 38.8%, Mean acceptance length:
  2.16, Accepted: 150 tokens, Drafted: 387 tokens, Per-position acceptance rate: ..."); SGLang's decode line carries
  "accept len: 1.02, accept rate: 0.01, " (SGLang's scheduler, log_decode_stats), its mean tokens
  per verify step, the bonus token included.
- SGLang: "server_args=ServerArgs(model_path='...', tp_size=8, ...)", "KV Cache is allocated. #tokens: N, K size: ..",
  "max_total_num_tokens=N, chunked_prefill_size=.., max_prefill_tokens=.., max_running_requests=.., context_len=..",
  "Decode batch. #running-req: N, #token: T, token usage: U, cuda graph: True, gen throughput (token/s): G,
  #queue-req: Q", "Prefill batch. #new-seq: .., #new-token: .., #cached-token: .., token usage: .., ...",
  "Decode out of memory happened. #retracted_reqs: 1, #new_token_ratio: 0.9 -> 1.0" (managers/scheduler.py).
  SGLang 0.5.18-0.5.23 (the harvested releases) print "server_args={'model_path': ..., 'tp_size': 8, ...}" (a dict,
  0.5.23), "KV Cache is allocated. dtype: torch.bfloat16, #tokens: N, ..", "Post-capture KV sizing: KV cache
  allocated. dtype: .., #tokens: N, ..", "Load weight end. elapsed=.. s, type=.., mem usage=.. GB.", "Capture target
  decode CUDA graph end. elapsed=.. s, ..", "Decode batch, #running-req: N, ..." and "KV cache pool is full. Retract
  requests. #retracted_reqs: N, ..".
- TGI: "Using attention flashinfer - Prefix caching true", "Using default cuda graphs [1, 2, 4, 8, 16, 32]", and the
  launcher's arguments, one line ("Args { model_id: .. }") up to 2.0, pretty-printed ("Args {" then a field a line)
  since.
Each pattern's format string, per release, with a line built from it: tests/knowledge/engine_log_lines.yaml (a pattern
no harvested release prints fails there). vLLM 0.26.0-0.33.0 print "vLLM server version X, serving model M" (or the
logo's "version X"), "init engine (...) took X s", "Starting vLLM server on ..", "Compiling a graph for compile range
(1, 8192) takes X s" and "torch.compile took X s in total".
Pure functions over (path, line_no, line) tuples.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Iterable, Literal, NamedTuple, Union

from orchestrator.prongs.serving_engine.cmdline import Setting
from orchestrator.prongs.serving_engine.models import LogState

# Each pattern is searched anywhere in a line the host returned: where a literal is followed by `.*`, the match starts at
# the line's first occurrence of the literal (`^(?>.*?LITERAL)`, atomic: not retried at every later occurrence), and
# other repetitions are bounded, so that the work grows linearly with the line (tests/fuzz/test_patterns_linear.py).
RX_VERSION = [re.compile(r"vLLM (?:API )?server version ([0-9][\w.+-]*)"),
              re.compile(r"^(?>.*?\u2580\u2584\u2580 \u2588)[^\n]{0,24}?version\s{1,4}(?:\x1b\[[0-9;]{0,8}m)?([0-9][\w.+-]*)"),
              re.compile(r"Initializing a V1 LLM engine \(v([0-9][\w.+-]*)\)"),
              re.compile(r"Initializing an LLM engine \(v([0-9][\w.+-]*)\)"),
              re.compile(r"\bvLLM [Vv]ersion\s{0,40}:?\s{0,4}([0-9][\w.+-]*)"),
              re.compile(r"TensorRT[- ]LLM version: ([0-9][\w.+-]*)"),
              re.compile(r"sglang version[:=]? ?([0-9][\w.+-]*)", re.I)]
RX_ENGINE_CONFIG = re.compile(r"LLM engine \(v[\w.+-]+\) with config: (.*)$")
RX_NON_DEFAULT = re.compile(r"^(?>.*?non-default args: )(\{.*\})\s*$")
RX_SERVER_ARGS = re.compile(r"^(?>.*?server_args=ServerArgs\()(.*)\)\s*$")
RX_SERVER_ARGS_DICT = re.compile(r"^(?>.*?server_args=\{)(.*)\}\s*$")
"""SGLang's server arguments at start: up to 0.5.18 `logger.info(f"{server_args=}")` (the dataclass repr,
`server_args=ServerArgs(model_path='...', tp_size=8, ...)`, entrypoints/engine.py L253); 0.5.23 logs
`server_args={_server_args_for_logging(server_args)}`, a dict (`server_args={'model_path': '...', 'tp_size': 8, ...}`,
engine.py L311)."""
RX_ARGS_NAMESPACE = re.compile(r"^(?>.*?\] args: Namespace\()(.*)\)\s*$")
"""vLLM before "non-default args" (e.g. 0.5-0.8): `INFO 05-01 16:02:39 [api_server.py:1044] args: Namespace(subparser=
'serve', ..., gpu_memory_utilization=0.9, ...)` (vllm/entrypoints/openai/api_server.py: logger.info("args: %s", args))."""
RX_CHUNKED_BUDGET = re.compile(r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)")
"""vLLM's per-step token budget: `INFO 10-20 06:48:01 [scheduler.py:205] Chunked prefill is enabled with
max_num_batched_tokens=2048.` (vllm/config/scheduler.py, SchedulerConfig.__post_init__)."""
RX_SELECTED = [
    re.compile(r"Using ([A-Z0-9_]+) attention backend out of potential backends"),
    re.compile(r"Using AttentionBackendEnum\.([A-Z0-9_]+) backend"),
    re.compile(r"Using ([A-Za-z0-9_\- ]{1,80}?) backend on V1 engine"),
    re.compile(r"Using (Flash Attention|FlashAttention-2|FlashInfer|XFormers|Torch SDPA|ROCmFlashAttention|"
               r"Triton|FlashMLA|Triton MLA|PallasAttention)[ -]?backend\.?"),
    re.compile(r"Using attention ([a-z_-]+) - Prefix caching"),
]
RX_FALLBACK = re.compile(r"Cannot use (?:Flash ?Attention(?:-2)?|FlashInfer|FA3?)[\w ]{0,80} backend[^\n]{0,300}|"
                         r"Cannot use FA version \d[^\n]{0,300}|--block-size \d+ precluded higher-priority backend[^\n]{0,300}",
                         re.I)
"""A backend the engine wanted and could not use: vLLM V0's selector ("Cannot use FlashAttention-2 backend for Volta
and Turing GPUs."), vLLM V1's FlashAttention version downgrade ("Cannot use FA version 3 on Blackwell platform,
defaulting to FA version 2.", v1/attention/backends/fa_utils.py L122 at 0.33.0) and its selector's warning that
--block-size ruled out a higher-priority backend (platforms/cuda.py L497 at 0.33.0)."""
RX_KV_TOKENS = [re.compile(r"GPU KV cache size: ([\d,]+) tokens"),
                re.compile(r"KV Cache is allocated\. (?:dtype: \S+, )?#tokens: (\d+)|Post-capture KV sizing: KV cache allocated\. dtype: \S+, "
                           r"#tokens: (\d+)"),
                re.compile(r"max_total_num_tokens=(\d+)")]
RX_GPU_BLOCKS = re.compile(r"# (?:GPU|CUDA) blocks: (\d+)")
RX_MAX_CONC = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
RX_WEIGHTS_MEM = [re.compile(r"Model loading took ([\d.]+) GiB(?: memory)? and"),
                  re.compile(r"^(?>.*?Load weight end\. (?:elapsed=[\d.]+ s, )?type=).*?mem usage=([\d.]+) GB")]
"""GPU memory the weights took, per GPU worker: vLLM `INFO 07-24 17:23:00 [gpu_model_runner.py:1770] Model loading took
14.9889 GiB and 5.123 seconds` (vllm/v1/worker/gpu_model_runner.py v0.10.0, logger.info("Model loading took %.4f GiB
and %.6f seconds", ...); V0 worker/model_runner.py the same; from v0.11 "Model loading took %s GiB memory and %.6f
seconds" with format_gib), SGLang `[2025-07-24 17:23:00 TP0] Load weight end.
type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, avail mem=124.19 GB, mem usage=13.73 GB.`
(python/sglang/srt/model_executor/model_runner.py; its "GB" is GiB: get_available_gpu_memory divides by 1 << 30)."""
RX_KV_MEMORY = re.compile(r"Available KV cache memory: ([\d.]+) GiB")
"""vLLM V1 `INFO 06-23 10:27:28 [gpu_worker.py:440] Available KV cache memory: 5.16 GiB` (vllm/v1/worker/gpu_worker.py,
determine_available_memory), per worker."""
RX_GRAPH_DONE = [re.compile(r"Graph capturing finished in (\d+) secs?(?:, took ([\d.]+) GiB)?"),
                 re.compile(r"Capture (?:target (?:decode|verify) )?cuda graph end\. (?:Time elapsed: |elapsed=)([\d.]+) s",
                            re.IGNORECASE)]
"""vLLM `Graph capturing finished in 8 secs, took 0.31 GiB` (gpu_model_runner.py); SGLang up to 0.5.3 `Capture cuda
graph end. Time elapsed: 20.64 s`, 0.5.18/0.5.23 `Capture target decode CUDA graph end. elapsed=20.64 s, mem usage=..`
(`f"Capture {capture_name} {graph_backend[device]} end. "`, capture_name "target decode" or "target verify" with
speculative decoding; model_executor/model_runner_components/cuda_graph_setup.py L788 at 0.5.23); the prefill graph
and the draft model's graphs print other names and are not the decode graph."""
RX_EAGER = re.compile(r"(Cudagraph is disabled under eager mode|enforce_eager=True|"
                      r"(?i:cuda graph is disabled)|disable_cuda_graph=True|'disable_cuda_graph': True|cuda graph: False)")
RX_VLLM_STATS = re.compile(
    r"Avg prompt throughput: ([\d.]+) tokens/s, Avg generation throughput: ([\d.]+) tokens/s, Running: (\d+) reqs, "
    r"(?:Swapped: (\d+) reqs, )?(?:Pending|Waiting): (\d+) reqs,?\s*"
    r"(?:(?:Deferred: \d+ reqs|KV fetch: \d+ waiting to start, \d+ in progress, \d+ completed waiting), )*"
    r"(?:Preemptions: (\d+), )?"
    r"(?:GPU KV cache usage: ([\d.]+)%)?(?:, (?:CPU KV cache usage: [\d.]+%\.?|Prefix cache hit rate: ([\d.]+)%))?")
RX_SGL_DECODE = re.compile(
    r"^(?>.*?Decode batch)(?: \[\d+\])?[.,] #running-req: (\d+), #(?:full )?token: (\d+), (?:full )?token usage: ([\d.]+),"
    r"(?: [^,]*?,)*? ?(?:(?:cuda|cpu|npu) graph: (\w+), )?gen throughput \(token/s\): ([\d.]+), #queue-req: (\d+)")
"""SGLang's decode line: "Decode batch. #running-req: N, #token: T, token usage: U, ..." and, in later releases, "Decode
batch, #running-req: N, #full token: T, full token usage: U, mamba num: .., mamba usage: .., cuda graph: ..." for
hybrid models (SGLang's scheduler, log_decode_stats)."""
RX_VLLM_SPEC = re.compile(r"^(?>.*?SpecDecoding metrics: ).*?Mean acceptance length: ([\d.]+)")
RX_VLLM_SPEC_TOKENS = re.compile(r"Accepted: (\d+) tokens, Drafted: (\d+) tokens")
RX_VLLM_SPEC_POS = re.compile(r"Per-position acceptance rate: ((?:[\d.]+(?:, )?)+)")
RX_SGL_ACCEPT = re.compile(r"(?<!block )accept len: ([\d.]+)")
RX_SGL_PREFILL = re.compile(r"Prefill batch(?: \[\d+\])?[.,] #new-seq: (\d+), #new-token: (\d+), #cached-token: (\d+)")
RX_PREEMPT = re.compile(r"(preempted by PreemptionMode\.(RECOMPUTE|SWAP)|Decode out of memory happened|"
                        r"KV cache pool is full\. Retract requests|"
                        r"(?<!Testing retraction\. )#retracted_reqs: ([1-9]\d*)|running out of KV cache|Preemptions?: [1-9])", re.I)
RX_MOE_DEFAULT = re.compile(r"Using default MoE (?:kernel )?config", re.I)
RX_COMPILE = re.compile(r"torch\.compile takes? ([\d.]+) s in total|compile took ([\d.]+) s", re.I)
# One engine start: vLLM's API server banner, SGLang's server_args dump, TGI's launcher args, trtllm-serve's banner.
RX_WEIGHTS_LOAD = re.compile(r"Loading weights took ([\d.]+) seconds")
"""vLLM `INFO 06-19 23:05:01 [loader.py:447] Loading weights took 0.69 seconds` (model_loader/default_loader.py)."""
RX_MODEL_LOAD_S = re.compile(r"Model loading took [\d.]+ GiB(?: memory)? and ([\d.]+) seconds")
RX_INIT_ENGINE = re.compile(r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s(?:econds)?\b")
"""vLLM `INFO 06-19 23:05:35 [core.py:162] init engine (profile, create kv cache, warmup model) took 34.11 seconds`
(vllm/v1/engine/core.py); 0.26.0-0.33.0 print `took 34.11 s` (`%.2f s`, optionally `(compilation: ...)`: core.py L413)."""
RX_READY = re.compile(r"Starting vLLM (?:API )?server|Application startup complete")
RX_VLLM_TS = re.compile(r"\b(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b")
RX_START = re.compile(r"(vLLM (?:API )?server version|\u2580\u2584\u2580 \u2588[^\n]{0,24}?version\s|server_args=(?:ServerArgs\(|\{)|"
                      r"\bArgs \{\s*(?:model_id\b|$)|TensorRT[- ]LLM version:)")
RX_COLD_COMPILE = re.compile(r"Compiling a graph for (?:dynamic shape|shape .*|compile range .*) takes [\d.]+ s")
RX_WARM_COMPILE = re.compile(r"Directly load (?:the compiled graph\(s\) for .* from the cache|AOT compilation from path )")
RX_DEEPGEMM_JIT = re.compile(r"(Try )?DeepGEMM JIT Compiling for|Entering DeepGEMM JIT Pre-Compile session")

# How a printed value is typed: a converter (int, float, str, bool: "true"/"false"), or "not" (a negated boolean).
_Typ = Union[type, Literal["not"]]
_VLLM_CONFIG_KEYS: dict[str, tuple[str, _Typ]] = {
    "tensor_parallel_size": ("tp", int), "pipeline_parallel_size": ("pp", int), "data_parallel_size": ("dp", int),
    "enforce_eager": ("enforce_eager", bool), "kv_cache_dtype": ("kv_cache_dtype", str),
    "quantization": ("quantization", str), "enable_prefix_caching": ("prefix_caching", bool),
    "chunked_prefill_enabled": ("chunked_prefill", bool), "enable_chunked_prefill": ("chunked_prefill", bool),
    "max_seq_len": ("max_model_len", int), "max_model_len": ("max_model_len", int),
    "gpu_memory_utilization": ("gpu_memory_utilization", float), "max_num_seqs": ("max_num_seqs", int),
    "max_num_batched_tokens": ("max_num_batched_tokens", int), "enable_expert_parallel": ("expert_parallel", bool),
    "block_size": ("block_size", int), "attention_backend": ("attention_backend", str), "model": ("model", str)
}
_SGL_KEYS: dict[str, tuple[str, _Typ]] = {
    "tp_size": ("tp", int), "pp_size": ("pp", int), "dp_size": ("dp", int), "ep_size": ("ep", int),
    "disable_cuda_graph": ("cuda_graphs", "not"), "cuda_graph_max_bs": ("cuda_graph_max_bs", int),
    "cuda_graph_max_bs_decode": ("cuda_graph_max_bs", int),
    "attention_backend": ("attention_backend", str), "kv_cache_dtype": ("kv_cache_dtype", str),
    "mem_fraction_static": ("gpu_memory_utilization", float), "max_running_requests": ("max_num_seqs", int),
    "chunked_prefill_size": ("chunked_prefill_size", int), "max_prefill_tokens": ("max_num_batched_tokens", int),
    "disable_radix_cache": ("prefix_caching", "not"), "quantization": ("quantization", str),
    "schedule_policy": ("scheduler_policy", str), "model_path": ("model", str),
    "context_length": ("max_model_len", int), "enable_torch_compile": ("torch_compile", bool),
    "enable_metrics": ("metrics_enabled", bool), "port": ("port", int),
    "speculative_algorithm": ("speculative_algorithm", str), "speculative_num_steps": ("speculative_num_steps", int),
    "speculative_num_draft_tokens": ("speculative_num_draft_tokens", int),
    "speculative_draft_model_path": ("speculative_draft_model", str)
}


class ParsedLog(NamedTuple):
    """What parse_log_lines reads: the log state the report carries, and what the effective configuration takes."""

    state: LogState
    version: str | None
    """The engine's version, as its banner prints it."""
    settings: dict[str, Setting]
    """Settings the engine printed (its config dump, non-default args, ServerArgs), each with the line it came from."""


MAX_FALLBACKS = 10
"""Backend fallback lines kept (the first ones)."""


def _num(s: str) -> float:
    return float(s.replace(",", ""))


def _dict_pairs(text: str) -> dict[str, str]:
    """key -> value text of a `'k': v, 'k2': 'v'` dict repr (SGLang 0.5.23's server_args dict), nesting kept whole."""
    out: dict[str, str] = {}
    for k, v in _kv_pairs(re.sub(r"'(\w+)': ", r"\1=", text)).items():
        out[k.strip("'\"")] = v
    return out


def _kv_pairs(text: str) -> dict[str, str]:
    """key=value pairs of a `k=v, k2='v', k3=Obj(...)` dump (nested brackets kept whole)."""
    out: dict[str, str] = {}
    depth, key, in_q = 0, None, None
    token = []
    for ch in text + ",":
        if in_q:
            token.append(ch)
            if ch == in_q:
                in_q = None
            continue
        if ch in "'\"":
            in_q = ch
            token.append(ch)
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "=" and depth == 0 and key is None:
            key = "".join(token).strip()
            token = []
            continue
        if ch == "," and depth == 0:
            if key is not None:
                out[key] = "".join(token).strip()
            key, token = None, []
            continue
        token.append(ch)
    return out


def _typed(raw: str, typ: _Typ) -> Any:
    v = raw.strip().strip("'\"")
    if v in ("None", "null", ""):
        return None
    if typ is bool:
        return v.lower() == "true"
    if typ == "not":
        return v.lower() != "true"
    try:
        return typ(v)
    except (TypeError, ValueError):
        return v


def parse_log_lines(lines: Iterable[tuple[str, int, str]]) -> ParsedLog:
    """The log state, version and printed settings from (path, line_no, line) of engine logs (the probe's selected
    lines, in file order). Total: a line whose numbers are no numbers is left out, not raised on. An engine logs what
    it is sent (vLLM's `Received request ...: prompt: '...'`), so an API user's prompt that reads `Avg prompt
    throughput: 1.2.3 tokens/s, ...` matched the stats pattern and its float() raised: the engine's report was lost."""
    lines = list(lines)
    try:
        return _parse_log_lines(lines)
    except (ValueError, OverflowError):
        return _parse_log_lines([ln for ln in lines if _reads(ln)])


def _reads(line: tuple[str, int, str]) -> bool:
    try:
        _parse_log_lines([line])
    except (ValueError, OverflowError):
        return False
    return True


def _parse_log_lines(lines: Iterable[tuple[str, int, str]]) -> ParsedLog:
    f = LogState()
    version: str | None = None
    settings: dict[str, Setting] = {}
    gen: list[float] = []
    new_tokens = cached_tokens = 0  # SGLang prefill lines, for the prefix hit rate when no stats line gives one
    eager_explicit = False
    spec_weighted: list[tuple[float, float]] = []  # (acceptance length, weight) per stats interval
    start_ts: float | None = None  # seconds into the year of the last start's banner (vLLM's MM-DD HH:MM:SS)
    seen_cold = seen_warm = seen_dg = False
    for path, no, line in lines:
        where = f"log {path}:{no}"
        if RX_START.search(line):
            f.starts += 1
            seen_cold = seen_warm = seen_dg = False
            start_ts = _vllm_ts(line)
            f.weights_load_s = f.model_load_s = f.init_engine_s = f.start_span_s = None  # the last start's phases
        m = RX_WEIGHTS_LOAD.search(line)
        if m:
            f.weights_load_s = max(f.weights_load_s or 0.0, float(m.group(1)))
        m = RX_MODEL_LOAD_S.search(line)
        if m:
            f.model_load_s = max(f.model_load_s or 0.0, float(m.group(1)))
        m = RX_INIT_ENGINE.search(line)
        if m:
            f.init_engine_s = float(m.group(1))
        if RX_READY.search(line) and start_ts is not None and f.start_span_s is None:
            ready = _vllm_ts(line)
            if ready is not None and ready >= start_ts:
                f.start_span_s = ready - start_ts
        if RX_COLD_COMPILE.search(line) and not seen_cold:
            f.cold_compile_starts += 1
            seen_cold = True
        if RX_WARM_COMPILE.search(line) and not seen_warm:
            f.warm_compile_starts += 1
            seen_warm = True
        if RX_DEEPGEMM_JIT.search(line) and not seen_dg:
            f.deepgemm_jit_starts += 1
            seen_dg = True
        for rx in RX_VERSION:
            m = rx.search(line)
            if m and version is None:
                version = m.group(1)
        m = RX_ENGINE_CONFIG.search(line)
        if m:
            for k, raw in _kv_pairs(m.group(1)).items():
                if k in _VLLM_CONFIG_KEYS:
                    name, typ = _VLLM_CONFIG_KEYS[k]
                    val = _typed(raw, typ)
                    if val is not None:
                        settings[name] = Setting(val, where)
        m = RX_NON_DEFAULT.search(line)
        if m:
            try:
                d = ast.literal_eval(m.group(1))
            except (ValueError, SyntaxError):
                d = {}
            for k, v in (d.items() if isinstance(d, dict) else []):
                if k in _VLLM_CONFIG_KEYS and v is not None:
                    name, typ = _VLLM_CONFIG_KEYS[k]
                    settings[name] = Setting(v, where)
                if k == "compilation_config" and isinstance(v, dict):
                    settings["compilation_config"] = Setting(v, where)
        m = RX_ARGS_NAMESPACE.search(line)
        if m:  # every argument, defaults included: what the engine ran with
            for k, raw in _kv_pairs(m.group(1)).items():
                if k in _VLLM_CONFIG_KEYS and raw != "None":
                    name, typ = _VLLM_CONFIG_KEYS[k]
                    val = _typed(raw, typ)
                    if val is not None:
                        settings[name] = Setting(val, where)
        m = RX_CHUNKED_BUDGET.search(line)
        if m:
            settings["max_num_batched_tokens"] = Setting(int(m.group(1)), where)
        m = RX_SERVER_ARGS.search(line)
        pairs = _kv_pairs(m.group(1)) if m else {}
        if not m:
            d = RX_SERVER_ARGS_DICT.search(line)
            pairs = _dict_pairs(d.group(1)) if d else {}
        if pairs:
            for k, raw in pairs.items():
                if k in _SGL_KEYS:
                    name, typ = _SGL_KEYS[k]
                    val = _typed(raw, typ)
                    if val is not None:
                        settings[name] = Setting(val, where)
        for rx in RX_SELECTED:
            m = rx.search(line)
            if m:
                f.selected_backend = m.group(1).strip()
                f.selected_line = f"{where}: {line.strip()[:300]}"
                break
        m = RX_FALLBACK.search(line)
        if m and len(f.fallbacks) < MAX_FALLBACKS:
            f.fallbacks.append(f"{where}: {m.group(0).strip()[:300]}")
        for rx in RX_KV_TOKENS:
            m = rx.search(line)
            if m:
                f.kv_cache_tokens = int(_num(next(g for g in m.groups() if g is not None)))
        m = RX_GPU_BLOCKS.search(line)
        if m:
            f.num_gpu_blocks = int(m.group(1))
        m = RX_MAX_CONC.search(line)
        if m:
            f.max_concurrency_len, f.max_concurrency = int(_num(m.group(1))), float(m.group(2))
        m = RX_KV_MEMORY.search(line)
        if m:
            f.kv_cache_memory_gib = float(m.group(1))
        for rx in RX_WEIGHTS_MEM:
            m = rx.search(line)
            if m:
                f.weights_gib = max(f.weights_gib or 0.0, float(m.group(1)))
        for rx in RX_GRAPH_DONE:
            m = rx.search(line)
            if m:
                f.graphs_captured = True
                f.graph_capture_s = float(m.group(1))
                if m.lastindex and m.lastindex >= 2 and m.group(2):
                    f.graph_memory_gib = float(m.group(2))
        m = RX_EAGER.search(line)
        if m and "cuda graph: False" not in line:
            explicit = "=True" not in m.group(0) and "': True" not in m.group(0)
            if f.eager_line is None or (explicit and not eager_explicit):
                f.eager_line = f"{where}: {line.strip()[:300]}"
                eager_explicit = explicit
        if RX_PREEMPT.search(line):
            f.preemption_lines += 1
            m = re.search(r"#retracted_reqs: (\d+)", line)
            if m:
                f.retracted_reqs += int(m.group(1))
        if RX_MOE_DEFAULT.search(line):
            f.moe_default_config_lines += 1
        m = RX_COMPILE.search(line)
        if m:
            f.compile_s = float(m.group(1) or m.group(2))
        m = RX_VLLM_SPEC.search(line)
        if m:
            f.spec_lines += 1
            t = RX_VLLM_SPEC_TOKENS.search(line)
            drafted = int(t.group(2)) if t else 0
            if t:
                f.spec_accepted_tokens = (f.spec_accepted_tokens or 0) + int(t.group(1))
                f.spec_drafted_tokens = (f.spec_drafted_tokens or 0) + drafted
            spec_weighted.append((float(m.group(1)), float(drafted) if t else 1.0))
            p = RX_VLLM_SPEC_POS.search(line)
            if p:
                f.spec_positions = len(re.findall(r"[\d.]+", p.group(1)))
            continue
        m = RX_VLLM_STATS.search(line)
        if m:
            f.stats_samples += 1
            prompt, g, run, wait = float(m.group(1)), float(m.group(2)), int(m.group(3)), int(m.group(5))
            _track(f, prompt=prompt, gen=g, running=run, waiting=wait,
                   kv=float(m.group(7)) if m.group(7) else None)
            if m.group(8):
                f.prefix_hit_rate_pct = float(m.group(8))
            if g > 0:
                gen.append(g)
            continue
        m = RX_SGL_DECODE.search(line)
        if m:
            f.stats_samples += 1
            g = float(m.group(5))
            _track(f, prompt=None, gen=g, running=int(m.group(1)), waiting=int(m.group(6)),
                   kv=float(m.group(3)) * 100)
            if m.group(4) == "False":
                f.cuda_graph_false += 1
            a = RX_SGL_ACCEPT.search(line)
            if a and int(m.group(1)) > 0:
                f.spec_lines += 1
                spec_weighted.append((float(a.group(1)), 1.0))
            if g > 0:
                gen.append(g)
            continue
        m = RX_SGL_PREFILL.search(line)
        if m:
            new_tokens += int(m.group(2))
            cached_tokens += int(m.group(3))
    weight = sum(w for _, w in spec_weighted)
    if weight > 0:
        f.spec_accept_len_mean = round(sum(x * w for x, w in spec_weighted) / weight, 3)
    if gen:
        f.gen_tok_s_mean = round(sum(gen) / len(gen), 2)
    if new_tokens + cached_tokens > 0 and f.prefix_hit_rate_pct is None:
        f.prefix_hit_rate_pct = round(100 * cached_tokens / (new_tokens + cached_tokens), 1)
    return ParsedLog(f, version, settings)


def _vllm_ts(line: str) -> float | None:
    """vLLM's `INFO 06-19 23:05:01 [...]` timestamp as seconds (month x 31 days: spans within a start only)."""
    m = RX_VLLM_TS.search(line)
    if not m:
        return None
    mo, d, h, mi, sec = (int(x) for x in m.groups())
    return float((((mo * 31 + d) * 24 + h) * 60 + mi) * 60 + sec)


def _track(st: LogState, *, prompt: float | None, gen: float, running: int, waiting: int, kv: float | None) -> None:
    st.running_max = max(st.running_max or 0, running)
    st.waiting_max = max(st.waiting_max or 0, waiting)
    st.gen_tok_s_max = max(st.gen_tok_s_max or 0.0, gen)
    if prompt is not None:
        st.prompt_tok_s_max = max(st.prompt_tok_s_max or 0.0, prompt)
    if kv is not None:
        st.kv_usage_max_pct = max(st.kv_usage_max_pct or 0.0, kv)
        st.kv_usage_last_pct = kv
