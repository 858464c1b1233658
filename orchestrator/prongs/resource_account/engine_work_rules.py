"""Work the engine does that returns nothing: drafted tokens the target model rejects (speculative decoding whose
acceptance is near one token per step) and prompt prefixes prefilled again because the prefix cache never hits.
Both are read from the engine's own counters, never from a catalog entry, and every finding shows its arithmetic.

Speculative decoding. Each step drafts k tokens (a draft model's k forward passes, an EAGLE head's, or an n-gram
lookup) and runs one target-model pass that verifies k+1 positions; it emits the accepted drafts plus one token of
its own, the mean acceptance length L (1 <= L <= k+1). A step without speculation emits exactly 1 token for one
target pass over 1 position. So speculation can give at most L tokens per step for the price of the drafts and a
verify pass k+1 positions wide: with L near 1 nothing is gained and the drafting is pure overhead (at a large batch
the verify pass is compute-bound and costs about k+1 decode steps). Read from: vLLM (v1)
`vllm:spec_decode_num_drafts_total`, `vllm:spec_decode_num_draft_tokens_total`,
`vllm:spec_decode_num_accepted_tokens_total` (L = 1 + accepted / drafts, the PromQL in
vllm/v1/spec_decode/metrics.py, https://github.com/vllm-project/vllm/blob/main/vllm/v1/spec_decode/metrics.py) or its
log "SpecDecoding metrics: Mean acceptance length: ..., Accepted: N tokens, Drafted: M tokens"; SGLang
`sglang:spec_accept_length` or its decode line "accept len: X" (tokens per verify step, the bonus token included).

Prefix cache. A request whose prompt starts with blocks already in the cache skips their prefill; a hit rate near 0
on a prompt-heavy workload means every prompt token is prefilled again. Read from: vLLM
`vllm:prefix_cache_queries_total` / `vllm:prefix_cache_hits_total` (tokens, vllm/v1/metrics/loggers.py) or the stats
line's "Prefix cache hit rate: X%"; SGLang `sglang:cached_tokens_total` / `sglang:prompt_tokens_total`, its prefill
lines ("#new-token: N, #cached-token: C") or `sglang:cache_hit_rate`. Only when prompts outweigh outputs (prompt
tokens >= PROMPT_HEAVY x generated tokens, from the counters, the stats lines' throughputs or the benchmark's
lengths): prefill is then where the time goes.
Start-up. vLLM prints each phase of a start: "Loading weights took X seconds", "Model loading took X GiB and Y
seconds", "torch.compile takes X s in total", "Graph capturing finished in X secs", "init engine (profile, create kv
cache, warmup model) took X seconds" (the last contains the compile and the capture); the question "why does it take
N minutes to start" is answered by the phase that took the time, each with its own remedy (the weights' read path;
the compile cache kept across starts or no compile; fewer CUDA graph sizes).
Pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orchestrator.diagnosis import Number
from orchestrator.findings import Finding
from orchestrator.prongs.serving_engine.models import EngineInstance, EngineReport

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView

LOW_ACCEPT_LEN = 1.5
"""Mean acceptance length (tokens per target step, bonus included) below which speculation costs more than it saves:
at most half a token per step gained, against k drafts and a verify pass k+1 positions wide."""
PAYS_ACCEPT_LEN = 2.0
"""Mean acceptance length at or above which speculation is ruled out as the cost: two or more tokens per target
step for one verify pass."""
MIN_DRAFTS = 50
"""Drafts (vLLM's counter) needed before the acceptance is read as the workload's, not a warm-up's."""
LOW_HIT_PCT = 5.0
"""Prefix cache hit rate (% of prompt tokens queried) at or below which the cache reuses nothing."""
REUSED_PCT = 30.0
"""A hit rate at or above this share of prompt tokens: the prefix cache is ruled out as the cost."""
MIN_QUERIED_TOKENS = 10_000
"""Prompt tokens the cache was queried for before its hit rate counts."""
PROMPT_HEAVY = 4.0
"""Prompt tokens per generated token at or above which prefill is where the time goes."""


def _num(name: str, value: float, unit: str, ev: str, peak: float | None = None) -> Number:
    return Number(name=name, value=round(value, 3), unit=unit, source=ev, peak=peak)


def _f(facts: dict[str, Any], *keys: str) -> tuple[float, str] | tuple[None, str]:
    for k in keys:
        x = facts.get(k)
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return float(x), k
    return None, ""


def _engines(v: "EvidenceView") -> list[tuple[str, EngineInstance, dict[str, Any]]]:
    out = []
    for ev, rep in v.probes("engine_config"):
        if isinstance(rep, EngineReport) and rep.primary is not None:
            out.append((ev.id, rep.primary, rep.facts()))
    return out


@dataclass
class Speculation:
    accept_len: float
    """Tokens emitted per target-model step (the bonus token included)."""
    k: float | None
    """Tokens drafted per step."""
    accepted: float | None
    drafted: float | None
    src: str


def _configured_k(e: EngineInstance) -> float | None:
    cfg = e.value("speculative_config")
    if isinstance(cfg, str):
        try:
            cfg = json.loads(cfg)
        except ValueError:
            cfg = None
    if isinstance(cfg, dict) and isinstance(cfg.get("num_speculative_tokens"), int):
        return float(cfg["num_speculative_tokens"])
    n = e.value("speculative_num_draft_tokens")  # SGLang: positions verified per step, the bonus one among them
    if isinstance(n, int) and n > 1:
        return float(n - 1)
    steps = e.value("speculative_num_steps")
    return float(steps) if isinstance(steps, int) and steps > 0 else None


def speculation_state(e: EngineInstance, facts: dict[str, Any]) -> Speculation | None:
    """The engine's speculative-decoding acceptance, from /metrics first, else its log lines."""
    drafts, _ = _f(facts, "metrics.vllm:spec_decode_num_drafts_total")
    dtoks, _ = _f(facts, "metrics.vllm:spec_decode_num_draft_tokens_total")
    acc, _ = _f(facts, "metrics.vllm:spec_decode_num_accepted_tokens_total")
    if drafts and drafts >= MIN_DRAFTS and acc is not None:
        return Speculation(1 + acc / drafts, (dtoks / drafts) if dtoks else _configured_k(e), acc, dtoks,
                           f"/metrics (vllm:spec_decode_num_accepted_tokens_total {acc:.0f} over "
                           f"vllm:spec_decode_num_drafts_total {drafts:.0f} drafts)")
    sgl, _ = _f(facts, "metrics.sglang:spec_accept_length")
    if sgl is not None and sgl > 0:
        return Speculation(sgl, _configured_k(e), None, None, "/metrics (sglang:spec_accept_length)")
    lg = e.log
    if lg is None or lg.spec_accept_len_mean is None or lg.spec_lines < 2:
        return None
    k = float(lg.spec_positions) if lg.spec_positions else _configured_k(e)
    what = "'SpecDecoding metrics'" if e.name == "vllm" else "'Decode batch' log lines' 'accept len'"
    return Speculation(lg.spec_accept_len_mean, k, lg.spec_accepted_tokens, lg.spec_drafted_tokens,
                       f"its {lg.spec_lines} {what}" + (" log lines" if e.name == "vllm" else ""))


def _speculation_overhead(v: "EvidenceView") -> Finding | None:
    """Speculative decoding whose drafts are rejected: about one token per target step, drafting for nothing (and,
    informational, speculation ruled out where it emits PAYS_ACCEPT_LEN tokens per step or more)."""
    for ev, e, facts in _engines(v):
        s = speculation_state(e, facts)
        if s is None:
            continue
        if s.accept_len >= PAYS_ACCEPT_LEN:
            return _speculation_pays(ev, e, s)
        if s.accept_len >= LOW_ACCEPT_LEN:
            continue
        L = s.accept_len
        k = f"{s.k:.0f}" if s.k else "k"
        width = f"{s.k + 1:.0f}" if s.k else "k+1"
        rate = (f", {s.accepted:.0f} of {s.drafted:.0f} drafted tokens accepted ({s.accepted / s.drafted:.1%})"
                if s.accepted is not None and s.drafted else "")
        running, _ = _f(facts, "metrics.vllm:num_requests_running", "metrics.sglang:num_running_reqs",
                        "engine.log.running_max")
        batch = (f" At {running:.0f} requests running the verify pass is a batch of {running:.0f} x {width} "
                 "positions, closer to compute-bound, so the extra positions cost more still."
                 if running and running >= 32 else "")
        claim = (f"{e.label} speculates {k} tokens per step, but {s.src} give a mean acceptance length of {L:.2f} "
                 f"tokens per target step{rate}. Each step runs the drafter {k} times and a target pass over {width} "
                 f"positions to emit {L:.2f} tokens, where a step without speculation emits 1 token for a pass over 1 "
                 f"position: speculation returns at most {100 * (L - 1):.0f} % more tokens per step, less than the "
                 f"drafting and the {width}-wide verify cost, so the draft work is overhead that makes decode slower."
                 f"{batch}")
        off = ("drop --speculative-config" if e.name == "vllm" else
               "drop --speculative-algorithm" if e.name == "sglang" else "turn speculative decoding off")
        fewer = ("num_speculative_tokens 1-2 in --speculative-config" if e.name == "vllm" else
                 "--speculative-num-steps 1-2 / --speculative-num-draft-tokens 2-3" if e.name == "sglang" else
                 "fewer draft tokens")
        return Finding(
            id="engine-speculation-overhead", category="engine", confidence=0.75, evidence=[ev],
            title=f"Speculative decoding costs more than it saves: {L:.2f} tokens per target step", claim=claim,
            short=f"speculative decoding emits {L:.2f} tokens per target step ({k} drafted): the drafts are rejected "
                  "and their work is overhead.",
            symptoms=["itl", "throughput"],
            numbers=[_num("mean acceptance length (tokens per target step)", L, "tokens", ev,
                          peak=(s.k + 1) if s.k else None)]
            + ([_num("draft acceptance rate", 100 * s.accepted / s.drafted, "%", ev, peak=100.0)]
               if s.accepted is not None and s.drafted else []),
            recommendations=[
                f"Test it: serve the same model without speculation ({off}) and compare ITL and output tokens/s at "
                "the same load; the run with the higher tokens/s is the one to keep.",
                f"If speculation stays, draft fewer tokens ({fewer}) and use a drafter matched to the target and the "
                "traffic: the same tokenizer and family, an EAGLE head trained for this model and run with the "
                "algorithm it was trained for (an EAGLE3 head under SGLang --speculative-algorithm EAGLE3), within "
                "its trained context length; n-gram drafting only for outputs that copy the prompt. Watch the "
                "acceptance length rise (vLLM 'Mean acceptance length', SGLang 'accept len')."])
    return None


def _speculation_pays(ev: str, e: EngineInstance, s: Speculation) -> Finding:
    """Ruled out: the drafts are mostly accepted, so each target step emits several tokens."""
    k = f" of a possible {s.k + 1:.0f}" if s.k else ""
    return Finding(
        id="engine-speculation-pays", category="engine", confidence=0.7, evidence=[ev], informational=True,
        title=f"Speculative decoding pays here: {s.accept_len:.2f} tokens per target step",
        claim=(f"{e.label}'s speculation is accepted: {s.src} give a mean acceptance length of {s.accept_len:.2f}"
               f"{k} tokens per target step, so each verify pass emits about {s.accept_len:.1f} tokens where a step "
               "without speculation emits 1; the drafting is not what slows decode."),
        short=f"speculative decoding emits {s.accept_len:.2f} tokens per target step: it pays.",
        symptoms=["itl", "throughput"],
        numbers=[_num("mean acceptance length (tokens per target step)", s.accept_len, "tokens", ev,
                      peak=(s.k + 1) if s.k else None)])


@dataclass
class PrefixReuse:
    hit_pct: float
    queried: float | None
    src: str


def prefix_state(e: EngineInstance, facts: dict[str, Any]) -> PrefixReuse | None:
    q, _ = _f(facts, "metrics.vllm:prefix_cache_queries_total")
    h, _ = _f(facts, "metrics.vllm:prefix_cache_hits_total")
    if q is not None and h is not None and q >= MIN_QUERIED_TOKENS:
        return PrefixReuse(100 * h / q, q, f"/metrics (vllm:prefix_cache_hits_total {h:.0f} of "
                                           f"vllm:prefix_cache_queries_total {q:.0f} prompt tokens)")
    sp, _ = _f(facts, "metrics.sglang:prompt_tokens_total")
    sc, _ = _f(facts, "metrics.sglang:cached_tokens_total")
    if sp is not None and sc is not None and sp >= MIN_QUERIED_TOKENS:
        return PrefixReuse(100 * sc / sp, sp, f"/metrics (sglang:cached_tokens_total {sc:.0f} of "
                                              f"sglang:prompt_tokens_total {sp:.0f} prompt tokens)")
    pct, _ = _f(facts, "engine.log.prefix_hit_rate_pct")
    if pct is not None:
        what = ("stats lines' 'Prefix cache hit rate'" if e.name == "vllm" else
                "prefill lines' '#cached-token' against '#new-token'")
        return PrefixReuse(pct, None, f"its {what}")
    g, _ = _f(facts, "metrics.sglang:cache_hit_rate")
    if g is not None and e.name == "sglang":
        return PrefixReuse(100 * g, None, "/metrics (sglang:cache_hit_rate)")
    return None


def _prompt_ratio(v: "EvidenceView", e: EngineInstance, facts: dict[str, Any]) -> tuple[float, str] | None:
    """Prompt tokens per generated token, and where that came from."""
    p, _ = _f(facts, "metrics.vllm:prompt_tokens_total", "metrics.sglang:prompt_tokens_total")
    g, _ = _f(facts, "metrics.vllm:generation_tokens_total", "metrics.sglang:generation_tokens_total")
    if p and g:
        return p / g, f"{p:.0f} prompt tokens against {g:.0f} generated"
    lg = e.log
    if lg is not None and lg.prompt_tok_s_max and lg.gen_tok_s_max:
        return lg.prompt_tok_s_max / lg.gen_tok_s_max, (f"up to {lg.prompt_tok_s_max:g} prompt tokens/s against "
                                                        f"{lg.gen_tok_s_max:g} generated tokens/s")
    oe = v.observations_evidence
    for b in (oe[1].bench if oe else []):
        if b.input_len and b.output_len:
            return b.input_len / b.output_len, f"{b.input_len:g}-token prompts for {b.output_len:g}-token outputs"
    return None


def _prefix_never_hits(v: "EvidenceView") -> Finding | None:
    """Prefix caching on, a prompt-heavy load, and a hit rate near 0: every prompt is prefilled in full (and,
    informational, the cache ruled out where it serves REUSED_PCT of prompt tokens or more)."""
    for ev, e, facts in _engines(v):
        if facts.get("engine.prefix_caching") is False:
            continue  # caching off: the catalog's prefix-caching-off entry says so
        s = prefix_state(e, facts)
        if s is None or LOW_HIT_PCT < s.hit_pct < REUSED_PCT:
            continue
        ratio = _prompt_ratio(v, e, facts)
        if ratio is None or ratio[0] < PROMPT_HEAVY:
            continue
        if s.hit_pct >= REUSED_PCT:
            return Finding(
                id="engine-prefix-cache-reused", category="engine", confidence=0.7, evidence=[ev], informational=True,
                title=f"The prefix cache is reused ({s.hit_pct:.1f} % of prompt tokens hit)",
                claim=(f"{e.label}'s prefix cache works: {s.src} show {s.hit_pct:.1f} % of prompt tokens served from "
                       f"the cache on a load whose prompts outweigh outputs {ratio[0]:.0f} to 1, so shared prefixes "
                       "are not prefilled again; the time to first token goes to the uncached rest of the prompts "
                       "and to the queue."),
                short=f"the prefix cache served {s.hit_pct:.1f} % of prompt tokens.", symptoms=["ttft", "throughput"],
                numbers=[_num("prefix cache hit rate", s.hit_pct, "%", ev, peak=100.0)])
        ttft, _ = _f(facts, "metrics.vllm:time_to_first_token_seconds.mean",
                     "metrics.sglang:time_to_first_token_seconds.mean")
        t = f" Its mean TTFT is {ttft:.2f} s." if ttft else ""
        block = e.value("block_size") or e.value("page_size")
        blk = f" ({block} tokens here)" if isinstance(block, int) else ""
        claim = (f"{e.label} has prefix caching on, but {s.src} show a hit rate of {s.hit_pct:.1f} % while prompts "
                 f"outweigh outputs {ratio[0]:.0f} to 1 ({ratio[1]}): the prefix cache never hits, so every request "
                 "prefills its whole prompt again, a shared system prompt, few-shot examples or chat history "
                 f"included, and prefill is where the time goes.{t} A cache that is on but never hits means the "
                 "prompts do not start with the same tokens: something differs in the first tokens (a timestamp, "
                 "date or request id at the top of the system prompt, a per-request cache salt), the shared part is "
                 f"shorter than one KV block{blk}, or the model's layers are not cacheable (hybrid Mamba / linear "
                 "attention models).")
        return Finding(
            id="engine-prefix-cache-never-hits", category="engine", confidence=0.7, evidence=[ev],
            title=f"The prefix cache never hits ({s.hit_pct:.1f} %): every prompt is prefilled in full",
            claim=claim,
            short=f"the prefix cache hit {s.hit_pct:.1f} % of prompt tokens on a prompt-heavy load: every prompt is "
                  "prefilled in full.",
            symptoms=["ttft", "throughput"],
            numbers=[_num("prefix cache hit rate", s.hit_pct, "%", ev, peak=100.0),
                     _num("prompt tokens per generated token", ratio[0], "tokens", ev)],
            recommendations=[
                "Put what every request shares first and byte-identical: the system prompt and few-shot examples "
                "before anything that varies (move timestamps, dates, user or request ids to the end of the prompt), "
                "and no per-request cache salt; then watch the hit rate (vLLM vllm:prefix_cache_hits_total / "
                "vllm:prefix_cache_queries_total, SGLang #cached-token) and TTFT.",
                "Check that the shared part spans at least one KV block (vLLM --block-size, SGLang --page-size) and "
                "that the model's layers can be prefix-cached (hybrid Mamba / linear-attention models in your "
                "version: see its prefix-caching notes, "
                "https://docs.vllm.ai/en/latest/features/automatic_prefix_caching.html)."])
    return None


SLOW_PHASE_S = 60.0
"""A start-up phase of at least this many seconds is named as where a slow start goes."""

_PHASE_WHY = {
    "weights": ("reading the weights: the time is the storage or network path the checkpoint comes from (a network "
                "filesystem, an object store, a download at start), not the GPU",
                "Measure the weights' read path (the checkpoint's size over this time is the read rate) and put the "
                "weights on local NVMe or in the page cache before the start; a download at start is paid every "
                "start unless HF_HOME is a persistent volume."),
    "compile": ("torch.compile compiling the model's graphs: the first start on a machine compiles from scratch, and "
                "every start does so again unless vLLM's compile cache (VLLM_CACHE_ROOT, by default "
                "~/.cache/vllm/torch_compile_cache) survives between starts",
                "Keep the compile cache across starts (mount ~/.cache/vllm, or VLLM_CACHE_ROOT, on a persistent volume "
                "and check the next start logs 'Directly load the compiled graph(s)'), and test the start without "
                "compilation (-O0, or --enforce-eager for no compile and no CUDA graphs) to see what it costs."),
    "graphs": ("CUDA graph capture: vLLM captures one graph per batch size it may run, so the time grows with the "
               "number of capture sizes",
               "Capture fewer sizes (--max-cudagraph-capture-size, or compilation_config cudagraph_capture_sizes with "
               "the batch sizes the load runs) or test without graphs (--enforce-eager)."),
    "init": ("engine init outside compile and capture: memory profiling, KV cache allocation and warm-up",
             "Rerun the start with VLLM_LOGGING_LEVEL=DEBUG to split the init phase, and check the GPUs' memory and "
             "the host's CPUs while it runs."),
}


def _sec(x: float) -> str:
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def startup_phases(v: "EvidenceView") -> Finding | None:
    """A slow start accounted from the engine's own phase lines: the phase that took the time, and its remedy."""
    for ev, e, _facts in _engines(v):
        lg = e.log
        if lg is None:
            continue
        load = lg.model_load_s or lg.weights_load_s
        comp, graphs, init = lg.compile_s, lg.graph_capture_s, lg.init_engine_s
        phases: dict[str, float] = {}
        if load:
            phases["weights"] = load
        if comp:
            phases["compile"] = comp
        if graphs:
            phases["graphs"] = graphs
        if init:
            rest = init - (comp or 0.0) - (graphs or 0.0)
            if rest > 0:
                phases["init"] = rest
        if not phases:
            continue
        top = max(phases, key=lambda k: phases[k])
        if phases[top] < SLOW_PHASE_S:
            continue
        known = (load or 0.0) + (init if init else (comp or 0.0) + (graphs or 0.0))
        span = lg.start_span_s
        parts = []
        if load:
            parts.append(f"model loading {_sec(load)} s" + (f" (weights read in {_sec(lg.weights_load_s)} s)"
                                                             if lg.weights_load_s and lg.model_load_s else ""))
        if init:
            inner = " and ".join(x for x in (f"torch.compile {_sec(comp)} s" if comp else "",
                                             f"CUDA graph capture {_sec(graphs)} s" if graphs else "") if x)
            parts.append(f"engine init {_sec(init)} s" + (f", {inner} among it" if inner else ""))
        else:
            parts += [x for x in (f"torch.compile {_sec(comp)} s" if comp else "",
                                  f"CUDA graph capture {_sec(graphs)} s" if graphs else "") if x]
        whole = (f" The start took {_sec(span)} s from the banner to serving." if span and span >= known else "")
        why, rec = _PHASE_WHY[top]
        share = f", {100 * phases[top] / span:.0f} % of the start" if span and span >= known else ""
        claim = (f"{e.label}'s own log accounts for its start: {'; '.join(parts)}.{whole} The largest phase is "
                 f"{why}: {_sec(phases[top])} s{share}.")
        name = {"weights": "loading the weights", "compile": "torch.compile", "graphs": "CUDA graph capture",
                "init": "engine init"}[top]
        return Finding(
            id="engine-startup-phase", category="engine", confidence=0.75, evidence=[ev],
            title=f"The start goes to {name}: {_sec(phases[top])} s", claim=claim,
            short=f"the start's largest phase is {name} ({_sec(phases[top])} s).", symptoms=["startup"],
            numbers=[_num(f"start-up phase: {k}", x, "s", ev) for k, x in phases.items()]
            + ([_num("start (banner to serving)", span, "s", ev)] if span else []),
            recommendations=[rec])
    return None


def speculation_overhead(v: "EvidenceView") -> Finding | None:
    """Rejected speculative drafts, computed once for the view (a copy each call)."""
    f = v.fact("engine-work.speculation", lambda: _speculation_overhead(v))
    return f.model_copy() if f is not None else None


def prefix_never_hits(v: "EvidenceView") -> Finding | None:
    """A prefix cache that never hits, computed once for the view (a copy each call)."""
    f = v.fact("engine-work.prefix", lambda: _prefix_never_hits(v))
    return f.model_copy() if f is not None else None


def redone_work(v: "EvidenceView") -> Finding | None:
    """The fact that the GPUs do work the engine redoes or discards (prompts prefilled again, drafts rejected), as its
    finding, or None: read by the resource account's answer to where the time went."""
    return prefix_never_hits(v) or speculation_overhead(v)


def engine_work_findings(v: "EvidenceView") -> list[Finding]:
    return [f for f in (speculation_overhead(v), prefix_never_hits(v), startup_phases(v)) if f]


def engine_work(v: "EvidenceView") -> list[Finding]:
    """Engine work that returns nothing: rejected speculative drafts, a prefix cache that never hits."""
    return engine_work_findings(v)
