"""The engine's queue: requests running and waiting, and how full the KV cache is, from the engine's /metrics or its
periodic stats lines, and what bounds the batch.

Read from (names as the engines expose them): vLLM `vllm:num_requests_running`, `vllm:num_requests_waiting`,
`vllm:kv_cache_usage_perc` (V0 `vllm:gpu_cache_usage_perc`; a fraction 0-1 despite the name,
vllm/v1/metrics/loggers.py), `vllm:num_preemptions_total`; SGLang `sglang:num_running_reqs`, `sglang:num_queue_reqs`,
`sglang:token_usage` (0-1, python/sglang/srt/metrics/collector.py); TGI `tgi_batch_current_size`, `tgi_queue_size`;
and the stats lines (vLLM "Running: N reqs, Waiting: M reqs, GPU KV cache usage: X%", V0 "Pending: M reqs";
SGLang "Decode batch. #running-req: N, ... token usage: U, ... #queue-req: Q"), parsed in prongs/serving_engine/logs.py.

- waiting > 0 with the KV cache (nearly) full: the KV cache bounds the batch; new requests wait for blocks to free.
- waiting > 0 with the KV cache far from full and running at the engine's request limit: the request limit does.
- nothing running or waiting while the GPUs idle: no work reaches the engine (the limit is in front of it).
Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from orchestrator.diagnosis import Number
from orchestrator.findings import BoundClaim, Finding, capitalized
from orchestrator.ranks import Rank
from orchestrator.prongs.serving_engine.models import EngineReport

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView

KV_FULL = 0.9
"""KV usage at or above this share with requests waiting: the pool has no room for them (vLLM admits a request only
when its blocks are free; SGLang keeps headroom for the running requests' growth, new_token_ratio)."""
KV_ROOM = 0.8
"""KV usage below this share with requests waiting: the pool is not what holds them back."""
LOW_INFLIGHT = 2.0
"""At most this many requests running in the engine, none waiting, GPUs idle: the client's concurrency is the
limit (or a thirty-second of the engine's request limit where it is larger)."""


@dataclass
class QueueState:
    ev: str
    engine: str
    running: float | None
    waiting: float | None
    kv_usage: float | None
    """0-1."""
    kv_src: str
    max_seqs: float | None
    max_seqs_src: str
    preemptions: float | None
    src: str
    """Where running/waiting came from (/metrics or the stats lines)."""
    cap: float | None = None
    """The engine's own request limit under any engine's name (max_num_seqs, max_running_requests, ...)."""


def _first(facts: dict, *keys: str) -> tuple[float, str] | tuple[None, str]:
    for k in keys:
        x = facts.get(k)
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return float(x), k
    return None, ""


def queue_state(v: "EvidenceView") -> QueueState | None:
    """The primary engine's queue, from /metrics first (a gauge now), else its stats lines (the largest seen)."""
    for ev, rep in v.probes("engine_config"):
        if not isinstance(rep, EngineReport) or rep.primary is None:
            continue
        facts = rep.facts()
        running, rk = _first(facts, "metrics.vllm:num_requests_running", "metrics.sglang:num_running_reqs",
                             "metrics.tgi_batch_current_size", "engine.log.running_max")
        waiting, _ = _first(facts, "metrics.vllm:num_requests_waiting", "metrics.sglang:num_queue_reqs",
                            "metrics.tgi_queue_size", "engine.log.waiting_max")
        if running is None and waiting is None:
            continue
        kv, kk = _first(facts, "metrics.vllm:kv_cache_usage_perc", "metrics.vllm:gpu_cache_usage_perc",
                        "metrics.sglang:token_usage")
        if kv is None:
            pct, kk = _first(facts, "engine.log.kv_usage_max_pct")
            kv = pct / 100 if pct is not None else None
        seqs, _ = _first(facts, "engine.max_num_seqs")
        pre, _ = _first(facts, "metrics.vllm:num_preemptions_total", "metrics.sglang:num_retracted_requests_total")
        src = "its /metrics" if rk.startswith("metrics.") else "its periodic stats log lines"
        kv_src = ("its /metrics (" + kk.removeprefix("metrics.") + ")" if kk.startswith("metrics.")
                  else "its stats log lines (the largest GPU KV cache usage)") if kk else ""
        cap, _ = _first(facts, "engine.max_num_seqs", "engine.max_running_requests", "engine.max_batch_size",
                        "engine.max_concurrent_requests")
        return QueueState(ev.id, rep.primary.name, running, waiting, kv, kv_src, seqs,
                          str(facts.get("engine.max_num_seqs_source") or ""), pre, src, cap)
    return None


def _n(name: str, value: float, unit: str, ev: str, peak: float | None = None) -> Number:
    return Number(name=name, value=round(value, 2), unit=unit, source=ev, peak=peak)


def engine_queue(v: "EvidenceView", busy: float | None = None, acct_ev: str | None = None) -> Finding | None:
    """What the engine's queue says bounds the batch, with the numbers (None when it says nothing): computed once
    for the view and the account's window (the account's findings and its answer to where the time went read it)."""
    f = v.fact(f"engine-queue:{busy}:{acct_ev}", lambda: _engine_queue(v, busy, acct_ev))
    if f is None:
        return None
    f = f.model_copy()
    if f.id in BOUNDS_BATCH:  # requests wait for a place in the batch the engine holds: that sets the bound
        f.sets_bound = BoundClaim(rank=Rank.BATCH_HELD, bound="latency",
                                  words=capitalized(f.short) if f.short else f.title)
    return f


def _engine_queue(v: "EvidenceView", busy: float | None, acct_ev: str | None) -> Finding | None:
    q = queue_state(v)
    if q is None:
        return None
    ev = [x for x in (acct_ev, q.ev) if x]
    running, waiting = q.running or 0, q.waiting or 0
    gpus = f" while the GPUs were busy {busy:.0f} % of the window" if busy is not None else ""
    if running == 0 and waiting == 0:
        if busy is None:
            return None
        claim = (f"The engine reports 0 requests running and 0 waiting{gpus}: no work reaches it. The limit is "
                 "before the engine: the client offers too little load (concurrency or request rate), or a proxy in "
                 "front of it holds requests.")
        return Finding(id="account-no-load", category="workload", confidence=0.7, evidence=ev, bound=None,
                       batch_uncapped=True, reads="idle",
                       title="The engine is idle: no requests reach it", claim=claim,
                       short="the engine had no request running or waiting: the load offered is the limit.",
                       symptoms=["throughput"],
                       recommendations=["Raise the offered load (benchmark --max-concurrency / --request-rate) "
                                        "and check the path in front of the engine (proxy, router, client "
                                        "connection pool) before tuning the engine."])
    if waiting <= 0:
        return _low_concurrency(v, q, busy, ev) if busy is not None else None
    pre = f"; {q.preemptions:.0f} preemptions counted" if q.preemptions else ""
    if q.kv_usage is not None and q.kv_usage >= KV_FULL:
        both = q.max_seqs is not None and running >= q.max_seqs
        full = f"{100 * q.kv_usage:.0f} % full"
        if both:  # the request limit is reached as well: neither alone bounds the batch
            claim = (f"The engine had {waiting:.0f} requests waiting and {running:.0f} running, its limit of "
                     f"{q.max_seqs:.0f} ({q.max_seqs_src}), with its KV cache {full} ({q.kv_src}{pre}){gpus}: the "
                     "batch is full on both counts. A waiting request is admitted only when a running one finishes, "
                     f"so its TTFT includes that wait, and throughput is what {running:.0f} concurrent streams give; "
                     "raising the limit alone would find no KV blocks free, and more KV room alone would meet the "
                     "limit.")
            title = (f"The batch is full: {waiting:.0f} requests wait with {running:.0f} running (the limit) and "
                     f"the KV cache {full}")
            short = (f"{waiting:.0f} requests waited with the running count at its limit and the KV cache {full}: "
                     "the batch is full.")
            recs = ["Add replicas (or GPUs per replica): one engine serves only the requests its limit and its KV "
                    "cache hold at once.",
                    "Or raise both together: the running-request limit (vLLM --max-num-seqs, SGLang "
                    "--max-running-requests) and the KV cache's room (--gpu-memory-utilization / "
                    "--mem-fraction-static, an FP8 KV cache with --kv-cache-dtype fp8), watching TPOT, which grows "
                    "with the batch."]
        else:
            claim = (f"The engine had {waiting:.0f} requests waiting and {running:.0f} running with its KV cache "
                     f"{full} ({q.kv_src}{pre}){gpus}: the KV cache bounds the batch. A waiting request is admitted "
                     "only when blocks free up, so its TTFT includes the wait for a running request to finish, and "
                     f"throughput is what {running:.0f} concurrent streams give.")
            title = f"The KV cache bounds the batch: {waiting:.0f} requests wait with it {full}"
            short = f"{waiting:.0f} requests waited with the KV cache {full}: the KV cache bounds the batch."
            recs = ["Give the KV cache more room (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static;"
                    " an FP8 KV cache with --kv-cache-dtype fp8; the weights over more GPUs or in FP8), or "
                    "shorten what each request holds (--max-model-len, max_tokens).",
                    "Or add replicas: one engine serves only the requests its KV cache holds at once."]
        return Finding(id="queue-kv-cache-bounds-batch", category="engine", confidence=0.75, evidence=ev, queue_wait=True,
                       bound=None, title=title, claim=claim, short=short, symptoms=["ttft", "throughput"],
                       numbers=[_n("requests waiting", waiting, "requests", q.ev),
                                _n("requests running", running, "requests", q.ev),
                                _n("KV cache usage", 100 * q.kv_usage, "%", q.ev, peak=100.0)],
                       recommendations=recs)
    at_cap = q.max_seqs is not None and running >= q.max_seqs
    if q.kv_usage is not None and q.kv_usage < KV_ROOM and at_cap and q.engine != "vllm":
        # vLLM's case is the catalog's max-num-seqs-caps-batch entry (its metrics and stats lines); the others here
        claim = (f"The engine had {waiting:.0f} requests waiting and {running:.0f} running, its limit of "
                 f"{q.max_seqs:.0f} ({q.max_seqs_src}), while its KV cache was only {100 * q.kv_usage:.0f} % full "
                 f"({q.kv_src}){gpus}: the request limit, not memory, bounds the batch.")
        return Finding(id="queue-request-limit-bounds-batch", category="engine", confidence=0.7, evidence=ev,
                       queue_wait=True,
                       bound=None, title=f"The request limit ({q.max_seqs:.0f}) bounds the batch while the KV cache "
                       f"is {100 * q.kv_usage:.0f} % full", claim=claim,
                       short=f"{running:.0f} requests ran at the limit of {q.max_seqs:.0f} with {waiting:.0f} "
                       "waiting and KV room to spare.", symptoms=["ttft", "throughput"],
                       numbers=[_n("requests running / limit", running, "requests", q.ev, peak=q.max_seqs),
                                _n("KV cache usage", 100 * q.kv_usage, "%", q.ev, peak=100.0)],
                       recommendations=["Raise the engine's running-request limit (SGLang --max-running-requests, "
                                        "TGI --max-concurrent-requests, TensorRT-LLM --max_batch_size) toward what "
                                        "the KV cache holds, watching for preemptions."])
    if busy is None:
        return None
    claim = (f"The engine had {waiting:.0f} requests waiting and {running:.0f} running while the GPUs were busy only "
             f"{busy:.0f} % of the window: requests queue in the "
             "engine's scheduler, not on the GPU (admission limited by max running requests, KV-cache blocks or the "
             "prefill budget).")
    return Finding(id="account-engine-queue", category="engine", confidence=0.6, evidence=ev, queue_wait=True,
                   bound="latency", title=f"Requests wait in the engine's queue ({waiting:.0f} waiting)",
                   claim=claim, short=f"{waiting:.0f} requests waited in the engine's queue.",
                   symptoms=["ttft", "throughput"],
                   recommendations=["Check the engine's admission limits against the load: max running "
                                    "requests (vLLM --max-num-seqs, SGLang --max-running-requests), KV-cache "
                                    "size and the prefill token budget."])


def _low_concurrency(v: "EvidenceView", q: QueueState, busy: float, ev: list[str]) -> Finding | None:
    """Requests reach the engine only a few at a time and none wait in it, while the GPUs idle: the load is set in
    front of the engine (the client's concurrency, or a connection pool / proxy holding what the benchmark offered)."""
    running = q.running
    if running is None or running <= 0:
        return None
    oe = v.observations_evidence
    offered = max((b.max_concurrency or 0 for b in oe[1].bench), default=0) if oe else 0
    if offered >= 4 * running:
        # the benchmark offers many more requests at once than ever reach the engine, and none wait in it: they
        # are held on the way (the client's connection pool, a proxy or gateway with a connection limit)
        claim = (f"The benchmark offered {offered} concurrent requests, but the engine ran at most "
                 f"{running:.0f} at a time with none waiting, while the GPUs were busy {busy:.0f} % of the "
                 f"window: {offered - running:.0f} of the offered requests never reach the engine at once. They "
                 "are held before it, by the client's HTTP connection pool or a proxy / gateway in front of the "
                 "server with a connection limit, so the engine batches only what gets through.")
        return Finding(id="account-low-concurrency", category="workload", confidence=0.7, batch_uncapped=True,
                       evidence=[*ev, oe[0].id] if oe else ev, bound=None, data={"held_before_engine": offered},
                       title=f"Only {running:.0f} of {offered} offered requests reach the engine at once",
                       claim=claim, short=f"only {running:.0f} of the {offered} requests offered at once "
                                          "reached the engine and none waited in it: they are held before it.",
                       symptoms=["throughput", "ttft"],
                       numbers=[_n("requests running (max seen)", running, "requests", q.ev),
                                _n("concurrency offered", offered, "requests", oe[0].id if oe else q.ev)],
                       recommendations=["Raise the connection limit between the client and the server: the "
                                        "client's HTTP pool (aiohttp TCPConnector(limit=...), httpx "
                                        "Limits(max_connections=...), the OpenAI client's http_client), and any "
                                        "proxy or gateway in front (nginx worker_connections / upstream "
                                        "keepalive, a load balancer's per-backend limit)."])
    if running <= max(LOW_INFLIGHT, (q.cap or 0) / 32):
        # requests arrive, but only a few at a time and none wait: the engine batches what it is given, so the
        # offered concurrency (a serial client, one connection, a semaphore of 1) sets the throughput
        can = f" (it admits up to {q.cap:.0f} at once)" if q.cap else ""
        claim = (f"The engine ran at most {running:.0f} request(s) at a time with none waiting{can}, while the "
                 f"GPUs were busy {busy:.0f} % of the window: the client keeps only {running:.0f} request(s) in "
                 "flight, so each decode step carries a batch of that size and the GPU idles between steps and "
                 "requests. The offered concurrency, not the engine, sets the throughput (continuous batching "
                 "only batches requests that are in flight at once).")
        return Finding(id="account-low-concurrency", category="workload", confidence=0.7, batch_uncapped=True,
                       evidence=ev, bound=None,
                       title=f"The client keeps only {running:.0f} request(s) in flight (none waiting)",
                       claim=claim, short=f"the engine ran only {running:.0f} request(s) at a time and none "
                                          "waited: the client's concurrency is the limit.",
                       symptoms=["throughput"],
                       numbers=[_n("requests running (max seen)", running, "requests", q.ev),
                                _n("requests waiting", q.waiting or 0, "requests", q.ev)],
                       recommendations=["Send requests concurrently: an async client with many requests in "
                                        "flight (asyncio.gather with an AsyncOpenAI client, a thread pool, the "
                                        "benchmark's --max-concurrency), or pass the prompts as one batch to "
                                        "the offline API; check that the client library does not serialize "
                                        "calls (a batch_size that is not honoured, a lock, one connection)."])
    return None


BOUNDS_BATCH = ("queue-kv-cache-bounds-batch", "queue-request-limit-bounds-batch")
"""Queue findings that explain TTFT and throughput whether or not the GPUs are busy."""
