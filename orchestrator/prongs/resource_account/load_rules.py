"""What the load says: every benchmark run the user gave (`--bench`, observations' `bench`), used and compared.

Throughput flat as the offered load rises means a fixed-rate stage limits it, not the GPU's batch; an achieved
request rate equal to the offered one means the client set the throughput; and every run is set beside the others
(before/after, one concurrency against another, TP4 against TP8) with the ratios shown. Pure.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from orchestrator.prongs.resource_account.queue_rules import queue_state
from orchestrator.diagnosis import Number
from orchestrator.findings import BoundClaim, Finding, capitalized, diagnosis_bound
from orchestrator.ranks import Rank
from orchestrator.observations import BenchResult
from orchestrator.prongs.serving_engine.models import EngineReport

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView


def _num(name: str, value: float, unit: str, ev: str, note: str = "") -> Number:
    return Number(name=name, value=round(value, 2), unit=unit, source=ev, note=note)


def client_limited(v: "EvidenceView", acct_ev: str | None = None, busy: float | None = None) -> Finding | None:
    """Achieved request rate equal to the offered one: the client, not the server, set the throughput."""
    oe = v.observations_evidence
    if oe is None:
        return None
    for b in oe[1].bench:
        offered = b.request_rate
        if isinstance(offered, str) or offered is None or not b.request_throughput or offered <= 0:
            continue
        ratio = b.request_throughput / offered
        if ratio >= 0.95:
            gpus = f" while the GPUs were busy {busy:.0f} % of the window" if busy is not None else ""
            claim = (f"The benchmark ({b.name}) offered {offered:g} requests/s and the server completed "
                     f"{b.request_throughput:g}/s ({ratio:.0%}){gpus}: the server kept up with everything offered, "
                     "so the client's request rate, not the server, set this throughput.")
            return Finding(id="account-client-limited", category="workload", confidence=0.8, evidence=[oe[0].id] +
                           ([acct_ev] if acct_ev else []), bound=None,
                           title=f"The client set the throughput ({b.request_throughput:g} of {offered:g} req/s offered)",
                           claim=claim, short=f"the server completed {ratio:.0%} of the {offered:g} req/s offered: "
                           "the client set the throughput.", symptoms=["throughput"],
                           numbers=[_num("achieved / offered request rate", 100 * ratio, "%", oe[0].id)],
                           recommendations=["Measure the server's capacity, not the client's rate: rerun the "
                                            "benchmark with --request-rate inf and a --max-concurrency sweep "
                                            "(e.g. 16, 64, 256) and compare throughput."])
    return None


BURST_TTFT_SHARE = 0.1
"""Median TTFT at or above this share of the whole run's duration: requests waited for the ones ahead of them."""


def burst_queue(v: "EvidenceView", busy: float | None = None) -> Finding | None:
    """Every request offered at once (request rate inf, no concurrency cap): TTFT is the wait behind the requests
    ahead, a share of the whole run, not prefill."""
    oe = v.observations_evidence
    if oe is None:
        return None
    for b in oe[1].bench:
        rate = b.request_rate
        burst = rate is None or (isinstance(rate, str) and rate.lower() in ("inf", "infinity")) or \
            (isinstance(rate, float) and rate == float("inf"))
        ttft = _p50(b.ttft)
        if not burst or b.max_concurrency or not ttft or not b.duration_s or not b.completed:
            continue
        share = ttft / 1e3 / b.duration_s
        if share < BURST_TTFT_SHARE:
            continue
        gpus = f" with the GPUs busy {busy:.0f} % of the window" if busy is not None else ""
        claim = (f"The benchmark ({b.name}) offered all {b.completed} requests at once (request rate inf, no "
                 f"concurrency cap) and the server worked through them at {b.request_throughput or 0:g} requests/s"
                 f"{gpus}: the median TTFT of {ttft / 1e3:.1f} s is {share:.0%} of the {b.duration_s:g} s run, the "
                 "time a request waited in the queue for those ahead of it, not the prefill of its own prompt. "
                 "This TTFT measures the backlog the client created; the server's prefill speed is a small part of it.")
        return Finding(id="load-burst-queue", category="workload", confidence=0.8, evidence=[oe[0].id],
                       bound=None, title=f"TTFT is queueing: all {b.completed} requests arrived at once "
                       f"(median TTFT {share:.0%} of the run)", claim=claim,
                       short=f"all {b.completed} requests arrived at once; the median TTFT of {ttft / 1e3:.1f} s is "
                       "time waiting in the queue.", symptoms=["ttft"],
                       numbers=[_num("median TTFT / run duration", 100 * share, "%", oe[0].id,
                                     f"{ttft:g} ms of {b.duration_s:g} s")],
                       recommendations=["Measure TTFT at the load you will serve, not in a burst: rerun with "
                                        "--max-concurrency at the expected concurrency, or --request-rate at the "
                                        "expected arrival rate; compare the server's capacity with the arrivals."])
    return None


