"""Request-level lines of the engines' own logs, for the request account: what each request cost the engine.

The serving-engine prong reads the engines' configuration and periodic stats lines (prongs/serving_engine/logs.py);
these are the lines an engine prints per request or per event, in the formats the engines print them:

- llama.cpp `llama-server` (tools/server/server.cpp): `slot update_slots: id 0 | task N | new prompt, n_ctx_slot =
  C, n_keep = 0, n_prompt_tokens = P`, then either `kv cache rm [0, end)` (the slot's cache dropped: the whole prompt
  is evaluated again) or `kv cache rm [K, end)` (the first K tokens reused), `slot release: ... n_past = N`, and
  `prompt eval time = T ms / P tokens` / `eval time = T ms / G tokens` (print_timing). The prompt eval count is what
  was evaluated, n_past of the previous turn what the slot held.
- Ollama (server/routes.go, envconfig): the `server config` line's env map (OLLAMA_NUM_PARALLEL,
  OLLAMA_MAX_QUEUE), the runner's command line (`--parallel N`), and one `[GIN] ... | STATUS | DURATION | ...`
  line per request.
- The context window, where a request does not fit it: Ollama's `msg="truncating input prompt" limit=L prompt=P
  keep=K new=N` (the prompt cut to the slot's context), llama-server's `request (P tokens) exceeds the available
  context size (L tokens)` (refused, HTTP 400) with its `n_ctx`, `n_seq_max`, `n_ctx_per_seq` / `n_ctx_slot` lines
  (the context divided among the parallel slots), the Ollama runner's `--ctx-size C ... --parallel N`, vLLM's
  `This model's maximum context length is L tokens. However, you requested T tokens (P in the messages, C in the
  completion)` (refused before the engine, HTTP 400), SGLang's `The input (P tokens) is longer than the model's
  context length (L tokens)` and TGI's `must be <= L. Given: P `inputs` tokens and C `max_new_tokens``.
- A proxy that cut a request: Envoy's access log response flags (JSON `"response_flags":"UT"` or the default text
  format's `" 200 UT `, with its `duration` in ms: UT upstream response timeout, UC/UF/URX/UH upstream connection
  failures, DC downstream disconnect, SI stream idle timeout), nginx's `upstream timed out (110: Connection timed
  out)` error lines, HAProxy's termination states `sD--`/`sH--` (server timeout) and `cD--` (client timeout).
- vLLM with VLLM_GC_DEBUG=1 (vllm/utils/gc_utils.py): `GC took X ms to complete. Collected N objects (out of M) in
  GC generation G.`, each line prefixed by the process (`(APIServer pid=1)`, `(EngineCore_DP0 pid=212)`).
Pure: lines in, a `RequestLogs` out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from statistics import mean
from typing import Iterable

_LLAMA_NEW = re.compile(r"\btask (\d+) \| new prompt,.*\bn_prompt_tokens = (\d+)")
_LLAMA_RM = re.compile(r"\btask (\d+) \| kv cache rm \[(\d+), end\)")
_LLAMA_RELEASE = re.compile(r"\btask (\d+) \| stop processing: n_past = (\d+)")
_LLAMA_PROMPT_EVAL = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
_LLAMA_EVAL = re.compile(r"^\s*eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
_LLAMA_SLOTS = re.compile(r"initializing slots, n_slots = (\d+)")
_OLLAMA_ENV = re.compile(r'msg="server config" env="map\[(.*)\]"')
_OLLAMA_RUNNER = re.compile(r'msg="starting llama server" cmd=".*?--parallel (\d+)')
_GIN = re.compile(r"\[GIN\] [\d/]+ - [\d:]+ \| (\d{3}) \|\s*([\d.]+)(µs|us|ms|s|m)\s*\|")
_GC = re.compile(r"\((\w+?)(?:_DP\d+)? pid=\d+\).*GC took ([\d.]+) ?ms to complete\. Collected \d+ objects \(out of "
                 r"(\d+)\) in GC generation (\d)")
_GC_TIME = re.compile(r"\b(\d\d):(\d\d):(\d\d)\b")
_TRUNCATE = re.compile(r'truncating input prompt"? limit=(\d+) prompt=(\d+)(?: keep=\d+)?(?: new=(\d+))?')
_EXCEEDS = re.compile(r"request \((\d+) tokens\) exceeds the available context size \((\d+) tokens\)")
_VLLM_MAXLEN = re.compile(r"maximum context length is (\d+) tokens\. However, you requested (\d+) tokens"
                          r"(?: \((\d+) in the messages, (\d+) in the completion\))?")
_SGL_MAXLEN = re.compile(r"input \((\d+) tokens\) is longer than the model's context length \((\d+) tokens\)")
_TGI_MAXLEN = re.compile(r"must be <= (\d+)\. Given: (\d+) `inputs` tokens and (\d+) `max_new_tokens`")
_SLOT_CTX = re.compile(r"(?:new slot n_ctx_slot|n_ctx_per_seq) += (\d+)")
_TOTAL_CTX = re.compile(r"llama_context: n_ctx += (\d+)")
_SEQ_MAX = re.compile(r"n_seq_max += (\d+)")
_ENVOY_JSON = re.compile(r'"response_flags": ?"([A-Z,]+)"')
_ENVOY_DURATION = re.compile(r'"duration": ?"?(\d+)')
_ENVOY_TEXT = re.compile(r'" (\d{3}) ((?:UT|UC|UF|URX|UO|UH|DC|SI)(?:,[A-Z]+)*) \d+ \d+ (\d+) ')
_NGINX_TIMEOUT = re.compile(r"upstream timed out \(110: (?:Connection|Operation) timed out\)")
_HAPROXY_TERM = re.compile(r"\s([sc])([DH])-- ")
_RUNNER_CTX = re.compile(r'msg="starting llama server" cmd=".*?--ctx-size (\d+)')


@dataclass
class LlamaSlot:
    """What llama-server's slot lines say of its requests."""

    requests: int = 0
    prompt_tokens: list[int] = field(default_factory=list)
    """n_prompt_tokens of each request."""
    reused: list[int] = field(default_factory=list)
    """Tokens of each request's prompt kept from the slot's cache (the K of `kv cache rm [K, end)`)."""
    held_before: list[int] = field(default_factory=list)
    """For each request after the first, the n_past the previous request left in the slot."""
    prompt_eval_ms: list[float] = field(default_factory=list)
    prompt_eval_tokens: list[int] = field(default_factory=list)
    eval_ms_per_token: list[float] = field(default_factory=list)
    slots: int | None = None


