"""`Run`: one investigation, from its first transcript line to its last, as an async context manager.

    async with Run(inputs=RunInputs(question="why is FP4 slow?"), backend=DoublesBackend({...}),
                   host=LocalHost(), transcript="run.jsonl") as run:
        await run.investigate()          # the lead (host probes prefetched meanwhile), then the diagnosis
    run.result.diagnosis, run.result.status, run.result.transcript_path

A `Run` owns what it is given: the host (or hosts) and the backend are closed when the block ends, whatever ended
it. Entering opens the host first (a host that cannot be opened is bad input: nothing is recorded), then creates
the transcript (`InputError` when it cannot be written, after closing the host) and records `run_started`.
Leaving records `run_finished` with the outcome and sets `result`:

- `ok`: the lead submitted a diagnosis; `error`: it did not, or the run failed;
- a replay divergence, a fatal run error (bad API key) or a model call error ends the run with status `error` and
  is not raised: the result says what happened;
- any other exception is recorded (status `error`) and raised; a cancellation, `KeyboardInterrupt` or `SystemExit`
  is recorded as `cancelled` and raised (an interrupt carried up from a tool's task is raised as itself).

The library entry points (`orchestrator.api`: `investigate`, `replay`, `resume`) check their arguments, then run one
of these.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Awaitable, Callable, Iterable, Union, cast

import anyio

from orchestrator.agentdefs import AgentDef, load_agents
from orchestrator.analysis import precompute
from orchestrator.assemble import assemble
from orchestrator.context import Executor, LiveExecutor, RunContext
from orchestrator.models.base import Backend
from orchestrator.inputs import RunInputs
from orchestrator.diagnosis import Diagnosis, SubmittedDiagnosis
from orchestrator.errors import InputError
from orchestrator.evidence import Evidence
from orchestrator.events import DiagnosisSubmitted, Event, Notice, RunFinished, RunStarted, RunStatus
from orchestrator.fanout import spawn
from orchestrator.hosts.multi import HostSet
from orchestrator.loop import (
    AgentRunner, FatalRunError, RunInterrupted, cancelled_exc_class, first_leaf, no_event_loop,
)
from orchestrator.models.base import ModelCallError, ReplayDivergence
from orchestrator.prefetch import prefetch
from orchestrator.resume import load_reuse
from orchestrator.settings import Settings, load_settings
from orchestrator.transcript import Recorder, Transcript, default_path

if TYPE_CHECKING:
    from orchestrator.hosts.base import Host
    from orchestrator.tools.base import ToolRegistry

HostOpener = Callable[[], Awaitable[Union["Host", HostSet]]]
"""Opens the run's host (a `Host`) or hosts (a `HostSet`) when the run is entered."""


@dataclass
class InvestigationResult:
    """What a run produced: the diagnosis (None if the run failed), its status and where it was recorded."""

    question: str
    status: RunStatus
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


