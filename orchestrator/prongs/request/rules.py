"""The request account's findings: the account itself (every term, both views, the floors), each residual with the
mechanisms the table gives for its shape (confirmed by the evidence, or the candidates and the one measurement that
splits them), the work nobody asked for, and the contradictions between a verdict and a figure it holds. And the
second round: the probes that would split the top residual's candidates. Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orchestrator.analysis.facts import Fact, gather
from orchestrator.diagnosis import Number
from orchestrator.findings import BoundClaim, Finding, Symptom, capitalized
from orchestrator.ranks import ONLY_ELSEWHERE, Rank
from orchestrator.prongs.request.account import (BELOW_FLOOR, POINT_WORDS, RequestAccount, Residual, build_account,
                                                 View, engines_running, fmt, tokenizer_factor)
from orchestrator.prongs.request.table import HostFacts, Judged, host_facts, judge, render, table, title_of

if TYPE_CHECKING:
    from orchestrator.agentdefs import PlanStep
    from orchestrator.analysis.evidence_view import EvidenceView

# Processes and log files that say which layers stand between the client and the engine on this host.
_LAYER_NAMES = {
    "haproxy": ("haproxy",), "nginx": ("nginx", "openresty"), "envoy": ("envoy", "pilot-agent", "istio-proxy"),
    "litellm": ("litellm",), "ray_serve": ("raylet", "ray::serve", "serve_vllm", "ray::servecontroller", "serve.log",
                                           "ray serve", "serve_config"),
    "traefik": ("traefik",), "kong": ("kong",), "caddy": ("caddy",), "kubernetes": ("kubelet", "queue-proxy",
                                                                                     "kubectl"),
    "triton": ("tritonserver",), "ollama": ("ollama",), "llama_server": ("llama-server",),
}
_PROXIES = ("haproxy", "nginx", "envoy", "litellm", "traefik", "kong", "caddy")
_MULTIMODAL = re.compile(r"(?i)(?:\b|[-_])(?:vl|vlm|vision|llava|pixtral|idefics|internvl|minicpm-v|omni|mllama|"
                         r"qwen2(?:\.5)?-vl|gemma-3-\d+b|llama-4|paligemma|molmo)(?:\b|[-_])")
"""Model names of multimodal models (vision-language), when the model's files were not read."""
_REASONING_PARSER = re.compile(r"--reasoning[-_]parser[ =](\S+)")


def _host_layers(v: "EvidenceView") -> dict[str, str]:
    """layer -> where it was seen (a process, a log file): what runs between the client and the engine here."""
    seen: dict[str, str] = {}
    names: list[tuple[str, str]] = []
    for _ev, m in v.probes("resource_account"):
        for p in getattr(m, "processes", []) or []:
            for x in (p.comm, p.argv0):
                if x:
                    names.append((x.lower(), f"process {p.pid} ({x})"))
    for _ev, rep in v.probes("engine_config"):
        for f in getattr(rep, "log_files", []) or []:
            names.append((f.lower(), f"log {f}"))
    for _ev, m in v.probes("log_scan"):
        for f in getattr(m, "files", []) or []:
            path = f if isinstance(f, str) else getattr(f, "path", "")
            if path:
                names.append((path.lower(), f"log {path}"))
    for layer, keys in _LAYER_NAMES.items():
        for text, where in names:
            if any(k in text for k in keys):
                seen.setdefault(layer, where)
                break
    return seen


def _engine_command(v: "EvidenceView") -> str:
    for _ev, rep in v.probes("engine_config"):
        for e in getattr(rep, "engines", []) or []:
            if e.command:
                return e.command
        for ln in getattr(rep, "lines", []) or []:
            if "non-default args" in ln.line or "args: Namespace" in ln.line:
                return ln.line
    return ""


