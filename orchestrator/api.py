"""Library entry points: `investigate`, `investigate_sync`, `replay`, `resume`, `load_transcript`.

    result = await orchestrator.investigate("why is FP4 slow?", host="gpu-box", observations="obs.yaml")
    result = orchestrator.investigate_sync("why is FP4 slow?")      # also inside Jupyter's running loop
    result.diagnosis.verdict
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import anyio

from orchestrator.redact import scrub_model, scrub_text
from orchestrator.agentdefs import AgentDef, load_agents
from orchestrator.context import Backend, RunContext, RunInputs
from orchestrator.diagnosis import AgentUsage, Diagnosis, EvidenceRef, Gap, RunUsage, SubmittedDiagnosis
from orchestrator.events import (
    AgentFinished,
    AgentStarted,
    DiagnosisSubmitted,
    Event,
    ModelCall,
    Notice,
    RunFinished,
    RunStarted,
    ToolCall,
    ToolResult,
)
from orchestrator.findings import AgentResult
from orchestrator.hosts.multi import HostEntry, HostSet, HostsFileError, entries_from_dests, load_hosts_file, open_hosts
from orchestrator.loop import AgentRunner, FatalRunError, RunInterrupted, first_leaf
from orchestrator.models.base import ModelCallError, ReplayDivergence
from orchestrator.observations import Observations, load_observations, parse_observations
from orchestrator.prefetch import prefetch
from orchestrator.settings import Settings, load_settings
from orchestrator.tools.base import ToolRegistry
from orchestrator.transcript import Recorder, Transcript, default_path, read_transcript


class InputError(ValueError):
    """Bad input to a library entry point; the message is one line naming the problem and the fix."""


@dataclass
class InvestigationResult:
    """What a run produced: the diagnosis (None if the run failed), its status and where it was recorded."""

    question: str
    status: str
    diagnosis: Diagnosis | None
    run_id: str
    transcript_path: Path | None
    events: list[Event] = field(default_factory=list)
    error: str | None = None
    notices: list[str] = field(default_factory=list)

    def _repr_markdown_(self) -> str:
        if self.diagnosis is None:
            return f"**Run {self.status}**: {self.error}"
        return self.diagnosis._repr_markdown_()

    def _repr_html_(self) -> str:
        import html

        from orchestrator.render.html import render_html_fragment

        if self.diagnosis is None:
            return f"<p><b>Run {html.escape(self.status)}</b>: {html.escape(self.error or '')}</p>"
        return render_html_fragment(self.diagnosis, self.events)


def select_backend(*, offline: bool | None, model: str | None, settings: Settings) -> tuple[Backend, str | None]:
    """The anthropic backend when a key is configured (or a model is asked for), else offline with a notice."""
    from orchestrator.models.offline import OfflineBackend

    key = os.environ.get("ANTHROPIC_API_KEY") or (
        settings.anthropic_api_key.get_secret_value() if settings.anthropic_api_key else None
    )
    if offline:
        return OfflineBackend(), None
    if key:
        from orchestrator.models.anthropic import AnthropicBackend

        return AnthropicBackend(settings, model=model, api_key=key,
                                base_url=os.environ.get("ANTHROPIC_BASE_URL") or settings.anthropic_base_url), None
    if model:
        raise InputError(f"--model {model} needs an API key; set ANTHROPIC_API_KEY or use --offline")
    return OfflineBackend(), "no API key configured: running the offline backend (set ANTHROPIC_API_KEY for Claude)"


def _observations(obs: Any) -> dict[str, Any] | None:
    if obs is None:
        return None
    if isinstance(obs, Observations):
        parsed = obs
    elif isinstance(obs, dict):
        parsed = parse_observations(obs)
    else:
        parsed = load_observations(obs)
    return parsed.model_dump(mode="json", exclude_none=True)


def _evidence_refs(diag: SubmittedDiagnosis, run: RunContext) -> dict[str, EvidenceRef]:
    ids: list[str] = []
    for c in diag.causes:
        ids += c.evidence
    ids += [n.source for n in diag.numbers if n.source.startswith("ev-")]
    refs: dict[str, EvidenceRef] = {}
    for eid in dict.fromkeys(ids):
        ev = run.evidence.get(eid)
        if ev is not None:
            refs[eid] = EvidenceRef(agent=ev.agent_id, tool=ev.tool, host=ev.host,
                                    excerpt=ev.excerpt(run.settings.excerpt_chars), is_error=ev.is_error)
    return refs


def _run_usage(run: RunContext) -> RunUsage:
    agents = [
        AgentUsage(agent_id=aid, status=run.results[aid].status if aid in run.results else "unknown", usage=u,
                   duration_s=run.results[aid].duration_s if aid in run.results else 0.0)
        for aid, u in run.usage_by_agent.items()
    ]
    return RunUsage(total=run.total_usage(), agents=agents)


def assemble(question: str, submitted: SubmittedDiagnosis, run: RunContext) -> Diagnosis:
    """The submitted body plus what the run knows: evidence excerpts, usage, and gaps for every failed agent."""
    gaps = list(submitted.gaps)
    named = " ".join(g.what + " " + g.why for g in gaps)
    for aid, res in run.results.items():
        if res.status != "ok" and aid != "lead" and aid not in named and res.name not in named:
            gaps.append(Gap(what=aid, why=f"{res.status}: {res.error or 'no result'}"))
    for ev in run.evidence.of_kind("log_scan"):  # a --log path that was not there is a gap, whoever synthesized
        for p in (ev.data or {}).get("missing") or []:
            if p not in named:
                gaps.append(Gap(what=f"--log {p}", why=f"not found on {ev.host or run.inputs.host}; nothing in it "
                                                       "was read"))
                named += " " + p
    for h in run.inputs.hosts:  # a host that could not be used is a gap of the whole run, whoever synthesized
        if h.error and f"host {h.name}" not in named:
            gaps.append(Gap(what=f"host {h.name}" + (f" ({h.role})" if h.role else ""), why=h.error))
    body = submitted.model_dump()
    body["gaps"] = [g.model_dump() for g in gaps]
    if len(gaps) != len(submitted.gaps):  # the verdict's count of gaps counts the ones added here too
        n = len(gaps)
        body["verdict"] = re.sub(r"\b\d+ gaps? limits? this diagnosis",
                                 f"{n} gap{'s limit' if n != 1 else ' limits'} this diagnosis", body["verdict"])
    diag = Diagnosis(question=question, **body, evidence=_evidence_refs(submitted, run), usage=_run_usage(run))
    if run.inputs.hosts:
        from orchestrator.analysis.fleet import fleet_table

        table = fleet_table(run.evidence.all(), run.inputs.hosts)
        if table is not None:
            diag.fleet = table
    # one place for what leaves the run: secrets redacted, terminal control removed (issue 15)
    return scrub_model(diag)


async def _execute(
    *,
    inputs: RunInputs,
    settings: Settings,
    backend: Backend,
    agents: dict[str, AgentDef],
    registry: ToolRegistry,
    transcript: str | Path | None | bool,
    host_opener: Callable[[], Any] | None,
    progress: Callable[[Event], None] | None = None,
    reuse: Transcript | None = None,
    notices: Iterable[str] = (),
    run_id: str | None = None,
) -> InvestigationResult:
    run_id = run_id or uuid.uuid4().hex
    if transcript is False:
        path = None
    else:
        path = Path(transcript) if transcript else default_path(inputs.question, run_id)
    # the host is opened (and its key checked) before anything is recorded: a bad host is bad input
    opened = await host_opener() if host_opener else None
    hosts: dict[str, Any] = {}
    if isinstance(opened, HostSet):
        # several hosts: the ones that could not be used are recorded in the inputs (gaps), the first usable one
        # is the primary that single-host tools run on
        inputs = inputs.model_copy(update={"hosts": opened.entries,
                                           "host": next(e.name for e in opened.entries if e.name in opened.hosts)})
        hosts, host = dict(opened.hosts), opened
    else:
        host = opened
    try:
        recorder = Recorder(run_id, path)
    except OSError as exc:
        if host is not None:
            await host.aclose()
        raise InputError(f"cannot write the transcript {path}: {exc.strerror or exc}; "
                         "pass a writable path to --transcript") from None
    if progress:
        recorder.subscribe(progress)
    run = RunContext(run_id=run_id, inputs=inputs, settings=settings, recorder=recorder, registry=registry,
                     agents=agents, backend=backend, host=host.primary if isinstance(host, HostSet) else host,
                     hosts=hosts)
    if reuse is not None:
        _load_reuse(run, reuse)
    started = time.monotonic()
    notices = list(notices)
    status, error, diagnosis = "error", None, None
    try:
        recorder.emit(RunStarted(
            run_id=run_id, question=inputs.question, backend=backend.name, host=inputs.host,
            inputs=inputs.model_dump(mode="json", exclude={"question"}),
            settings=settings.model_dump(mode="json", exclude={"anthropic_api_key"}),
            agents=sorted(agents), agent_defs={n: a.model_dump(mode="json") for n, a in agents.items()},
        ))
        for n in notices:
            recorder.emit(Notice(run_id=run_id, message=n))
        for h in inputs.hosts:
            if h.error:
                recorder.emit(Notice(run_id=run_id, message=f"host {h.name} is not investigated: {h.error}"))
        runner = AgentRunner(run, agents["lead"], agent_id="lead", ordinal=0)
        try:
            async with prefetch(run):  # the host's read-only probes start now; their results wait for the tools
                lead = await runner.run()
        except BaseExceptionGroup as group:  # unwrap what a task group raised to its one meaningful error
            raise first_leaf(group) from None
        submitted = runner.ctx.outbox.get("submitted")
        if submitted is None:
            error = f"the lead ended with status {lead.status} and no diagnosis: {lead.error or 'no reason given'}"
        else:
            diagnosis = assemble(inputs.question, SubmittedDiagnosis.model_validate(submitted), run)
            recorder.emit(DiagnosisSubmitted(run_id=run_id, diagnosis=diagnosis.model_dump(mode="json")))
            status = "ok"
    except anyio.get_cancelled_exc_class():
        status, error = "cancelled", "the run was cancelled"
        raise
    except KeyboardInterrupt:
        status, error = "cancelled", "the run was interrupted"
        raise
    except RunInterrupted as exc:
        status, error = "cancelled", "the run was interrupted"
        raise exc.original from None
    except (ReplayDivergence, FatalRunError, ModelCallError) as exc:
        status, error = "error", str(exc)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise
    except BaseException:  # SystemExit, or the coroutine closed by an interrupted event loop
        status, error = "cancelled", "the run was interrupted"
        raise
    finally:
        # the last line first, with no await before it: it must be written even when this coroutine is only
        # being closed (a KeyboardInterrupt that stopped the event loop), where nothing async can run
        recorder.emit(RunFinished(run_id=run_id, status=status, error=error, usage=run.total_usage(),
                                  usage_by_agent=dict(run.usage_by_agent),
                                  duration_s=round(time.monotonic() - started, 4)))
        recorder.close()
        with anyio.CancelScope(shield=True):
            if host is not None:
                await host.aclose()
            closer = getattr(backend, "aclose", None)
            if closer is not None:
                await closer()
    return InvestigationResult(question=inputs.question, status=status, diagnosis=diagnosis, run_id=run_id,
                               transcript_path=path, events=list(recorder.events), error=error, notices=notices)


def _load_reuse(run: RunContext, old: Transcript) -> None:
    """Mark every subagent that finished ok in an earlier transcript as reusable, with its events and evidence."""
    from orchestrator.evidence import Evidence

    finished = {e.agent_id: e for e in old.of_type(AgentFinished) if e.status == "ok" and e.agent_id != "lead"}
    # descendants of a reusable agent travel with it
    parent = {e.agent_id: e.parent_id for e in old.of_type(AgentStarted)}

    def root(aid: str) -> str | None:
        while aid in parent and parent[aid] not in (None, "lead"):
            aid = parent[aid]
        return aid if aid in finished else None

    for ev in old.events:
        aid = getattr(ev, "agent_id", None)
        if not aid or not isinstance(ev, (AgentStarted, ModelCall, ToolCall, ToolResult, AgentFinished, Notice)):
            continue
        top = root(aid)
        if top is None:
            continue
        run.reuse_events.setdefault(top, []).append(ev)
        if isinstance(ev, ToolResult):
            run.evidence.add(Evidence(id=ev.evidence_id, agent_id=ev.agent_id, tool=ev.tool, host=ev.host,
                                      text=ev.content, data=ev.data, is_error=ev.is_error))
    for aid, fin in finished.items():
        if root(aid) == aid:
            run.reuse[aid] = AgentResult.model_validate(fin.result)


def _host_opener(host: str | None, ssh_config: str | None, settings: Settings,
                 entries: list[HostEntry] | None = None):
    async def open_() -> Any:
        if entries:
            return await open_hosts(entries, ssh_config=ssh_config, settings=settings)
        from orchestrator.hosts import open_host

        return await open_host(host, ssh_config=ssh_config, settings=settings)

    return open_


async def _host_entries(host: str | list[str] | None, hosts_file: str | Path | None, slurm: str | None,
                        k8s: str | None, k8s_namespace: str | None, k8s_container: str | None,
                        settings: Settings) -> list[HostEntry]:
    """The hosts of a multi-host run in the user's order; [] when the run has one `--host` (or none)."""
    dests = [host] if isinstance(host, str) else list(host or [])
    sources = sum(bool(x) for x in (len(dests) > 0, hosts_file, slurm, k8s))
    if sources > 1:
        raise InputError("--host, --hosts, --slurm and --k8s are host sources that exclude each other; pass one")
    try:
        if hosts_file:
            return load_hosts_file(hosts_file)
        if len(dests) > 1:
            return entries_from_dests(dests)
    except HostsFileError as exc:
        raise InputError(str(exc)) from None
    if slurm:
        from orchestrator.hosts.slurm import slurm_entries

        return await slurm_entries(slurm, settings)
    if k8s:
        from orchestrator.hosts.k8s import k8s_entries

        return await k8s_entries(k8s, settings, namespace=k8s_namespace, container=k8s_container)
    return []


