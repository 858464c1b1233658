"""Findings of the path: each setting of a layer between the user and the engine whose documented effect
(knowledge/settings/path/effects.yaml) holds for the value the layer was given, with that value against its
default, where it was set, the effect and its source, the symptoms it can explain and the request account's
residual shapes it can explain (`data.residuals`).

A concurrency cap (HAProxy's server maxconn, Ray Serve's max_ongoing_requests, Istio's connection pool, Knative's
containerConcurrency, Ollama's parallel slots) is compared with the load the user offered: above the load it is
said as ruled out (noticed, never ranked); below it, it is a cause, and the share of the offered load it holds back
is what it explains. Pure: an EvidenceView in, findings out.
"""

from __future__ import annotations

import math
import re
from typing import Any

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.diagnosis import Number
from orchestrator.findings import Finding
from orchestrator.prongs.path import knowledge as pk
from orchestrator.prongs.path.models import Layer, PathReport

_NUM = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    m = _NUM.match(str(v))
    if not m:
        return None
    x = float(m.group(1))
    return x * {None: 1, "s": 1, "ms": 0.001, "m": 60, "h": 3600}[m.group(2)]


_TIME_PART = re.compile(r"(\d+)(ms|y|M|w|d|h|m|s)?")
_TIME_UNIT = {"y": 365 * 86400, "M": 30 * 86400, "w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1,
              "ms": 0.001, None: 1}