def account_facts(v: "EvidenceView", acct: RequestAccount) -> dict[str, Fact]:
    """Every fact the evidence shows (all probes, the observations) plus the account's own `request.*` facts."""
    facts: dict[str, Fact] = {}
    for hf in gather(v).values():
        for k, f in hf.facts.items():
            facts.setdefault(k, f)
    ev = acct.evidence[0] if acct.evidence else ""
    eng_ev = acct.engine.evidence[0] if acct.engine else ev
    own: dict[str, Any] = dict(acct.facts())
    for layer, where in _host_layers(v).items():
        own[f"request.host.{layer}"] = where
        if layer in _PROXIES:
            own.setdefault("request.host.proxy", where)
    from orchestrator.prongs.request.account import per_token_step

    step = per_token_step(v)
    if step is not None:
        own["request.server.per_token_model"] = step.name
        own["request.server.per_token_compute_ms"] = step.compute_ms
        own["request.server.per_token_executions"] = step.executions
        if step.queue_ms is not None:
            own["request.server.per_token_queue_ms"] = step.queue_ms
        if step.pending is not None:
            own["request.server.per_token_pending"] = step.pending
    # the timeouts of the layers between that bound a request (knowledge: residuals.yaml request_timeouts), as
    # seconds (the path prong reads them as written: "600s", "1m", 60), each against the time it bounds
    bounded = request_timeouts(facts, acct)
    if bounded:
        key, secs, bound_s, what = min(bounded, key=lambda x: x[1] / x[2] if x[2] else x[1])
        own["request.path.min_timeout_s"] = secs
        own["request.path.min_timeout"] = f"{key.removeprefix('path.')} = {facts[key].value}"
        own["request.path.timeout_bounds_s"] = bound_s
        own["request.path.timeout_bounds"] = what
    # where an answer is cut: a timeout of a layer between (its configuration), else the time a proxy's own log says
    # it cut requests after
    cut_s, cut_what = own.get("request.path.min_timeout_s"), own.get("request.path.min_timeout")
    cut_where = f"The shortest timeout of the layers between is {cut_what}" if cut_what else ""
    if own.get("request.log.proxy.timeouts") and own.get("request.log.proxy.cut_after_s"):
        cut_s = own["request.log.proxy.cut_after_s"]
        cut_what = f"{own['request.log.proxy.kind']}'s log: {own['request.log.proxy.flags']}"
        cut_where = (f"{own['request.log.proxy.kind']}'s own log: {own['request.log.proxy.cut']} requests ended by it "
                     f"({own['request.log.proxy.flags']}) after {cut_s:.1f} s each")
    if cut_s:
        own["request.cut_s"] = cut_s
        own["request.cut_what"] = cut_what
        own["request.cut_where"] = cut_where
        ttft = own.get("request.engine.ttft_ms") or own.get("request.client.ttft_ms") or 0.0
        itl = own.get("request.engine.itl_ms") or own.get("request.client.itl_ms")
        if itl and own.get("request.path.timeout_bounds") != FIRST_TOKEN:
            own["request.cut_tokens"] = max(0.0, (cut_s * 1e3 - ttft) / itl)
    c0 = acct.clients[0] if acct.clients else None
    aborted = acct.engine.finished.get("abort") if acct.engine is not None else None
    if c0 is not None and c0.failed and aborted:
        own["request.client.failed_per_abort"] = c0.failed / aborted
    start = facts.get("engine.log.start_span_s")
    for c in acct.clients[:1]:
        if c.ttft is not None and c.ttft.p99 is not None:
            own["request.client.ttft_p99_s"] = c.ttft.p99 / 1e3
            if start is not None and isinstance(start.value, (int, float)) and start.value > 0:
                own["request.tail_over_start"] = c.ttft.p99 / 1e3 / start.value
    e_ = acct.engine
    if e_ is not None and e_.e2e is not None:
        worst = e_.e2e.p99 if e_.e2e.p99 is not None else e_.e2e.typical
        if worst is not None:
            own["request.engine.e2e_worst_s"] = worst / 1e3
    for c in acct.clients[:1]:
        if c.ttft is not None and c.e2e is not None and c.ttft.median and c.e2e.median and (c.tokens_out or 0) >= 16:
            own["request.client.ttft_share_of_e2e"] = c.ttft.median / c.e2e.median
            from orchestrator.prongs.resource_account.load_rules import streamed_after_first

            if c.itl is not None and c.itl.median:
                own["request.client.streamed_after_first"] = streamed_after_first(
                    c.ttft.median, c.e2e.median, c.tokens_out or 0, c.itl.median)
    mns = facts.get("engine.max_num_seqs")
    if mns is not None:
        own["request.engine.max_num_seqs"] = mns.value
    cmd = _engine_command(v)
    m = _REASONING_PARSER.search(cmd) or re.search(r"'reasoning_parser': '([^']+)'", cmd)
    if m:
        own["request.engine.reasoning_parser"] = m.group(1)
    from orchestrator.prongs.request.account import _engines, model_facts

    got = _engines(v)
    mf = model_facts(v, got[1] if got else [])
    names = " ".join(x for x in ((mf.name if mf else None) or "", str(facts["engine.model"].value)
                                 if "engine.model" in facts else "") if x)
    if names:
        own["request.model.reasoning"] = any(re.search(rx, names) for rx in table().reasoning_models)
    mm = facts.get("model_files.multimodal")
    if mm is not None:
        own["request.model.multimodal"] = bool(mm.value)
    elif names and _MULTIMODAL.search(names):
        own["request.model.multimodal"] = True
    if mf is not None:
        sh = mf.shape
        own["request.model.moe"] = bool(sh.expert_params)
        own["request.model.active_params_b"] = round(sh.active_params / 1e9, 1)
        own["request.model.total_params_b"] = round(sh.total_params / 1e9, 1)
        if sh.num_experts:
            own["request.model.num_experts"] = sh.num_experts
        if sh.top_k:
            own["request.model.top_k"] = sh.top_k
        own["request.model.dtype"] = mf.dtype
        if mf.name:
            own["request.model.served"] = mf.name
    fl, dense = acct.floors.get("itl"), acct.floors.get("dense_itl")
    itl = _measured_itl(acct)
    if fl is not None and itl is not None:
        own["request.itl_floor_ratio"] = round(itl / fl.ms, 2)
        if dense is not None and dense.ms > fl.ms:
            own["request.itl_below_dense_floor"] = itl < BELOW_FLOOR * dense.ms
        if fl.weights_ms and fl.ms > fl.weights_ms:
            # a step below the floor with the KV reads counted but not below the weights' own: it read fewer KV
            # bytes than the floor assumed (fewer requests per step, or shorter contexts)
            own["request.floor.itl_weights_ms"] = round(fl.weights_ms, 2)
            own["request.floor.itl_batch"] = round(fl.batch)
            own["request.floor.itl_context"] = round(fl.context)
            own["request.itl_between_weights_and_kv_floor"] = BELOW_FLOOR * fl.weights_ms <= itl < BELOW_FLOOR * fl.ms
    e = acct.engine
    if e is not None and e.tokens_in and e.tokens_out:
        own["request.prompt_heavy"] = e.tokens_in >= 4 * e.tokens_out
    lead = [c for c in acct.clients if any(r.shape == "ttft.client_over_engine" and r.run == c.label
                                           for r in acct.residuals)]
    agree = [c for c in acct.clients if c not in lead and c.ttft is not None and e is not None and e.ttft is not None]
    if lead and agree:
        own["request.client_disagrees_engine_agrees"] = True
    for d in acct.deltas:
        if "ttft" in d.moved and "e2e" in d.moved:
            gap = abs(d.moved["ttft"][1] - d.moved["ttft"][0])
            e2e = abs(d.moved["e2e"][1] - d.moved["e2e"][0])
            own["request.delta.ttft_equals_e2e"] = abs(e2e - gap) <= max(0.15 * gap, 100)
            own["request.delta.ttft"] = gap
    from orchestrator.prongs.path.models import PathReport
    from orchestrator.prongs.path.rules import autoscaler_never_scales, autoscaler_sees_idle_resource

    for _e, rep in v.probes("path_layers"):
        idle = autoscaler_sees_idle_resource(rep, v) if isinstance(rep, PathReport) else None
        if idle is not None:
            own["request.path.autoscaler_idle_metric"] = idle["metric"]
            own["request.path.autoscaler_idle_target"] = idle["target"]
            own["request.path.autoscaler_idle_current"] = idle["current"]
            own["request.path.autoscaler_idle_why"] = idle["why"]
            own["request.path.autoscaler_name"] = str(idle["s"].get("name"))
        auto = autoscaler_never_scales(rep, v) if isinstance(rep, PathReport) else None
        if auto is not None:
            own["request.path.autoscaler_never_scales"] = True
            own["request.path.autoscaler_metric"] = str(auto["metric"])[:160]
            own["request.path.autoscaler_target"] = auto["target"]
            own["request.path.autoscaler_ceiling"] = auto["ceiling"]
            own["request.path.autoscaler_ceiling_how"] = auto["how"]
            own["request.path.autoscaler_name"] = str(auto["s"].get("name"))
            own["request.path.autoscaler_fix"] = auto["m"].fix
            break
    _replicas_facts(facts, own)
    got_engines = _engines(v)
    served = {str(e.model) for e in (got_engines[1] if got_engines else []) if e.model}
    if served:
        # replicas serve one model; engines of several models behind one entry point are not replicas of each other
        own["request.engine.models_distinct"] = len(served)
    if any(m.kind == "path_layers" and m.available for _e, m in v.models()):
        own["request.looked.path_layers"] = True  # the whole-path probe ran: a layer it did not find is absent
    for k, val in own.items():
        if val is None:
            continue
        src = eng_ev if k.startswith(("request.engine", "request.finish", "request.log", "request.residual")) else ev
        facts[k] = Fact(val, src)
    return facts


FIRST_TOKEN = "the longest wait for a first token"
WHOLE = "the longest request"


def request_timeouts(facts: dict[str, Fact], acct: RequestAccount) -> list[tuple[str, float, float, str]]:
    """(fact key, seconds, the time it bounds in seconds, that time in words) of each setting of the layers between
    that bounds a request (residuals.yaml `request_timeouts`): one that bounds the whole response against the
    longest request; one that bounds the gap between two reads against the longest wait for a first token where the
    answers are streamed (the client measured a TTFT or an ITL), else against the longest request."""
    known = table().request_timeouts
    e = acct.engine
    worst_e2e = (e.e2e.p99 if e.e2e.p99 is not None else e.e2e.typical) if e is not None and e.e2e else None
    worst_ttft = (e.ttft.p99 if e.ttft.p99 is not None else e.ttft.typical) if e is not None and e.ttft else None
    for c in acct.clients[:1]:
        if worst_e2e is None and c.e2e is not None:
            worst_e2e = c.e2e.p99 if c.e2e.p99 is not None else c.e2e.typical
        if worst_ttft is None and c.ttft is not None:
            worst_ttft = c.ttft.p99 if c.ttft.p99 is not None else c.ttft.typical
    streamed = any(c.ttft is not None or c.itl is not None for c in acct.clients)
    out = []
    for k, f in facts.items():
        t = known.get(k.removeprefix("path."))
        secs = _seconds(f.value) if t is not None and k.startswith("path.") else None
        if t is None or secs is None:
            continue
        if t.bounds == "gap" and streamed:
            if worst_ttft is not None:
                out.append((k, secs, worst_ttft / 1e3, FIRST_TOKEN))
        elif worst_e2e is not None:
            out.append((k, secs, worst_e2e / 1e3, WHOLE))
    return out