def flat_throughput(v: "EvidenceView") -> Finding | None:
    """Throughput flat as offered load rises: the limit is not the GPU's batch."""
    oe = v.observations_evidence
    if oe is None:
        return None
    runs = [b for b in oe[1].bench if b.max_concurrency and b.output_throughput]
    runs.sort(key=lambda b: b.max_concurrency or 0)
    if len(runs) < 2:
        return None
    lo, hi = runs[0], runs[-1]
    assert lo.max_concurrency and hi.max_concurrency and lo.output_throughput and hi.output_throughput
    if hi.max_concurrency < 2 * lo.max_concurrency:
        return None
    gain = hi.output_throughput / lo.output_throughput
    if gain > 1.25:
        return None
    claim = (f"Output throughput stays flat as offered load rises: {lo.output_throughput:g} tok/s at concurrency "
             f"{lo.max_concurrency} and {hi.output_throughput:g} tok/s at {hi.max_concurrency} ({gain:.2f}x for "
             f"{hi.max_concurrency / lo.max_concurrency:g}x the load). A GPU-bound decode gains throughput with "
             "batch; flat throughput means a fixed-rate stage limits it (a CPU thread, the engine's admission, or "
             "the path in front of the engine).")
    q = queue_state(v)
    evidence = [oe[0].id]
    if q is not None and q.waiting == 0 and q.running is not None:
        claim += (f" The engine's queue stayed empty ({q.running:.0f} running, 0 waiting, from {q.src}): nothing "
                  "waits inside the engine, so the limit is before it (the client or the path to the engine).")
        evidence.append(q.ev)
    return Finding(id="account-flat-throughput", category="workload", confidence=0.7, evidence=evidence,
                   bound="latency", title=f"Throughput is flat from concurrency {lo.max_concurrency} to "
                   f"{hi.max_concurrency} ({gain:.2f}x)", claim=claim,
                   short=f"throughput is flat ({gain:.2f}x) from concurrency {lo.max_concurrency} to "
                   f"{hi.max_concurrency}.", symptoms=["throughput"],
                   numbers=[_num("throughput gain over the concurrency sweep", gain, "x", oe[0].id)],
                   recommendations=["Find the fixed-rate stage: the resource account during the high-concurrency "
                                    "run (GPU busy share, the engine's busiest thread, its queue)."])


TTFT_IS_WHOLE = 0.9
"""A median TTFT at or above this share of the median end-to-end latency, for requests of many output tokens: the
first token arrived with the last."""
MANY_TOKENS = 16
"""Output tokens per request from which the decode steps after the first token are a visible part of a request."""


def ttft_whole(b: BenchResult) -> tuple[float, float, float, float | None, float] | None:
    """(median TTFT, median end-to-end latency, output tokens, ITL, the decode time it implies) when the run's TTFT
    is the whole request (see ttft_is_whole_request); None otherwise."""
    ttft, e2e, out = _p50(b.ttft), _p50(b.e2el), b.output_len
    if not ttft or not e2e or not out or out < MANY_TOKENS:
        return None
    itl = _p50(b.itl or b.tpot)
    decode = itl * (out - 1) if itl else 0.0
    if ttft / e2e < TTFT_IS_WHOLE or decode > (1 - TTFT_IS_WHOLE) * e2e:
        return None
    if streamed_after_first(ttft, e2e, out, itl):
        return None  # the other tokens took their decode steps after the first: a stream behind a long wait
    return ttft, e2e, out, itl, decode