class Run:
    """One investigation's lifecycle: transcript, host(s) and backend, opened on entry and closed on exit.

    `transcript`: a path, None for a new file under the user state directory, or False for none.
    `host`: an opened `Host` or `HostSet`, or an async callable that opens one on entry; None for a run with no host
    (a replay). `settings`, `agents` and `registry` default to the configured settings, the installed agents and
    the default tools. `reuse`: an earlier transcript whose finished subagents are reused (resume). `executor`
    answers the tool calls and so sets the run's mode (`context.RunMode`): the tools themselves by default,
    `context.ResynthExecutor` (a re-synthesis: only pure tools run, only recorded subagents are reused, nothing new
    is started) or `models.replay.ReplayExecutor` (an exact replay: the results the transcript recorded).
    `on_evidence` is called with each result as it is recorded (default: the analysis's precompute). `notices` are recorded after `run_started`. `progress` is called with
    every event as it is recorded.
    """

    def __init__(
        self,
        *,
        inputs: RunInputs,
        backend: Backend,
        settings: Settings | None = None,
        agents: dict[str, AgentDef] | None = None,
        registry: ToolRegistry | None = None,
        transcript: str | Path | None | bool = None,
        host: Host | HostSet | HostOpener | None = None,
        progress: Callable[[Event], None] | None = None,
        reuse: Transcript | None = None,
        notices: Iterable[str] = (),
        run_id: str | None = None,
        executor: Executor | None = None,
        on_evidence: Callable[[Evidence], None] | None = precompute,
    ):
        if registry is None:
            from orchestrator.tools.registry import default_registry

            registry = default_registry()
        self.inputs = inputs
        self.backend = backend
        self.executor = executor if executor is not None else LiveExecutor()
        self.settings = settings if settings is not None else load_settings()
        self.agents = agents if agents is not None else load_agents()
        self.registry = registry
        self.run_id = run_id or uuid.uuid4().hex
        if transcript is False:
            self.transcript_path: Path | None = None
        elif transcript is None or transcript is True:
            self.transcript_path = default_path(inputs.question, self.run_id)
        else:
            self.transcript_path = Path(transcript)
        self.notices = list(notices)
        self._result: InvestigationResult | None = None
        self._host_arg = host
        self._progress = progress
        self._reuse = reuse
        self._on_evidence = on_evidence
        self._host: Host | HostSet | None = None
        self._ctx: RunContext | None = None
        self._started = 0.0
        self._entered = self._investigated = False
        self._diagnosis: Diagnosis | None = None
        self._error: str | None = None

    @property
    def result(self) -> InvestigationResult:
        """What the run produced, once the `async with` block has ended (whatever ended it): its events end with
        `run_finished`."""
        if self._result is None:
            raise RuntimeError("the Run has not finished: its result is set when the `async with` block ends")
        return self._result

    @property
    def context(self) -> RunContext:
        """The run's shared state (recorder, evidence, results, usage): there between entering and leaving."""
        if self._ctx is None:
            raise RuntimeError("the Run is not entered: use `async with Run(...) as run`")
        return self._ctx

    async def _open_host(self) -> Host | HostSet | None:
        h = self._host_arg
        if h is None or isinstance(h, HostSet):
            return h
        if hasattr(h, "aclose"):  # an opened Host
            return cast("Host", h)
        return await h()

    async def _close(self) -> None:
        """Close the host(s) and then the backend, shielded from cancellation: both are released on every path."""
        with anyio.CancelScope(shield=True):
            try:
                if self._host is not None:
                    await self._host.aclose()
            finally:
                closer = getattr(self.backend, "aclose", None)
                if closer is not None:
                    await closer()

    async def __aenter__(self) -> Run:
        if self._entered:
            raise RuntimeError("a Run runs once: make a new Run for another investigation")
        self._entered = True
        # the host is opened (and its key checked) before anything is recorded: a bad host is bad input
        try:
            opened = await self._open_host()
        except BaseException:
            await self._close()
            raise
        hosts: dict[str, Host] = {}
        if isinstance(opened, HostSet):
            # several hosts: the ones that could not be used are recorded in the inputs (gaps), the first usable
            # one is the primary that single-host tools run on
            self.inputs = self.inputs.model_copy(update={
                "hosts": opened.entries, "host": next(e.name for e in opened.entries if e.name in opened.hosts)})
            hosts = dict(opened.hosts)
        self._host = opened
        try:
            recorder = Recorder(self.run_id, self.transcript_path)
        except OSError as exc:
            await self._close()
            raise InputError(f"cannot write the transcript {self.transcript_path}: {exc.strerror or exc}; "
                             "pass a writable path to --transcript") from None
        if self._progress:
            recorder.subscribe(self._progress)
        inputs, settings, agents = self.inputs, self.settings, self.agents
        self._ctx = RunContext(run_id=self.run_id, inputs=inputs, settings=settings, recorder=recorder,
                               registry=self.registry, agents=agents, backend=self.backend,
                               host=opened.primary if isinstance(opened, HostSet) else opened, hosts=hosts,
                               spawner=spawn, executor=self.executor, on_evidence=self._on_evidence)
        self._started = time.monotonic()
        try:
            recorder.emit(RunStarted(
                run_id=self.run_id, question=inputs.question, backend=self.backend.name, host=inputs.host,
                inputs=inputs.model_dump(mode="json", exclude={"question"}),
                settings=settings.model_dump(mode="json", exclude={"anthropic_api_key"}),
                agents=sorted(agents), agent_defs={n: a.model_dump(mode="json") for n, a in agents.items()},
            ))
            for n in self.notices:
                recorder.emit(Notice(run_id=self.run_id, message=n))
            for h in inputs.hosts:
                if h.error:
                    recorder.emit(Notice(run_id=self.run_id, message=f"host {h.name} is not investigated: {h.error}"))
            if self._reuse is not None:
                load_reuse(self._ctx, self._reuse)
        except BaseException as exc:  # the block never runs: finish the run here (recorded, everything closed)
            await self.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def investigate(self) -> Diagnosis | None:
        """Run the lead (the host's read-only probes prefetched meanwhile); assemble and record its diagnosis.

        Returns the diagnosis, or None when the lead ended without one (the result's `error` says why). What the
        lead raises propagates to the `async with`, which records it (see the module's docstring)."""
        run = self.context
        if self._investigated:
            raise RuntimeError("a Run investigates once: make a new Run for another investigation")
        self._investigated = True
        runner = AgentRunner(run, self.agents["lead"], agent_id="lead", ordinal=0)
        try:
            async with prefetch(run):  # the host's read-only probes start now; their results wait for the tools
                lead = await runner.run()
        except BaseExceptionGroup as group:  # unwrap what a task group raised to its one meaningful error
            raise first_leaf(group) from None
        for note in getattr(self.backend, "drift", ()):  # a replay of a transcript an older release wrote
            run.recorder.emit(Notice(run_id=self.run_id, message=note))
        submitted = runner.ctx.outbox.get("submitted")
        if submitted is None:
            self._error = (f"the lead ended with status {lead.status} and no diagnosis: "
                           f"{lead.error or 'no reason given'}")
            return None
        diagnosis = assemble(self.inputs.question, SubmittedDiagnosis.model_validate(submitted), run)
        run.recorder.emit(DiagnosisSubmitted(run_id=self.run_id, diagnosis=diagnosis.model_dump(mode="json")))
        self._diagnosis = diagnosis
        return diagnosis

    def _outcome(self, exc: BaseException | None) -> tuple[RunStatus, str | None, BaseException | None, bool]:
        """(status, error, the exception to raise instead, whether to swallow the exception) for how the block
        ended."""
        if exc is None:
            if self._diagnosis is not None:
                return "ok", None, None, False
            return "error", self._error or "the run ended before investigate() was called", None, False
        if isinstance(exc, cancelled_exc_class()):
            return "cancelled", "the run was cancelled", None, False
        if isinstance(exc, KeyboardInterrupt):
            return "cancelled", "the run was interrupted", None, False
        if isinstance(exc, RunInterrupted):  # an interrupt carried up from a tool's task: raised as itself
            return "cancelled", "the run was interrupted", exc.original, False
        if isinstance(exc, (ReplayDivergence, FatalRunError, ModelCallError)):
            return "error", str(exc), None, True
        if isinstance(exc, Exception):
            return "error", f"{type(exc).__name__}: {exc}", None, False
        # SystemExit, or the coroutine closed by an interrupted event loop
        return "cancelled", "the run was interrupted", None, False

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool:
        run = self.context
        status, error, instead, swallow = self._outcome(exc)
        # the last line first, with no await before it: it must be written even when this coroutine is only
        # being closed (a KeyboardInterrupt that stopped the event loop), where nothing async can run
        run.recorder.emit(RunFinished(run_id=self.run_id, status=status, error=error, usage=run.total_usage(),
                                      usage_by_agent=dict(run.usage_by_agent),
                                      duration_s=round(time.monotonic() - self._started, 4)))
        run.recorder.close()
        self._result = InvestigationResult(question=self.inputs.question, status=status, diagnosis=self._diagnosis,
                                           run_id=self.run_id, transcript_path=self.transcript_path,
                                           events=list(run.recorder.events), error=error, notices=self.notices)
        if no_event_loop():
            return False  # only being closed, its event loop gone: nothing async can run, the process is ending
        await self._close()
        if instead is not None:
            raise instead from None
        return swallow
