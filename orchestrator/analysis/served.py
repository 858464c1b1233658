"""Whether the engine served at all (pure: evidence and findings in, a reason or None out).

A bound (compute, memory, latency, communication) says where a serving engine's time goes. An engine that never
served (it crashed or failed at start, was killed, or is still loading) has no such time: the diagnosis says that
first and names no bound. The engine served when the evidence shows it working: its periodic stats lines or the
throughput it logged, a /metrics endpoint that answered, requests it counted, the GPUs busy under a serving process,
or the user's own measured rates. It never served when nothing shows that and something shows the failure: the
question says it fails or crashes at start, its cgroup OOM-killed it, its log shows a start with errors and no serving;
or it is still loading: the question asks about start-up and its process reads the weights while the GPUs idle, or
its log shows a start and nothing after.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView
    from orchestrator.analysis.relevance import Asked

_FAILED_START = re.compile(
    r"\b(?:fail(?:s|ed|ing)?|crash(?:es|ed|ing)?|dies|died|exits?|exited|aborts?|hangs?)\b.{0,40}"
    r"\b(?:to start|at start-?up|during start-?up|on start-?up|at launch|to launch|to initiali[sz]e|during "
    r"(?:\w+ )?init\w*|while loading|to load|at boot)\b|"
    r"\b(?:won'?t|doesn'?t|does not|can'?t|cannot|will not|refuses? to|never)\s+(?:start|launch|load|come up|"
    r"initiali[sz]e|become ready|get ready|serve)\b|"
    r"\bkeeps? (?:restarting|crashing|dying)|\bcrash ?loop|\brestart loop|\boom[- ]?kill",
    re.IGNORECASE)
"""The question says the engine does not get to serve: it fails, crashes or dies at start or during initialisation,
refuses to start, keeps restarting."""

_ERROR_LINE = re.compile(r"Traceback \(most recent call last\)|\bERROR\b|RuntimeError|CUDA error|NCCL error|"
                         r"\bunhandled (?:cuda|system) error|Killed\b|core dumped|Segmentation fault", re.IGNORECASE)
_ROOT_CAUSE = re.compile(r"\b(?:\w+Error|\w+Exception|CUDA error|NCCL error)\b:[^()\[\]]{3,200}?(?=\s*(?:\(\w+ pid=|$|"
                         r"Traceback|\w+ \d\d-\d\d ))")
"""The last exception message of a failed start (ValueError: No available memory for the cache blocks ...)."""


def _where(ln) -> str:
    return f"{ln.path.rsplit('/', 1)[-1]}:{ln.line_no}"


_READY_LINE = re.compile(r"Starting vLLM API server|Application startup complete|Uvicorn running on|"
                         r"The server is fired up|server is listening|Connected\b.*\brouter|HTTP server listening")
_WEIGHTS = re.compile(r"\.(?:safetensors|gguf|bin|pt|pth|engine|plan)$|/model[-_]\d+", re.IGNORECASE)


def served(view: "EvidenceView") -> bool:
    """Whether the evidence shows the engine serving (or having served) requests."""
    oe = view.observations_evidence
    if oe is not None and (any(r.total_tok_s or r.output_tok_s for r in oe[1].runs) or oe[1].bench):
        return True
    for _ev, rep in view.probes("engine_config"):
        if any(_READY_LINE.search(ln.line) for ln in rep.lines):
            return True
        for e in rep.engines:
            lg = e.log
            if lg is not None and (lg.stats_samples or lg.gen_tok_s_max or lg.running_max or lg.prompt_tok_s_max):
                return True
            if e.metrics is not None and e.metrics.metrics:
                return True  # its /metrics answered: the server is up
    for _ev, acct in view.probes("resource_account"):
        serving = [p for p in acct.processes if p.kind]
        busy = [g.busy_pct for g in acct.gpus if g.busy_pct is not None]
        if serving and busy and max(busy) >= 20:
            return True
    return False


def never_served(view: "EvidenceView", asked: "Asked") -> str | None:
    """Why the engine never served (a clause: "failed to start, as the question says"), or None when it served or
    nothing says it did not."""
    if served(view):
        return None
    for _ev, acct in view.probes("resource_account"):
        kills = max((p.cgroup.memory_events.get("oom_kill", 0) for p in acct.processes if p.cgroup), default=0)
        if kills:
            return f"its container's memory limit killed it ({kills} OOM kill{'s' if kills != 1 else ''})"
    for _ev, rep in view.probes("engine_config"):
        started = any(e.log is not None and e.log.starts for e in rep.engines)
        errors = [ln for ln in rep.lines if _ERROR_LINE.search(ln.line)]
        if started and errors:
            last = _ROOT_CAUSE.search(" ".join(ln.line for ln in errors[-12:]).replace("\n", " "))
            said = f" ({last.group(0).strip()[:160]}, {_where(errors[-1])})" if last else f" ({_where(errors[-1])})"
            return "its log shows a start that ended in errors and no request served" + said
    if _FAILED_START.search(asked.text) and not asked.certain & {"throughput", "itl", "ttft", "cost"}:
        return "it failed to start, as the question says"  # and no slowness of its serving is asked about
    if "startup" in asked.symptoms and not asked.symptoms & {"throughput", "itl", "ttft", "cost"}:
        for _ev, acct in view.probes("resource_account"):
            busy = [g.busy_pct for g in acct.gpus if g.busy_pct is not None]
            loading = [p for p in acct.processes if p.kind and (any(_WEIGHTS.search(f.path) for f in p.files)
                                                                or (p.read_bytes_per_s or 0) > 0 or p.majflt_per_s)]
            if loading and busy and max(busy) < 20:
                return "it is still loading: its process reads the weights while the GPUs idle"
        for _ev, rep in view.probes("engine_config"):
            if any(e.log is not None and e.log.starts for e in rep.engines):
                return "it is still loading: its log shows a start and no request served"
    return None