STREAMED_SHARE = 0.5
"""The share of the decode time its inter-token latency implies that the time after the first token must reach for
the tokens to have arrived as a stream (not with the first token)."""


def streamed_after_first(ttft: float, e2e: float, out: float, itl: float | None) -> bool:
    """Whether the time between the first token and the last is the N-1 decode steps the inter-token latency says:
    the tokens arrived one by one after the first, so however large the TTFT's share of the request (a long wait in
    a queue before the first token), the response was streamed. Unstreamed, the first token arrives with the last."""
    return bool(itl and itl >= BURST_ITL_MS and out > 1 and e2e - ttft >= STREAMED_SHARE * itl * (out - 1))


BURST_ITL_MS = 1.0
"""An inter-token latency below this is tokens delivered together (a buffered stream flushed at once), not decode
steps: no engine decodes a token of a request in under a millisecond."""


def ttft_is_whole_request(v: "EvidenceView") -> Finding | None:
    """A TTFT that is the whole request's latency: what the client measured, not prefill.

    A streamed response's first token comes after the prompt's prefill and the other N-1 tokens after it, one decode
    step each, so TTFT is a fraction of the end-to-end latency that shrinks as N grows. A TTFT within a tenth of the
    end-to-end latency for requests of many output tokens, with no inter-token latency to speak of, means the tokens
    arrived together at the end: the response was not streamed (stream: false, so the first byte is the whole JSON
    answer), or a proxy or gateway buffered the stream. Sources: https://github.com/Netis/heron/pull/4 (non-streamed
    TTFT identical to E2E), https://github.com/fw-ai/benchmark/pull/3 (TTFT shown only when streaming),
    https://github.com/BerriAI/litellm/issues/5859 (TTFT the same as the request's latency behind a proxy)."""
    oe = v.observations_evidence
    if oe is None:
        return None
    for b in oe[1].bench:
        whole = ttft_whole(b)
        if whole is None:
            continue
        ttft, e2e, out, itl, decode = whole
        share = ttft / e2e
        gaps = (f"; the inter-token latency it reports, {itl:g} ms, puts the other {out - 1:.0f} tokens in "
                f"{decode:.0f} ms" if itl else "; it reports no inter-token latency")
        claim = (f"The measurement ({b.name}) gives a median TTFT of {ttft:g} ms against a median end-to-end latency "
                 f"of {e2e:g} ms ({share:.0%} of it) for requests of {out:.0f} output tokens on average{gaps}: the "
                 "first token arrived only with the last. Streamed, a request's first token comes after its prompt's "
                 f"prefill and the other {out - 1:.0f} tokens follow one decode step each, so TTFT is a small part of "
                 "the request; a TTFT equal to the whole request means the response was not streamed (stream: false "
                 "returns one JSON body when generation ends) or a proxy buffered the stream. This TTFT is the whole "
                 "request's latency, prefill and every decode step, not the time to the first token.")
        return Finding(id="load-ttft-is-whole-request", category="workload", confidence=0.8, evidence=[oe[0].id],
                       bound=None, title=f"The TTFT measured is the whole request ({share:.0%} of the end-to-end "
                       f"latency for {out:.0f} output tokens): the response did not reach the client as a stream",
                       claim=claim,
                       short=f"the measured TTFT of {ttft:g} ms is {share:.0%} of the whole request's {e2e:g} ms: the "
                             "response was not streamed to the client.", symptoms=["ttft"],
                       data={"not_the_server": True},
                       numbers=[_num("median TTFT / median end-to-end latency", 100 * share, "%", oe[0].id,
                                     f"{ttft:g} of {e2e:g} ms, {out:.0f} output tokens")],
                       recommendations=["Measure TTFT on a streamed response: send stream: true (the OpenAI client's "
                                        "stream=True; genai-perf --streaming; vllm bench serve streams) and time the "
                                        "first content chunk; turn off response buffering in any proxy on the path "
                                        "(nginx proxy_buffering off); compare with the server's own TTFT histogram "
                                        "(vLLM vllm:time_to_first_token_seconds)."])
    return None


