"""`MockToolContext`: a tool context outside any run (tests, notebooks), the way `hosts.mock.MockHost` is a host.

    ctx = MockToolContext(host=LocalHost(), inputs=RunInputs(question="why slow?", python="/usr/bin/python3"))
    out = (await execute(registry.get("python_env"), "python_env", {}, ctx)).output
    ctx.refusals    # the PolicyRefusal events a run would record

It satisfies `orchestrator.tools.base.ToolContext` and nothing more; `spawn` answers from `spawner` when given.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Iterable

from orchestrator.inputs import RunInputs
from orchestrator.events import PolicyRefusal
from orchestrator.settings import Settings
from orchestrator.tools.base import ToolFailure

if TYPE_CHECKING:
    from orchestrator.findings import AgentResult
    from orchestrator.hosts.base import Host


class MockToolContext:
    """A `ToolContext` whose host, inputs and settings are given; refusals, submissions and spawns are kept.

    `host`: the primary host; `hosts`: other hosts by name (for calls that carry `host: NAME`); `evidence`: the ids
    that count as recorded; `spawner(agent, brief)`: what `spawn` awaits. `refusals` and `submitted` collect what a
    run would record (copies made by `for_host` share them)."""

    def __init__(self, host: "Host | None" = None, *, inputs: RunInputs | None = None,
                 settings: Settings | None = None, hosts: dict[str, "Host"] | None = None, agent_id: str = "a1",
                 call_id: str = "c1", final: bool = False, evidence: Iterable[str] = (),
                 spawner: Callable[[str, str], Awaitable["AgentResult"]] | None = None) -> None:
        self._host = host
        self.inputs = inputs or RunInputs(question="q")
        self.settings = settings or Settings()
        self.hosts = dict(hosts or {})
        self.agent_id = agent_id
        self.call_id = call_id
        self.final = final
        self.evidence = set(evidence)
        self.spawner = spawner
        self.target: str | None = None
        self.refusals: list[PolicyRefusal] = []
        self.submitted: list[dict[str, Any]] = []

    def host(self) -> "Host":
        if self.target is not None:
            named = self.hosts.get(self.target)
            if named is None and self._host is not None and self._host.name == self.target:
                named = self._host
            if named is None:
                raise ToolFailure(f"no usable host named {self.target!r} in this run; hosts: "
                                  f"{', '.join(self.hosts) or 'none'}")
            return named
        if self._host is None:
            raise ToolFailure("no host is attached to this run: nothing to run on")
        return self._host

    def for_host(self, name: str) -> "MockToolContext":
        aimed = copy.copy(self)
        aimed.target = name
        return aimed

    def has_evidence(self, evidence_id: str) -> bool:
        return evidence_id in self.evidence

    def refuse(self, tool: str, subject: str, reason: str) -> None:
        self.refusals.append(PolicyRefusal(run_id="mock", agent_id=self.agent_id, call_id=self.call_id, tool=tool,
                                           subject=subject, reason=reason))

    def submit(self, result: dict[str, Any]) -> None:
        self.submitted.append(result)

    async def spawn(self, agent: str, brief: str) -> "AgentResult":
        if self.spawner is None:
            raise ToolFailure(f"no subagents in this context (asked for {agent!r})")
        return await self.spawner(agent, brief)
