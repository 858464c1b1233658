"""Library entry points: `investigate`, `investigate_sync`, `replay`, `resume`, `load_transcript`.

    result = await orchestrator.investigate("why is FP4 slow?", host="gpu-box", observations="obs.yaml")
    result = orchestrator.investigate_sync("why is FP4 slow?")      # also inside Jupyter's running loop
    result.diagnosis.verdict

An investigation's inputs are one `orchestrator.request.RunRequest`, checked once (the CLI builds the same one);
`run_request` turns it into the run's inputs, host opener and backend and runs one `orchestrator.run.Run`, which
owns the run's transcript, host and backend. `replay` and `resume` take a recorded transcript's inputs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, ParamSpec, TypeVar

import anyio

from orchestrator.agentdefs import load_agents
from orchestrator.models.base import Backend
from orchestrator.context import ResynthExecutor
from orchestrator.inputs import RunInputs
from orchestrator.errors import InputError
from orchestrator.events import AgentFinished, Event
from orchestrator.hosts.multi import HostEntry, HostSet, HostsFileError, entries_from_dests, load_hosts_file, open_hosts
from orchestrator.hosts.base import Host
from orchestrator.models.select import select_backend
from orchestrator.observations import Observations, load_observations, parse_observations
from orchestrator.redact import scrub_text
from orchestrator.request import RunRequest
from orchestrator.resume import agents_from, confirm_resume, inputs_from, settings_from
from orchestrator.run import HostOpener, InvestigationResult, Run
from orchestrator.settings import Settings, load_settings
from orchestrator.tools.base import ToolRegistry
from orchestrator.transcript import Transcript, read_transcript
from orchestrator.validate import check_backend_choice

__all__ = ["InputError", "InvestigationResult", "Run", "investigate", "investigate_sync", "load_transcript",
           "normalize_observations", "replay", "replay_sync", "resume", "select_backend"]


def normalize_observations(obs: Any) -> dict[str, Any] | None:
    """Observations as a run records them: from an `Observations`, a dict, or a YAML/JSON file path."""
    if obs is None:
        return None
    if isinstance(obs, Observations):
        parsed = obs
    elif isinstance(obs, dict):
        parsed = parse_observations(obs)
    else:
        parsed = load_observations(obs)
    return parsed.model_dump(mode="json", exclude_none=True)


def _host_opener(host: str | None, ssh_config: str | None, settings: Settings,
                 entries: list[HostEntry] | None = None) -> HostOpener:
    async def open_() -> Host | HostSet:
        if entries:
            return await open_hosts(entries, ssh_config=ssh_config, settings=settings)
        from orchestrator.hosts import open_host

        return await open_host(host, ssh_config=ssh_config, settings=settings)

    return open_


async def _host_entries(request: RunRequest, settings: Settings) -> list[HostEntry]:
    """The hosts of a multi-host run in the user's order; [] when the run has one `--host` (or none)."""
    try:
        if request.hosts_file:
            return load_hosts_file(request.hosts_file)
        if len(request.host) > 1:
            return entries_from_dests(request.host)
    except HostsFileError as exc:
        raise InputError(str(exc)) from None
    if request.slurm:
        from orchestrator.hosts.slurm import slurm_entries

        return await slurm_entries(request.slurm, settings)
    if request.k8s:
        from orchestrator.hosts.k8s import k8s_entries

        return await k8s_entries(request.k8s, settings, namespace=request.k8s_namespace,
                                 container=request.k8s_container)
    return []