PATH_TTFT_MS = 100.0
"""Milliseconds of each first token spent outside the engine from which the path is a cause of its own (a round trip
between continents is 80-150 ms; a TLS connection set up per request costs two or three of them)."""
PATH_TTFT_RATIO = 2.0
"""The client's median TTFT at least this many times the engine's own: most of it is spent on the way."""


def _engine_ttft(v: "EvidenceView") -> tuple[str, str, float, float] | None:
    """(evidence id, metric name, median ms, requests) of the engine's own TTFT histogram, from its /metrics."""
    for ev, rep in v.probes("engine_config"):
        if not isinstance(rep, EngineReport) or rep.primary is None:
            continue
        facts = rep.facts()
        for name in ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds",
                     "trtllm_time_to_first_token_seconds", "tgi_request_first_token_duration"):
            p50, count = facts.get(f"metrics.{name}.p50"), facts.get(f"metrics.{name}.count")
            if isinstance(p50, (int, float)) and isinstance(count, (int, float)) and count > 0:
                return ev.id, name, 1e3 * float(p50), float(count)
    return None


def engine_ttft_instead(v: "EvidenceView", b: BenchResult,
                        server: tuple[str, str, float, float] | None = None) -> tuple[float, str] | None:
    """(the engine's median TTFT in ms, its metric's name) when run `b`'s client TTFT is mostly spent outside the
    engine (see ttft_outside_engine): the prefill is then judged on the engine's figure, not the client's."""
    server = server or _engine_ttft(v)
    client = _p50(b.ttft)
    if server is None or not client or b.label == "baseline" or ttft_whole(b) is not None:
        return None
    _, metric, engine_ms, _ = server
    if client - engine_ms < PATH_TTFT_MS or client < PATH_TTFT_RATIO * engine_ms:
        return None
    return engine_ms, metric


def ttft_outside_engine(v: "EvidenceView") -> Finding | None:
    """The TTFT the client measured set against the engine's own TTFT histogram: the difference is spent outside the
    engine, on the path between the client and it.

    An engine's TTFT histogram runs from the request's arrival at the engine to its first token (queueing and prefill
    included); the client's runs from sending the request to receiving that token. When the client's is several times
    the engine's and the gap is beyond a LAN's noise, the time goes to what lies between: network round trips (TCP
    and TLS set-up per request, a client in another region), a proxy, gateway or load balancer, the HTTP front end.
    No change to the engine shortens it. Sources: https://github.com/philschmid/huggingface-inferentia2-samples/
    issues/11 ("this number ... includes heavy network overhead from Europe to the U.S."),
    https://github.com/vllm-project/vllm/issues/22161 (TTFT moves with the network, TPOT does not)."""
    oe = v.observations_evidence
    server = _engine_ttft(v)
    if oe is None or server is None:
        return None
    sev, metric, engine_ms, count = server
    for b in oe[1].bench:
        client = _p50(b.ttft)
        if engine_ttft_instead(v, b, server) is None or not client:
            continue
        gap = client - engine_ms
        share = gap / client
        itl = _p50(b.itl or b.tpot)
        steady = (f" The tokens after the first arrive {itl:g} ms apart at the client, one decode step each: the path "
                  "delays the start of each response, not its stream." if itl else "")
        claim = (f"The client measured a median TTFT of {client:g} ms ({b.name}), while the engine's own histogram "
                 f"({metric}, from a request's arrival at the engine to its first token, {count:.0f} requests) puts "
                 f"the median at {engine_ms:.0f} ms: {gap:.0f} ms of each first token ({share:.0%}) is spent outside "
                 "the engine, between the client and the server: network round trips (connection and TLS set-up for "
                 "each request, a client in another region), a proxy, gateway or load balancer, or the HTTP front end "
                 f"before the request reaches the engine.{steady} Faster prefill or more GPUs cannot remove it.")
        return Finding(id="load-ttft-outside-engine", category="workload", confidence=0.75,
                       evidence=[oe[0].id, sev], bound="latency", explains=round(share, 2),
                       title=f"{share:.0%} of the TTFT is spent outside the engine ({client:g} ms at the client, "
                       f"{engine_ms:.0f} ms in the engine's own histogram)", claim=claim,
                       short=f"{gap:.0f} ms of the client's {client:g} ms TTFT is spent outside the engine (its own "
                             f"histogram says {engine_ms:.0f} ms): on the path between the client and the server.",
                       symptoms=["ttft"], data={"not_the_server": True},
                       numbers=[_num("client TTFT - engine TTFT (medians)", gap, "ms", oe[0].id,
                                     f"{client:g} ms at the client, {engine_ms:.0f} ms in {metric}")],
                       recommendations=["Time each hop of the path: run the same benchmark from a host next to the "
                                        "server and compare; `curl -w '%{time_connect} %{time_appconnect} "
                                        "%{time_starttransfer}'` from the client splits connection, TLS and first "
                                        "byte; reuse connections (HTTP keep-alive, a pooled client) so a request does "
                                        "not pay TCP and TLS set-up; serve users from a region near them."])
    return None