REPLICA_FACTS = ("path.litellm.max_deployments", "path.nginx.upstream_servers", "path.haproxy.servers",
                 "path.hpa.current_replicas", "path.ray_serve.num_replicas")
"""What the path says of how many replicas the entry point spreads requests over."""
REPLICA_RATIO_NOISE = 0.25
REPLICA_FAILED_SHARE = 0.05


def _replicas_facts(facts: dict[str, Fact], own: dict[str, Any]) -> None:
    """The replicas the path spreads the load over, and whether the client's figure is that many times this engine's
    (requests counted, or requests in flight): one replica's share, not a residual."""
    got = [(float(f.value), k) for k in REPLICA_FACTS if (f := facts.get(k)) is not None
           and isinstance(f.value, (int, float)) and not isinstance(f.value, bool)]
    if not got:
        return
    n, key = max(got)
    if n < 2:
        return
    own["request.path.replicas"] = int(n)
    own["request.path.replicas_source"] = f"{key.removeprefix('path.')} = {int(n)}"
    engines = own.get("request.engine.count") or 1
    if (own.get("request.client.failed_share") or 0) > REPLICA_FAILED_SHARE:
        return  # requests the client saw fail are not another replica's: the shortfall is not one replica's share
    for shape in ("requests.client_over_engine", "load.client_over_engine"):
        ratio = own.get(f"request.residual.{shape}.ratio")
        if isinstance(ratio, (int, float)) and engines < n and \
                abs(ratio / (n / engines) - 1) <= REPLICA_RATIO_NOISE:
            own["request.path.replicas_match"] = True
            own["request.path.replicas_ratio"] = round(float(ratio), 2)
            return


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")


def _seconds(v: Any) -> float | None:
    """A timeout as written in a proxy's configuration ("600s", "1m", "15", 60) in seconds; None if it is not one."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    m = _DURATION.match(str(v))
    if m is None:
        return None
    return float(m.group(1)) * {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}[m.group(2)]


def _measured_itl(acct: RequestAccount) -> float | None:
    """The per-token time the floors are set against: the engine's own (mean), else the first client's median."""
    e = acct.engine
    if e is not None and e.itl is not None and e.itl.typical is not None:
        return e.itl.typical
    for c in acct.clients:
        if c.itl is not None and c.itl.median is not None:
            return c.itl.median
    return None


# --- the findings --------------------------------------------------------------------------------------------------


def _residual_symptoms(shapes: list[str]) -> list[Symptom]:
    t = table()
    out: list[Symptom] = []
    for s in shapes:
        sh = t.shapes.get(s)
        for x in (sh.symptoms if sh else []):
            if x not in out:
                out.append(x)
    return out


def _weight(r: Residual) -> float:
    """How much of the user's figure a residual accounts for (0-1), for ordering."""
    if r.between[1] == "floor":
        return min(1.0, abs(1 - r.ratio)) if r.ratio < 1 else min(1.0, 1 - 1 / r.ratio) * 0.6
    if r.shape == "load.waiting_with_room":
        # the queue's share of the requests in the engine: what their wait adds to each one's time
        return min(1.0, r.a / (r.a + r.b)) * 1.5 if r.a + r.b else 0.0
    if r.shape == "throughput.at_link_ceiling":
        # the share of the link's ceiling the client's rate reaches: at line rate the link is the whole limit
        return min(1.0, r.ratio)
    if r.shape == "requests.refused_too_long":
        # the refusals are the errors the user sees: they explain the failures, whatever their share of the load
        return 0.9
    if r.between == ("run", "run"):
        # the difference between two runs is the symptom itself: its mechanism explains all of it
        return min(1.0, 2 * (r.ratio - 1)) if r.ratio > 1 else 0.0
    if r.shape.startswith("itl.tail"):
        # the tail's share of the tokens' worst case: what a p99 question asks about
        return min(0.6, max(0.0, 1 - r.b / r.a)) if r.a else 0.0
    if not r.a:
        return 0.0
    return min(1.0, abs(r.gap) / max(abs(r.a), abs(r.b), 1e-9))


CANDIDATE_WEIGHT = 0.25
"""A residual below this share of the user's figure is noise for naming candidates or placing the time."""

LEADS_WEIGHT = 0.5
"""A confirmed mechanism whose residual accounts for at least this share of the user's figure leads the diagnosis
(it sets the bound reasoning at `Rank.RESIDUAL`: where the time or the work went, no GPU roof)."""


@dataclass
class Explained:
    """A mechanism judged against the residuals whose shapes name it."""

    judged: Judged
    residuals: list[Residual]

    @property
    def weight(self) -> float:
        return max((_weight(r) for r in self.residuals), default=0.0)


def judge_all(acct: RequestAccount, hf: HostFacts) -> list[Explained]:
    """Every mechanism the residuals' shapes name, judged once, with the residuals it would explain; confirmed first,
    then the candidates whose layer the evidence shows, then the rest, each by how much of the figure it explains."""
    t = table()
    looked = frozenset({"path_layers"} if "request.looked.path_layers" in hf.facts
                       or any(k.startswith("path.") for k in hf.facts) else set())
    by: dict[str, Explained] = {}
    rank: dict[str, int] = {}
    for r in acct.residuals:
        shape = t.shapes.get(r.shape)
        if shape is None:
            continue
        for i, mid in enumerate(shape.mechanisms):
            ex = by.get(mid)
            if ex is None:
                ex = by[mid] = Explained(judge(mid, t.mechanisms[mid], hf, looked), [])
            rank[mid] = min(rank.get(mid, i), i)
            if r not in ex.residuals:
                ex.residuals.append(r)
    order = {"confirmed": 0, "candidate": 1, "absent": 2, "refuted": 3}
    return sorted(by.values(), key=lambda x: (order[x.judged.status], not x.judged.seen, -round(x.weight, 1),
                                              rank[x.judged.id]))


def _cite(used: list[tuple[str, Any, str]]) -> str:
    bits = []
    for k, val, _ in used[:6]:
        if k.startswith("request.residual") or k == "?":
            continue
        shown = f"{val:,.4g}" if isinstance(val, float) else str(val)
        bits.append(f"{k}={shown}")
    return "; ".join(bits)


_BEFORE_RUN = re.compile(r"\b(?:before|baseline|old|previous|prior)\b", re.IGNORECASE)
"""A run's label that names it as the reference a change is measured against."""


def _made_worse(r: Residual) -> bool:
    """A time that two runs differ in, longer in the run that is not the reference: the change made it worse (the
    difference a question about a slowdown asks about; the same change faster in another pair is context)."""
    return r.between == ("run", "run") and r.unit == "ms" and not _BEFORE_RUN.search(r.a_src) and \
        bool(_BEFORE_RUN.search(r.b_src))


def _lead_residual(residuals: list[Residual]) -> Residual:
    """The residual a mechanism's finding quotes: the largest share, except that where pairs of runs disagree on the
    change's direction (faster at one load, slower at another) the pair the change made worse leads: the slowdown is
    the symptom asked about, and the faster pair quoted beside it would contradict the mechanism's words."""
    worse = [r for r in residuals if _made_worse(r)]
    better = [r for r in residuals if r.between == ("run", "run") and r.unit == "ms" and _BEFORE_RUN.search(r.a_src)]
    return max(worse, key=_weight) if worse and better else max(residuals, key=_weight)


