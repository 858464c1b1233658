"""The request account: every term of the user's latency and tokens, from each place it was measured, reconciled.

A request's time at the client is conservation of its parts:

    end-to-end = queueing + time to first token + (tokens out - 1) x inter-token latency + transport

and each part is seen from more than one place: the client (a benchmark's result, the user's own timings in the
observations) and the engine (its /metrics histograms, its request logs). Tokens are conserved too: tokens prefilled =
tokens the user sent + what the stack added (chat template, system prompt, tools, images, the history sent again);
tokens generated = tokens the user kept + tokens nobody read (hidden reasoning, text past a missing stop token, drafts,
aborted requests); requests the engine saw = requests offered - refused before it + sent again. Load obeys Little's law:
requests in flight L = arrival rate x time in the system W, at the client and at the engine.

Wherever two figures that should agree do not, beyond measurement noise, the difference is a **residual**, located
between the two measuring points (`Residual.between`), and a figure on the wrong side of its physical floor is one too
(a decode step faster than the memory system can stream the weights is measured elsewhere, or the floor is for the
wrong model). `orchestrator/knowledge/residuals.yaml` maps each residual's shape to the mechanisms that produce it.

Engine figures are cumulative since the engine started (Prometheus counters and histograms) and cover every client;
a benchmark's cover its own run. The account says which is which; a ratio between them is read as per request
(means), never as totals, unless the engine's request count matches the run's.
Pure: an EvidenceView in, a RequestAccount out.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from orchestrator.observations import BenchResult, Latency
from orchestrator.prongs.request.engine_logs import RequestLogs, read_request_logs
from orchestrator.prongs.request.handoff import Handoff, handoff, rdma_rate
from orchestrator.prongs.serving_engine.metrics import MetricSummary
from orchestrator.prongs.serving_engine.models import EngineInstance, EngineReport

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView

# --- noise: how far apart two figures of one term may be and still agree --------------------------------------------
TTFT_NOISE_MS = 100.0
"""Client and engine TTFT closer than this agree: a LAN round trip, a proxy hop, the HTTP front end (a round trip
between continents is 80-150 ms and is a residual worth naming)."""
TTFT_NOISE_RATIO = 1.5
ITL_NOISE_MS = 2.0
ITL_NOISE_RATIO = 1.25
E2E_NOISE_MS = 250.0
E2E_NOISE_RATIO = 1.15
TOKENS_NOISE = 0.10
"""Token counts within 10 % (or TEMPLATE_TOKENS) agree: two tokenizers, a chat template's few header tokens."""
TEMPLATE_TOKENS = 64
"""Tokens a chat template adds to a short conversation (role headers, a date line): more is content someone added."""
LOAD_NOISE = 1.3
"""In-flight requests at the client this many times those in the engine (running + waiting): held between them."""
REQUESTS_NOISE = 0.15
BELOW_FLOOR = 0.8
"""A measured time below this share of its physical floor cannot be what the floor counts (the floors are lower
bounds at peak speed; real kernels run at 50-90 % of them)."""
FAR_ABOVE_FLOOR = 5.0
"""A time this many times its floor is mostly spent outside the work the floor counts."""
TAIL_RATIO = 4.0
"""A p99 this many times the p50 of the same latency: a few tokens or requests wait far longer than the rest."""
SHARE_DOMINANT = 0.5
"""A finish reason ending at least this share of requests describes the workload."""
SAME_FACTOR = 0.06
"""Prompt and output token counts off by factors this close (relative) are off by one factor: the chat template's few
tokens on the prompt side move the prompt's factor by a few per cent at most."""

LINK_PCT = 80.0
"""A NIC sending at least this share of its line rate is full: the answers leaving by it can go no faster."""

POINT_WORDS = {
    "client": "the client",
    "engine": "the engine",
    "link": "the network link",
    "floor": "the hardware floor",
    "run": "another run",
    "orchestrator": "the orchestrator's allocation",
    "replica": "one replica",
    "prefill": "the prefill worker",
}
LAYERS = {
    ("client", "engine"): "between the client and the engine (the client itself, the network, any proxy, gateway or "
                          "router, the engine's HTTP front end)",
    ("engine", "floor"): "inside the engine, between its GPU work and its own measurement",
    ("client", "floor"): "between the GPU work and the client",
    ("run", "run"): "in the one condition the two runs differ in",
    ("client", "link"): "on the network link the answers leave the host by (the interface, its line rate)",
    ("orchestrator", "engine"): "between the orchestrator, which gave the engine's pod or job its GPUs, and the engine's "
                                "own parallelism (the arguments it was started with)",
    ("client", "prefill"): "between the prefill worker and the decode worker that streams the answer (the KV "
                           "connector's transfer over the transport it negotiated, the decode worker's wait for the "
                           "blocks and its first step)",
    ("replica", "replica"): "between the entry point and the replicas (whatever spreads the requests among them: a "
                            "gateway, a Service, a load balancer, the client)",
}


@dataclass
class Stat:
    """One latency or count as a measuring point reports it."""

    mean: float | None = None
    p50: float | None = None
    p99: float | None = None
    count: float | None = None

    @property
    def typical(self) -> float | None:
        """The figure two measuring points are compared on: the mean where known (exact from a histogram's sum), else
        the median."""
        return self.mean if self.mean is not None else self.p50

    @property
    def median(self) -> float | None:
        return self.p50 if self.p50 is not None else self.mean


@dataclass
class View:
    """What one measuring point saw of the workload: times in ms, tokens per request, counts of requests."""

    point: str
    """`client` (a benchmark run, the user's timings) or `engine` (its /metrics, its logs)."""
    label: str
    source: str
    evidence: list[str]
    ttft: Stat | None = None
    itl: Stat | None = None
    tpot: Stat | None = None
    """The client's time per output token (end-to-end less TTFT over the tokens after the first): below its
    inter-token latency where each streamed chunk carries several tokens."""
    e2e: Stat | None = None
    queue: Stat | None = None
    prefill: Stat | None = None
    decode: Stat | None = None
    tokens_in: float | None = None
    """Mean prompt tokens per request."""
    tokens_in_p90: float | None = None
    prompt_tail: tuple[float, float, float, float] | None = None
    """The engine's longest prompts: (lower bound, upper bound of the highest occupied bucket, requests in it,
    requests in the histogram)."""
    tokens_out: float | None = None
    """Mean output tokens per request (the client: what it received and counted; the engine: what it generated)."""
    requests: float | None = None
    """Requests completed (the engine: every request it finished, whatever the reason)."""
    failed: float | None = None
    finished: dict[str, float] = field(default_factory=dict)
    """How the engine's requests ended (finished_reason: stop, length, abort)."""
    concurrency: float | None = None
    """The client's configured concurrency (max in flight)."""
    running: float | None = None
    waiting: float | None = None
    rate: float | None = None
    """Requests per second completed (the client's throughput)."""
    request_rate: float | str | None = None
    """Requests per second offered ("inf": all at once)."""
    duration_s: float | None = None
    prompt_tokens_total: float | None = None
    generation_tokens_total: float | None = None
    max_tokens: float | None = None
    """Mean max_tokens the requests asked for."""
    n_per_request: float | None = None
    parents: float | None = None
    """Requests as the client sent them where the engine counts each of n completions as a request of its own
    (vLLM: request_params_n's count)."""
    prefix_hit_pct: float | None = None
    inputs: float | None = None
    """Inputs per request where one request of the client carries several (a list input: the embeddings API's input
    array, the completions API's list of prompts) and the engine counts each input as a request of its own."""
    engines: int = 0
    condition: str = ""
    """The run's own name for what it ran (its label, without the load): runs of one condition at several loads,
    or of two conditions at one load."""

    @property
    def inflight(self) -> float | None:
        """Requests in flight at this point: the engine's running + waiting."""
        if self.running is None and self.waiting is None:
            return None
        return (self.running or 0.0) + (self.waiting or 0.0)

    @property
    def little_l(self) -> float | None:
        """Little's law at this point: completed rate x mean time in the system."""
        w = self.e2e.typical if self.e2e else None
        return self.rate * w / 1e3 if self.rate and w else None


@dataclass
class Floor:
    """A physical floor of one term, with its arithmetic in words."""

    term: str
    ms: float
    arithmetic: str
    source: str
    bound: str = ""
    """A decode step: `memory` or `compute`, whichever floor is larger."""
    bound_without_kv: str = ""
    """The same with the KV reads left out (what a roofline of the weights alone says)."""
    weights_ms: float = 0.0
    """A decode step: the memory floor of the weights alone (the KV reads of `batch` x `context` left out)."""
    batch: float = 0.0
    context: float = 0.0


@dataclass
class Residual:
    """Two figures that should agree and do not (or a figure on the wrong side of its floor)."""

    shape: str
    """The key of knowledge/residuals.yaml: `<term>.<which side is larger>` (e.g. `ttft.client_over_engine`)."""
    term: str
    between: tuple[str, str]
    a: float
    b: float
    unit: str
    a_src: str
    b_src: str
    evidence: list[str]
    run: str = ""
    """The client run it was found in."""
    note: str = ""
    said: str = ""
    """The residual in words where the generic sentence would not read well (rates set against a scaled one)."""

    @property
    def gap(self) -> float:
        return self.a - self.b

    @property
    def ratio(self) -> float:
        return self.a / self.b if self.b else math.inf

    @property
    def layer(self) -> str:
        if self.between not in LAYERS and self.between[0] == self.between[1]:
            return f"inside {POINT_WORDS.get(self.between[0], self.between[0])}"
        return LAYERS.get(self.between, f"between {POINT_WORDS.get(self.between[0], self.between[0])} and "
                                        f"{POINT_WORDS.get(self.between[1], self.between[1])}")

    def words(self) -> str:
        """The residual in one clause with its figures."""
        if self.said:
            return self.said
        a, b = _fmt(self.a, self.unit), _fmt(self.b, self.unit)
        if self.between[1] == "floor":
            return f"{self.term} {a} ({self.a_src}) against its floor of {b} ({self.b_src}): {self.ratio:.2g}x"
        if self.between == ("run", "run"):
            return f"{self.term} {a} in the run {self.a_src} against {b} in the run {self.b_src}"
        if self.between[0] == self.between[1]:
            times = f", {self.ratio:.3g}x" if self.b else ""
            return f"{self.term}: {a} ({self.a_src}) against {b} ({self.b_src}){times}"
        return (f"{self.term} {a} at {POINT_WORDS.get(self.between[0], self.between[0])} ({self.a_src}) against "
                f"{b} at {POINT_WORDS.get(self.between[1], self.between[1])} ({self.b_src})")


@dataclass
class Waste:
    """GPU work that did not go into the answer the user kept."""

    what: str
    tokens: float
    of_tokens: float
    phase: str
    """prefill | decode"""
    arithmetic: str

    @property
    def share(self) -> float:
        return self.tokens / self.of_tokens if self.of_tokens else 0.0


@dataclass
class Link:
    """The interface the host sends its answers by, full: its rate out, its line rate, and faster ones left idle."""

    nic: str
    tx_bytes_per_s: float
    speed_mbit: float
    idle_faster: list[tuple[str, float]] = field(default_factory=list)
    """(name, Mb/s) of the interfaces faster than it that carry almost nothing."""

    @property
    def use(self) -> float:
        return self.tx_bytes_per_s * 8 / (self.speed_mbit * 1e6)


def sending_link(v: "EvidenceView") -> Link | None:
    """The NIC that sends at line rate (answers leave a server; a host receiving at line rate is downloading or
    receiving peers' traffic, another story), with the faster interfaces that stay idle."""
    for _ev, m in v.probes("resource_account"):
        nics = getattr(getattr(m, "host_account", None), "nics", None) or []
        full = [n for n in nics if n.speed_mbit and n.tx_bytes_per_s >= n.rx_bytes_per_s
                and 100 * n.tx_bytes_per_s * 8 / (n.speed_mbit * 1e6) >= LINK_PCT]
        if not full:
            continue
        n = max(full, key=lambda x: x.tx_bytes_per_s)
        idle = [(x.name, float(x.speed_mbit)) for x in nics if x is not n and x.speed_mbit and
                x.speed_mbit > n.speed_mbit and max(x.tx_bytes_per_s, x.rx_bytes_per_s) * 8 < 0.05 * x.speed_mbit * 1e6]
        return Link(n.name, n.tx_bytes_per_s, float(n.speed_mbit), idle)
    return None


@dataclass
class RunDelta:
    """Two client runs set side by side: what moved between them."""

    a: View
    b: View
    moved: dict[str, tuple[float, float]]
    """term -> (a, b) for the terms that differ beyond noise."""
    same: list[str]
    """Terms that agree."""