OUTPUT_LEN_RATIO = 1.3
"""Runs whose mean output tokens per request differ by this factor measured different workloads."""
COMPARED = re.compile(r"\b(than|vs\.?|versus|compar\w*|dropped|went (up|down)|from [\d.]+\S* to|regress\w*|"
                      r"before|after|second|again|twice|other|both|only|slower|faster)\b", re.I)
"""A question that sets runs against each other (one server against another, a run against an earlier one): only
then is a difference in output lengths the comparison's flaw; runs of several lengths asked about together are a
sweep, measured on purpose."""


def unequal_outputs(v: "EvidenceView") -> Finding | None:
    """Benchmark runs set side by side that generated different lengths: the comparison's flaw, with the numbers.

    A throughput or latency figure means something only for the workload it was measured with. A request that stops
    at its end-of-sequence token after few tokens finishes sooner and frees its place in the batch earlier than one
    held to a fixed length (--ignore-eos, min_tokens), and a short output spends a larger share of its time in
    prefill: requests/s, end-to-end latency and output tokens/s all move with the output length, whatever the server.
    Benchmark clients differ in what they do by default (sglang.bench_serving ignores EOS unless
    --disable-ignore-eos; vllm bench serve stops at EOS unless --ignore-eos; a backend may drop the flag). Sources:
    https://github.com/vllm-project/vllm/pull/9349 (ignore_eos not passed to every run, so output lengths differed
    between backends), https://github.com/AI-Hypercomputer/inference-benchmark/pull/24."""
    oe = v.observations_evidence
    if oe is None or not COMPARED.search(v.question):
        return None
    runs = [b for b in oe[1].bench if b.output_len]
    if len(runs) < 2:
        return None
    lo = min(runs, key=lambda b: b.output_len or 0)
    hi = max(runs, key=lambda b: b.output_len or 0)
    assert lo.output_len and hi.output_len
    ratio = hi.output_len / lo.output_len
    if ratio < OUTPUT_LEN_RATIO:
        return None

    def figures(b: BenchResult) -> str:
        bits = [f"{b.output_len:.0f} output tokens per request"]
        if b.request_throughput is not None:
            bits.append(f"{b.request_throughput:g} req/s")
        if b.output_throughput is not None:
            bits.append(f"{b.output_throughput:,.0f} output tok/s")
        e2e = _p50(b.e2el)
        if e2e is not None:
            bits.append(f"median end-to-end {e2e:g} ms")
        return f"{b.name}: " + ", ".join(bits)

    inputs = ""
    if lo.input_len and hi.input_len and max(lo.input_len, hi.input_len) / min(lo.input_len, hi.input_len) < 1.1:
        inputs = f" on the same prompts ({lo.input_len:.0f} and {hi.input_len:.0f} input tokens on average)"
    claim = (f"The benchmark runs compared did not generate the same amount: {figures(hi)}; {figures(lo)} "
             f"({ratio:.1f}x as many output tokens per request){inputs}. One run held its requests to a length "
             "(--ignore-eos or a fixed output length) while the other stopped at the end-of-sequence token, or the "
             "servers' stop conditions differ. A request of fewer tokens finishes sooner and frees its place in the "
             "batch earlier and spends more of its time in prefill, so requests/s, end-to-end latency and output "
             "tokens/s are figures of different workloads here: the difference between these runs is in what was "
             "measured, not shown to be in the servers.")
    return Finding(id="load-unequal-outputs", category="workload", confidence=0.8, evidence=[oe[0].id], bound=None,
                   title=f"The runs compared generated different lengths ({hi.output_len:.0f} against "
                   f"{lo.output_len:.0f} output tokens per request): their figures are not comparable",
                   claim=claim, short=f"the runs compared generated {hi.output_len:.0f} and {lo.output_len:.0f} "
                                      "output tokens per request: their figures measure different workloads.",
                   symptoms=["throughput", "regression", "ttft", "itl"], data={"not_the_server": True},
                   numbers=[_num(f"mean output tokens per request: {hi.name} / {lo.name}", ratio, "x", oe[0].id,
                                 f"{hi.output_len:.0f} / {lo.output_len:.0f}")],
                   recommendations=["Compare at the same output length: run every server with the same dataset and "
                                    "fixed lengths (--random-input-len/--random-output-len with --ignore-eos in vllm "
                                    "bench serve; sglang.bench_serving ignores EOS by default), check each result's "
                                    "total generated tokens match, then compare tokens/s and latency."])