async def investigate(
    question: str | RunRequest | None = None,
    *,
    host: str | list[str] | None = None,
    ssh_config: str | Path | None = None,
    python: str | None = None,
    observations: Any = None,
    hosts_file: str | Path | None = None,
    slurm: str | None = None,
    k8s: str | None = None,
    k8s_namespace: str | None = None,
    k8s_container: str | None = None,
    logs: Iterable[str] = (),
    traces: Iterable[str] = (),
    baseline_traces: Iterable[str] = (),
    path_configs: Iterable[str | Path] = (),
    bench: Iterable[str | Path] = (),
    baseline: str | Path | None = None,
    baseline_log: str | Path | None = None,
    model: str | None = None,
    offline: bool | None = None,
    agents_dirs: Iterable[str | Path] = (),
    measure: bool = False,
    sample_s: float | None = None,
    measure_wait: float | None = None,
    transcript: str | Path | None | bool = None,
    run_id: str | None = None,
    backend: Backend | None = None,
    settings: Settings | None = None,
    registry: ToolRegistry | None = None,
    progress: Callable[[Event], None] | None = None,
) -> InvestigationResult:
    """Investigate a question about inference performance; returns the diagnosis-bearing result.

    The keywords are the fields of `orchestrator.request.RunRequest` (each named after its `investigate` option:
    `logs` for `--log`, `bench` for `--bench`, `sample_s` for `--sample-s`, ...), checked once before anything runs
    (InputError, one line); or pass a `RunRequest` built with `RunRequest.of(...)` as the first argument.
    `transcript`: a path, None for a new file under the user state directory, or False for none.
    `run_id`: the run's id (default: a new one); the CLI picks it to name the transcript before the run starts.
    `backend`: a backend object (e.g. `DoublesBackend`) overriding the choice by key/`offline`/`model`.
    Several hosts: `host=[...]`, `hosts_file=` (one destination per line, or YAML with roles), `slurm=` (a nodelist or
    partition, probed through `srun`) or `k8s=` (a pod label selector, probed through `kubectl exec`).
    """
    if isinstance(question, RunRequest):
        request = question
    else:
        given = locals()
        request = RunRequest.of(question, **{k: given[k] for k in RunRequest.model_fields if k != "question"})
    return await run_request(request, backend=backend, settings=settings, registry=registry, progress=progress)