async def investigate(
    question: str,
    *,
    host: str | list[str] | None = None,
    ssh_config: str | None = None,
    python: str | None = None,
    observations: Any = None,
    hosts_file: str | Path | None = None,
    slurm: str | None = None,
    k8s: str | None = None,
    k8s_namespace: str | None = None,
    k8s_container: str | None = None,
    logs: Iterable[str] = (),
    model: str | None = None,
    offline: bool | None = None,
    backend: Backend | None = None,
    agents_dirs: Iterable[str | Path] = (),
    measure: bool = False,
    transcript: str | Path | None | bool = None,
    settings: Settings | None = None,
    registry: ToolRegistry | None = None,
    progress: Callable[[Event], None] | None = None,
    run_id: str | None = None,
) -> InvestigationResult:
    """Investigate a question about inference performance; returns the diagnosis-bearing result.

    `transcript`: a path, None for a new file under the user state directory, or False for none.
    `run_id`: the run's id (default: a new one); the CLI picks it to name the transcript before the run starts.
    `backend`: a backend object (e.g. `DoublesBackend`) overriding the choice by key/`offline`/`model`.
    Several hosts: `host=[...]`, `hosts_file=` (one destination per line, or YAML with roles), `slurm=` (a nodelist or
    partition, probed through `srun`) or `k8s=` (a pod label selector, probed through `kubectl exec`).
    """
    if not question or not question.strip():
        raise InputError("the question is empty; ask something like 'why is FP4 slow?'")
    if python is not None:
        from orchestrator.probes.interpreter import name_refusal

        if (why := name_refusal(python)) is not None:
            raise InputError(why)
    settings = settings or load_settings()
    notices: list[str] = []
    if backend is None:
        backend, notice = select_backend(offline=offline, model=model, settings=settings)
        if notice:
            notices.append(notice)
    entries = await _host_entries(host, hosts_file, slurm, k8s, k8s_namespace, k8s_container, settings)
    single = None if entries else (host if isinstance(host, str) or host is None else (list(host) or [None])[0])
    inputs = RunInputs(question=scrub_text(question.strip()), host=single or "local",
                       observations=_observations(observations), logs=list(logs), python=python, measure=measure,
                       ssh_config=ssh_config, hosts=entries, slurm=slurm)
    if registry is None:
        from orchestrator.tools.registry import default_registry

        registry = default_registry()
    return await _execute(
        inputs=inputs, settings=settings, backend=backend, agents=load_agents(list(agents_dirs)),
        registry=registry, transcript=transcript, host_opener=_host_opener(single, ssh_config, settings, entries),
        progress=progress, notices=notices, run_id=run_id,
    )