def _p50(lat) -> float | None:
    return None if lat is None else (lat.p50 if lat.p50 is not None else lat.mean)


def _line(b: BenchResult) -> str:
    bits = [f"{b.name}:"]
    if b.output_throughput is not None:
        bits.append(f"{b.output_throughput:,.0f} output tok/s")
    if b.request_throughput is not None:
        bits.append(f"{b.request_throughput:g} req/s")
    for label, lat in (("TTFT", b.ttft), ("ITL", b.itl or b.tpot)):
        x = _p50(lat)
        if x is not None:
            bits.append(f"median {label} {x:g} ms")
    return " ".join(bits[:1]) + " " + ", ".join(bits[1:])


def _ratio(a: float | None, b: float | None) -> str | None:
    return f"{b / a:.2f}x" if a and b is not None else None


def runs_compared(v: "EvidenceView") -> Finding | None:
    """Every benchmark run beside the first: throughput and latency ratios (each run used, not only the first)."""
    oe = v.observations_evidence
    if oe is None or len(oe[1].bench) < 2:
        return None
    runs = oe[1].bench
    base = runs[0]
    parts = [_line(b) for b in runs]
    numbers = []
    for b in runs[1:]:
        changes = []
        for what, x, y in (("output throughput", base.output_throughput, b.output_throughput),
                           ("median TTFT", _p50(base.ttft), _p50(b.ttft)),
                           ("median ITL", _p50(base.itl or base.tpot), _p50(b.itl or b.tpot))):
            r = _ratio(x, y)
            if r:
                changes.append(f"{what} {r}")
                if x and y is not None:
                    numbers.append(_num(f"{what}: {b.name} / {base.name}", y / x, "x", oe[0].id))
        if changes:
            parts.append(f"{b.name} against {base.name}: " + ", ".join(changes))
    claim = f"{len(runs)} benchmark runs, each used: " + "; ".join(parts) + "."
    return Finding(id="load-runs-compared", category="workload", confidence=0.7, evidence=[oe[0].id],
                   informational=True, title=f"{len(runs)} benchmark runs compared", claim=claim,
                   short=f"{len(runs)} benchmark runs compared.", numbers=numbers[:12],
                   symptoms=["throughput", "ttft", "itl", "regression"])


def load_runs(v: "EvidenceView") -> list[Finding]:
    """Every benchmark run used and compared with the others, and what the measurement itself says (a TTFT that is
    the whole request, runs of different output lengths, a TTFT spent mostly outside the engine)."""
    found = [f for f in (runs_compared(v), ttft_is_whole_request(v), unequal_outputs(v), ttft_outside_engine(v)) if f]
    for f in found:
        if f.data.get("not_the_server"):  # no limit of the server is read from such a figure: it comes first
            f.sets_bound = BoundClaim(rank=Rank.FLAW, bound=diagnosis_bound(f.bound, "unknown"),
                                      words=capitalized(f.short) + " No limit of the server can be read from this figure.")
    return found