async def run_request(request: RunRequest, *, backend: Backend | None = None, settings: Settings | None = None,
                      registry: ToolRegistry | None = None,
                      progress: Callable[[Event], None] | None = None) -> InvestigationResult:
    """Run one checked request (`RunRequest.of`) under the given or configured settings and backend."""
    settings = request.settings_over(settings or load_settings())
    notices: list[str] = []
    if backend is None:
        backend, notice = select_backend(offline=request.offline, model=request.model, settings=settings)
        if notice:
            notices.append(notice)
    entries = await _host_entries(request, settings)
    single = None if entries else next(iter(request.host), None)
    ssh_config = str(request.ssh_config) if request.ssh_config else None
    inputs = RunInputs(question=scrub_text(request.question), host=single or "local",
                       observations=normalize_observations(request.observations), logs=list(request.logs),
                       python=request.python, measure=request.measure, ssh_config=ssh_config, hosts=entries,
                       slurm=request.slurm, traces=list(request.traces), baseline_traces=list(request.baseline_traces),
                       path_configs=[str(p) for p in request.path_configs])
    async with Run(inputs=inputs, settings=settings, backend=backend, agents=load_agents(list(request.agents_dirs)),
                   registry=registry, transcript=request.transcript,
                   host=_host_opener(single, ssh_config, settings, entries), progress=progress, notices=notices,
                   run_id=request.run_id) as run:
        await run.investigate()
    return run.result


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
    Either way a replay never acts: no tool that reaches a host or the network runs, no new subagent starts, and
    the settings are the user's own (`settings`, default: the configured ones), with only the recorded run's limits
    taken from the transcript for an exact replay (`orchestrator.resume.settings_from`).
    """
    from orchestrator.models.replay import ReplayBackend, ReplayExecutor

    check_backend_choice(model, offline)
    old = read_transcript(path)
    inputs = inputs_from(old)
    own = settings or load_settings()
    resynth = backend is not None or model is not None or offline
    settings = own if resynth else settings_from(old, own)
    if backend is None:
        backend = select_backend(offline=offline, model=model, settings=own)[0] if resynth else ReplayBackend(old)
    async with Run(inputs=inputs, settings=settings, backend=backend, agents=agents_from(old), registry=registry,
                   transcript=transcript, progress=progress, reuse=old if resynth else None,
                   executor=ResynthExecutor() if resynth else ReplayExecutor(old)) as run:
        await run.investigate()
    result = run.result
    if not resynth and result.diagnosis is not None:
        # an exact replay answers in milliseconds: the diagnosis shows how long each agent took when it ran
        took = {e.agent_id: e.duration_s for e in old.of_type(AgentFinished)}
        for a in result.diagnosis.usage.agents:
            a.duration_s = took.get(a.agent_id, a.duration_s)
    return result


async def resume(
    path: str | Path,
    *,
    question: str | None = None,
    host: str | list[str] | None = None,
    accept_recorded: bool = False,
    ssh_config: str | Path | None = None,
    python: str | None = None,
    logs: Iterable[str] = (),
    model: str | None = None,
    offline: bool | None = None,
    backend: Backend | None = None,
    agents_dirs: Iterable[str | Path] = (),
    transcript: str | Path | None | bool = None,
    settings: Settings | None = None,
    registry: ToolRegistry | None = None,
    progress: Callable[[Event], None] | None = None,
    run_id: str | None = None,
) -> InvestigationResult:
    """Finish an interrupted run: subagents that finished are reused as evidence, the rest are planned afresh.

    A resume acts only on what the caller confirms: `question` and `host` name the recorded run's question and hosts
    again, or `accept_recorded=True` takes them from the transcript (the caller has shown them to whoever confirmed:
    `investigate resume` does, or asks for --yes). InputError, before anything runs, when they are missing or are
    not the recorded hosts. `ssh_config`, `python`, `logs`, the backend, the settings and the agent definitions
    (`agents_dirs` over the installed ones) are the caller's own, checked as `investigate` checks them. Nothing of
    the transcript's settings, inputs, agent definitions or plans is executed; its observations (data) are kept. A
    run that finished with a diagnosis has nothing to resume: InputError (replay it instead)."""
    old = read_transcript(path)
    recorded = inputs_from(old)
    given = [host] if isinstance(host, str) else list(host or [])
    question, dests = confirm_resume(old, question, given, accept_recorded=accept_recorded)
    request = RunRequest.of(question, host=dests, ssh_config=ssh_config, python=python, logs=logs, model=model,
                            offline=offline, agents_dirs=agents_dirs, transcript=transcript, run_id=run_id)
    settings = settings or load_settings()
    notices: list[str] = []
    if backend is None:
        backend, notice = select_backend(offline=request.offline, model=request.model, settings=settings)
        if notice:
            notices.append(notice)
    entries: list[HostEntry] = []
    if len(dests) > 1 or recorded.hosts:
        roles = {e.dest: e.role for e in recorded.hosts}  # labels, data only
        entries = [e.model_copy(update={"role": roles.get(e.dest)}) for e in entries_from_dests(dests)]
    single = None if entries else next(iter(dests), None)
    ssh = str(request.ssh_config) if request.ssh_config else None
    inputs = RunInputs(question=scrub_text(request.question), host=single or "local",
                       observations=normalize_observations(recorded.observations), logs=list(request.logs),
                       python=request.python, ssh_config=ssh, hosts=entries)
    async with Run(inputs=inputs, settings=settings, backend=backend, agents=load_agents(list(request.agents_dirs)),
                   registry=registry, transcript=request.transcript, host=_host_opener(single, ssh, settings, entries),
                   progress=progress, notices=notices, reuse=old, run_id=request.run_id) as run:
        await run.investigate()
    return run.result


def load_transcript(path: str | Path, *, strict: bool = False) -> Transcript:
    """Read a transcript for analysis (e.g. in a notebook); damaged lines become `warnings` unless strict."""
    return read_transcript(path, strict=strict)


P = ParamSpec("P")
R = TypeVar("R")


def _blocking(fn: Callable[P, Awaitable[R]]) -> Callable[P, R]:
    """The blocking twin of an async entry point: the same signature (`inspect.signature` and type checkers see the
    async one's keywords), run to completion by `_sync`."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        result: R = _sync(fn, *args, **kwargs)
        return result

    return run


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


investigate_sync = _blocking(investigate)
"""`investigate` for plain scripts and notebooks (inside Jupyter's running loop too); the same keywords."""


def replay_sync(
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
    """`replay` for plain scripts and notebooks; the same keywords."""
    return _sync(replay, path, backend=backend, model=model, offline=offline, transcript=transcript,
                 settings=settings, registry=registry, progress=progress)