def _agents_from(t: Transcript) -> dict[str, AgentDef]:
    started = t.of_type(RunStarted)
    if not started or not started[0].agent_defs:
        return load_agents()
    return {n: AgentDef.model_validate(d) for n, d in started[0].agent_defs.items()}


def _inputs_from(t: Transcript) -> tuple[RunInputs, dict[str, Any]]:
    started = t.of_type(RunStarted)
    if not started:
        raise InputError(f"{t.path}: the transcript has no run_started event; nothing to replay")
    rs = started[0]
    return RunInputs(question=rs.question, **{k: v for k, v in rs.inputs.items() if k in RunInputs.model_fields}), rs.settings


async def replay(
    path: str | Path,
    *,
    backend: Backend | None = None,
    model: str | None = None,
    offline: bool | None = None,
    transcript: str | Path | None | bool = False,
    settings: Settings | None = None,
    registry: ToolRegistry | None = None,
    progress: Callable[[Event], None] | None = None,
) -> InvestigationResult:
    """Re-run a recorded investigation with no host and no network.

    With no backend arguments the replay is exact: every model answer and tool result comes from the transcript.
    With `model`/`offline`/`backend`, the recorded subagent results are kept and only the lead's synthesis re-runs.
    """
    from orchestrator.models.replay import ReplayBackend

    old = read_transcript(path)
    inputs, recorded_settings = _inputs_from(old)
    settings = settings or Settings.model_validate({k: v for k, v in recorded_settings.items() if k in Settings.model_fields})
    resynth = backend is not None or model is not None or offline
    if backend is None:
        backend = select_backend(offline=offline, model=model, settings=settings)[0] if resynth else ReplayBackend(old)
    if registry is None:
        from orchestrator.tools.registry import default_registry

        registry = default_registry()
    result = await _execute(
        inputs=inputs, settings=settings, backend=backend, agents=_agents_from(old), registry=registry,
        transcript=transcript, host_opener=None, progress=progress, reuse=old if resynth else None,
    )
    if not resynth and result.diagnosis is not None:
        # an exact replay answers in milliseconds: the diagnosis shows how long each agent took when it ran
        took = {e.agent_id: e.duration_s for e in old.of_type(AgentFinished)}
        for a in result.diagnosis.usage.agents:
            a.duration_s = took.get(a.agent_id, a.duration_s)
    return result