@dataclass
class OllamaState:
    num_parallel: int | None = None
    num_parallel_src: str = ""
    max_queue: int | None = None
    durations_s: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)


@dataclass
class GcState:
    pauses_ms: dict[str, list[float]] = field(default_factory=dict)
    """GC pause durations (ms) of generation-2 collections, by process (APIServer, EngineCore)."""
    tracked_max: dict[str, int] = field(default_factory=dict)
    times_s: dict[str, list[int]] = field(default_factory=dict)
    """Seconds of the day of each generation-2 collection, by process (for the interval between them)."""


@dataclass
class ContextState:
    """Requests that did not fit the context window, and the window as the server set it."""

    limit: int | None = None
    """The context a request gets (tokens), as the refusal or truncation line says."""
    refused: int = 0
    truncated: int = 0
    requested: list[int] = field(default_factory=list)
    """Tokens each refused request asked for (prompt + completion where the line says both)."""
    prompts: list[int] = field(default_factory=list)
    """Prompt tokens of each refused or truncated request, as sent."""
    completion: list[int] = field(default_factory=list)
    """max_tokens of each refused request, where the line says it."""
    kept: list[int] = field(default_factory=list)
    """Prompt tokens each truncated request kept."""
    slot_ctx: int | None = None
    total_ctx: int | None = None
    slots: int | None = None