def engines_running(v: "EvidenceView") -> list[tuple[str, float]]:
    """Each engine's own count of running requests (its /metrics gauge, else the median of its stats lines), by where
    it was found: the replicas a load balancer spreads requests over."""
    got = _engines(v)
    out: list[tuple[str, float]] = []
    if got is not None:
        _ev, engines, rep = got
        for e in engines:
            m = e.metrics.metrics if e.metrics and e.metrics.metrics else {}
            r = next((m[n].value for n in _RUNNING if n in m and m[n].value is not None), None)
            if r is not None:
                out.append((e.where or e.label, float(r)))
        if not out:
            logs = read_request_logs((ln.path, ln.line_no, ln.line) for ln in rep.lines)
            for key, st in logs.engines.items():
                if st.running:
                    out.append((key.split("|", 1)[-1] or key, float(sorted(st.running)[len(st.running) // 2])))
    return out


@dataclass
class RequestAccount:
    clients: list[View]
    engine: View | None
    floors: dict[str, Floor] = field(default_factory=dict)
    residuals: list[Residual] = field(default_factory=list)
    waste: list[Waste] = field(default_factory=list)
    deltas: list[RunDelta] = field(default_factory=list)
    logs: RequestLogs = field(default_factory=RequestLogs)
    gpu_busy_pct: float | None = None
    evidence: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    runs: list[View] = field(default_factory=list)
    """Every run the user gave, those of the state before (--baseline) too: the runs compared with each other."""
    lora: dict[str, str] = field(default_factory=dict)
    """vLLM's lora_requests_info labels: max_lora, running_lora_adapters, waiting_lora_adapters."""
    mig: tuple[str, float, float] | None = None
    """The MIG instance the engine runs on (profile, share of the memory bandwidth, share of the SMs)."""
    model_words: str = ""
    """The model the floors are computed for, in words ("meta-llama/Llama-3.1-8B-Instruct, 8.0 B bf16")."""
    handoff: Handoff | None = None
    """A disaggregated deployment's KV hand-off: the frontend's TTFT against the prefill worker's."""
    named: tuple[str, float, str, "Floor | None"] | None = None
    """A model the client names that is not the one the engine serves: (its name, its parameters in billions, the
    engine's --served-model-name, its decode floor)."""
    link: Link | None = None
    """The interface the answers leave by, where it sends at line rate."""
    spec: Any = None
    """The engine's speculative decoding (resource_account's Speculation: tokens per step, drafted, accepted)."""

    def facts(self) -> dict[str, Any]:
        """The account as flat `request.*` facts, for the residual table's predicates."""
        out: dict[str, Any] = {}
        e = self.engine
        if e is not None:
            for term in ("ttft", "itl", "e2e", "queue", "prefill", "decode"):
                s = getattr(e, term)
                if s is not None and s.typical is not None:
                    out[f"request.engine.{term}_ms"] = s.typical
                    if s.p99 is not None:
                        out[f"request.engine.{term}_p99_ms"] = s.p99
                    if s.p50 is not None:
                        out[f"request.engine.{term}_p50_ms"] = s.p50
            for k in ("tokens_in", "tokens_in_p90", "tokens_out", "requests", "running", "waiting", "max_tokens",
                      "n_per_request", "prefix_hit_pct", "prompt_tokens_total", "generation_tokens_total"):
                v = getattr(e, k)
                if v is not None:
                    out[f"request.engine.{k}"] = v
            if e.inflight is not None:
                out["request.engine.inflight"] = e.inflight
            if e.engines:
                out["request.engine.count"] = e.engines
                if e.running is not None:
                    out["request.engine.running_per_engine"] = e.running / e.engines
            total = sum(e.finished.values())
            if total:
                for reason, n in e.finished.items():
                    out[f"request.finish.{reason}_share"] = n / total
                    out[f"request.finish.{reason}"] = n
        for i, c in enumerate(self.clients[:4]):
            for term in ("ttft", "itl", "e2e"):
                s = getattr(c, term)
                if s is not None and s.typical is not None:
                    out[f"request.client.{i}.{term}_ms"] = s.typical
                    if s.p50 is not None:
                        out[f"request.client.{i}.{term}_p50_ms"] = s.p50
                    if s.p99 is not None:
                        out[f"request.client.{i}.{term}_p99_ms"] = s.p99
            for k in ("tokens_in", "tokens_out", "requests", "failed", "concurrency", "rate"):
                v = getattr(c, k)
                if v is not None:
                    out[f"request.client.{i}.{k}"] = v
            if c.little_l is not None:
                out[f"request.client.{i}.little_l"] = c.little_l
            if c.inputs is not None:
                out[f"request.client.{i}.inputs_per_request"] = c.inputs
        if self.clients:
            c = self.clients[0]
            for k, v in list(out.items()):
                if k.startswith("request.client.0."):
                    out["request.client." + k[len("request.client.0."):]] = v
            offered = (c.requests or 0) + (c.failed or 0)
            if offered:
                out["request.client.offered"] = offered
                if c.failed is not None:
                    out["request.client.failed_share"] = c.failed / offered
        for name, f in self.floors.items():
            out[f"request.floor.{name}_ms"] = f.ms
            out[f"request.floor.{name}_arithmetic"] = f.arithmetic
        if self.handoff is not None:
            out.update(self.handoff.facts())
        for r in self.residuals:
            if r.shape == "gpus.allocated_over_used":
                out["request.gpus.allocated"], out["request.gpus.used"] = int(r.a), int(r.b)
                out["request.gpus.idle"] = int(r.a - r.b)
            out[f"request.residual.{r.shape}"] = True
            out[f"request.residual.{r.shape}.ratio"] = r.ratio
            out[f"request.residual.{r.shape}.gap"] = r.gap
        for w in self.waste:
            out[f"request.waste.{w.phase}.{w.what}"] = w.share
        if self.gpu_busy_pct is not None:
            out["request.gpu_busy_pct"] = self.gpu_busy_pct
        for d in self.deltas:
            for term, (x, y) in d.moved.items():
                out[f"request.delta.{term}"] = abs(y - x)
                out[f"request.delta.{term}.ratio"] = (y / x) if x else math.inf
            for term in d.same:
                out[f"request.delta.{term}.same"] = True
        if self.named is not None:
            nm, nb, alias, fl = self.named
            out["request.model.named"] = nm
            out["request.model.named_params_b"] = nb
            if alias:
                out["request.model.alias"] = alias
            if fl is not None:
                out["request.floor.itl_named_ms"] = fl.ms
                out["request.floor.itl_named_arithmetic"] = fl.arithmetic
        if e is not None and e.prompt_tail is not None and e.tokens_in:
            lo, hi, n, total = e.prompt_tail
            if lo >= 8 * e.tokens_in and total and n / total <= 0.05:
                out["request.engine.prompt_tail_count"] = n
                out["request.engine.prompt_tail_share"] = n / total
                out["request.engine.prompt_tail_range"] = f"{lo:,.0f} to {hi:,.0f} tokens"
                fl = self.floors.get("ttft")
                if fl is not None and e.tokens_in:
                    # one prefill of the tail's shortest prompt: the linear part of the compute floor, scaled
                    out["request.engine.prompt_tail_floor_s"] = round(fl.ms * lo / e.tokens_in / 1e3, 2)
                    t = e.ttft
                    if t is not None and t.p99:
                        out["request.prompt_tail_floor_over_p99"] = fl.ms * lo / e.tokens_in / t.p99
        if self.lora:
            names = {k: [x for x in (self.lora.get(k) or "").split(",") if x.strip()]
                     for k in ("running_lora_adapters", "waiting_lora_adapters")}
            if (self.lora.get("max_lora") or "").isdigit():
                out["request.lora.max"] = int(self.lora["max_lora"])
            out["request.lora.running"] = ", ".join(names["running_lora_adapters"]) or "none"
            out["request.lora.waiting"] = ", ".join(names["waiting_lora_adapters"]) or "none"
            out["request.lora.waiting_count"] = len(names["waiting_lora_adapters"])
            out["request.lora.running_count"] = len(names["running_lora_adapters"])
        if self.mig is not None:
            out["request.mig.profile"] = self.mig[0]
            out["request.mig.memory_share"] = self.mig[1]
            out["request.mig.sm_share"] = self.mig[2]
        sp = self.spec
        if sp is not None:
            out["request.spec_accept_len"] = round(sp.accept_len, 2)
            if sp.k:
                out["request.spec_k"] = round(sp.k, 2)
                out["request.spec_rejected_share"] = max(0.0, 1 - sp.accept_len / (sp.k + 1))
            if sp.accepted is not None and sp.drafted:
                out["request.spec_accept_rate"] = sp.accepted / sp.drafted
            itl = e.itl.typical if e is not None and e.itl is not None else None
            if itl:
                out["request.spec_step_ms"] = itl
                out["request.spec_ms_per_token"] = itl / sp.accept_len
        for c in self.clients[:1]:
            if c.tpot is not None and c.tpot.median:
                out["request.client.tpot_ms"] = c.tpot.median
                if c.itl is not None and c.itl.median and c.itl is not c.tpot:
                    out["request.client.tokens_per_chunk"] = round(c.itl.median / c.tpot.median, 2)
        pairs = same_load_pairs(self.runs)
        for slow, fast in pairs:
            load = slow.concurrency or 0.0
            spec_slow, spec_fast = bool(SPECULATIVE.search(slow.condition)), bool(SPECULATIVE.search(fast.condition))
            if spec_slow and not spec_fast:
                out["request.same_load.speculative_slower_at"] = max(
                    load, out.get("request.same_load.speculative_slower_at", 0.0))
                ps, pf = per_token(slow), per_token(fast)
                out["request.same_load.speculative_slower_ms"] = f"{ps or 0:.3g} ms against {pf or 0:.3g} ms"
            elif spec_fast and not spec_slow:
                out["request.same_load.speculative_faster_at"] = min(
                    load, out.get("request.same_load.speculative_faster_at", math.inf))
        at = out.get("request.same_load.speculative_slower_at")
        if at and sp is not None and sp.k:
            out["request.same_load.verified_positions"] = at * (sp.k + 1)
        for cl in self.clients[:1]:
            tf = tokenizer_factor(cl, e) if e is not None else None
            if tf is not None and e is not None:
                out["request.tokens.factor_in"] = round(tf[0], 2)
                out["request.tokens.factor_out"] = round(tf[1], 2)
                out["request.tokens.factor"] = round(math.sqrt(tf[0] * tf[1]), 2)
                if cl.itl is not None and cl.itl.median and cl.tokens_out and e.tokens_out and e.tokens_out > 1:
                    # the client's ITL is (latency - TTFT) / (its tokens - 1): in the engine's tokens it is longer
                    # (or shorter) by the same factor
                    out["request.tokens.client_itl_ms"] = round(cl.itl.median, 2)
                    out["request.tokens.client_itl_in_engine_tokens_ms"] = round(
                        cl.itl.median * (cl.tokens_out - 1) / (e.tokens_out - 1), 2)
        ln, c0 = self.link, (self.clients[0] if self.clients else None)
        if ln is not None and c0 is not None and c0.rate:
            per = ln.tx_bytes_per_s / c0.rate
            out["request.link.nic"] = ln.nic
            out["request.link.speed_mbit"] = ln.speed_mbit
            out["request.link.tx_mb_s"] = round(ln.tx_bytes_per_s / 1e6, 1)
            out["request.link.use"] = round(ln.use, 3)
            out["request.link.bytes_per_response_kb"] = round(per / 1e3, 1)
            if c0.inputs:
                out["request.link.bytes_per_input_kb"] = round(per / c0.inputs / 1e3, 2)
            if ln.idle_faster:
                out["request.link.idle_faster"] = ", ".join(f"{x} ({s / 1e3:g} Gb/s)" for x, s in ln.idle_faster)
        out.update(self.logs.facts())
        return out


def _fmt(x: float, unit: str) -> str:
    if unit == "ms":
        return f"{x / 1e3:,.2f} s" if abs(x) >= 10_000 else f"{x:,.0f} ms" if abs(x) >= 100 else f"{x:.3g} ms"
    if unit == "tokens":
        return f"{x:,.0f} tokens"
    if unit == "requests":
        return f"{x:,.0f} requests"
    return f"{x:,.3g} {unit}"


fmt = _fmt


# --- the client's view ---------------------------------------------------------------------------------------------


def _lat(lat: Latency | None) -> Stat | None:
    if lat is None or lat.empty:
        return None
    return Stat(mean=lat.mean, p50=lat.p50, p99=lat.p99)


def client_view(b: BenchResult, ev: str) -> View:
    itl = _lat(b.itl) or _lat(b.tpot)
    return View(point="client", label=b.name, source=f"{b.format} ({b.source})" if b.source else b.format,
                evidence=[ev], ttft=_lat(b.ttft), itl=itl, tpot=_lat(b.tpot), e2e=_lat(b.e2el), tokens_in=b.input_len,
                condition=b.label or b.backend or b.format,
                tokens_out=b.output_len, requests=float(b.completed) if b.completed is not None else None,
                failed=float(b.failed) if b.failed is not None else None,
                concurrency=float(b.max_concurrency) if b.max_concurrency else None, rate=b.request_throughput,
                request_rate=b.request_rate, duration_s=b.duration_s)


# --- the engine's view ---------------------------------------------------------------------------------------------

_TTFT = ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds",
         "trtllm_time_to_first_token_seconds", "time_to_first_token_seconds")
_ITL = ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds", "sglang:inter_token_latency_seconds",
        "trtllm_time_per_output_token_seconds", "time_per_output_token_seconds",
        "tgi_request_mean_time_per_token_duration")
_E2E = ("vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds", "trtllm_e2e_request_latency_seconds",
        "e2e_request_latency_seconds", "tgi_request_duration")
_QUEUE = ("vllm:request_queue_time_seconds", "sglang:queue_time_seconds", "trtllm_request_queue_time_seconds",
          "request_queue_time_seconds", "tgi_request_queue_duration")
_PREFILL = ("vllm:request_prefill_time_seconds",)
_DECODE = ("vllm:request_decode_time_seconds",)
_PROMPT_H = ("vllm:request_prompt_tokens", "sglang:prompt_tokens_histogram", "tgi_request_input_length")
_GEN_H = ("vllm:request_generation_tokens", "tgi_request_generated_tokens")
_PROMPT_C = ("vllm:prompt_tokens_total", "sglang:prompt_tokens_total")
_GEN_C = ("vllm:generation_tokens_total", "sglang:generation_tokens_total")
_SUCCESS = ("vllm:request_success_total", "trtllm_request_success_total", "request_success_total",
            "tgi_request_success")
_RUNNING = ("vllm:num_requests_running", "sglang:num_running_reqs", "tgi_batch_current_size")
_WAITING = ("vllm:num_requests_waiting", "sglang:num_queue_reqs", "tgi_queue_size")


def _hist(ms: list[dict[str, MetricSummary]], names: tuple[str, ...], scale: float) -> tuple[Stat, str] | None:
    """One histogram over every engine (counts added, means and medians weighted by count), scaled (s -> ms)."""
    for n in names:
        got = [m[n] for m in ms if n in m and m[n].type in ("histogram", "summary") and m[n].count]
        if not got:
            continue
        count = sum(h.count or 0 for h in got)
        if not count:
            continue

        def wavg(attr: str, got: list[MetricSummary] = got) -> float | None:
            vals = [(getattr(h, attr), h.count or 0) for h in got if getattr(h, attr) is not None]
            w = sum(c for _, c in vals)
            return sum(v * c for v, c in vals) / w * scale if vals and w else None

        mean, p50, p99 = wavg("mean"), wavg("p50"), wavg("p99")
        if mean and not p50:
            p50 = p99 = None  # no finite bucket holds them (a histogram of +Inf only): the quantiles are unknown
        return Stat(mean=mean, p50=p50, p99=p99, count=count), n
    return None


def _counter(ms: list[dict[str, MetricSummary]], names: tuple[str, ...]) -> tuple[float, str, dict[str, float]] | None:
    for n in names:
        got = [m[n] for m in ms if n in m and m[n].value is not None]
        if got:
            by: dict[str, float] = {}
            for g in got:
                for k, v in g.by.items():
                    by[k] = by.get(k, 0.0) + v
            return sum(g.value or 0.0 for g in got), n, by
    return None


def _engines(v: "EvidenceView") -> tuple[str, list[EngineInstance], EngineReport] | None:
    for ev, rep in v.probes("engine_config"):
        if isinstance(rep, EngineReport):
            return ev.id, list(rep.engines), rep
    return None


def engine_view(v: "EvidenceView") -> tuple[View | None, RequestLogs]:
    got = _engines(v)
    if got is None:
        return None, RequestLogs()
    ev, engines, rep = got
    srv_ev = next((e.id for e, _m in v.probes("request_files")), None)
    logs = read_request_logs((ln.path, ln.line_no, ln.line) for ln in rep.lines)
    ms = [e.metrics.metrics for e in engines if e.metrics and e.metrics.metrics]
    names = sorted({e.label for e in engines})
    label = " + ".join(names) if names else "the engine"
    src_bits: list[str] = []
    view = View(point="engine", label=label, source="", evidence=[ev], engines=len(engines))
    if ms:
        src_bits.append(f"/metrics of {len(ms)} engine{'s' if len(ms) > 1 else ''}")
        for attr, names_, scale in (("ttft", _TTFT, 1e3), ("itl", _ITL, 1e3), ("e2e", _E2E, 1e3),
                                    ("queue", _QUEUE, 1e3), ("prefill", _PREFILL, 1e3), ("decode", _DECODE, 1e3)):
            h = _hist(ms, names_, scale)
            if h is not None:
                setattr(view, attr, h[0])
        p = _hist(ms, _PROMPT_H, 1.0)
        if p is not None:
            view.tokens_in = p[0].mean
            view.tokens_in_p90 = _p90(ms, p[1])
            tails = [m[p[1]].tail for m in ms if p[1] in m and m[p[1]].tail]
            if tails:
                top = max(tails, key=lambda t: t[1])
                view.prompt_tail = (top[0], top[1], sum(t[2] for t in tails if t[1] == top[1]), p[0].count or 0.0)
        g = _hist(ms, _GEN_H, 1.0)
        if g is not None:
            view.tokens_out = g[0].mean
        pc = _counter(ms, _PROMPT_C)
        if pc is not None:
            view.prompt_tokens_total = pc[0]
        gc = _counter(ms, _GEN_C)
        if gc is not None:
            view.generation_tokens_total = gc[0]
        s = _counter(ms, _SUCCESS)
        if s is not None:
            view.requests = s[0]
            view.finished = {k: x for k, x in s[2].items()}
        else:
            n = _counter(ms, ("sglang:num_requests_total",))
            if n is not None:
                view.requests = n[0]
                ab = _counter(ms, ("sglang:num_aborted_requests_total",))
                if ab is not None:
                    view.finished = {"abort": ab[0], "completed": n[0] - ab[0]}
        if view.requests is None:
            e2e = view.e2e
            view.requests = e2e.count if e2e is not None else None
        mt = _hist(ms, ("vllm:request_params_max_tokens", "vllm:request_max_num_generation_tokens"), 1.0)
        if mt is not None:
            view.max_tokens = mt[0].mean
        n_ = _hist(ms, ("vllm:request_params_n",), 1.0)
        if n_ is not None:
            view.n_per_request = n_[0].mean
            if n_[0].mean and n_[0].mean > 1.05 and n_[0].count and view.requests and \
                    view.requests >= 0.8 * n_[0].mean * n_[0].count:
                # vLLM runs each of n completions as a child request and counts each (e2e, success): the client's
                # requests are the parents
                view.parents = n_[0].count
        r = _counter(ms, _RUNNING)
        view.running = r[0] if r is not None else None
        w = _counter(ms, _WAITING)
        view.waiting = w[0] if w is not None else None
        if view.tokens_in is None and view.prompt_tokens_total and view.requests:
            view.tokens_in = view.prompt_tokens_total / view.requests
        if view.tokens_out is None and view.generation_tokens_total and view.requests:
            view.tokens_out = view.generation_tokens_total / view.requests
        q = _counter(ms, ("vllm:prefix_cache_queries_total",))
        h_ = _counter(ms, ("vllm:prefix_cache_hits_total",))
        if q is not None and h_ is not None and q[0] > 0:
            view.prefix_hit_pct = 100.0 * h_[0] / q[0]
        else:
            sp, sc = _counter(ms, ("sglang:prompt_tokens_total",)), _counter(ms, ("sglang:cached_tokens_total",))
            if sp is not None and sc is not None and sp[0] > 0:
                view.prefix_hit_pct = 100.0 * sc[0] / sp[0]
    busy = logs.busy_engines()
    if (view.running is None or view.waiting is None) and busy:
        # the engines' own stats lines, each engine apart (replicas and DP ranks log to one file)
        src_bits.append(f"the stats lines of {len(busy)} engine{'s' if len(busy) > 1 else ''} in its log")
        per = logs.running_per_engine()
        if view.running is None and per is not None:
            view.running = per * len(busy)
        if view.waiting is None:
            view.waiting = float(sum(sorted(e.waiting)[len(e.waiting) // 2] for e in busy.values() if e.waiting))
        view.engines = max(view.engines, len(busy))
    prim = rep.primary
    if prim is not None and prim.log is not None and (view.running is None or view.waiting is None):
        lg = prim.log
        if lg.stats_samples:
            src_bits.append(f"{lg.stats_samples} stats lines of its log")
            if view.running is None and lg.running_max is not None:
                view.running = float(lg.running_max)
            if view.waiting is None and lg.waiting_max is not None:
                view.waiting = float(lg.waiting_max)
        if view.prefix_hit_pct is None and lg.prefix_hit_rate_pct is not None:
            view.prefix_hit_pct = lg.prefix_hit_rate_pct
    if logs.llama is not None:
        s_ = logs.llama
        src_bits.append(f"llama-server's slot lines ({s_.requests} requests)")
        view.label = view.label if engines else "llama-server"
        if view.tokens_in is None and s_.prompt_tokens:
            view.tokens_in = sum(s_.prompt_tokens) / len(s_.prompt_tokens)
        if view.ttft is None and s_.prompt_eval_ms:
            view.ttft = Stat(mean=sum(s_.prompt_eval_ms) / len(s_.prompt_eval_ms))
        if view.itl is None and s_.eval_ms_per_token:
            view.itl = Stat(mean=sum(s_.eval_ms_per_token) / len(s_.eval_ms_per_token))
        if view.requests is None:
            view.requests = float(s_.requests)
        if view.running is None and s_.slots is not None:
            view.running = float(s_.slots)
    if logs.ollama is not None and logs.ollama.durations_s:
        o = logs.ollama
        src_bits.append(f"Ollama's request lines ({len(o.durations_s)} requests)")
        view.label = view.label if engines else "Ollama"
        if view.e2e is None:
            view.e2e = Stat(mean=1e3 * sum(o.durations_s) / len(o.durations_s),
                            p50=1e3 * sorted(o.durations_s)[len(o.durations_s) // 2])
        if view.requests is None:
            view.requests = float(len(o.durations_s))
    srv = _server(v)
    if srv is not None and view.e2e is None and view.ttft is None:
        llm = next((m for m in srv.models if m.llm), None)
        if llm is not None and llm.requests:
            src_bits.append(f"{srv.kind}'s per-model counters ({llm.name}: {llm.requests:,.0f} requests)")
            view.label = view.label if engines else f"{srv.kind} model {llm.name}"
            view.e2e = Stat(mean=llm.request_ms, count=llm.requests) if llm.request_ms else None
            view.queue = Stat(mean=llm.queue_ms, count=llm.requests) if llm.queue_ms is not None else None
            view.requests = view.requests if view.requests is not None else llm.requests
            if srv_ev:
                view.evidence.append(srv_ev)
    view.source = "; ".join(src_bits) or "the engine probe"
    empty = all(getattr(view, a) is None for a in ("ttft", "itl", "e2e", "tokens_in", "tokens_out", "requests",
                                                    "running", "waiting"))
    return (None if empty else view), logs


def _server(v: "EvidenceView") -> Any | None:
    """The first inference server (Triton) the request probe read per-model counters from."""
    from orchestrator.prongs.request.models import RequestFiles

    for _ev, rep in v.probes("request_files"):
        if isinstance(rep, RequestFiles):
            for srv in rep.servers:
                if srv.models:
                    return srv
    return None


def per_token_step(v: "EvidenceView") -> Any | None:
    """A serving step that runs once per streamed token (an ensemble's postprocessing model): executed at least ten
    times per request of the LLM model."""
    srv = _server(v)
    if srv is None:
        return None
    llm = next((m for m in srv.models if m.llm), None)
    if llm is None or not llm.requests:
        return None
    steps = [m for m in srv.models if not m.llm and "ensemble" not in m.name.lower()
             and m.executions >= 10 * llm.requests and m.compute_ms]
    return max(steps, key=lambda m: m.compute_ms or 0.0, default=None)


def _p90(ms: list[dict[str, MetricSummary]], name: str) -> float | None:
    vals = [(float(m[name].p90 or 0.0), float(m[name].count or 0)) for m in ms if name in m and m[name].p90 is not None]
    w = sum(c for _, c in vals)
    return sum(x * c for x, c in vals) / w if vals and w else None


# --- floors --------------------------------------------------------------------------------------------------------


@dataclass
class ModelFacts:
    """The served model as the floors need it, each part with where it came from."""

    shape: Any
    """serving_engine.floors.ModelShape"""
    kv_bytes_per_token: float
    kv_src: str
    dtype: str
    compute_dtype: str
    dtype_src: str
    tp: int
    name: str | None


def shape_from_config(cfg: dict[str, Any]) -> Any | None:
    """Parameters from a Hugging Face config.json: attention (q, k, v, o with GQA), the MLP or the experts (routed
    and shared), embeddings; total and active per token. None when the shape is incomplete."""
    from orchestrator.prongs.serving_engine.floors import ModelShape
    from orchestrator.prongs.serving_engine.kv_fit import config_int, text_config

    c = text_config(cfg)

    def num(*keys: str) -> int | None:
        return config_int(c, *keys)

    h, n = num("hidden_size"), num("num_hidden_layers", "num_layers")
    heads = num("num_attention_heads")
    if not h or not n or not heads:
        return None
    kv = num("num_key_value_heads") or heads
    hd = num("head_dim") or h // heads
    attn = h * heads * hd * 2 + 2 * h * kv * hd
    experts = num("num_local_experts", "num_experts", "n_routed_experts")
    top_k = num("num_experts_per_tok", "moe_topk", "top_k")
    inter = num("intermediate_size") or 0
    vocab = num("vocab_size") or 0
    embed = vocab * h * (1 if c.get("tie_word_embeddings") else 2)
    if experts and experts > 1 and top_k:
        moe_i = num("moe_intermediate_size") or inter
        shared = (num("n_shared_experts", "num_shared_experts") or 0) * 3 * h * moe_i
        dense_layers = num("first_k_dense_replace") or 0
        expert = 3 * h * moe_i
        moe_layers = n - dense_layers
        total = n * attn + dense_layers * 3 * h * inter + moe_layers * (experts * expert + shared) + embed
        active = n * attn + dense_layers * 3 * h * inter + moe_layers * (top_k * expert + shared) + embed
        return ModelShape(total, active, experts, top_k, moe_layers * experts * expert,
                          f"the model's config.json ({n} layers, {experts} experts of which {top_k} per token)")
    if not inter:
        return None
    total = n * (attn + 3 * h * inter) + embed
    return ModelShape(total, total, source=f"the model's config.json ({n} layers, hidden {h}, MLP {inter})")


def _config_json(v: "EvidenceView") -> tuple[str, dict[str, Any]] | None:
    """config.json of the served model: the request probe's reading, else the settings audit's."""
    from orchestrator.prongs.request.models import RequestFiles

    for ev, rep in v.probes("request_files"):
        if isinstance(rep, RequestFiles):
            for m in rep.models:
                if m.config:
                    return ev.id, m.config
    from orchestrator.prongs.serving_engine.kv_rules import _config

    return _config(v)


def model_facts(v: "EvidenceView", engines: list[EngineInstance]) -> ModelFacts | None:
    from orchestrator.prongs.serving_engine.floors import shape_from_name, shape_from_observations
    from orchestrator.prongs.serving_engine.kv_fit import kv_bytes_per_element, kv_shape
    from orchestrator.prongs.serving_engine.weights import weight_dtype

    oe = v.observations_evidence
    obs_model = oe[1].model if oe else None
    prim = engines[0] if engines else None
    name = (obs_model.name if obs_model and obs_model.name else None) or (prim.model if prim else None)
    conf = _config_json(v)
    shape = None
    if obs_model is not None and (obs_model.active_params_b or (obs_model.hidden_size and obs_model.num_layers)):
        shape = shape_from_observations(obs_model)
        if shape is not None and obs_model.active_params_b and shape.expert_params:
            # the user's count of active parameters beats the ~4H^2-attention estimate from layer shapes
            active = obs_model.active_params_b * 1e9
            dense = shape.total_params - shape.expert_params
            per_token_experts = max(active - dense, 0.0)
            k_over_e = (shape.top_k or 1) / (shape.num_experts or 1)
            experts = per_token_experts / k_over_e if k_over_e else shape.expert_params
            shape = type(shape)(dense + experts, active, shape.num_experts, shape.top_k, experts,
                                f"active_params_b {obs_model.active_params_b:g} from the observations, "
                                f"{shape.top_k} of {shape.num_experts} experts per token")
    if shape is None and conf is not None:
        shape = shape_from_config(conf[1])
    if shape is None and obs_model is not None and (obs_model.hidden_size or obs_model.active_params_b):
        shape = shape_from_observations(obs_model)
    if shape is None and prim is not None and prim.model:
        # the weights the engine loaded, before the name the user calls them by (an alias may name another model)
        shape = shape_from_name(prim.model)
        name = prim.model if shape is not None else name
    if shape is None:
        shape = shape_from_name(name)
    if shape is None:
        return None
    b_dtype, c_dtype, dtype_src = weight_dtype(v, prim, name)
    q = (obs_model.quantization or "").lower() if obs_model else ""
    gguf = q if q in GGUF_BITS else next((k for k in GGUF_BITS if k in (name or "").lower().replace("-", "_")), "")
    if gguf:
        b_dtype, c_dtype, dtype_src = gguf, "fp16", f"GGUF {gguf.upper()} ({'the observations' if q else 'the name'})"
    kvs = kv_shape(obs_model.model_dump(), "the observations") if obs_model else None
    if kvs is None and conf is not None:
        kvs = kv_shape(conf[1], "the model's config.json")
    if kvs is None:
        from orchestrator.prongs.request.known_models import known_kv

        kvs = known_kv(prim.model if prim else None) or known_kv(name)
    tp = int(prim.value("tp") or 1) if prim else (oe[1].runs[0].tp if oe and oe[1].runs else 1)
    kv_bytes, kv_src = 0.0, "KV reads left out (the model's attention shape is not known)"
    if kvs is not None:
        bpe, named = kv_bytes_per_element(str(prim.value("kv_cache_dtype")) if prim and prim.value("kv_cache_dtype")
                                          else None)
        kv_bytes = kvs.bytes_per_token(bpe)
        kv_src = f"{kv_bytes / 1024:.0f} KiB per token ({kvs.formula(bpe)}, {kvs.source})"
    return ModelFacts(shape, kv_bytes, kv_src, b_dtype, c_dtype, dtype_src, max(1, tp), name)


def _params(x: float) -> str:
    return f"{x / 1e9:.1f} B"


GGUF_BITS = {"q2_k": 3.35, "q3_k_s": 3.5, "q3_k_m": 3.91, "q3_k_l": 4.27, "q4_0": 4.55, "q4_1": 5.0,
             "q4_k_s": 4.58, "q4_k_m": 4.85, "iq4_xs": 4.25, "iq4_nl": 4.5, "q5_0": 5.54, "q5_1": 6.0,
             "q5_k_s": 5.54, "q5_k_m": 5.69, "q6_k": 6.56, "q8_0": 8.5}
"""Bits per weight of llama.cpp's quantization types, as its quantize tool reports them for a 7-8B model (the
k-quants keep some tensors at higher precision, hence the fractions)."""


def weight_bytes_per_param(mf: ModelFacts) -> tuple[float, str]:
    from orchestrator.analysis.roofline import bytes_per_elem

    d = mf.dtype.lower()
    if d in GGUF_BITS:
        return GGUF_BITS[d] / 8, f"{d.upper()} ({GGUF_BITS[d]:g} bits per weight)"
    return bytes_per_elem(mf.dtype), mf.dtype


def floors(v: "EvidenceView", mf: ModelFacts | None, *, batch: float, context: float, prompt: float | None,
           n_out: float | None) -> dict[str, Floor]:
    """The physical floor of each term on this GPU, with the arithmetic: a decode step streams the weights it touches
    and the batch's KV once (memory floor; its FLOPs are 2 x active params per token), a prefill does 2 x active
    params x tokens FLOPs (compute floor); end-to-end is the TTFT floor plus (tokens out - 1) decode steps."""
    from orchestrator.analysis.roofline import experts_touched

    g = v.gpu or v.observed_gpu
    if mf is None or g is None or g.spec is None or not g.spec.mem_bw_gbs:
        return {}
    peak = g.spec.peak_tflops(mf.compute_dtype) or g.spec.peak_tflops("bf16")
    if not peak:
        return {}
    bw = g.spec.mem_bw_gbs
    gpus = mf.tp
    mig = mig_share(v)
    bw_words = f"{gpus} x {bw:,.0f} GB/s"
    if mig is not None:
        profile, mem, sm = mig
        bw, peak = bw * mem, peak * sm
        bw_words = (f"{gpus} x {g.spec.mem_bw_gbs:,.0f} GB/s x {mem * 8:.0f}/8 of the memory slices of a MIG {profile} "
                    f"instance = {bw:,.0f} GB/s")
    sh = mf.shape
    out: dict[str, Floor] = {}
    b = max(1, int(round(batch)))
    bpp, wname = weight_bytes_per_param(mf)
    touched = sh.total_params
    moe = ""
    if sh.expert_params and sh.num_experts and sh.top_k:
        frac = experts_touched(b, sh.num_experts, sh.top_k) / sh.num_experts
        touched = sh.total_params - sh.expert_params + sh.expert_params * frac
        moe = (f"; a mixture of experts: {_params(sh.active_params)} active of {_params(sh.total_params)} "
               f"parameters per token, and at batch {b} the step reads the shared weights and "
               f"{frac * sh.num_experts:.1f} of {sh.num_experts} experts per layer")
    weights = touched * bpp
    kv = b * context * mf.kv_bytes_per_token
    mem_ms = (weights + kv) / gpus / (bw * 1e9) * 1e3
    comp_ms = 2.0 * sh.active_params * b / gpus / (peak * 1e12) * 1e3
    where = f"{gpus} x {g.spec.name}" if gpus > 1 else g.spec.name
    kv_part = (f" + {kv / 1e9:.2f} GB of KV ({b} requests x {context:,.0f} tokens)" if kv else
               " (KV reads left out: the attention shape is not known)")
    out["itl"] = Floor("itl", max(mem_ms, comp_ms),
                       f"({weights / 1e9:.1f} GB of {wname} weights{kv_part}) / ({bw_words}) = "
                       f"{mem_ms:.2f} ms per step" + (f"; its compute, {comp_ms:.2f} ms, is larger"
                                                      if comp_ms > mem_ms else ""),
                       f"{where}, {sh.source}{moe}; weights {mf.dtype_src}; KV {mf.kv_src}",
                       bound="compute" if comp_ms > mem_ms else "memory",
                       bound_without_kv="compute" if comp_ms > weights / gpus / (bw * 1e9) * 1e3 else "memory",
                       weights_ms=weights / gpus / (bw * 1e9) * 1e3 if kv else 0.0, batch=b, context=context)
    if prompt:
        pf = 2.0 * sh.active_params * prompt / gpus / (peak * 1e12) * 1e3
        pf_mem = sh.total_params * bpp / gpus / (bw * 1e9) * 1e3
        out["ttft"] = Floor("ttft", max(pf, pf_mem),
                            f"2 x {_params(sh.active_params)} active parameters x {prompt:,.0f} tokens / "
                            f"({gpus} x {peak:,.0f} TFLOPS {mf.compute_dtype}) = {pf:.1f} ms",
                            f"{where} dense {mf.compute_dtype} peak ({g.spec.source}); {sh.source}")
        if n_out and n_out > 1:
            e2e = max(pf, pf_mem) + (n_out - 1) * out["itl"].ms
            out["e2e"] = Floor("e2e", e2e, f"TTFT floor {max(pf, pf_mem):,.1f} ms + ({n_out:,.0f} - 1) tokens x "
                                           f"{out['itl'].ms:.2f} ms = {e2e:,.0f} ms", "the TTFT and ITL floors")
    out["dense_itl"] = Floor("itl", sh.total_params * bpp / gpus / (bw * 1e9) * 1e3,
                             f"{_params(sh.total_params)} parameters x {bpp:g} bytes / ({gpus} x {bw:,.0f} GB/s)",
                             "every weight read once per step")
    return out


# --- reconciliation ------------------------------------------------------------------------------------------------


def mig_share(v: "EvidenceView") -> tuple[str, float, float] | None:
    """The MIG instance the engine runs on: (its profile, its share of the GPU's memory bandwidth (memory slices of
    eight), its share of the SMs (compute slices of seven)); None off MIG."""
    from orchestrator.prongs.request.models import RequestFiles

    devs = [d for _e, rep in v.probes("request_files") if isinstance(rep, RequestFiles) for d in rep.mig]
    if not devs:
        return None
    got = _engines(v)
    want = ""
    for e in (got[1] if got else []):
        want = (e.env.get("CUDA_VISIBLE_DEVICES") or e.env.get("NVIDIA_VISIBLE_DEVICES") or "").split(",")[0].strip()
        if want:
            break
    dev = next((d for d in devs if want and d.uuid == want), None)
    if dev is None and len({d.profile for d in devs}) == 1:
        dev = devs[0]
    m = re.match(r"(\d+)g\.(\d+)gb", dev.profile) if dev is not None else None
    if dev is None or m is None:
        return None
    g = v.gpu or v.observed_gpu
    name = " ".join(x for x in (getattr(g, "name", "") or "", getattr(getattr(g, "spec", None), "name", "") or "") if x)
    total = re.search(r"(\d+)\s*GB", name)
    total_gb = float(total.group(1)) if total else None
    if not total_gb:
        return None
    mem = max(1, min(8, round(8 * float(m.group(2)) / total_gb))) / 8
    return dev.profile, mem, min(1.0, int(m.group(1)) / 7)


def _differ(a: float | None, b: float | None, noise: float, ratio: float) -> bool:
    """a is larger than b beyond noise: by more than `noise` absolute and `ratio` relative."""
    return a is not None and b is not None and a - b > noise and (b <= 0 or a / b > ratio)


def _stat_src(view: View, term: str, stat: str = "mean") -> str:
    if view.point == "engine":
        return f"{view.label}'s own {term} ({view.source})"
    return f"{view.label}"


def _blended(term: str, c: View, e: View, others: list[View], noise: float, ratio: float) -> bool:
    """The engine's figure of a term is a blend of several client runs (its histograms count every run since it
    started): it lies between this run's figure and another run's, agreeing with neither. Set against one run it
    says nothing; it says something where it agrees with another run (the difference then sits outside the engine)
    or lies outside every run's figure."""
    es = getattr(e, term)
    x = es.typical if es is not None else None
    if x is None or not others:
        return False
    mine = getattr(c, term)
    a = mine.typical if mine is not None else None
    if a is None:
        return False
    runs = [c, *others]
    figs = [getattr(r, term).typical if getattr(r, term) is not None else None for r in runs]
    if es is not None and es.count and all(r.requests for r in runs) and all(f is not None for f in figs):
        n = sum(r.requests or 0 for r in runs)
        if abs(n - es.count) <= REQUESTS_NOISE * es.count:
            # the engine counted exactly these runs: its mean is theirs weighted by requests
            blend = sum((r.requests or 0) * (f or 0) for r, f in zip(runs, figs)) / n
            if not (_differ(x, blend, noise, ratio) or _differ(blend, x, noise, ratio)):
                return True
    for o in others:
        os_ = getattr(o, term)
        b = os_.typical if os_ is not None else None
        if b is None:
            continue
        if not (_differ(x, b, noise, ratio) or _differ(b, x, noise, ratio)):
            return False  # the engine agrees with another run: its figure is that run's too
    lo = min([a] + [getattr(o, term).typical for o in others if getattr(o, term) is not None
                    and getattr(o, term).typical is not None])
    hi = max([a] + [getattr(o, term).typical for o in others if getattr(o, term) is not None
                    and getattr(o, term).typical is not None])
    return lo < x < hi


def _time_residuals(c: View, e: View, out: list[Residual], others: list[View] | None = None) -> None:
    ev = list(dict.fromkeys(c.evidence + e.evidence))
    others = others or []
    for term, noise, ratio, label in (("ttft", TTFT_NOISE_MS, TTFT_NOISE_RATIO, "TTFT"),
                                      ("e2e", E2E_NOISE_MS, E2E_NOISE_RATIO, "end-to-end latency")):
        cs, es = getattr(c, term), getattr(e, term)
        if cs is None or es is None or _blended(term, c, e, others, noise, ratio):
            continue
        if term == "ttft" and cs.p50 is not None and es.median is not None and cs.p99 is not None and \
                es.p99 is not None and not _differ(cs.p50, es.median, noise, ratio) and \
                not _differ(es.median, cs.p50, noise, ratio) and cs.p99 >= TAIL_RATIO * es.p99 and \
                cs.p99 - es.p99 >= 1000:
            # the typical request agrees at both ends, a few wait far longer at the client than any the engine
            # measured: they waited before the engine saw them
            out.append(Residual("ttft.tail_client_over_engine", "TTFT p99", ("client", "engine"), cs.p99, es.p99,
                                "ms", f"{c.label}, p99 (p50 {cs.p50:,.0f} ms)",
                                f"the engine's own histogram, p99 (p50 {es.median:,.0f} ms)", ev, c.label))
            continue
        a, b = cs.typical, es.typical
        if _differ(a, b, noise, ratio):
            assert a is not None and b is not None
            out.append(Residual(f"{term}.client_over_engine", label, ("client", "engine"), a, b, "ms",
                                c.label, f"the engine's own histogram, {es.count or 0:,.0f} requests", ev, c.label))
        elif _differ(b, a, noise, ratio) and c.e2e is not None:
            assert a is not None and b is not None
            out.append(Residual(f"{term}.engine_over_client", label, ("engine", "client"), b, a, "ms",
                                f"the engine's own histogram, {es.count or 0:,.0f} requests", c.label, ev, c.label))
    ci, ei = c.itl, e.itl
    # the engine's mean is exact (its histogram's sum over its count); the client's median is what most tokens see
    if ci is not None and ei is not None and ci.median is not None and ei.typical is not None and \
            not _blended("itl", c, e, others, ITL_NOISE_MS, ITL_NOISE_RATIO):
        if _differ(ci.median, ei.typical, ITL_NOISE_MS, ITL_NOISE_RATIO):
            out.append(Residual("itl.client_over_engine", "inter-token latency", ("client", "engine"), ci.median,
                                ei.typical, "ms", f"{c.label}, median", "the engine's own histogram, mean", ev,
                                c.label))
        elif ei.typical > 0 and ci.median < ei.typical / 2 and ci.p99 is not None and ci.p99 >= 2 * ei.typical:
            # most gaps far shorter than any step of the engine and a few far longer: the tokens arrive in bursts.
            # (Uniformly shorter gaps at the client cannot be the same tokens: the engine's histogram counts other
            # traffic.)
            out.append(Residual("itl.client_under_engine", "inter-token latency", ("engine", "client"), ei.typical,
                                ci.median, "ms", "the engine's own histogram, mean", f"{c.label}, median", ev,
                                c.label, note=(f"p99 {ci.p99:,.0f} ms at the client" if ci.p99 else "")))


def _tail(view: View, out: list[Residual]) -> None:
    t = view.ttft
    if t is not None and t.p50 is not None and t.p99 is not None and t.p50 > 0 and \
            t.p99 / t.p50 >= TAIL_RATIO and t.p99 - t.p50 > 1000:
        out.append(Residual(f"ttft.tail_{view.point}", "TTFT p99 against p50", (view.point, view.point), t.p99, t.p50,
                            "ms", f"p99 at {POINT_WORDS[view.point]} ({view.label})", "the median", view.evidence,
                            view.label if view.point == "client" else ""))
    s = view.itl
    if s is None or s.p50 is None or s.p99 is None or s.p50 <= 0:
        return
    if s.p99 / s.p50 >= TAIL_RATIO and s.p99 - s.p50 > 20:
        out.append(Residual(f"itl.tail_{view.point}", "inter-token latency p99 against p50", (view.point, view.point),
                            s.p99, s.p50, "ms", f"p99 at {POINT_WORDS[view.point]} ({view.label})",
                            "the median", view.evidence, view.label if view.point == "client" else ""))


def _conservation(c: View, out: list[Residual]) -> None:
    """end-to-end = TTFT + (n - 1) x ITL (+ transport) at the client."""
    if c.e2e is None or c.ttft is None or c.itl is None or not c.tokens_out:
        return
    e2e, ttft, itl = c.e2e.typical, c.ttft.typical, c.itl.typical
    if e2e is None or ttft is None or itl is None:
        return
    parts = ttft + (c.tokens_out - 1) * itl
    if _differ(e2e, parts, E2E_NOISE_MS, E2E_NOISE_RATIO):
        out.append(Residual("e2e.client_over_parts", "end-to-end latency", ("client", "client"), e2e, parts, "ms",
                            f"{c.label}'s end-to-end", f"its TTFT {ttft:,.0f} ms + ({c.tokens_out:,.0f} - 1) x ITL "
                            f"{itl:.3g} ms", c.evidence, c.label))


def _token_residuals(c: View, e: View, out: list[Residual]) -> None:
    ev = list(dict.fromkeys(c.evidence + e.evidence))
    if c.tokens_in and e.tokens_in and not c.inputs:
        if e.tokens_in - c.tokens_in > TEMPLATE_TOKENS and e.tokens_in > c.tokens_in * (1 + TOKENS_NOISE):
            p90 = f", p90 {e.tokens_in_p90:,.0f}" if e.tokens_in_p90 and e.tokens_in_p90 > 1.1 * e.tokens_in else ""
            out.append(Residual("tokens_in.engine_over_client", "prompt tokens per request", ("engine", "client"),
                                e.tokens_in, c.tokens_in, "tokens", f"prefilled by the engine (mean{p90})",
                                f"sent by {c.label}", ev, c.label))
        elif c.tokens_in - e.tokens_in > TEMPLATE_TOKENS and c.tokens_in > e.tokens_in * (1 + TOKENS_NOISE):
            out.append(Residual("tokens_in.client_over_engine", "prompt tokens per request", ("client", "engine"),
                                c.tokens_in, e.tokens_in, "tokens", f"sent by {c.label}", "prefilled by the engine",
                                ev, c.label))
    if c.tokens_out and e.parents and e.n_per_request and e.generation_tokens_total and c.requests and \
            abs(e.parents - (c.requests + (c.failed or 0))) <= REQUESTS_NOISE * e.parents:
        # n completions per request: the engine generated n answers for each one the client counts
        kept = c.requests * c.tokens_out
        if e.generation_tokens_total > kept * (1 + TOKENS_NOISE) and e.generation_tokens_total - kept > 100:
            out.append(Residual("tokens_out.engine_over_client", "output tokens", ("engine", "client"),
                                e.generation_tokens_total, kept, "tokens",
                                f"generated by the engine for {e.parents:,.0f} requests x n = {e.n_per_request:.3g} "
                                "completions each (vllm:generation_tokens_total)",
                                f"kept by {c.label}: {c.requests:,.0f} answers x {c.tokens_out:,.0f} tokens", ev,
                                c.label))
    if c.tokens_out and e.tokens_out:
        if e.tokens_out - c.tokens_out > 16 and e.tokens_out > c.tokens_out * (1 + TOKENS_NOISE):
            out.append(Residual("tokens_out.engine_over_client", "output tokens per request", ("engine", "client"),
                                e.tokens_out, c.tokens_out, "tokens", "generated by the engine (mean)",
                                f"kept by {c.label}", ev, c.label))
        elif c.tokens_out - e.tokens_out > 16 and c.tokens_out > e.tokens_out * (1 + TOKENS_NOISE):
            out.append(Residual("tokens_out.client_over_engine", "output tokens per request", ("client", "engine"),
                                c.tokens_out, e.tokens_out, "tokens", f"counted by {c.label}",
                                "generated by the engine (mean)", ev, c.label))


def tokenizer_factor(c: View, e: View) -> tuple[float, float] | None:
    """(client / engine prompt tokens, client / engine output tokens) where both are off beyond noise, on the same
    side and by one factor: the same text counted with two vocabularies (a benchmark counting with its default
    tokenizer, not the served model's). Tokens added or lost (a template, a truncation, a missing stop token) move one
    side only."""
    if not (c.tokens_in and e.tokens_in and c.tokens_out and e.tokens_out):
        return None
    f_in, f_out = c.tokens_in / e.tokens_in, c.tokens_out / e.tokens_out
    up = f_in > 1 + TOKENS_NOISE and f_out > 1 + TOKENS_NOISE
    down = f_in < 1 / (1 + TOKENS_NOISE) and f_out < 1 / (1 + TOKENS_NOISE)
    if (up or down) and abs(f_in / f_out - 1) <= SAME_FACTOR:
        return f_in, f_out
    return None


INPUTS_NOISE = 0.1
"""Inputs per request read from tokens (client / engine tokens per request) and from requests (engine / client
requests) agree within this share."""


def inputs_per_request(c: View, e: View) -> float | None:
    """Inputs each request of the client carries, where the engine counts each as a request of its own: the client's
    prompt tokens per request are k times the engine's, and the engine finished k times the client's requests (or it
    generated no token at all: a pooling model, embeddings or scores, where a list input is the API's batch)."""
    if not (c.tokens_in and e.tokens_in) or c.tokens_in < 1.9 * e.tokens_in:
        return None
    k = c.tokens_in / e.tokens_in
    offered = (c.requests or 0) + (c.failed or 0)
    if offered and e.requests and abs(e.requests / offered / k - 1) <= INPUTS_NOISE:
        return round(e.requests / offered, 1)
    pooling = e.tokens_out == 0 or (e.generation_tokens_total == 0 and (e.prompt_tokens_total or 0) > 0)
    return float(round(k)) if pooling else None


def _request_residuals(c: View, e: View, out: list[Residual], runs: list[View] | None = None) -> None:
    """Requests the client offered against those the engine finished. With several runs, the engine's counters
    cover them all: they are set against the runs' sum."""
    ev = list(dict.fromkeys(c.evidence + e.evidence))
    runs = runs or [c]
    if any(r.requests is None for r in runs) or e.requests is None:
        return
    if len(runs) > 1:
        c = View(point="client", label=" + ".join(r.label for r in runs), source="", evidence=c.evidence,
                 requests=sum(r.requests or 0 for r in runs), failed=sum(r.failed or 0 for r in runs))
    assert c.requests is not None and e.requests is not None
    if c.inputs:  # the engine counts each input of a request as a request
        c = View(point="client", label=c.label, source=c.source, evidence=c.evidence,
                 requests=c.requests * c.inputs, failed=(c.failed or 0) * c.inputs)
    requests = c.requests or 0.0
    offered = requests + (c.failed or 0)
    if e.parents:
        e = View(point="engine", label=e.label, source=e.source, evidence=e.evidence, requests=e.parents,
                 finished={k: x / (e.n_per_request or 1.0) for k, x in e.finished.items()})
    aborted = e.finished.get("abort", 0.0)
    assert e.requests is not None
    if e.requests > offered * (1 + REQUESTS_NOISE) and e.requests - offered >= 5 and \
            (aborted >= 0.2 * (e.requests - offered) or (c.failed or 0) > 0):
        # more requests at the engine than offered, with aborts or failures to show for it (without them, the
        # engine's cumulative counters merely include other traffic: another run, other clients)
        out.append(Residual("requests.engine_over_client", "requests", ("engine", "client"), e.requests, offered,
                            "requests", "the engine's count of requests it finished (any reason)",
                            f"offered by {c.label} ({c.requests:,.0f} completed + {c.failed or 0:,.0f} failed)", ev,
                            c.label))
    elif c.failed and c.failed >= max(2.0, 0.05 * offered) and e.requests >= offered * (1 - 0.05) and \
            e.finished.get("abort", 0.0) < 0.5 * c.failed:
        # the engine finished (nearly) every request the client offered, yet the client saw failures: the answers
        # were lost on the way back (a timeout between them cut the response)
        out.append(Residual("requests.served_not_delivered", "requests", ("engine", "client"), e.requests,
                            requests, "requests", "finished by the engine", f"received by {c.label} "
                            f"({c.failed:,.0f} of {offered:,.0f} failed there)", ev, c.label))
    elif c.failed and c.failed >= max(2.0, REQUESTS_NOISE * offered) and e.requests < offered * (1 - REQUESTS_NOISE):
        out.append(Residual("requests.client_over_engine", "requests", ("client", "engine"), offered, e.requests,
                            "requests", f"offered by {c.label} ({c.requests:,.0f} completed + {c.failed:,.0f} "
                            "failed)", "the engine's count of requests it finished", ev, c.label))


def _load_residuals(c: View, e: View, out: list[Residual], busy: float | None = None) -> None:
    ev = list(dict.fromkeys(c.evidence + e.evidence))
    if c.inputs:
        # a request of several inputs is in flight at the client from its send to its answer's last byte, each of its
        # inputs in the engine only while it runs: the two counts are of different things
        return
    held = c.concurrency or c.little_l
    inside = e.inflight
    if held is None or inside is None:
        return
    if inside == 0 and busy is not None and busy < 5:
        return  # nothing running and the GPUs idle: the run is over, the engine's gauges say nothing of it
    waiting = e.waiting or 0.0
    if held >= LOAD_NOISE * max(inside, 1.0) and held - inside >= 2 and waiting <= 0.1 * held:
        src = (f"{c.label}'s concurrency" if c.concurrency else
               f"Little's law at {c.label}: {c.rate:g} req/s x {c.e2e.typical / 1e3 if c.e2e and c.e2e.typical else 0:.2f} s")
        out.append(Residual("load.client_over_engine", "requests in flight", ("client", "engine"), held, inside,
                            "requests", src, f"the engine's running + waiting ({e.running or 0:.0f} + {waiting:.0f})",
                            ev, c.label))
    elif c.concurrency and inside >= 2 * c.concurrency and inside - c.concurrency >= 4:
        # more sequences inside the engine than the client ever holds requests: each request became several
        # sequences (n > 1), or other clients share the engine
        out.append(Residual("load.engine_over_client", "requests in flight", ("engine", "client"), inside,
                            c.concurrency, "requests", f"the engine's running + waiting ({e.running or 0:.0f} + "
                            f"{waiting:.0f})", f"{c.label}'s concurrency", ev, c.label))


def _floor_residuals(view: View, fl: dict[str, Floor], out: list[Residual], tokens_note: str = "",
                     engine: View | None = None) -> None:
    """A figure below its floor, or far above it where the engine's own figure of the term is not known (where it is,
    the engine's residuals against the client say more)."""
    ev = view.evidence
    engine_has = {t: getattr(engine, t) if engine is not None else None for t in ("itl", "ttft")}
    for term, label in (("itl", "inter-token latency"), ("ttft", "TTFT")):
        s, f = getattr(view, term), fl.get(term)
        if s is None or f is None or f.ms <= 0:
            continue
        # the engine's mean is exact (its histogram's sum over its count; its quantiles are interpolated between
        # coarse buckets); the client's median is what most requests see
        x = s.typical if view.point == "engine" else s.median
        if x is None:
            continue
        if term == "itl" and view.tpot is not None and view.tpot.median is not None and x >= BELOW_FLOOR * f.ms \
                and view.tpot.median < BELOW_FLOOR * f.ms:
            # each streamed chunk within the floor, each token below it: chunks carry several tokens
            t = view.tpot.median
            out.append(Residual("itl.client_below_floor", "time per output token", (view.point, "floor"), t, f.ms,
                                "ms", f"{view.label}, median TPOT", f.arithmetic, ev, view.label,
                                note=f"its inter-token latency, per streamed chunk, is {x:.3g} ms: {x / t:.2g} tokens "
                                     "per chunk"))
            continue
        if term == "ttft" and x - f.ms < TTFT_NOISE_MS and x >= BELOW_FLOOR * f.ms:
            continue  # a TTFT within a round trip of its floor says nothing, whatever the ratio
        if term == "itl" and x - f.ms < ITL_NOISE_MS and x >= BELOW_FLOOR * f.ms:
            continue
        if x < BELOW_FLOOR * f.ms:
            out.append(Residual(f"{term}.{view.point}_below_floor", label, (view.point, "floor"), x, f.ms, "ms",
                                f"{view.label}, median" if view.point == "client" else "the engine's own median",
                                f.arithmetic, ev, view.label if view.point == "client" else "", note=tokens_note))
        elif x >= FAR_ABOVE_FLOOR * f.ms and (view.point == "engine" or engine_has.get(term) is None):
            out.append(Residual(f"{term}.{view.point}_far_above_floor", label, (view.point, "floor"), x, f.ms, "ms",
                                f"{view.label}, median" if view.point == "client" else "the engine's own median",
                                f.arithmetic, ev, view.label if view.point == "client" else "", note=tokens_note))


def _dense_floor_residual(view: View, fl: dict[str, Floor], out: list[Residual]) -> None:
    """A mixture of experts decoding below the floor of its whole checkpoint (but not below its active floor): the
    dense floor is the wrong model's."""
    f, d = fl.get("itl"), fl.get("dense_itl")
    s = view.itl
    if f is None or d is None or s is None or d.ms <= f.ms * 1.2:
        return
    x = s.typical if view.point == "engine" else s.median
    if x is None or x >= BELOW_FLOOR * d.ms or x < BELOW_FLOOR * f.ms:
        return
    out.append(Residual("itl.below_dense_floor", "inter-token latency", (view.point, "floor"), x, d.ms, "ms",
                        f"{view.label}" + (", median" if view.point == "client" else "'s own mean"),
                        f"every weight of the checkpoint read once per step: {d.arithmetic}", view.evidence,
                        view.label if view.point == "client" else ""))


def _finish_residuals(e: View, out: list[Residual]) -> None:
    total = sum(e.finished.values())
    if total < 10:
        return
    for reason, shape, share in (("length", "finish.length", SHARE_DOMINANT), ("abort", "finish.abort", 0.2)):
        n = e.finished.get(reason, 0.0)
        if n / total >= share:
            cap = f", max_tokens {e.max_tokens:,.0f} per request" if reason == "length" and e.max_tokens else ""
            out.append(Residual(shape, f"requests ended by {reason}", ("engine", "engine"), n, total, "requests",
                                f"finished_reason={reason}{cap}", "every finished request", e.evidence))


def _prefilled_again(logs: RequestLogs, e: View, out: list[Residual]) -> None:
    """Each turn of a conversation prefilled from token 0 although the engine still held the conversation from the
    turn before: tokens prefilled against tokens new."""
    s = logs.llama
    if s is None or not s.held_before or not s.prompt_tokens or not s.reused:
        return
    held = sum(s.held_before) / len(s.held_before)
    prompt = sum(s.prompt_tokens) / len(s.prompt_tokens)
    reused = sum(s.reused) / len(s.reused)
    # each turn's new tokens: its prompt less what the turn before left in the slot
    fresh = [max(p - h, 1) for p, h in zip(s.prompt_tokens[1:], s.held_before)]
    new = sum(fresh) / len(fresh) if fresh else max(prompt - held, 1.0)
    if held > 256 and reused < 0.2 * held and prompt >= 0.8 * held:
        out.append(Residual("tokens_in.prefilled_again", "prompt tokens prefilled per turn", ("engine", "engine"),
                            prompt - reused, new, "tokens", "evaluated by the engine (its prompt eval count)",
                            f"new since the turn before (the slot held {held:,.0f} tokens of the conversation)",
                            e.evidence))


def _context_residuals(logs: RequestLogs, c: View | None, e: View | None, out: list[Residual]) -> None:
    """Requests that did not fit the context window, as the engine's log says: prompts cut to it (tokens sent against
    tokens kept) and requests refused for their length."""
    ctx = logs.context
    if ctx is None:
        return
    ev = list(dict.fromkeys((e.evidence if e else []) + (c.evidence if c else [])))
    run = c.label if c is not None else ""
    if ctx.truncated and ctx.prompts and ctx.kept and not any(r.shape == "tokens_in.client_over_engine" for r in out):
        sent, kept = sum(ctx.prompts) / len(ctx.prompts), sum(ctx.kept) / len(ctx.kept)
        if sent > kept * (1 + TOKENS_NOISE):
            out.append(Residual("tokens_in.client_over_engine", "prompt tokens per request", ("client", "engine"),
                                sent, kept, "tokens", f"sent ({ctx.truncated} truncation lines of the engine's log)",
                                f"kept and prefilled, cut to a context of {ctx.limit:,} tokens" if ctx.limit else
                                "kept and prefilled", ev, run))
    if ctx.refused:
        offered = (c.requests or 0) + (c.failed or 0) if c is not None and c.requests is not None else None
        failed = c.failed if c is not None and c.failed else None
        asked = sum(ctx.requested) / len(ctx.requested) if ctx.requested else None
        limit = f" of {ctx.limit:,} tokens" if ctx.limit else ""
        said = (f"{ctx.refused:,} requests refused in the engine's log for not fitting its context{limit}"
                + (f" (asking for {asked:,.0f} tokens on average)" if asked else "")
                + (f"; {failed:,.0f} of {offered:,.0f} requests failed at the client" if failed and offered else ""))
        out.append(Residual("requests.refused_too_long", "requests refused for their length", ("engine", "engine"),
                            failed or float(ctx.refused), offered or float(ctx.refused), "requests",
                            "refused (the engine's log)", "offered", ev, run, said=said))


def _waiting_with_room(v: "EvidenceView", e: View | None, out: list[Residual]) -> None:
    """Requests wait in the engine's queue while its batch has room (the KV cache mostly free, the running count below
    the sequence cap): something other than memory or the cap holds them back (resource_account's queue state)."""
    from orchestrator.prongs.resource_account.queue_rules import queue_state

    q = queue_state(v)
    if q is None or not q.waiting or q.waiting < 2 or not q.running or q.kv_usage is None or q.kv_usage >= 0.5:
        return
    if q.cap is not None and q.running >= 0.8 * q.cap:
        return
    cap = f" of at most {q.cap:,.0f}" if q.cap else ""
    out.append(Residual("load.waiting_with_room", "requests waiting", ("engine", "engine"), q.waiting, q.running,
                        "requests", "waiting in the engine's queue", f"running{cap}",
                        [q.ev] if q.ev else (e.evidence if e else []),
                        said=f"{q.waiting:,.0f} requests waiting in the engine's queue while {q.running:,.0f} run"
                             f"{cap}, with its KV cache {q.kv_usage:.0%} used"))


def _throughput_flat(clients: list[View], out: list[Residual]) -> None:
    """Runs at several concurrencies whose completed rate (measured, else Little's law: in flight / time in the
    system) does not rise with the load: one request at a time is served, the rest wait."""
    rated = []
    for c in clients:
        rate = c.rate
        w = c.e2e.typical if c.e2e is not None else None
        if rate is None and c.concurrency and w:
            rate = c.concurrency / (w / 1e3)
        if rate and c.concurrency:
            rated.append((c.concurrency, rate, c))
    if len(rated) < 2:
        return
    rated.sort(key=lambda x: x[0])
    (lo_c, lo_r, lo), (hi_c, hi_r, hi) = rated[0], rated[-1]
    if hi_c >= 2 * lo_c and hi_r < 1.25 * lo_r:
        # what the rate would be if the service scaled with the load (a batch of hi_c as fast as one of lo_c), against
        # what it was
        scaled = lo_r * hi_c / lo_c
        out.append(Residual("throughput.flat_with_concurrency", "requests per second", ("run", "run"), scaled, hi_r,
                            "req/s", f"{lo.label}, scaled", f"{hi.label}, measured",
                            list(dict.fromkeys(lo.evidence + hi.evidence)), hi.label,
                            note=f"{hi_c / lo_c:g}x the load, {hi_r / lo_r:.2f}x the throughput",
                            said=(f"requests per second: {hi_r:.3g} with {hi_c:,.0f} at once ({hi.label}) against "
                                  f"{lo_r:.3g} with {lo_c:,.0f} ({lo.label}): {hi_c / lo_c:g}x the load for "
                                  f"{hi_r / lo_r:.2f}x the throughput, where a service that batches would give up to "
                                  f"{scaled:.3g}")))


def _deltas(clients: list[View]) -> list[RunDelta]:
    out: list[RunDelta] = []
    if len(clients) < 2:
        return out
    base = clients[0]
    for other in clients[1:4]:
        moved: dict[str, tuple[float, float]] = {}
        same: list[str] = []
        for term, noise, ratio in (("ttft", TTFT_NOISE_MS, TTFT_NOISE_RATIO), ("itl", ITL_NOISE_MS, ITL_NOISE_RATIO),
                                   ("e2e", E2E_NOISE_MS, E2E_NOISE_RATIO)):
            x, y = getattr(base, term), getattr(other, term)
            if x is None or y is None or x.median is None or y.median is None:
                continue
            if _differ(x.median, y.median, noise, ratio) or _differ(y.median, x.median, noise, ratio):
                moved[term] = (x.median, y.median)
            else:
                same.append(term)
        for term in ("tokens_in", "tokens_out", "concurrency"):
            x_, y_ = getattr(base, term), getattr(other, term)
            if x_ and y_:
                if max(x_, y_) / min(x_, y_) > 1 + TOKENS_NOISE:
                    moved[term] = (x_, y_)
                else:
                    same.append(term)
        out.append(RunDelta(base, other, moved, same))
    return out


def _delta_residuals(deltas: list[RunDelta], out: list[Residual]) -> None:
    """Two runs that differ in one condition: a TTFT that moved by the same amount as the end-to-end latency while the
    inter-token latency held is a fixed time added before the first token in one run's path."""
    for d in deltas:
        if "ttft" not in d.moved:
            continue
        ta, tb = d.moved["ttft"]
        slow, fast = (d.b, d.a) if tb > ta else (d.a, d.b)
        gap = abs(tb - ta)
        ev = list(dict.fromkeys(d.a.evidence + d.b.evidence))
        offset = "e2e" in d.moved and abs(abs(d.moved["e2e"][1] - d.moved["e2e"][0]) - gap) <= max(0.15 * gap, 100)
        if "itl" in d.same and offset:
            out.append(Residual("ttft.run_over_run", "TTFT", ("run", "run"), max(ta, tb), min(ta, tb), "ms",
                                slow.label, fast.label, ev, slow.label,
                                note=f"end-to-end moved by {abs(d.moved['e2e'][1] - d.moved['e2e'][0]):,.0f} ms, "
                                     "the inter-token latency not at all"))
        elif "tokens_in" not in d.moved and "concurrency" not in d.moved and gap > TTFT_NOISE_MS:
            out.append(Residual("ttft.run_over_run", "TTFT", ("run", "run"), max(ta, tb), min(ta, tb), "ms",
                                slow.label, fast.label, ev, slow.label))


SPECULATIVE = re.compile(r"spec|ngram|n-gram|eagle|mtp|draft|medusa|lookahead", re.I)
"""A run's name that says speculative decoding was on."""


def per_token(c: View) -> float | None:
    """A run's time per output token: its TPOT where it has one (per token, whatever a streamed chunk carries), else
    its inter-token latency."""
    s = c.tpot if c.tpot is not None and c.tpot.median is not None else c.itl
    return s.median if s is not None else None


def same_load_pairs(runs: list[View]) -> list[tuple[View, View]]:
    """Runs at one load under two conditions (their names differ) whose time per output token moved: (slower,
    faster)."""
    out: list[tuple[View, View]] = []
    for i, a in enumerate(runs):
        for b in runs[i + 1:]:
            if a.condition == b.condition or not a.concurrency or a.concurrency != b.concurrency:
                continue
            x, y = per_token(a), per_token(b)
            if x is None or y is None:
                continue
            if _differ(x, y, ITL_NOISE_MS / 4, 1.15) or _differ(y, x, ITL_NOISE_MS / 4, 1.15):
                out.append((a, b) if x > y else (b, a))
    return out


def _same_load_residuals(runs: list[View], out: list[Residual]) -> None:
    for slow, fast in same_load_pairs(runs):
        x, y = per_token(slow), per_token(fast)
        assert x is not None and y is not None
        out.append(Residual("itl.run_over_run", "time per output token", ("run", "run"), x, y, "ms", slow.label,
                            fast.label, list(dict.fromkeys(slow.evidence + fast.evidence)), slow.label,
                            note=f"the same load ({slow.concurrency:g} at once), {slow.condition} against "
                                 f"{fast.condition}"))


_SERVED_AS = re.compile(r"--served-model-name[= ](\S+)")


def _named_model(v: "EvidenceView", runs: list[View], engines: list[EngineInstance],
                 mf: "ModelFacts | None") -> tuple[str, Any, str] | None:
    """The model the client names (its benchmark's model id, the observations' model) when its size differs from the
    weights the engine serves: (the name, its shape from the name, the engine's --served-model-name or "")."""
    from orchestrator.prongs.serving_engine.floors import shape_from_name

    if mf is None or not engines or not engines[0].model:
        return None
    served = mf.shape.total_params
    alias_m = _SERVED_AS.search(engines[0].command or "")
    alias = alias_m.group(1) if alias_m else ""
    oe = v.observations_evidence
    names = [b.model for b in (oe[1].bench if oe else []) if b.model]
    if oe and oe[1].model and oe[1].model.name:
        names.append(oe[1].model.name)
    if alias:
        names.append(alias)
    base = (mf.name or engines[0].model or "").split("/")[-1].lower()
    by_name = shape_from_name(mf.name or engines[0].model)
    for nm in dict.fromkeys(names):
        low = nm.split("/")[-1].lower()
        if not low or low in base or base in low:
            continue  # the same model, named with or without its organisation or a suffix
        shape = shape_from_name(nm)
        if shape is None or not served:
            continue
        # sizes read from both names where the served one has a size in it (a name's parse and a config's count
        # differ for the same model: "8x7B" is 46.7 B), else the name's against the weights' count
        other = by_name.total_params if by_name is not None else served
        if max(shape.total_params, other) / min(shape.total_params, other) >= 1.5:
            return nm, shape, alias
    return None


def _runs_total(clients: list[View]) -> View | None:
    """The client runs as one: their requests added, their mean lengths weighted by requests (what the engine's
    counters, which cover every run, are set against)."""
    if not clients or any(c.requests is None for c in clients):
        return None
    if len(clients) == 1:
        return clients[0]
    n = sum(c.requests or 0 for c in clients)

    def wmean(attr: str) -> float | None:
        if any(getattr(c, attr) is None for c in clients) or not n:
            return None
        return sum((getattr(c, attr) or 0) * (c.requests or 0) for c in clients) / n

    return View(point="client", label="the runs together", source="", evidence=clients[0].evidence, requests=n,
                failed=sum(c.failed or 0 for c in clients), tokens_in=wmean("tokens_in"), tokens_out=wmean("tokens_out"))


def _waste(c: View | None, e: View, spec: Any = None) -> list[Waste]:
    """GPU work that did not reach the answer the user kept, with its arithmetic."""
    out: list[Waste] = []
    total = sum(e.finished.values())
    if spec is not None and spec.accepted is not None and spec.drafted and spec.accept_len > 1:
        drafts = spec.accepted / (spec.accept_len - 1)
        positions = spec.drafted + drafts
        out.append(Waste("rejected drafts", spec.drafted - spec.accepted, positions, "decode",
                         f"{spec.drafted:,.0f} draft tokens verified, {spec.accepted:,.0f} accepted "
                         f"({spec.accepted / spec.drafted:.0%}); {drafts:,.0f} steps x ({spec.drafted / drafts:.2g} "
                         f"drafts + 1) = {positions:,.0f} positions verified, {spec.drafted - spec.accepted:,.0f} of "
                         "them rejected"))
    e_req = e.parents or e.requests
    if c is not None and e_req and c.requests:
        offered = c.requests + (c.failed or 0)
        aborted = e.finished.get("abort", 0.0) / (e.n_per_request if e.parents and e.n_per_request else 1.0)
        if e_req > offered * (1 + REQUESTS_NOISE) and aborted < 0.2 * (e_req - offered):
            return out  # the engine's counters include traffic besides these runs: no per-run arithmetic holds
    if c is not None and c.requests and c.tokens_in and e.prompt_tokens_total and \
            e_req and e_req > c.requests * (1 + REQUESTS_NOISE):
        needed = c.requests * c.tokens_in
        if e.prompt_tokens_total > needed * (1 + TOKENS_NOISE):
            out.append(Waste("prefilled again or for requests not kept", e.prompt_tokens_total - needed,
                             e.prompt_tokens_total, "prefill",
                             f"{e.prompt_tokens_total / 1e6:,.2f} M prompt tokens prefilled for {c.requests:,.0f} "
                             f"answers kept x {c.tokens_in:,.0f} tokens = {needed / 1e6:,.2f} M needed "
                             f"({e.prompt_tokens_total / needed:.2f}x)"))
    if c is not None and c.tokens_out and e.generation_tokens_total and c.requests:
        kept = c.requests * c.tokens_out
        if e.generation_tokens_total > kept * (1 + TOKENS_NOISE) and e.generation_tokens_total - kept > 100:
            out.append(Waste("generated and not kept", e.generation_tokens_total - kept, e.generation_tokens_total,
                             "decode",
                             f"{e.generation_tokens_total:,.0f} tokens generated against {c.requests:,.0f} answers kept "
                             f"x {c.tokens_out:,.0f} tokens = {kept:,.0f} kept "
                             f"({1 - kept / e.generation_tokens_total:.0%} not kept"
                             + (f"; n = {e.n_per_request:.3g} completions per request, the client keeps one"
                                if e.parents and e.n_per_request else "") + ")"))
    elif c is not None and c.tokens_out and e.tokens_out and e.tokens_out > c.tokens_out * (1 + TOKENS_NOISE):
        out.append(Waste("generated and not kept", e.tokens_out - c.tokens_out, e.tokens_out, "decode",
                         f"{e.tokens_out:,.0f} tokens generated per request against {c.tokens_out:,.0f} kept "
                         f"({1 - c.tokens_out / e.tokens_out:.0%} not kept)"))
    if total and e.finished.get("abort") and e.tokens_out and not any(w.phase == "decode" and w.what != "rejected drafts"
                                                                      for w in out):
        out.append(Waste("generated for requests that were aborted", e.finished["abort"] * e.tokens_out,
                         total * e.tokens_out, "decode",
                         f"{e.finished['abort']:,.0f} of {total:,.0f} requests ended aborted"))
    return out


_GPU_RESOURCE = re.compile(r"^limits_(?:nvidia_com|amd_com)_gpu$|^limits_gpu_intel_com_\w+$")
"""The pod's GPU limits as the path prong names them (`nvidia.com/gpu` -> `limits_nvidia_com_gpu`)."""
_SLURM_GPUS = re.compile(r"gres/gpu(?::[\w.-]+)?[=:](\d+)")


def gpus_allocated(v: "EvidenceView") -> tuple[int, str, list[str]] | None:
    """The GPUs the orchestrator gave the engine's pod, job or container (the pod's GPU limit, the Slurm job's gres,
    the container's `--gpus N` or device list), with where it was read; None when no allocation was read."""
    from orchestrator.prongs.path.models import PathReport

    for ev, rep in v.probes("path_layers"):
        if not isinstance(rep, PathReport):
            continue
        for layer in ("k8s", "slurm", "docker"):
            x = rep.layer(layer)
            if x is None:
                continue
            for name, s in x.settings.items():
                n: int | None = None
                if (layer == "k8s" and _GPU_RESOURCE.match(name) or layer == "docker" and name == "gpus") \
                        and isinstance(s.value, (int, float)):
                    n = int(s.value)
                elif layer == "slurm" and isinstance(s.value, str) and (m := _SLURM_GPUS.search(s.value)):
                    n = int(m.group(1))
                if n and n > 0:
                    return n, f"{name} = {s.value:g} ({s.where})" if isinstance(s.value, float) else \
                        f"{name} = {s.value} ({s.where})", [ev.id]
    return None


def gpus_used(engines: list[EngineInstance]) -> tuple[int, str] | None:
    """The GPUs the engines run on by their own parallelism: tensor x pipeline x data parallel, summed over the
    engine instances (each setting as the engine's arguments or its log say, 1 where unset)."""
    total, parts = 0, []
    for e in engines:
        sizes = {k: e.value(k) for k in ("tp", "pp", "dp")}
        if all(x is None for x in sizes.values()):
            continue
        n = 1
        for x in sizes.values():
            n *= int(x) if isinstance(x, (int, float)) and x >= 1 else 1
        total += n
        parts.append(" x ".join(f"{k.upper()} {int(x) if isinstance(x, (int, float)) else 1}"
                                for k, x in sizes.items()))
    return (total, "; ".join(parts)) if total else None


def _allocation_residual(v: "EvidenceView", engines: list[EngineInstance], out: list[Residual]) -> None:
    """GPUs the orchestrator allocated against the GPUs the engine's own parallelism runs on: the rest are held and
    idle (a parallelism argument the chart or job never passed)."""
    alloc, used = gpus_allocated(v), gpus_used(engines)
    if alloc is None or used is None or used[0] >= alloc[0]:
        return
    got = _engines(v)
    ev = alloc[2] + ([got[0]] if got else [])
    out.append(Residual("gpus.allocated_over_used", "GPUs", ("orchestrator", "engine"), alloc[0], used[0], "GPUs",
                        alloc[1], f"the engine's parallelism ({used[1]})", ev,
                        said=f"{alloc[0]} GPUs allocated ({alloc[1]}) against {used[0]} the engine runs on "
                             f"({used[1]}): {alloc[0] - used[0]} held and idle"))


def _handoff(v: "EvidenceView", runs: list[View], engine: View | None, t_in: float | None,
             mf: "ModelFacts | None") -> Handoff | None:
    """The KV hand-off of a disaggregated deployment, from the engine's command and log lines, the client runs' TTFT,
    the bytes per token of the served model, the host's NICs and RDMA ports."""
    got = _engines(v)
    if got is None:
        return None
    _ev, engines, rep = got
    lines = [e.command for e in engines if e.command] + [ln.line for ln in rep.lines]
    timed = [(c.label, c.source, c.ttft.typical) for c in runs if c.ttft is not None and c.ttft.typical]
    ettft = (engine.ttft.typical, "the engine's own TTFT") if engine and engine.ttft and engine.ttft.typical else None
    nics = [n for _e, m in v.probes("resource_account") for n in getattr(getattr(m, "host_account", None), "nics",
                                                                          None) or getattr(m, "nics", None) or []]
    rdma = next((r for _e, m in v.probes("node_health") if (r := rdma_rate(getattr(m, "rdma_devices", []) or []))),
                None)
    kv = (mf.kv_bytes_per_token, mf.kv_src) if mf is not None and mf.kv_bytes_per_token else None
    from orchestrator.prongs.path.models import PathReport

    env: dict[str, str] = {}
    for _e, rep_ in v.probes("path_layers"):
        rt = rep_.layer("runtime") if isinstance(rep_, PathReport) else None
        if rt is not None:
            env.update({k: str(s.value) for k, s in rt.settings.items() if k.startswith(("UCX_", "NCCL_"))})
    return handoff(lines, timed, ettft, t_in, kv, nics, rdma, env)


def build_account(v: "EvidenceView") -> RequestAccount | None:
    """The account of the workload the evidence shows, or None when neither a client nor an engine view exists."""
    from orchestrator.prongs.resource_account.where import gpus_busy

    oe = v.observations_evidence
    runs = [] if oe is None else [client_view(b, oe[0].id) for b in oe[1].bench]
    # the engine's counters cover the runs since it started, not those of the state before (--baseline)
    clients = [c for c, b in zip(runs, oe[1].bench if oe else []) if b.label != "baseline"]
    engine, logs = engine_view(v)
    if not clients and engine is None:
        return None
    got = _engines(v)
    engines = got[1] if got else []
    acct = RequestAccount(clients=clients, engine=engine, logs=logs, gpu_busy_pct=gpus_busy(v), runs=runs)
    from orchestrator.prongs.resource_account.engine_work_rules import _engines as work_engines
    from orchestrator.prongs.resource_account.engine_work_rules import speculation_state

    for _e, inst, fx in work_engines(v):
        acct.spec = speculation_state(inst, fx)
        break
    acct.evidence = list(dict.fromkeys([x for c in clients for x in c.evidence] + (engine.evidence if engine else [])))
    mf = model_facts(v, engines)
    c0 = clients[0] if clients else None
    n_engines = max(1, len([e for e in engines if e.metrics and e.metrics.metrics]) or (engine.engines if engine else 1),
                    len(logs.busy_engines()))
    running = engine.running if engine is not None and engine.running else None
    batch = (running / n_engines) if running else (c0.concurrency if c0 and c0.concurrency else 1.0)
    t_in = (engine.tokens_in if engine and engine.tokens_in else None) or (c0.tokens_in if c0 else None)
    t_out = (engine.tokens_out if engine and engine.tokens_out else None) or (c0.tokens_out if c0 else None)
    context = (t_in or 0) + (t_out or 0) / 2
    acct.floors = floors(v, mf, batch=batch, context=context, prompt=t_in, n_out=t_out)
    acct.mig = mig_share(v)
    for e in engines:
        info = e.metrics.metrics.get("vllm:lora_requests_info") if e.metrics and e.metrics.metrics else None
        if info is not None and info.labels:
            acct.lora = dict(info.labels)
            break
    if mf is not None:
        act = (f", {mf.shape.active_params / 1e9:.1f} B active" if mf.shape.expert_params else "")
        acct.model_words = f"{mf.name or 'the model'} ({mf.shape.total_params / 1e9:.1f} B{act}, {mf.dtype})"
    named = _named_model(v, runs, engines, mf)
    if named is not None:
        nm, shape, alias = named
        from orchestrator.prongs.request.known_models import known_kv

        nkv = known_kv(nm)
        nmf = ModelFacts(shape, nkv.bytes_per_token(2.0) if nkv else 0.0, nkv.source if nkv else "", "bf16", "bf16",
                         "the name's model at bf16, as published figures are", 1, nm)
        fl = floors(v, nmf, batch=batch, context=context, prompt=t_in, n_out=t_out).get("itl")
        acct.named = (nm, shape.total_params / 1e9, alias, fl)
    out: list[Residual] = []
    if engine is not None:
        _finish_residuals(engine, out)
        _tail(engine, out)
        _floor_residuals(engine, acct.floors, out)
        _dense_floor_residual(engine, acct.floors, out)
    for c in clients[:1]:
        _dense_floor_residual(c, acct.floors, out)
    for c in clients[:4]:
        if engine is not None:
            c.inputs = inputs_per_request(c, engine)
    for c in clients[:4]:
        others = [o for o in clients[:4] if o is not c]
        if engine is not None:
            _time_residuals(c, engine, out, others)
            _token_residuals(c, engine, out)
            if c is clients[0]:
                _request_residuals(c, engine, out, clients)
            _load_residuals(c, engine, out, acct.gpu_busy_pct)
        _conservation(c, out)
        _tail(c, out)
        cf = acct.floors
        if mf is not None and c.tokens_in and (not t_in or abs(c.tokens_in - t_in) > TEMPLATE_TOKENS):
            # the floor of the prompt the client says it sent: a TTFT far above it with a larger prompt prefilled is
            # a prompt of the wrong size, not a slow prefill
            cf = {**acct.floors, **{k: f for k, f in floors(v, mf, batch=batch, context=context, prompt=c.tokens_in,
                                                           n_out=c.tokens_out).items() if k == "ttft"}}
        _floor_residuals(c, cf, out, engine=engine)
    per = engines_running(v)
    if len(per) >= 2:
        lo, hi = min(per, key=lambda x: x[1]), max(per, key=lambda x: x[1])
        if hi[1] >= 2 * lo[1] + 2:
            out.append(Residual("load.engines_unbalanced", "requests running per engine", ("replica", "replica"),
                                hi[1], lo[1], "requests", f"the busiest engine ({hi[0]})", f"the idlest ({lo[0]})",
                                engine.evidence if engine else [],
                                note=", ".join(f"{w}: {r:,.0f}" for w, r in per[:8])))
    acct.deltas = _deltas(clients)
    _delta_residuals(acct.deltas, out)
    _throughput_flat(clients, out)
    _same_load_residuals(runs, out)
    if engine is not None:
        _prefilled_again(logs, engine, out)
    if acct.named is not None and mf is not None:
        nm, nb, alias, fl = acct.named
        served = mf.shape.total_params / 1e9
        out.append(Residual("model.named_vs_served", "model size", ("client", "engine"), nb, served, "B parameters",
                            f"the name the client asks for ({nm})", f"the weights the engine loaded ({mf.name})",
                            acct.evidence, c0.label if c0 else "",
                            said=f"the name {nm} says a {nb:g} B model, and the engine serves {mf.name} "
                                 f"({served:.1f} B)" + (f" under it (--served-model-name {alias})" if alias else "")))
    _context_residuals(logs, c0, engine, out)
    _waiting_with_room(v, engine, out)
    acct.link = sending_link(v)
    if acct.link is not None and c0 is not None and c0.rate:
        ln = acct.link
        ceiling = ln.speed_mbit * 1e6 / 8 / (ln.tx_bytes_per_s / c0.rate)
        # the answers' bytes at the client's rate fill the link: the rate is at the link's ceiling for answers of
        # this size, whatever the GPU could do
        out.append(Residual("throughput.at_link_ceiling", "requests per second", ("client", "link"), c0.rate,
                            ceiling, "requests/s", f"completed by {c0.label}",
                            f"{ln.nic}'s {ln.speed_mbit:g} Mb/s / {ln.tx_bytes_per_s / c0.rate / 1e3:,.1f} KB per "
                            "answer", acct.evidence, c0.label,
                            said=f"{c0.label} completes {c0.rate:,.4g} requests/s while {ln.nic} sends "
                                 f"{ln.tx_bytes_per_s / 1e6:,.0f} MB/s ({100 * ln.use:.0f} % of its "
                                 f"{ln.speed_mbit:g} Mb/s): {ln.tx_bytes_per_s / c0.rate / 1e3:,.1f} KB per answer, "
                                 f"and at most {ceiling:,.4g} answers of that size per second fit through the link"))
    _allocation_residual(v, engines, out)
    acct.handoff = _handoff(v, runs, engine, t_in, mf)
    h = acct.handoff
    if h is not None:
        # the two runs are the two ends of the hand-off: their difference is said as the hand-off, not as a run
        # against another
        pair = {h.frontend_src, h.prefill_src}
        out = [r for r in out if not (r.between == ("run", "run") and {r.a_src, r.b_src} <= pair)]
        if h.slow:
            out.append(Residual("ttft.kv_handoff", "TTFT", ("client", "prefill"), h.frontend_ms, h.prefill_ms, "ms",
                                h.frontend_src, h.prefill_src, acct.evidence, h.frontend_src,
                                said=h.arithmetic()))
    seen: set[tuple[str, str]] = set()
    for r in out:
        if (r.shape, r.run) not in seen:
            seen.add((r.shape, r.run))
            acct.residuals.append(r)
    if engine is not None:
        acct.waste = _waste(_runs_total(clients), engine, acct.spec)
    return acct