def _mechanism_finding(ex: Explained, acct: RequestAccount, hf: HostFacts) -> Finding:
    j, m = ex.judged, ex.judged.mechanism
    top = _lead_residual(ex.residuals)
    title = title_of(m, hf)
    layer_settings = [f"{k.removeprefix('path.').replace('.', ' ')} = {v}" for k, v, _e in j.used
                      if k.startswith("path.") and not k.endswith(".present")]
    if layer_settings:
        # the setting that confirmed it, as the path prong read it where it is set
        title = f"{title.rstrip('.')} ({'; '.join(dict.fromkeys(layer_settings))})"
    claim, _ = render(m.claim, hf, {"residual": top.words(), "residual_note": top.note})
    others = [r.words() for r in ex.residuals if r is not top][:3]
    if others:
        claim += " The same shows in: " + "; ".join(others) + "."
    waste = [w for w in acct.waste if m.layer in ("client", "model-config", "path", "workload")]
    if waste and any(r.shape.startswith(("tokens", "finish", "requests")) for r in ex.residuals):
        claim += " Work nobody asked for: " + "; ".join(f"{w.arithmetic} ({w.share:.0%} of the {w.phase} work)"
                                                       for w in waste) + "."
    cited = _cite(j.used)
    if cited:
        claim += f" (Evidence: {cited}.)"
    claim += f" [{'; '.join(m.sources[:2])}]"
    fix, _ = render(m.fix, hf)
    shapes = [r.shape for r in ex.residuals]
    ev = list(dict.fromkeys([*j.evidence, *[e for r in ex.residuals for e in r.evidence]]))
    return Finding(
        id=f"request-{j.id}", rule="request_account", category="workload", confidence=0.85,
        evidence=[e for e in ev if e] or acct.evidence, title=title, claim=claim,
        short=f"{title[:1].lower() + title[1:]} ({top.words()}).",
        recommendations=[f"{fix} [{m.sources[0]}]"], symptoms=_residual_symptoms(shapes),
        explains=round(ex.weight, 2),
        numbers=[Number(name=f"{top.term}: {top.between[0]} vs {top.between[1]}", value=round(top.a, 3),
                        unit=top.unit, peak=None, source=(top.evidence or [""])[0] or "request account",
                        note=f"against {fmt(top.b, top.unit)} ({top.b_src})")],
        # the larger the share of the user's figure it explains, the earlier (within the tier: int() keeps it)
        # a residual against a link's line rate is a communication bound; others say where the time or work went
        sets_bound=(BoundClaim(rank=Rank.RESIDUAL - ex.weight / 2,
                               bound="communication" if top.between[1] == "link" else "unknown",
                               words=capitalized(f"{title[:1].lower() + title[1:]} ({top.words()})."))
                    if ex.weight >= LEADS_WEIGHT else
                    _where_gpus_wait(acct, top, ex.weight, capitalized(f"{title[:1].lower() + title[1:]} ({top.words()})."))),
        data={"residual": top.shape, "mechanism": j.id, "layer": m.layer, "residuals": shapes})


def _located(r: Residual) -> bool:
    """Whether a residual places the time between two measuring points of the same requests (the client's TTFT against
    the engine's, a figure below its floor): not a difference between two runs (that is the symptom itself), nor a
    figure far above its floor or a tail within one point (they say only that the time goes outside GPU work)."""
    a, b = r.between
    return a != b and (b != "floor" or r.ratio < 1)


def _where_gpus_wait(acct: RequestAccount, r: Residual, weight: float, words: str) -> BoundClaim | None:
    """A residual that does not lead on its own (a mechanism below `LEADS_WEIGHT`, or candidates not yet split) while
    the GPUs idle most of the window: it says between which two measuring points the time goes, which the resource
    account's idle share and the load offered do not, so it claims the bound at the account's tier before them
    (`ONLY_ELSEWHERE`) and after a saturated resource; the larger its share of the user's figure, the earlier. With
    the GPUs busy (or not sampled) the serving rules' own order stands."""
    from orchestrator.prongs.resource_account.where import GPU_IDLE_PCT

    if weight < CANDIDATE_WEIGHT or not _located(r) or acct.gpu_busy_pct is None or \
            acct.gpu_busy_pct >= GPU_IDLE_PCT:
        return None
    return BoundClaim(rank=Rank.ACCOUNT + ONLY_ELSEWHERE - 0.2 * min(weight, 1.0), bound="unknown", words=words)


def _framing_refuted(m: Any, hf: HostFacts) -> bool:
    """Whether every way the mechanism could be confirmed fails on a fact the host shows (the GPUs busy 98 % where it
    needs them under 50 %): its claim, written as if confirmed ("busy only 98 %: capacity to spare"), would then
    contradict the figures it quotes, so it is not rendered; the candidate is still named."""
    from orchestrator.analysis.conditions import check

    groups = [g for g in m.confirm if g]
    return bool(groups) and all(any(not ok and got for ok, got, _ in (check(c, hf, None) for c in g))
                                for g in groups)


def _candidates_finding(rs: list[Residual], cands: list[Explained], acct: RequestAccount,
                        hf: HostFacts) -> Finding:
    """Residuals no mechanism of the table is confirmed for, with the same candidates: the candidates the evidence
    allows (those whose layer is seen on the host first) and the one measurement that splits each from the rest."""
    t = table()
    r = rs[0]
    shape = t.shapes[r.shape]
    names = []
    splits = []
    for ex in cands[:3]:
        m = ex.judged.mechanism
        title = title_of(m, hf)
        seen = f" (on this host: {ex.judged.seen_at})" if ex.judged.seen_at else ""
        names.append(title.rstrip(".") + seen)
        split, _ = render(m.split, hf)
        fix, _ = render(m.fix, hf)
        splits.append(f"{split.rstrip('.')}: if it is this ({title[:1].lower() + title[1:].rstrip('.')}), "
                      f"{fix[:1].lower() + fix[1:]} [{m.sources[0]}]")
    listed = "; ".join(f"({i}) {n}" for i, n in enumerate(names, 1))
    also = "".join(f" {x.words()}: {t.shapes[x.shape].says}." for x in rs[1:4])
    claim = (f"{r.words()}: {shape.says}. That sits {r.layer}.{also} The evidence on the host does not yet say "
             f"which mechanism it is; the ones these figures allow: {listed}.")
    if cands and not _framing_refuted(cands[0].judged.mechanism, hf):
        first, missing = render(cands[0].judged.mechanism.claim, hf, {"residual": "", "residual_note": r.note})
        if not missing:
            claim += " The first would mean this: " + first.lstrip(".: ")
    term = r.term[:1].upper() + r.term[1:]
    if r.between[1] == "floor":
        head = f"{term} {fmt(r.a, r.unit)} is {r.ratio:.2g}x its floor of {fmt(r.b, r.unit)}"
    elif r.between == ("run", "run"):
        head = (f"{term}: {r.note}" if r.said and r.note else
                f"{term}: {fmt(r.a, r.unit)} in {r.a_src}, {fmt(r.b, r.unit)} in {r.b_src}")
    else:
        head = (f"{term}: {fmt(r.a, r.unit)} at {POINT_WORDS.get(r.between[0], r.between[0])}, "
                f"{fmt(r.b, r.unit)} at {POINT_WORDS.get(r.between[1], r.between[1])}")
    return Finding(
        id=f"request-residual-{r.shape}", rule="request_account", category="workload", confidence=0.6,
        evidence=r.evidence or acct.evidence,
        title=f"{head}: {names[0][:1].lower() + names[0][1:] if names else shape.says}"
              + (f", or {len(names) - 1} other candidate{'s' if len(names) > 2 else ''}" if len(names) > 1 else ""),
        claim=claim, short=f"{r.words()}: {shape.says}.", recommendations=splits,
        symptoms=_residual_symptoms([x.shape for x in rs]), explains=round(max(_weight(x) for x in rs), 2),
        sets_bound=_where_gpus_wait(acct, r, max(_weight(x) for x in rs), capitalized(f"{r.words()}: {shape.says}.")),
        data={"residual": r.shape, "residuals": [x.shape for x in rs], "candidates": [ex.judged.id for ex in cands[:3]]})