def time_seconds(v: Any) -> float | None:
    """A time as nginx reads it (src/core/ngx_parse.c ngx_parse_time): a number without a unit is seconds, and units
    y M w d h m s ms may be combined, largest first (`1m30s`); None for what nginx would refuse."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    text = str(v).strip()
    if not text:
        return None
    total, pos, order = 0.0, 0, list(_TIME_UNIT)
    last = -1
    for m in _TIME_PART.finditer(text):
        if m.start() != pos:
            return None
        unit = m.group(2)
        rank = order.index(unit)
        if rank <= last or (unit is None and m.end() != len(text)):
            return None
        last = rank
        total += int(m.group(1)) * _TIME_UNIT[unit]
        pos = m.end()
    return total if pos == len(text) else None


def _holds(when: Any, value: Any) -> bool:
    if value is None:
        return False
    if isinstance(when, list):
        return str(value).strip().lower() in {str(w).lower() for w in when}
    if isinstance(when, dict):
        n = time_seconds(value) if when.get("time") else _number(value)
        if "contains" in when:
            words = set(str(value).split())
            if not any(str(w) in words for w in when["contains"]):
                return False
        if "max" in when and (n is None or n > float(when["max"])):
            return False
        if "min" in when and (n is None or n < float(when["min"])):
            return False
        if when.get("cap") and (n is None or n <= 0):
            return False
        return True
    return when is None


def offered(view: EvidenceView) -> tuple[int | None, list[str]]:
    """The concurrency the user's load offered (the largest of their runs' max_concurrency), with its evidence."""
    oe = view.observations_evidence
    if oe is None:
        return None, []
    obs = oe[1]
    values = [int(b.max_concurrency) for b in obs.bench if b.max_concurrency] + \
        [int(c) for r in obs.runs if (c := getattr(r, "concurrency", None))]
    return (max(values), [oe[0].id]) if values else (None, [])


def _engines_ran(view: EvidenceView) -> float | None:
    """How many requests the engines ran at once by their own count (all replicas together), or None."""
    from orchestrator.prongs.request.account import engines_running

    got = engines_running(view)
    return sum(r for _, r in got) if got else None


def refused_share(view: EvidenceView) -> float | None:
    oe = view.observations_evidence
    if oe is None:
        return None
    for b in oe[1].bench:
        if b.failed and b.completed is not None and b.failed + b.completed > 0:
            return b.failed / (b.failed + b.completed)
    return None


def _capacity(x: Layer, eff: pk.PathEffect, value: float) -> tuple[float, str]:
    when = eff.when if isinstance(eff.when, dict) else {}
    s = x.settings
    if when.get("total") and when["total"] in s and _number(s[when["total"]].value):
        return float(_number(s[when["total"]].value) or value), f"{when['total']} {s[when['total']].value}"
    cap, how = value, f"{eff.setting} {value:g}"
    if when.get("per") and when["per"] in s and _number(s[when["per"]].value):
        n = float(_number(s[when["per"]].value) or 1)
        cap, how = value * n, f"{eff.setting} {value:g} x {when['per']} {n:g}"
    if when.get("plus") and when["plus"] in s and _number(s[when["plus"]].value) is not None:
        p = float(_number(s[when["plus"]].value) or 0)
        cap, how = cap + p, f"{how} + {when['plus']} {p:g}"
    return cap, how


def path_findings(view: EvidenceView) -> list[Finding]:
    out: list[Finding] = []
    seen: set[str] = set()
    load, load_ev = offered(view)
    for ev, rep in view.probes("path_layers"):
        assert isinstance(rep, PathReport)
        for eff in pk.effects():
            x = rep.layer(eff.layer)
            if x is None or eff.id in seen:
                continue
            s = x.settings.get(eff.setting)
            if s is None or not _holds(eff.when, s.value):
                continue
            if eff.also and not all(k in x.settings and _holds(v, x.settings[k].value) for k, v in eff.also.items()):
                continue
            seen.add(eff.id)
            out.append(_finding(eff, x, s, ev.id, load, load_ev, view))
        killed = _liveness_kills_start(rep, ev.id, view)
        if killed is not None:
            out.append(killed)
        auto = _autoscaler_unreachable(rep, ev.id, view, load, load_ev)
        if auto is not None:
            out.append(auto)
        if rep.layers:
            out.append(_layers_context(rep, ev.id))
    return out


IDLE_SOURCES = ("https://cloud.google.com/kubernetes-engine/docs/best-practices/machine-learning/inference/autoscaling",
                "https://kubernetes.io/docs/concepts/workloads/autoscaling/horizontal-pod-autoscale/#algorithm-details")
IDLE_FIX = ("Scale on what measures the engine's load: its queue (the engine's waiting-requests gauge) or its batch "
            "against its cap, through a Pods or External metric (a Prometheus adapter or KEDA), not the pods' CPU or "
            "memory.")
HPA_TOLERANCE = 0.1
"""The HorizontalPodAutoscaler's default tolerance: it scales only when current / target leaves 1 +- 0.1
(kube-controller-manager --horizontal-pod-autoscaler-tolerance)."""


def _flag(argv: list[str], flags: tuple[str, ...]) -> str | None:
    for i, a in enumerate(argv):
        for f in flags:
            if a == f and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(f + "="):
                return a.split("=", 1)[1]
    return None


def metric_ceiling(m: pk.AutoscaleMetric, rep: PathReport, view: EvidenceView) -> tuple[float, str] | None:
    """The most the metric can read per pod, with where that was read: a constant, the engine's flag on its command
    line, or its start-up log line."""
    if m.value is not None:
        return m.value, m.bound_words
    for p in rep.processes:
        if m.engine and p.kind != m.engine:
            continue
        v = _flag(p.argv, m.flags)
        n = _number(v)
        if n is not None and n > 0:
            return n, f"{m.bound_words}: {v} on the command line of process {p.pid}"
    if m.log:
        for _ev, eng in view.probes("engine_config"):
            for ln in getattr(eng, "lines", []) or []:
                hit = re.search(m.log, ln.line)
                if hit:
                    return float(hit.group(1)), f"{m.bound_words}: \"{ln.line.strip()[:120]}\" ({ln.path}:{ln.line_no})"
    return None


def autoscaler_never_scales(rep: PathReport, view: EvidenceView) -> dict[str, Any] | None:
    """An autoscaler whose per-pod target for an engine metric is at or above the most that metric can read (its
    desired replicas, ceil(current x value / target), never rise above the current ones, whatever the load): its
    figures (`metric`, `target`, `ceiling`, `how`, the table's entry `m`, the layer `x`), else None."""
    for x in (rep.layer("hpa"), rep.layer("keda")):
        got = _never_scales(x, rep, view) if x is not None else None
        if got is not None:
            return got
    return None


def _never_scales(x: Layer, rep: PathReport, view: EvidenceView) -> dict[str, Any] | None:
    s = {k: v.value for k, v in x.settings.items()}
    if x.layer == "keda":
        # a trigger's query (PromQL) over an engine gauge, averaged over the replicas (AverageValue): per pod it is
        # that gauge's average, which its bound caps; a rate or increase is not the gauge
        query = str(s.get("query") or s.get("metric") or "")
        m = next((m for m in pk.autoscale_metrics() if re.search(m.metric, query)), None)
        name, target = query, _number(s.get("threshold"))
        if m is None or target is None or target <= 0 or s.get("metric_type") != "AverageValue" \
                or re.search(r"\b(?:rate|irate|increase|delta|deriv)\s*\(", query):
            return None
        s = {**s, "metric_type": f"{s.get('trigger_type')} trigger", "target_type": "AverageValue",
             "target_value": target}
        key = "query" if "query" in x.settings else "metric"
    else:
        name = str(s.get("metric") or "")
        target = _number(s.get("target_value"))
        if not name or target is None or target <= 0 or s.get("target_type") not in ("AverageValue", "Utilization"):
            return None
        m = next((m for m in pk.autoscale_metrics() if re.fullmatch(m.metric, name)), None)
        if m is None:
            return None
        key = "metric"
    got = metric_ceiling(m, rep, view)
    if got is None:
        return None
    ceiling, how = got
    if ceiling * (1 + HPA_TOLERANCE) > target:
        return None
    return {"metric": name, "target": target, "ceiling": ceiling, "how": how, "m": m, "x": x, "s": s, "key": key}


LIVENESS_SOURCES = ("https://kubernetes.io/docs/tasks/configure-pod-container/configure-liveness-readiness-startup-probes/#define-startup-probes",
                    "https://github.com/kserve/kserve/pull/5063", "https://github.com/vllm-project/aibrix/issues/772")


def _engine_start_s(view: EvidenceView) -> tuple[float, str] | None:
    """How long the engine took to start, from its own log (start to ready, else the model's load)."""
    for _ev, rep in view.probes("engine_config"):
        for e in getattr(rep, "engines", []) or []:
            lg = e.log
            if lg is None:
                continue
            if lg.start_span_s:
                return float(lg.start_span_s), "its log, from start to ready"
            if lg.model_load_s:
                return float(lg.model_load_s), "its log's model loading time"
    return None


def _liveness_kills_start(rep: PathReport, ev_id: str, view: EvidenceView) -> Finding | None:
    """A liveness probe with no startup probe whose grace (initialDelaySeconds + failureThreshold x periodSeconds)
    ends before the engine has loaded: the kubelet kills it mid-load and it starts again (a restart loop). Said when
    the container restarted after failed liveness probes and either the engine's own start takes longer than the
    grace or the probes were refused (nothing listens yet: the server is still loading)."""
    x = rep.layer("k8s")
    if x is None:
        return None
    s = {k: v.value for k, v in x.settings.items()}
    if not s.get("liveness_probe") or s.get("startup_probe") or not (_number(s.get("restarts")) or 0) > 0:
        return None
    failed = _number(s.get("events.liveness_probe_failed")) or 0
    if failed <= 0:
        return None
    grace = (_number(s.get("liveness_initial_delay_s")) or 0) + \
        (_number(s.get("liveness_failure_threshold")) or 3) * (_number(s.get("liveness_period_s")) or 10)
    start = _engine_start_s(view)
    refused = "connection refused" in str(x.settings["events.liveness_probe_failed"].where).lower()
    if not ((start and start[0] > grace) or refused):
        return None
    how = (f"initialDelaySeconds {s.get('liveness_initial_delay_s')} + failureThreshold "
           f"{s.get('liveness_failure_threshold')} x periodSeconds {s.get('liveness_period_s')}")
    took = (f"the engine takes {start[0]:,.0f} s to start ({start[1]})" if start and start[0] > grace else
            "the probes were refused (nothing listens yet: the server is still loading)")
    claim = (f"{x.label}: the serving container has a liveness probe and no startup probe; the liveness probe "
             f"allows {grace:g} s ({how}; {x.settings['liveness_probe'].where}) before the kubelet kills the "
             f"container, and {took}. It failed {failed:g} times and the container restarted "
             f"{s.get('restarts')} times: each start loads the weights again and is killed before it serves, a "
             f"restart loop. (sources: {', '.join(LIVENESS_SOURCES)})")
    return Finding(
        id="path-k8s-liveness-kills-start", rule="path_findings", category="engine", confidence=0.85,
        evidence=[ev_id], symptoms=["startup", "errors", "throughput"], severity="high", claim=claim,
        title=f"The liveness probe kills the engine before it has loaded ({grace:g} s allowed, no startup probe)",
        recommendations=["Add a startupProbe whose failureThreshold x periodSeconds exceeds the engine's load time "
                         "(e.g. 60 x 10 s), which holds the liveness and readiness probes until the server answers, "
                         f"and drop the liveness probe's initialDelaySeconds. [{LIVENESS_SOURCES[0]}]"],
        matched=["path.k8s.liveness_probe=True", f"path.k8s.restarts={s.get('restarts')}"],
        data={"layer": "k8s", "setting": "startup_probe", "value": None, "sources": list(LIVENESS_SOURCES),
              "residuals": ["engine_restarts", "requests_refused"]})


HPA_RESOURCES = {"cpu", "memory"}
"""Resource metrics an autoscaler reads from the pod's containers: a GPU engine's load does not show in them."""
LOADED_GPU_PCT = 80.0


def _load_waits(view: EvidenceView) -> str | None:
    """What says the engine is loaded while an autoscaler sees nothing: its GPUs busy, or requests in its queue."""
    from orchestrator.prongs.resource_account.where import gpus_busy

    busy = gpus_busy(view)
    if busy is not None and busy >= LOADED_GPU_PCT:
        return f"the serving GPUs are busy {busy:.0f} % of the time"
    for _ev, rep in view.probes("engine_config"):
        for e in getattr(rep, "engines", []) or []:
            w = getattr(e.log, "waiting_max", None) if e.log is not None else None
            if w:
                return f"up to {w:g} requests wait in the engine's queue (its stats lines)"
    return None


def autoscaler_sees_idle_resource(rep: PathReport, view: EvidenceView) -> dict[str, Any] | None:
    """An autoscaler that scales on its pods' CPU or memory utilisation, reading well under its target, while the
    engine is loaded (its GPUs busy, or requests waiting): a GPU engine's load does not show in its host CPU, so the
    autoscaler keeps its current replicas whatever the queue; its figures, else None."""
    x = rep.layer("hpa")
    if x is None:
        return None
    s = {k: v.value for k, v in x.settings.items()}
    name, target, cur = str(s.get("metric") or ""), _number(s.get("target_value")), _number(s.get("current_value"))
    if s.get("metric_type") not in ("Resource", "ContainerResource") or name not in HPA_RESOURCES or not target \
            or cur is None or cur * (1 + HPA_TOLERANCE) >= target:
        return None
    why = _load_waits(view)
    if why is None:
        return None
    return {"metric": name, "target": target, "current": cur, "why": why, "x": x, "s": s}


def _autoscaler_unreachable(rep: PathReport, ev_id: str, view: EvidenceView, load: int | None,
                            load_ev: list[str]) -> Finding | None:
    idle = autoscaler_sees_idle_resource(rep, view)
    if idle is not None:
        x, s = idle["x"], idle["s"]
        claim = (f"{x.label} {s.get('name')} ({s.get('target') or 'its workload'}) scales on its pods' {idle['metric']} "
                 f"utilisation with a target of {idle['target']:g} %, and reads {idle['current']:g} % "
                 f"({x.settings['metric'].where}), while {idle['why']}: the engine's work is on the GPU, which that "
                 "metric does not see, so the autoscaler keeps its replicas whatever waits. (sources: "
                 f"{', '.join(IDLE_SOURCES)})")
        return Finding(
            id="path-hpa-watches-idle-resource", rule="path_findings", category="engine", confidence=0.8,
            evidence=[ev_id], symptoms=["ttft", "throughput"], informational=True, claim=claim,
            title=(f"The autoscaler scales on {idle['metric']} ({idle['current']:g} % of a {idle['target']:g} % "
                   "target) while the engine is loaded: it never scales up"),
            recommendations=[f"{IDLE_FIX} [{IDLE_SOURCES[0]}]"],
            data={"layer": "hpa", "setting": "metric", "value": idle["metric"], "sources": list(IDLE_SOURCES)})
    got = autoscaler_never_scales(rep, view)
    if got is None:
        return None
    name, target, ceiling, how, m, x, s = (got[k] for k in ("metric", "target", "ceiling", "how", "m", "x", "s"))
    cur_r = _number(s.get("current_replicas")) or _number(s.get("min_replicas")) or 1.0
    cur_v = _number(s.get("current_value"))
    where = x.settings[got["key"]].where
    span = (f", {s.get('min_replicas')} to {s.get('max_replicas')} replicas" if s.get("max_replicas") is not None
            else "")
    now = f" The autoscaler reads {cur_v:g}/{target:g} now." if cur_v is not None else ""
    claim = (f"{x.label} {s.get('name')} ({s.get('target') or 'its workload'}{span}) scales on {name} with a target "
             f"of {target:g} per pod ({s.get('metric_type')}, {s.get('target_type')}; {where}). That metric is "
             f"{m.what}, so it is at most {ceiling:g} per pod here ({how}): desired replicas = ceil({cur_r:g} x "
             f"{ceiling:g} / {target:g}) = {math.ceil(cur_r * ceiling / target - 1e-9):g} at most, never above the "
             f"{cur_r:g} running, so the autoscaler never scales up whatever the load (it scales only when value / "
             f"target exceeds 1 + {HPA_TOLERANCE:g}).{now}")
    if m.queue:
        claim += (f" The requests beyond the bound wait in the server's own queue ({m.queue}), which the autoscaler "
                  "does not watch.")
    explains = None
    numbers = [Number(name=f"{name} target per pod", value=target, unit="", source=where),
               Number(name=f"{name} ceiling per pod", value=ceiling, unit="", source=how)]
    if load is not None and load > ceiling * cur_r:
        explains = round(1 - ceiling * cur_r / load, 3)
        claim += (f" The load offered {load} requests at once against {ceiling * cur_r:g} the replicas can run: "
                  f"{load - ceiling * cur_r:g} wait.")
    claim += f" (sources: {', '.join(m.sources)})"
    # context with the arithmetic: the request account's mechanism (autoscaler-target-unreachable) ranks it against
    # the residual it explains, so the cause is not said twice
    return Finding(
        id="path-hpa-target-unreachable", rule="path_findings", category="engine", confidence=0.85,
        evidence=[ev_id] + load_ev, symptoms=["ttft", "throughput"], explains=explains, informational=True,
        title=(f"The autoscaler's target of {target:g} {name} per pod can never be reached: the metric is at most "
               f"{ceiling:g} per pod, so it never scales up"),
        claim=claim, recommendations=[f"{m.fix} [{m.sources[0]}]"], numbers=numbers,
        matched=[f"path.hpa.metric={name}", f"path.hpa.target_value={target:g}"],
        data={"layer": "hpa", "setting": "target_value", "value": target, "ceiling": ceiling,
              "residuals": ["offered_over_running", "ttft_client_over_engine"], "sources": list(m.sources)})


def _finding(eff: pk.PathEffect, x: Layer, s: Any, ev_id: str, load: int | None, load_ev: list[str],
             view: EvidenceView) -> Finding:
    explicit = s.where != "default" and not s.where.startswith("default (")
    shown = f"{eff.setting} = {s.value}"
    vs = (f"the default, {s.default}" if not explicit else
          f"its default {s.default}" if s.default is not None and str(s.default) != str(s.value) else
          "the default value" if s.default is not None else "no default (unset)")
    origin = f"set at {s.where}" if explicit else "not set, so the default applies"
    claim = (f"{x.label}: {shown} ({origin}; {vs if explicit else 'documented default'}). {eff.effect[0].upper()}"
             f"{eff.effect[1:]}.")
    numbers: list[Number] = []
    informational = False
    explains: float | None = None
    confidence = 0.75
    title = f"{x.label} {eff.setting} = {s.value}"
    when = eff.when if isinstance(eff.when, dict) else {}
    shown_too = [f"{k} = {x.settings[k].value}" + (" ms" if "_ms" in k else "") for k in eff.show if k in x.settings]
    if shown_too:
        claim += f" Here: {'; '.join(shown_too)} ({x.settings[eff.show[-1]].where if eff.show[-1] in x.settings else s.where})."
    if when.get("cap"):
        value = _number(s.value) or 0.0
        cap, how = _capacity(x, eff, value)
        if eff.each:
            claim += f" At most {value:g} requests run in each {eff.each}."
        if load is not None:
            numbers.append(Number(name="offered concurrency", value=float(load), unit="requests",
                                  source="the user's benchmark (max_concurrency)"))
            numbers.append(Number(name=f"{x.label} cap", value=cap, unit="requests", source=f"{how} ({s.where})"))
            ran = _engines_ran(view)
            if load > cap and ran is not None and ran > cap:
                # the layer admits at most `cap` at once, yet the engines behind it ran more: the setting read is
                # not the one in effect, or the load reaches the engines another way; either way it is not the limit
                informational = True
                claim += (f" The load offered {load} requests at once, above its cap of {cap:g} ({how}), yet the "
                          f"engines ran {ran:g} at once (their own running count): the cap does not bind here, so "
                          "the value read is not the one in effect or the requests reach the engines another way.")
                title = (f"{x.label} {eff.setting} {s.value} would cap the load at {cap:g}, but the engines ran "
                         f"{ran:g} at once: not the limit")
            elif load > cap:
                explains = round(1 - cap / load, 3)
                claim += (f" The load offered {load} requests at once against a cap of {cap:g} ({how}): "
                          f"{load - cap:g} of them ({explains:.0%}) wait or are refused in {x.label}, not in the "
                          "engine.")
                title = f"{x.label} {eff.setting} {s.value} caps the load ({cap:g} of {load} in flight)"
                confidence = 0.85
            else:
                informational = True
                claim += f" The load offered ({load} at once) stays under its cap of {cap:g} ({how}): it is not the limit."
                title = f"{x.label} {eff.setting} {s.value} is above the load offered ({load}): not the limit"
        else:
            claim += f" It admits {cap:g} requests at once ({how}); the load offered is not known here."
            confidence = 0.6 if not when.get("max") else 0.7
    if "requests_refused" in eff.residuals and not informational:
        share = refused_share(view)
        if share is not None and share > 0:
            explains = max(explains or 0.0, round(share, 3))
            claim += f" The client saw {share:.0%} of its requests fail."
    if "ttft_client_over_engine" in eff.residuals and not informational:
        through = _through_and_without(view, x)
        if through is not None:
            claim += through[0]
            explains = max(explains or 0.0, through[1])
    said = [RESIDUAL_WORDS.get(r, r.replace("_", " ")) for r in eff.residuals]
    claim += f" It can explain {', '.join(said)} (source: {', '.join(eff.source)})." if said else \
        f" (source: {', '.join(eff.source)})."
    return Finding(
        id=eff.id, title=title, claim=claim, confidence=confidence, evidence=[ev_id] + load_ev,
        recommendations=[] if informational else [eff.fix], category="engine", symptoms=list(eff.symptoms),  # type: ignore[arg-type]
        informational=informational, explains=explains, numbers=numbers, rule="path_findings",
        severity="high" if not informational else None, short=_short(title),
        matched=[f"path.{x.layer}.{eff.setting}={s.value}"],
        data={"layer": x.layer, "setting": eff.setting, "value": s.value, "default": s.default, "where": s.where,
              "residuals": list(eff.residuals), "sources": list(eff.source), "url": s.url})


RESIDUAL_WORDS = {
    "ttft_client_over_engine": "a time to first token at the client far above the engine's",
    "itl_client_bursty": "tokens reaching the client in bursts",
    "e2e_client_over_engine": "an end-to-end latency at the client far above the engine's",
    "offered_over_running": "more requests offered than run in the engine",
    "requests_refused": "requests refused before the engine sees them",
    "engine_restarts": "engine restarts",
    "itl_tail_over_median": "an inter-token latency tail far above its median",
}
"""The request account's residual shapes (`data.residuals`, effects.yaml) as a reader says them in a claim."""


def _through_and_without(view: EvidenceView, x: Layer) -> tuple[str, float] | None:
    """The user's two runs of one load, one through this layer (its name in the run's label or source) and one
    without it: the time to first token the layer adds, before the request reaches the engine."""
    oe = view.observations_evidence
    if oe is None:
        return None
    words = {x.layer.replace("_", " "), x.label.split()[0].lower(), x.layer.split("_")[0]}

    def names(b: Any) -> bool:
        text = f"{b.label or ''} {b.source or ''}".lower()
        return any(w and w in text for w in words)

    runs = [b for b in oe[1].bench if b.ttft is not None and b.ttft.mean is not None]
    via = [b for b in runs if names(b)]
    other = [b for b in runs if not names(b)]
    if not via or not other:
        return None
    a, d = via[0], other[0]
    assert a.ttft is not None and d.ttft is not None and a.ttft.mean is not None and d.ttft.mean is not None
    added = a.ttft.mean - d.ttft.mean
    if added <= 0 or a.ttft.mean <= 0:
        return None
    text = (f" The same load through {x.label} ({a.label or a.source}) has a mean TTFT of {a.ttft.mean:,.1f} ms, "
            f"without it ({d.label or d.source}) {d.ttft.mean:,.1f} ms: {added / 1000:.2f} s ({added:,.0f} ms) is "
            f"added before the request reaches the engine, in front of it")
    if a.e2el is not None and d.e2el is not None and a.e2el.mean is not None and d.e2el.mean is not None:
        text += f" (end-to-end latency moves by {(a.e2el.mean - d.e2el.mean) / 1000:.2f} s too)"
    return text + ".", round(added / a.ttft.mean, 3)


def _short(title: str) -> str:
    return title[0].upper() + title[1:] if title else title


def _layers_context(rep: PathReport, ev_id: str) -> Finding:
    parts = []
    for x in rep.layers:
        set_here = [k for k, s in x.settings.items() if s.where != "default" and not s.where.startswith("default (")]
        parts.append(f"{x.label} ({', '.join(x.found_by[:2]) or 'found'}; {len(set_here)} settings read)")
    return Finding(id="path-layers", title="The layers between the user and the engine",
                   claim="Read on the path: " + "; ".join(parts) + ".", confidence=0.9, evidence=[ev_id],
                   category="engine", informational=True, rule="path_findings",
                   data={"layers": [x.layer for x in rep.layers]})
