"""Run-wide and per-agent state handed to the loop and to tools.

`RunContext` is what every agent of one run shares (settings, recorder, evidence, host, registry, backend, usage);
`AgentContext` is one agent's view of it, plus the tool call being executed when a tool runs.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Literal, Protocol

from orchestrator.errors import ToolFailure
from orchestrator.evidence import EvidenceStore
from orchestrator.findings import AgentResult
from orchestrator.inputs import RunInputs
from orchestrator.messages import Usage
from orchestrator.settings import Settings

if TYPE_CHECKING:
    from orchestrator.agentdefs import AgentDef
    from orchestrator.hosts.base import Host
    from orchestrator.evidence import Evidence
    from orchestrator.messages import ToolUseBlock
    from orchestrator.models.base import Backend
    from orchestrator.tools.base import ExecutedCall, ToolRegistry
    from orchestrator.transcript import Recorder


RunMode = Literal["live", "replay", "resynth"]
"""How a run answers its tool calls, the one switch of a replay: `live` runs every tool; `replay` (an exact replay)
answers each call with the result the transcript recorded and starts again the subagents it started; `resynth` (a
re-synthesis) runs only the tools that reach no host, network or GPU (`Tool.acts` False) and starts no subagent
the transcript has no finished result for. A replay of either kind never acts."""


class Executor(Protocol):
    """Answers each tool call of a run: runs it (`live`, the loop's call of the tool) or, in an exact replay
    (orchestrator.models.replay.ReplayExecutor), hands back the result the transcript recorded."""

    @property
    def mode(self) -> RunMode: ...

    async def answer(self, agent_id: str, use: "ToolUseBlock",
                     live: Callable[[], Awaitable["ExecutedCall"]]) -> "ExecutedCall": ...


class LiveExecutor:
    """Every tool call runs: the executor of an investigation and of a resume."""

    mode: RunMode = "live"

    async def answer(self, agent_id: str, use: "ToolUseBlock",
                     live: Callable[[], Awaitable["ExecutedCall"]]) -> "ExecutedCall":
        return await live()


class ResynthExecutor(LiveExecutor):
    """A re-synthesis: only the tools that act on nothing run (the loop refuses the others); the recorded subagents'
    results stand in for the ones the run would start."""

    mode: RunMode = "resynth"


Spawner = Callable[["AgentContext", str, str], Awaitable[AgentResult]]
"""(calling agent's context, subagent name, brief) -> the subagent's result."""


@dataclass
class CallInfo:
    """The tool call being executed."""

    call_id: str
    evidence_id: str
    turn: int
    child_ordinal: int | None = None
    """Ordinal reserved for the subagent a `task` call starts."""
    host: str | None = None
    """The host this call targets (a tool call's `host` argument in a multi-host run); None: the primary."""


@dataclass
class RunContext:
    run_id: str
    inputs: RunInputs
    settings: Settings
    recorder: "Recorder"
    registry: "ToolRegistry"
    agents: dict[str, "AgentDef"]
    backend: Backend
    host: "Host | None" = None
    """The primary host: what single-host tools run on."""
    hosts: dict[str, "Host"] = field(default_factory=dict)
    """Every usable host of a multi-host run by name (the primary among them); empty for a one-host run."""
    evidence: EvidenceStore = field(default_factory=EvidenceStore)
    results: dict[str, AgentResult] = field(default_factory=dict)
    """Finished agents' results by agent id."""
    usage_by_agent: dict[str, Usage] = field(default_factory=dict)
    reuse: dict[str, AgentResult] = field(default_factory=dict)
    """Results of finished subagents to reuse instead of re-running them (resume), by agent id."""
    reuse_events: dict[str, list[Any]] = field(default_factory=dict)
    """The recorded events of each reusable subagent, copied into the new transcript when reused."""
    spawner: "Spawner | None" = None
    """How a `task` call starts a subagent (orchestrator.fanout.spawn; the run hands it in)."""
    executor: Executor = field(default_factory=LiveExecutor)
    """What answers the tool calls, and so whether the run acts (`RunMode`): the live tools, the pure tools only (a
    re-synthesis), or the transcript of an exact replay. A transcript is evidence to display, never a plan to
    execute."""
    on_evidence: Callable[["Evidence"], None] | None = None
    """Called with each result as it is recorded, while the other calls are still out: the run hands in the
    analysis's precompute (`orchestrator.analysis.precompute`), so a fleet comparison waiting for its slowest host
    finds the others' facts ready."""
    _ordinals: itertools.count = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def question(self) -> str:
        return self.inputs.question

    def view(self) -> "RunView":
        """What a model may read of this run (a backend's `model_for` gets this, not the run)."""
        return RunView(self)

    def next_ordinal(self) -> int:
        return next(self._ordinals)

    def add_usage(self, agent_id: str, usage: Usage) -> None:
        with self._lock:
            self.usage_by_agent[agent_id] = self.usage_by_agent.get(agent_id, Usage()) + usage

    def total_usage(self) -> Usage:
        total = Usage()
        for u in self.usage_by_agent.values():
            total = total + u
        return total

    def run_budget_exceeded(self, next_tokens: int = 0, next_usd: float = 0.0) -> str | None:
        """Which run-wide budget is spent, or would be by `next_tokens`/`next_usd` more, if any."""
        s = self.settings
        if s.run_budget_tokens is None and s.run_budget_usd is None:
            return None
        total = self.total_usage()
        if s.run_budget_tokens is not None and (total.total_tokens >= s.run_budget_tokens
                                                or total.total_tokens + next_tokens > s.run_budget_tokens):
            return f"run token budget of {s.run_budget_tokens} spent"
        if s.run_budget_usd is not None and (total.cost_usd >= s.run_budget_usd
                                             or total.cost_usd + next_usd > s.run_budget_usd):
            return f"run cost budget of ${s.run_budget_usd:g} spent"
        return None


@dataclass
class AgentContext:
    run: RunContext
    agent_id: str
    defn: "AgentDef"
    ordinal: int
    parent_id: str | None = None
    tool_names: list[str] = field(default_factory=list)
    call: CallInfo | None = None
    final: bool = False
    """True during the agent's forced "report what you have" turn."""
    outbox: dict[str, Any] = field(default_factory=dict)
    """Shared with per-call copies: the submit tools put the agent's result here (`submitted`)."""
    _evidence_n: itertools.count = field(default_factory=lambda: itertools.count(1))

    def next_evidence_id(self) -> str:
        return f"ev-{self.ordinal}.{next(self._evidence_n)}"

    def for_call(self, call: CallInfo) -> "AgentContext":
        return replace(self, call=call)

    # --- the ToolContext a tool sees (orchestrator.tools.base.ToolContext) ---------------------------------------

    @property
    def inputs(self) -> RunInputs:
        return self.run.inputs

    @property
    def settings(self) -> Settings:
        return self.run.settings

    def host(self) -> "Host":
        target = self.call.host if self.call is not None else None
        if target is not None:
            host = self.run.hosts.get(target)
            if host is None:
                names = ", ".join(self.run.hosts) or "none"
                raise ToolFailure(f"no usable host named {target!r} in this run; hosts: {names}")
            return host
        if self.run.host is None:
            raise ToolFailure("no host is attached to this run: nothing to run on")
        return self.run.host

    def for_host(self, name: str) -> "AgentContext":
        call = self.call or CallInfo(call_id="", evidence_id="", turn=0)
        return replace(self, call=replace(call, host=name))

    def has_evidence(self, evidence_id: str) -> bool:
        return evidence_id in self.run.evidence

    def refuse(self, tool: str, subject: str, reason: str) -> None:
        from orchestrator.events import PolicyRefusal

        self.run.recorder.emit(PolicyRefusal(run_id=self.run.run_id, agent_id=self.agent_id,
                                             call_id=self.call.call_id if self.call else "", tool=tool,
                                             subject=subject, reason=reason))

    def submit(self, result: dict[str, Any]) -> None:
        self.outbox["submitted"] = result

    async def spawn(self, agent: str, brief: str) -> AgentResult:
        """Run subagent `agent` through the run's spawner (orchestrator.fanout.spawn, handed in by the run: the
        context never imports the dispatch that imports the loop that imports it)."""
        if self.run.spawner is None:
            raise ToolFailure("this run starts no subagents")
        return await self.run.spawner(self, agent, brief)


class RunView:
    """What a model of the run receives besides its messages: the run's inputs, the evidence recorded so far and
    the results of the agents that finished, read-only (an offline model derives its answers from these). The
    settings, the hosts, the recorder and the registry are not a model's to reach."""

    __slots__ = ("_run",)

    def __init__(self, run: RunContext):
        self._run = run

    @property
    def inputs(self) -> RunInputs:
        return self._run.inputs

    @property
    def question(self) -> str:
        return self._run.inputs.question

    def evidence(self, agent_id: str | None = None) -> list["Evidence"]:
        """Every piece of evidence recorded so far, or one agent's."""
        store = self._run.evidence
        return store.all() if agent_id is None else store.by_agent(agent_id)

    def results(self) -> list[AgentResult]:
        """The results of the agents that finished, in the order they finished."""
        return list(self._run.results.values())