def _account_finding(acct: RequestAccount) -> Finding:
    """The account itself: each term from each place, the floors, the residuals (context for every renderer)."""
    lines = []
    numbers: list[Number] = []
    ev0 = acct.evidence[0] if acct.evidence else "request account"
    e = acct.engine
    for c in acct.clients[:4]:
        bits = []
        for term, label in (("ttft", "TTFT"), ("itl", "ITL"), ("e2e", "end-to-end")):
            cs, es = getattr(c, term), getattr(e, term) if e else None
            if cs is not None and cs.typical is not None:
                eng = f" (engine {fmt(es.typical, 'ms')})" if es is not None and es.typical is not None else ""
                bits.append(f"{label} {fmt(cs.typical, 'ms')}{eng}")
        if c.tokens_in:
            eng = f" (engine {e.tokens_in:,.0f})" if e and e.tokens_in else ""
            bits.append(f"{c.tokens_in:,.0f} tokens in{eng}")
        if c.tokens_out:
            eng = f" (engine {e.tokens_out:,.0f})" if e and e.tokens_out else ""
            bits.append(f"{c.tokens_out:,.0f} tokens out{eng}")
        if c.concurrency:
            eng = f" (engine {e.inflight:,.0f} running + waiting)" if e and e.inflight is not None else ""
            bits.append(f"{c.concurrency:,.0f} in flight{eng}")
        lines.append(f"{c.label}: " + ", ".join(bits))
    if e is not None and e.finished:
        lines.append("requests ended: " + ", ".join(f"{k} {n:,.0f}" for k, n in sorted(e.finished.items())))
    for name, f in acct.floors.items():
        if name == "dense_itl":
            continue
        lines.append(f"{name.upper()} floor {fmt(f.ms, 'ms')}: {f.arithmetic}")
        numbers.append(Number(name=f"request account: {name.upper()} floor", value=round(f.ms, 3), unit="ms",
                              source=ev0, note=f.arithmetic[:300]))
    for w in acct.waste:
        numbers.append(Number(name=f"work nobody asked for: {w.phase}", value=round(100 * w.share, 1), unit="%",
                              peak=100.0, source=ev0, note=w.arithmetic))
    res = "; ".join(r.words() for r in acct.residuals[:6]) or "every pair of figures agrees within noise"
    claim = ("The request account, term by term from each place it was measured: " + "; ".join(lines)
             + f". Residuals: {res}.")
    return Finding(id="request-account", rule="request_account", category="workload", confidence=0.7,
                   evidence=acct.evidence or [ev0], informational=True, title="The request account",
                   claim=claim, short="the request account: " + res + ".", numbers=numbers,
                   symptoms=["throughput", "itl", "ttft", "cost", "errors"],
                   data={"account": True})


LONG_TAIL = 2.0
"""An end-to-end p99 at least this many times its median is a tail worth accounting for."""
SAME_PACE = 1.5
"""A per-token p99 within this factor of its median: the slowest requests decode at the same pace as the rest."""


def _long_answers(c: View) -> str:
    """The slowest requests' end-to-end time split into its terms (p99 end-to-end = TTFT + tokens x the per-token
    time): where their per-token pace and first token are those of the rest, what makes them slow is how many tokens
    they generate. Words with the arithmetic, or "" when the tail is small or its pace differs."""
    e2e, ttft, itl = c.e2e, c.ttft, c.itl
    if e2e is None or ttft is None or itl is None or not (e2e.p99 and e2e.median and itl.median):
        return ""
    first = ttft.p99 or ttft.median or 0.0
    if e2e.p99 < LONG_TAIL * e2e.median or (itl.p99 and itl.p99 > SAME_PACE * itl.median) or first > 0.2 * e2e.p99:
        return ""
    tokens = (e2e.p99 - first) / itl.median
    typical = (e2e.median - (ttft.median or 0.0)) / itl.median
    return (f"the slowest requests are the longest answers: p99 end-to-end {fmt(e2e.p99, 'ms')} is "
            f"({e2e.p99:,.0f} - {first:,.0f}) ms / {itl.median:.3g} ms = {tokens:,.0f} tokens of output at the median "
            f"per-token pace (p99 inter-token latency {fmt(itl.p99, 'ms') if itl.p99 else 'not given'}), against "
            f"{typical:,.0f} tokens for the median request ({fmt(e2e.median, 'ms')})")


_SHARE_WORDS = {2: "half", 3: "a third", 4: "a quarter"}


def _spread(per: list[tuple[str, float]]) -> str:
    """Words for requests spread over several engines that share them evenly (none with more than twice another's
    and two: the converse of the account's load.engines_unbalanced): each engine's count and its share."""
    if len(per) < 2:
        return ""
    lo, hi = min(r for _, r in per), max(r for _, r in per)
    if hi >= 2 * lo + 2 or hi <= 0:
        return ""
    share = _SHARE_WORDS.get(len(per), f"1/{len(per)}")
    return (f"the load is spread evenly over the {len(per)} engines ("
            + ", ".join(f"{r:,.0f}" for _, r in per[:8]) + f" requests running: {share} each)")