@dataclass
class ProxyCuts:
    """Requests a proxy between the client and the engine ended itself, as its own log says."""

    kind: str = ""
    flags: dict[str, int] = field(default_factory=dict)
    """Envoy's response flags (UT, UC, DC, SI, ...), nginx's `timeout`, HAProxy's termination states."""
    durations_ms: list[int] = field(default_factory=list)
    """How long each cut request had run when it was cut (Envoy's duration)."""

    @property
    def timeouts(self) -> int:
        return sum(n for f, n in self.flags.items() if f in ("UT", "SI", "timeout", "sD", "sH"))


@dataclass
class EngineStats:
    """One engine's periodic stats lines (vLLM's "Running: N reqs, Waiting: M reqs", SGLang's "#running-req: N ...
    #queue-req: M"), told apart by the process that printed them (`(EngineCore_DP0 pid=212)`,
    `(ServeReplica:app:Deployment pid=5120)`): several engines in one log (Ray Serve replicas, DP ranks) each count
    their own requests."""

    samples: int = 0
    running: list[int] = field(default_factory=list)
    waiting: list[int] = field(default_factory=list)


@dataclass
class RequestLogs:
    llama: LlamaSlot | None = None
    ollama: OllamaState | None = None
    gc: GcState | None = None
    context: ContextState | None = None
    proxy: ProxyCuts | None = None
    engines: dict[str, EngineStats] = field(default_factory=dict)
    """Periodic stats by the process that printed them."""
    lines: list[str] = field(default_factory=list)
    """`path:line` of the lines read (what a finding cites)."""

    def busy_engines(self) -> dict[str, EngineStats]:
        """The engines whose stats lines show work (a request running or waiting at some point)."""
        return {k: e for k, e in self.engines.items() if any(e.running) or any(e.waiting)}

    def running_per_engine(self) -> float | None:
        """The typical (median over the lines) running count of each engine, averaged over the busy engines."""
        busy = self.busy_engines()
        if not busy:
            return None
        meds = [sorted(e.running)[len(e.running) // 2] for e in busy.values() if e.running]
        return sum(meds) / len(meds) if meds else None

    def facts(self) -> dict[str, float | int | str | bool]:
        out: dict[str, float | int | str | bool] = {}
        busy = self.busy_engines()
        if busy:
            out["request.log.engines"] = len(busy)
            per = self.running_per_engine()
            if per is not None:
                out["request.log.running_per_engine"] = per
            out["request.log.waiting_max"] = max(max(e.waiting, default=0) for e in busy.values())
        s = self.llama
        if s is not None and s.requests:
            out["request.log.llama.requests"] = s.requests
            if s.prompt_tokens:
                out["request.log.llama.prompt_tokens_mean"] = mean(s.prompt_tokens)
            if s.reused:
                out["request.log.llama.reused_tokens_mean"] = mean(s.reused)
                out["request.log.llama.full_reprocess_share"] = sum(1 for r in s.reused if r == 0) / len(s.reused)
            if s.held_before:
                out["request.log.llama.held_before_mean"] = mean(s.held_before)
            if s.prompt_eval_ms:
                out["request.log.llama.prompt_eval_ms_mean"] = mean(s.prompt_eval_ms)
            if s.prompt_eval_tokens:
                out["request.log.llama.prompt_eval_tokens_mean"] = mean(s.prompt_eval_tokens)
            if s.eval_ms_per_token:
                out["request.log.llama.eval_ms_per_token"] = mean(s.eval_ms_per_token)
            if s.slots is not None:
                out["request.log.llama.slots"] = s.slots
        o = self.ollama
        if o is not None:
            if o.num_parallel is not None:
                out["request.log.ollama.num_parallel"] = o.num_parallel
                out["request.log.ollama.num_parallel_src"] = o.num_parallel_src
            if o.max_queue is not None:
                out["request.log.ollama.max_queue"] = o.max_queue
            if o.durations_s:
                out["request.log.ollama.requests"] = len(o.durations_s)
                out["request.log.ollama.duration_s_min"] = min(o.durations_s)
                out["request.log.ollama.duration_s_max"] = max(o.durations_s)
                out["request.log.ollama.duration_s_mean"] = mean(o.durations_s)
        c = self.context
        if c is not None:
            for k in ("limit", "slot_ctx", "total_ctx", "slots"):
                val = getattr(c, k)
                if val is not None:
                    out[f"request.log.context.{k}"] = val
            if c.refused:
                out["request.log.context.refused"] = c.refused
            if c.truncated:
                out["request.log.context.truncated"] = c.truncated
            if c.prompts:
                out["request.log.context.prompt_mean"] = mean(c.prompts)
                out["request.log.context.prompt_max"] = max(c.prompts)
                if c.limit:
                    out["request.log.context.prompt_over_limit"] = mean(c.prompts) / c.limit
            if c.requested:
                out["request.log.context.requested_mean"] = mean(c.requested)
            if c.completion:
                out["request.log.context.completion_tokens"] = max(c.completion)
                if c.limit:
                    out["request.log.context.prompt_room"] = c.limit - max(c.completion)
            if c.kept and c.prompts:
                out["request.log.context.dropped_share"] = max(0.0, 1 - mean(c.kept) / mean(c.prompts))
                out["request.log.context.kept_mean"] = mean(c.kept)
            if c.slots and c.total_ctx and c.slot_ctx and c.slots > 1 and c.slot_ctx < c.total_ctx:
                out["request.log.context.divided"] = True
        pc = self.proxy
        if pc is not None and pc.flags:
            out["request.log.proxy.kind"] = pc.kind
            out["request.log.proxy.cut"] = sum(pc.flags.values())
            out["request.log.proxy.flags"] = ", ".join(f"{f} x {n}" for f, n in sorted(pc.flags.items()))
            if pc.timeouts:
                out["request.log.proxy.timeouts"] = pc.timeouts
            if pc.durations_ms:
                ds = sorted(pc.durations_ms)
                out["request.log.proxy.cut_after_s"] = ds[len(ds) // 2] / 1e3
                out["request.log.proxy.cut_spread_s"] = (ds[-1] - ds[0]) / 1e3
        g = self.gc
        if g is not None:
            for proc, pauses in g.pauses_ms.items():
                key = proc.lower()
                out[f"request.log.gc.{key}.gen2_count"] = len(pauses)
                out[f"request.log.gc.{key}.gen2_pause_ms_max"] = max(pauses)
                out[f"request.log.gc.{key}.gen2_pause_ms_mean"] = mean(pauses)
                if key in ("apiserver",):
                    out["request.log.gc.api_server_gen2_pause_ms_max"] = max(pauses)
                times = g.times_s.get(proc) or []
                if len(times) >= 2:
                    span = times[-1] - times[0]
                    if span > 0:
                        out[f"request.log.gc.{key}.gen2_interval_s"] = span / (len(times) - 1)
                if proc in g.tracked_max:
                    out[f"request.log.gc.{key}.tracked_objects_max"] = g.tracked_max[proc]
        return out


def _duration_s(value: str, unit: str) -> float:
    x = float(value)
    return {"µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[unit] * x


def _env_int(env: str, name: str) -> int | None:
    m = re.search(rf"\b{name}:(\d+)\b", env)
    return int(m.group(1)) if m else None


_PROC = re.compile(r"^\s*\(([^()]*?pid=\d+)\)")


def _stats(text: str) -> tuple[int, int] | None:
    """(running, waiting) of an engine's periodic stats line (vLLM's, SGLang's decode line), or None."""
    from orchestrator.prongs.serving_engine.logs import RX_SGL_DECODE, RX_VLLM_STATS

    m = RX_VLLM_STATS.search(text)
    if m is not None:
        return int(m.group(3)), int(m.group(5))
    m = RX_SGL_DECODE.search(text)
    if m is not None:
        return int(m.group(1)), int(m.group(6))
    return None


def read_request_logs(lines: Iterable[tuple[str, int, str]]) -> RequestLogs:
    """The request-level state of the log lines (path, line number, text) an engine probe returned."""
    out = RequestLogs()
    slot = LlamaSlot()
    oll = OllamaState()
    gc = GcState()
    ctx = ContextState()
    cuts = ProxyCuts()
    last_past: int | None = None
    for path, no, text in lines:
        hit = True
        if _context_line(text, ctx) or _proxy_line(text, cuts):
            pass
        elif (m := _LLAMA_NEW.search(text)) is not None:
            slot.requests += 1
            slot.prompt_tokens.append(int(m.group(2)))
            if last_past is not None:
                slot.held_before.append(last_past)
        elif (m := _LLAMA_RM.search(text)) is not None:
            slot.reused.append(int(m.group(2)))
        elif (m := _LLAMA_RELEASE.search(text)) is not None:
            last_past = int(m.group(2))
        elif (m := _LLAMA_PROMPT_EVAL.search(text)) is not None:
            slot.prompt_eval_ms.append(float(m.group(1)))
            slot.prompt_eval_tokens.append(int(m.group(2)))
        elif (m := _LLAMA_EVAL.search(text)) is not None:
            n = int(m.group(2))
            if n:
                slot.eval_ms_per_token.append(float(m.group(1)) / n)
        elif (m := _LLAMA_SLOTS.search(text)) is not None:
            slot.slots = int(m.group(1))
        elif (m := _OLLAMA_ENV.search(text)) is not None:
            par = _env_int(m.group(1), "OLLAMA_NUM_PARALLEL")
            if par is not None and oll.num_parallel is None:
                oll.num_parallel, oll.num_parallel_src = par, f"{path}:{no} (server config OLLAMA_NUM_PARALLEL:{par})"
            oll.max_queue = _env_int(m.group(1), "OLLAMA_MAX_QUEUE")
        elif (m := _OLLAMA_RUNNER.search(text)) is not None:
            # the runner's --parallel is what Ollama resolved (OLLAMA_NUM_PARALLEL 0 means "auto" in newer builds)
            oll.num_parallel, oll.num_parallel_src = int(m.group(1)), f"{path}:{no} (runner --parallel {m.group(1)})"
        elif (m := _GIN.search(text)) is not None:
            oll.durations_s.append(_duration_s(m.group(2), m.group(3)))
            oll.statuses[m.group(1)] = oll.statuses.get(m.group(1), 0) + 1
        elif (m := _GC.search(text)) is not None:
            if m.group(4) == "2":
                proc = m.group(1)
                gc.pauses_ms.setdefault(proc, []).append(float(m.group(2)))
                gc.tracked_max[proc] = max(gc.tracked_max.get(proc, 0), int(m.group(3)))
                t = _GC_TIME.search(text)
                if t is not None:
                    gc.times_s.setdefault(proc, []).append(int(t.group(1)) * 3600 + int(t.group(2)) * 60
                                                            + int(t.group(3)))
        elif (stats := _stats(text)) is not None:
            proc = _PROC.match(text)
            key = f"{path}|{proc.group(1) if proc else ''}"
            st = out.engines.setdefault(key, EngineStats())
            st.samples += 1
            st.running.append(stats[0])
            st.waiting.append(stats[1])
            hit = False
        else:
            hit = False
        if hit and len(out.lines) < 50:
            out.lines.append(f"{path}:{no}")
    if slot.requests:
        out.llama = slot
    if oll.num_parallel is not None or oll.durations_s:
        out.ollama = oll
    if gc.pauses_ms:
        out.gc = gc
    if cuts.flags:
        out.proxy = cuts
    if ctx.refused or ctx.truncated or ctx.slot_ctx is not None or ctx.total_ctx is not None:
        if ctx.slot_ctx is None and ctx.total_ctx and ctx.slots:
            ctx.slot_ctx = ctx.total_ctx // ctx.slots
        out.context = ctx
    return out


def _proxy_line(text: str, cuts: ProxyCuts) -> bool:
    """Reads one proxy log line that says the proxy ended a request (and how long it had run); whether it was one."""
    m = _ENVOY_JSON.search(text)
    if m is not None and m.group(1) != "-":
        cuts.kind = "envoy"
        for f in m.group(1).split(","):
            cuts.flags[f] = cuts.flags.get(f, 0) + 1
        d = _ENVOY_DURATION.search(text)
        if d is not None:
            cuts.durations_ms.append(int(d.group(1)))
        return True
    if (t := _ENVOY_TEXT.search(text)) is not None:
        cuts.kind = "envoy"
        for f in t.group(2).split(","):
            cuts.flags[f] = cuts.flags.get(f, 0) + 1
        cuts.durations_ms.append(int(t.group(3)))
        return True
    if _NGINX_TIMEOUT.search(text):
        cuts.kind = "nginx"
        cuts.flags["timeout"] = cuts.flags.get("timeout", 0) + 1
        return True
    if (h := _HAPROXY_TERM.search(text)) is not None:
        cuts.kind = "haproxy"
        key = h.group(1) + h.group(2)
        cuts.flags[key] = cuts.flags.get(key, 0) + 1
        return True
    return False


def _context_line(text: str, ctx: ContextState) -> bool:
    """Reads one line about the context window into ctx; whether it was one. (The Ollama runner's command line is
    read for its --ctx-size and left to the other readers too.)"""
    if (m := _TRUNCATE.search(text)) is not None:
        ctx.truncated += 1
        ctx.limit = int(m.group(1))
        ctx.prompts.append(int(m.group(2)))
        ctx.kept.append(int(m.group(3)) if m.group(3) else int(m.group(1)))
        return True
    if (m := _EXCEEDS.search(text)) is not None:
        ctx.refused += 1
        ctx.prompts.append(int(m.group(1)))
        ctx.requested.append(int(m.group(1)))
        ctx.limit = int(m.group(2))
        return True
    if (m := _VLLM_MAXLEN.search(text)) is not None:
        ctx.refused += 1
        ctx.limit = int(m.group(1))
        ctx.requested.append(int(m.group(2)))
        if m.group(3):
            ctx.prompts.append(int(m.group(3)))
            ctx.completion.append(int(m.group(4)))
        return True
    if (m := _SGL_MAXLEN.search(text)) is not None:
        ctx.refused += 1
        ctx.prompts.append(int(m.group(1)))
        ctx.requested.append(int(m.group(1)))
        ctx.limit = int(m.group(2))
        return True
    if (m := _TGI_MAXLEN.search(text)) is not None:
        ctx.refused += 1
        ctx.limit = int(m.group(1))
        ctx.prompts.append(int(m.group(2)))
        ctx.completion.append(int(m.group(3)))
        ctx.requested.append(int(m.group(2)) + int(m.group(3)))
        return True
    if (m := _SLOT_CTX.search(text)) is not None:
        ctx.slot_ctx = int(m.group(1))
        return True
    if (m := _TOTAL_CTX.search(text)) is not None:
        ctx.total_ctx = int(m.group(1))
        return True
    if (m := _SEQ_MAX.search(text)) is not None:
        ctx.slots = int(m.group(1))
        return True
    if (m := _RUNNER_CTX.search(text)) is not None:
        ctx.total_ctx = int(m.group(1))
        par = re.search(r"--parallel (\d+)", text)
        if par:
            ctx.slots = int(par.group(1))
            ctx.slot_ctx = ctx.total_ctx // max(1, ctx.slots)
    return False