async def resume(
    path: str | Path,
    *,
    backend: Backend | None = None,
    transcript: str | Path | None | bool = None,
    settings: Settings | None = None,
    registry: ToolRegistry | None = None,
    progress: Callable[[Event], None] | None = None,
    ssh_config: str | None = None,
    run_id: str | None = None,
) -> InvestigationResult:
    """Finish an interrupted run: subagents that finished are re-used, the rest run again on the recorded host.

    `ssh_config` replaces the recorded ssh config file (e.g. when the host's key or address changed since)."""
    old = read_transcript(path)
    inputs, recorded_settings = _inputs_from(old)
    settings = settings or Settings.model_validate({k: v for k, v in recorded_settings.items() if k in Settings.model_fields})
    if backend is None:
        rs = old.of_type(RunStarted)[0]
        backend = select_backend(offline=rs.backend == "offline" or None, model=None, settings=settings)[0]
    if registry is None:
        from orchestrator.tools.registry import default_registry

        registry = default_registry()
    host = None if inputs.host == "local" else inputs.host
    if ssh_config:
        inputs = inputs.model_copy(update={"ssh_config": ssh_config})
    # a multi-host run re-opens every recorded host (one that failed before is tried again)
    entries = [e.model_copy(update={"error": None}) for e in inputs.hosts]
    return await _execute(
        inputs=inputs, settings=settings, backend=backend, agents=_agents_from(old), registry=registry,
        transcript=transcript, host_opener=_host_opener(host, inputs.ssh_config, settings, entries), progress=progress,
        reuse=old, run_id=run_id,
    )


def load_transcript(path: str | Path, *, strict: bool = False) -> Transcript:
    """Read a transcript for analysis (e.g. in a notebook); damaged lines become `warnings` unless strict."""
    return read_transcript(path, strict=strict)


def _sync(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run an async entry point to completion, also from inside a running event loop (Jupyter)."""
    call = functools.partial(fn, *args, **kwargs)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(call)
    # a loop is running in this thread: run ours on a worker thread with its own loop (no nest_asyncio)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="investigate") as pool:
        return pool.submit(anyio.run, call).result()


def investigate_sync(question: str, **kwargs: Any) -> InvestigationResult:
    """`investigate` for plain scripts and notebooks."""
    return _sync(investigate, question, **kwargs)


def replay_sync(path: str | Path, **kwargs: Any) -> InvestigationResult:
    return _sync(replay, path, **kwargs)