def _reconciled(acct: RequestAccount, question: str = "",
                engines: list[tuple[str, float]] | None = None) -> Finding | None:
    """Every figure the client and the engine both measured agrees, and the engine's own figures sit near their
    floors: the time is the engine's ordinary prefill and decode of the workload as it is (the answer to "is
    something in between adding time / tokens?")."""
    e = acct.engine
    if e is None or not acct.clients:
        return None
    c = acct.clients[0]
    agree: list[str] = []
    for term, label in (("ttft", "TTFT"), ("itl", "inter-token latency"), ("e2e", "end-to-end latency")):
        cs, es = getattr(c, term), getattr(e, term)
        if cs is not None and es is not None and cs.typical is not None and es.typical is not None:
            agree.append(f"{label} {fmt(cs.typical, 'ms')} at the client, {fmt(es.typical, 'ms')} at the engine")
    if not agree:
        return None  # no time measured at both ends: nothing to say they agree on
    if c.tokens_in and e.tokens_in:
        extra = e.tokens_in - c.tokens_in
        agree.append(f"{e.tokens_in:,.0f} prompt tokens prefilled per request against {c.tokens_in:,.0f} sent"
                     + (f" ({extra:,.0f} tokens: a chat template's role headers and date line)" if 0 < extra <= 64
                        else ""))
    if c.tokens_out and e.tokens_out:
        agree.append(f"{e.tokens_out:,.0f} tokens generated per request against {c.tokens_out:,.0f} received")
    if e.inflight is not None and (c.concurrency or c.little_l):
        per = f" ({e.running / e.engines:,.0f} requests running in each of {e.engines} engines)" \
            if e.engines > 1 and e.running else ""
        agree.append(f"{c.concurrency or c.little_l:,.0f} requests in flight at the client, {e.inflight:,.0f} in the "
                     f"engine{per}")
    spread = _spread(engines or [])
    if spread:
        agree.append(spread)
    longest = _long_answers(c)
    if longest:
        agree.append(longest)
    phases: dict[str, str] = {}
    ratios: dict[str, float] = {}
    ftt, fit = acct.floors.get("ttft"), acct.floors.get("itl")
    tt = (e.ttft.typical, "the engine's") if e.ttft is not None and e.ttft.typical else \
        ((c.ttft.median, "the client's") if c.ttft is not None and c.ttft.median else (None, ""))
    it = (e.itl.typical, "the engine's") if e.itl is not None and e.itl.typical else \
        ((c.itl.median, "the client's") if c.itl is not None and c.itl.median else (None, ""))
    tokens = e.tokens_in or c.tokens_in or 0
    if ftt is not None and tt[0]:
        ratios["ttft"] = r = tt[0] / ftt.ms
        phases["ttft"] = (f"{tt[1]} TTFT of {fmt(tt[0], 'ms')} is {r:.2f}x one prefill of its {tokens:,.0f}-token "
                          f"prompts (floor {fmt(ftt.ms, 'ms')}: {ftt.arithmetic})")
    if fit is not None and it[0]:
        ratios["itl"] = r = it[0] / fit.ms
        per_engine = (e.running or 0) / max(e.engines, 1)
        batch = f" at batch {per_engine:,.0f} per engine" if per_engine else ""
        of = f" of {acct.model_words}" if acct.model_words else ""
        phases["itl"] = (f"{it[1]} inter-token latency of {fmt(it[0], 'ms')} is {r:.2f}x the memory floor of a "
                         f"decode step{of}{batch} (floor {fmt(fit.ms, 'ms')}: {fit.arithmetic})")
    from orchestrator.prongs.serving_engine.floors import question_phase

    asked = {"prefill": "ttft", "decode": "itl"}.get(question_phase(question) or "", "")
    near = {t: p for t, p in phases.items() if ratios[t] < 3.0}
    far = {t: p for t, p in phases.items() if ratios[t] >= 3.0}
    if not near or asked in far:
        return None  # the phase asked about (or every phase) is far above its floor: not an ordinary run
    claim = ("Client and engine agree term by term: " + "; ".join(agree) + ". Nothing between them adds time or "
             "tokens beyond measurement noise, and " + "; ".join(near.values()) + ": an ordinary "
             + " and ".join({"ttft": "prefill", "itl": "decode"}[t] for t in near) + " of this workload on this GPU. "
             "Faster needs fewer bytes or FLOPs per token (a smaller dtype, a smaller prompt) or more GPUs, not a "
             "change in between."
             + "".join(f" Meanwhile {p[:1].lower() + p[1:]}: the wait behind the other requests' work at this load, "
                       "not a layer between the client and the engine." for p in far.values()))
    phases = near
    head = phases.get(asked) or phases.get("itl") or next(iter(phases.values()))
    return Finding(id="request-reconciled", rule="request_account", category="workload", confidence=0.7,
                   evidence=acct.evidence,
                   title=capitalized(head.split(" (floor")[0]) + ", and the benchmark's figures match the engine's",
                   claim=claim, short="client and engine figures agree; " + "; ".join(p.split(" (floor")[0]
                                                                                       for p in phases.values()) + ".",
                   symptoms=["ttft", "itl", "throughput"], secondary=True,
                   numbers=[Number(name=f"request account: {t.upper()} against its floor", value=round(x, 3),
                                   unit="x", source=acct.evidence[0] if acct.evidence else "request account")
                            for t, x in ratios.items()]
                   # the batch each engine ran: a cap above it never bound the batch (the synthesis says so)
                   + ([Number(name="requests running (most in one engine)", value=max(r for _, r in engines),
                              unit="requests", source=acct.evidence[0] if acct.evidence else "request account")]
                      if engines else []))


def _handoff_small(acct: RequestAccount) -> Finding | None:
    """A disaggregated deployment whose frontend TTFT is the prefill worker's plus a small hand-off: the time to first
    token is the prefill's, and the KV transfer is said with its share and rate (the answer to "how much of it is the
    hand-off?"), so no other cause is invented for it."""
    h = acct.handoff
    if h is None or h.slow or h.ms < 0:
        return None
    fl = acct.floors.get("ttft")
    claim = h.arithmetic() + "."
    if h.rate_gbit and h.rdma_gbit:
        claim += (f" That rate is what the RDMA port ({h.rdma}, {h.rdma_gbit:g} Gb/s) carries, not a TCP link's: the "
                  "KV connector moves the cache over RDMA.")
    if fl is not None:
        claim += (f" The prefill worker's {h.prefill_ms:,.0f} ms is {h.prefill_ms / fl.ms:.1f}x one prefill's compute "
                  f"floor ({fl.arithmetic}): the prefill and its queue are the bulk of the time to first token.")
    claim += (" To cut TTFT, cut the prefill (shorter or cached prompts, more prefill workers or GPUs per prefill); "
              "the hand-off is not where the time goes.")
    return Finding(id="request-kv-handoff-small", rule="request_account", category="workload", confidence=0.75,
                   evidence=acct.evidence,
                   title=(f"Time to first token is the prefill worker's ({h.prefill_ms:,.0f} ms of "
                          f"{h.frontend_ms:,.0f} ms at the frontend); the hand-off to the decode worker adds a small "
                          f"{h.ms:,.0f} ms ({h.share:.0%})"),
                   claim=claim, short=(f"TTFT is the prefill worker's {h.prefill_ms:,.0f} ms; the hand-off adds "
                                       f"{h.ms:,.0f} ms ({h.share:.0%})."),
                   symptoms=["ttft"], explains=round(1 - h.share, 2),
                   recommendations=["Cut the prefill's time (prompt length, prefix caching, prefill workers or their "
                                    "parallelism); the KV hand-off is a small share of the first token."],
                   numbers=[Number(name="TTFT: frontend vs prefill worker", value=round(h.frontend_ms, 1), unit="ms",
                                   source=acct.evidence[0] if acct.evidence else "request account",
                                   note=f"against {h.prefill_ms:,.0f} ms at the prefill worker")])


def _work_finding(acct: RequestAccount) -> Finding | None:
    if not acct.waste:
        return None
    top = max(acct.waste, key=lambda w: w.share)
    if top.share < 0.2:
        return None
    claim = ("Work nobody asked for: " + "; ".join(f"{w.arithmetic}: {w.share:.0%} of the engine's {w.phase} work "
                                                   f"did not go into an answer the user kept" for w in acct.waste)
             + ".")
    return Finding(id="request-work-unasked", rule="request_account", category="workload", confidence=0.75,
                   evidence=acct.evidence, informational=True,
                   title=f"{top.share:.0%} of the {top.phase} work did not go into an answer the user kept",
                   claim=claim, short=f"{top.share:.0%} of the GPU's {top.phase} work went into nothing kept.",
                   symptoms=["throughput", "cost", "itl"],
                   numbers=[Number(name=f"work nobody asked for ({w.phase}: {w.what})", value=round(100 * w.share, 1),
                                   unit="%", peak=100.0, source=(acct.evidence or ["request account"])[0],
                                   note=w.arithmetic) for w in acct.waste])


def _contradictions(acct: RequestAccount, explained: list[Explained]) -> list[Finding]:
    """A bound asserted on a figure that contradicts it: a decode step below its memory floor is not memory-bound
    (the floor is for the wrong model or the figure was measured elsewhere); a client figure that a confirmed
    mechanism places outside the engine says nothing of the engine's bound."""
    out: list[Finding] = []
    below = [r for r in acct.residuals if r.shape in ("itl.client_below_floor", "itl.engine_below_floor")]
    outside = [x for x in explained if x.judged.status == "confirmed" and x.judged.mechanism.layer in
               ("path", "client", "model-config")]
    if below:
        r = below[0]
        why = next((x for x in explained if x.judged.status == "confirmed" and r in x.residuals), None)
        reason = (f"{why.judged.id.replace('-', ' ')} explains it" if why else
                  "either the floor is for the wrong model (dense parameters for a mixture of experts, the wrong "
                  "dtype) or the figure was measured where tokens are batched or buffered")
        out.append(Finding(
            id="request-contradiction-floor", rule="request_account", category="workload", confidence=0.8,
            evidence=r.evidence, informational=why is not None,
            title=f"The per-token figure is below its physical floor ({r.ratio:.2g}x): no memory or compute bound can "
                  "be read from it",
            claim=(f"{r.words()}. A decode step cannot stream the weights faster than the memory system allows, so "
                   f"a figure below its floor is not a memory-bound decode: {reason}."),
            short=f"{r.words()}: a figure below its floor cannot be memory-bound.",
            recommendations=[] if why is not None else [
                "Check the floor's inputs against the served model (its config.json: experts and how many each token "
                "uses, the weights' real dtype) and where the figure was measured (the engine's own "
                "vllm:inter_token_latency_seconds against the client's)."],
            # speculation: the floor bounds the step, not the token, and the step's own verdict stands
            symptoms=["itl"], contradicts=[] if why is not None and why.judged.id == "speculative-decoding"
            else ["decode"],
            sets_bound=None if why is not None else BoundClaim(
                rank=Rank.RESIDUAL - 0.1, bound="unknown",
                words=f"{capitalized(r.words())}: a figure below its floor cannot be memory-bound.")))
    # a decode step at a large batch reads its requests' KV besides the weights: a roofline of the weights alone calls
    # it compute-bound where the KV reads make it memory-bound (the step then sits near its memory floor)
    fit = acct.floors.get("itl")
    itl = _measured_itl(acct)
    if fit is not None and itl and fit.bound == "memory" and fit.bound_without_kv == "compute" and \
            itl < 2.0 * fit.ms and not below:
        out.append(Finding(
            id="request-decode-reads-kv", rule="request_account", category="workload", confidence=0.75,
            evidence=acct.evidence, informational=True,
            title=f"The decode step is memory-bound at {itl / fit.ms:.2f}x its floor once the KV reads count: not compute-bound",
            claim=(f"A decode step {fit.arithmetic}; its FLOPs take less. Measured {fmt(itl, 'ms')} per step, "
                   f"{itl / fit.ms:.2f}x that floor: the step streams the weights and every running request's KV "
                   "cache. A roofline of the weights alone puts this batch past the ridge (compute-bound); the KV "
                   "reads grow with the batch and keep it memory-bound. More tokens per second need fewer bytes per "
                   "step (FP8 weights or KV cache, shorter contexts) or more memory bandwidth, not more FLOPs."),
            short=f"decode is memory-bound at {itl / fit.ms:.2f}x its floor with the KV reads counted.",
            symptoms=["itl", "throughput"], contradicts=["decode"],
            # the bound the weights-only roofline misread (it is vetoed): memory, from the floor that counts the KV
            sets_bound=BoundClaim(rank=Rank.SERVING_FLOOR + 0.25, bound="memory", leads=False, words=(
                f"A decode step of {fmt(itl, 'ms')} is {itl / fit.ms:.2f}x its memory floor once the KV reads count "
                f"({fit.arithmetic}): memory-bound, not compute-bound."))))
    # the client counts in another tokenizer's tokens: its per-token time is per one of those tokens, not per step of
    # the engine, so a decode verdict read off it reads a figure off by that factor
    counted = next((x for x in explained if x.judged.status == "confirmed"
                    and x.judged.id == "client-tokenizer-differs"), None)
    if counted is not None and not below:
        c0 = acct.clients[0]
        e = acct.engine
        f = tokenizer_factor(c0, e) if e is not None else None
        if f is not None and c0.itl is not None and c0.itl.median is not None:
            own = (f" (the engine's own: {fmt(e.itl.typical, 'ms')})" if e is not None and e.itl is not None
                   and e.itl.typical is not None else "")
            out.append(Finding(
                id="request-contradiction-tokens", rule="request_account", category="workload", confidence=0.8,
                evidence=counted.judged.evidence or acct.evidence, informational=True,
                title="The client's per-token figures count another tokenizer's tokens: no decode bound can be read "
                      "from them",
                claim=(f"The client counts {f[1]:.2f}x the engine's output tokens, so its inter-token latency of "
                       f"{fmt(c0.itl.median, 'ms')} divides the same time by {f[1]:.2f}x as many tokens{own}: a "
                       "decode verdict read off the client's figure is off by that factor."),
                short="the client's per-token figures are in another tokenizer's tokens.", symptoms=["itl"],
                contradicts=["decode"]))
    # the user's figure of a phase is mostly spent outside the engine: a roofline verdict on that phase (the engine's
    # own prefill or decode) is true of the engine and says nothing of what the user waits for
    phase_of = {"ttft.client_over_engine": "prefill", "itl.client_over_engine": "decode",
                "itl.client_under_engine": "decode"}
    vetoes: list[str] = []
    shown: list[Residual] = []
    for r in acct.residuals:
        target = phase_of.get(r.shape)
        if target and _weight(r) >= 0.5 and target not in vetoes and \
                not (below and target == "decode"):
            vetoes.append(target)
            shown.append(r)
    if vetoes:
        explained_by = next((x for x in outside if any(r in x.residuals for r in shown)), None)
        r = shown[0]
        out.append(Finding(
            id="request-contradiction-measured-outside", rule="request_account", category="workload",
            confidence=0.8, evidence=r.evidence, informational=True,
            title="The client's figure is not the engine's: no GPU bound can be read from it",
            claim=(f"{'; '.join(x.words() for x in shown)}: the difference sits {r.layer}, so what the user "
                   "measured is not the engine's prefill or decode, and no compute or memory bound of the engine "
                   "explains it" + (f" ({explained_by.judged.id.replace('-', ' ')} does)." if explained_by else ".")),
            short=f"{r.words()}: the difference sits outside the engine.", symptoms=["itl", "ttft"],
            contradicts=vetoes))
    return out


def request_account_findings(v: "EvidenceView") -> list[Finding]:
    for ev, files in v.probes("request_files"):
        for ref, why in getattr(files, "refused", {}).items():
            v.notice(f"the served model's files ({ref}) on {files.host} ({ev.id})", why)
    acct = build_account(v)
    if acct is None:
        return []
    hf = host_facts(account_facts(v, acct))
    explained = judge_all(acct, hf)
    out: list[Finding] = [_account_finding(acct)]
    confirmed = [x for x in explained if x.judged.status == "confirmed"]
    done: set[str] = set()
    for x in confirmed[:3]:
        out.append(_mechanism_finding(x, acct, hf))
        done.update(r.shape + r.run for r in x.residuals)
    # residuals no confirmed mechanism explains: the candidates the evidence allows, and what splits them (residuals
    # with the same leading candidates are one finding)
    groups: dict[tuple[str, ...], tuple[list[Residual], list[Explained]]] = {}
    for r in sorted(acct.residuals, key=_weight, reverse=True):
        if r.shape + r.run in done or _weight(r) < CANDIDATE_WEIGHT:
            continue
        cands = [x for x in explained if r in x.residuals and x.judged.status == "candidate"]
        if not cands:
            continue
        within = r.between[1] == "floor" and r.ratio > 1 or r.between[0] == r.between[1] and r.between[0] != "run"
        if within and not any(x.judged.seen for x in cands):
            # a figure far above its floor, or a tail within one measuring point, with no layer of the table seen on
            # the host: the serving rules' own reading (queueing, chunking, preemption, the host) says more than a
            # list of layers nobody saw
            continue
        key = tuple(x.judged.id for x in cands[:2])
        groups.setdefault(key, ([], cands))[0].append(r)
    for rs, cands in list(groups.values())[:3]:
        out.append(_candidates_finding(rs, cands, acct, hf))
    if len(out) == 1 and not [r for r in acct.residuals if _weight(r) >= CANDIDATE_WEIGHT and not r.shape.endswith("far_above_floor")]:
        ok = _reconciled(acct, v.question, engines_running(v))
        if ok is not None:
            out.append(ok)
    small = _handoff_small(acct)
    if small is not None:
        out.append(small)
    work = _work_finding(acct)
    if work is not None:
        out.append(work)
    out += _contradictions(acct, explained)
    after = _window_after_run(acct)
    if after is not None:
        out.append(after)
    mig = _mig_floor(acct)
    if mig is not None:
        out.append(mig)
    return out


def _mig_floor(acct: RequestAccount) -> Finding | None:
    """The engine runs on a MIG slice: its floors are the slice's (its memory slices' share of the bandwidth), and a
    decode near that floor is the slice at work, not a GPU throttled (a floor of the whole GPU calls it slow)."""
    fit, itl = acct.floors.get("itl"), _measured_itl(acct)
    if acct.mig is None or fit is None or not itl:
        return None
    profile, mem, sm = acct.mig
    r = itl / fit.ms
    if not 0.8 <= r < 1.5:
        return None
    whole = fit.ms * mem
    words = (f"Decode runs at the floor of its MIG {profile} slice: {fmt(itl, 'ms')} per step is {r:.2f}x the floor "
             f"of {mem * 8:.0f}/8 of the GPU's memory bandwidth")
    return Finding(
        id="request-mig-slice-floor", rule="request_account", category="workload", confidence=0.8,
        evidence=acct.evidence, title=words,
        claim=(f"The engine runs on a MIG {profile} instance: {mem * 8:.0f} of the GPU's 8 memory slices (their memory "
               f"controllers and L2) and {sm * 7:.0f} of its 7 compute slices. A decode step {fit.arithmetic}; measured "
               f"{fmt(itl, 'ms')}: {r:.2f}x. On the whole GPU the same step's floor is {fmt(whole, 'ms')}, which is "
               f"what published figures for this GPU measure; the slice has {mem:.0%} of the bandwidth, so it is not "
               "throttled or misconfigured: it is at its own memory floor."),
        short=f"decode is at {r:.2f}x the floor of its MIG {profile} slice ({mem * 8:.0f}/8 of the bandwidth).",
        recommendations=["For the whole GPU's time per token run the model on the whole GPU (MIG off, or the 7g "
                         "profile); on this slice, fewer bytes per step (FP8 weights, an FP8 KV cache) lower it. "
                         "[https://docs.nvidia.com/datacenter/tesla/mig-user-guide/]"],
        symptoms=["itl", "throughput"], explains=round(min(1.0, 1 - mem), 2), contradicts=["decode"],
        sets_bound=BoundClaim(rank=Rank.RESIDUAL - 0.45, bound="memory", words=words + "."))


WINDOW_LOAD = 4.0
"""A run that held at least this many requests in flight would show in the engine's gauges had it run while they
were read."""


def _window_after_run(acct: RequestAccount) -> Finding | None:
    """The sampling window saw an engine with nothing running or waiting and idle GPUs, while the runs the user gave
    held many requests in flight and the engine's counters show it served them: the window came after the runs. Its
    idle share is the time after them, not theirs (a verdict of idle GPUs or of no load reaching the engine would
    contradict the runs' own figures)."""
    e = acct.engine
    if e is None or e.running is None or e.running > 0 or (e.waiting or 0) > 0 or not e.requests:
        return None
    if acct.gpu_busy_pct is None or acct.gpu_busy_pct >= 5:
        return None
    loaded = [c for c in acct.runs if (c.concurrency or c.little_l or 0) >= WINDOW_LOAD]
    if not loaded:
        return None
    c = max(loaded, key=lambda x: x.concurrency or x.little_l or 0)
    held = c.concurrency or c.little_l or 0
    return Finding(
        id="request-window-after-run", rule="request_account", category="workload", confidence=0.7,
        evidence=acct.evidence, informational=True,
        title="The sampling window came after the runs: idle GPUs then say nothing of the runs",
        claim=(f"The engine held 0 requests running and 0 waiting and the GPUs were busy {acct.gpu_busy_pct:.0f} % "
               f"while sampled, yet the run {c.label} held {held:,.0f} requests in flight and the engine's counters "
               f"show {e.requests:,.0f} requests served: the window measured the time after the runs. The runs' own "
               "figures (the client's and the engine's histograms) describe the load; the idle share does not."),
        short=f"the window saw no load, but {c.label} held {held:,.0f} in flight: it came after the runs.",
        symptoms=["throughput", "itl", "ttft"], contradicts=["idle"], data={"window": "after the runs"})


# --- the second round ----------------------------------------------------------------------------------------------

_PROBE_KINDS = {"request_files": ("request_files",), "engine_config": ("engine_config",),
                "resource_account": ("resource_account",), "observations": ("observations",)}


def second_round(v: "EvidenceView") -> list["PlanStep"]:
    """The probes that would split the top residual's candidates, when the first round did not run them: the whole
    path's (proxies, gateways, the orchestrator, the engine's runtime) when the residual sits between the client and
    the engine and a path prong is installed; the request probe when it did not run. [] when the first round settles
    it (a confirmed mechanism, or no residual)."""
    from orchestrator.agentdefs import PlanStep
    from orchestrator import prongs

    acct = build_account(v)
    if acct is None or not acct.residuals:
        return []
    hf = host_facts(account_facts(v, acct))
    explained = judge_all(acct, hf)
    if any(x.judged.status == "confirmed" for x in explained):
        return []
    top = max(acct.residuals, key=_weight)
    cands = [x for x in explained if top in x.residuals and x.judged.status == "candidate"]
    probes = list(dict.fromkeys(x.judged.mechanism.probe for x in cands))
    steps: list[PlanStep] = []
    have_path = "request.looked.path_layers" in hf.facts or any(k.startswith("path.") for k in hf.facts)
    for probe in probes:
        if probe == "path_layers" and not have_path:
            path = next((p for p in prongs.PRONGS if p.name in ("path", "path_layers") and p.agent), None)
            if path is not None:
                names = ", ".join(x.judged.id for x in cands if x.judged.mechanism.probe == "path_layers")
                steps.append(PlanStep(tool="task", args={
                    "agent": path.agent,
                    "brief": (f"Objective: read the layers between the client and the engine ({top.words()}; it sits "
                              f"{top.layer}). Candidates to split: {names}. Output: the path.* facts of each layer "
                              "found (proxies, gateways, the orchestrator, the engine's runtime) with evidence ids. "
                              "Scope: read-only.")}))
        elif probe in _PROBE_KINDS and not any(v.probes(k) for k in _PROBE_KINDS[probe]) and probe == "request_files":
            steps.append(PlanStep(tool="request_account", args={}))
    return steps
