"""Shared doubles for the security tests: a recording context around a real host."""

from __future__ import annotations

from orchestrator.context import AgentContext, CallInfo, RunContext, RunInputs
from orchestrator.settings import Settings
from orchestrator.tools.base import ToolRegistry


class ListRecorder:
    def __init__(self):
        self.events = []

    def emit(self, event):
        self.events.append(event)


class CountingHost:
    """Delegates to a real host, remembering every argv and stdin that would reach it."""

    def __init__(self, host):
        self.inner, self.name, self.calls = host, host.name, []

    async def run(self, argv, **kw):
        self.calls.append((list(argv), kw.get("stdin")))
        return await self.inner.run(argv, **kw)

    async def read_file(self, path, **kw):
        self.calls.append((["<read_file>", path], None))
        return await self.inner.read_file(path, **kw)

    async def find(self, root, pattern="*", **kw):
        self.calls.append((["<find>", root, pattern], None))
        return await self.inner.find(root, pattern, **kw)


def make_ctx(host, *, python: str | None = None, settings: Settings | None = None) -> AgentContext:
    from orchestrator.tools.registry import default_registry

    registry: ToolRegistry = default_registry()
    run = RunContext(run_id="run-1", inputs=RunInputs(question="q", python=python), settings=settings or Settings(),
                     recorder=ListRecorder(), registry=registry, agents={}, backend=None, host=host)  # type: ignore[arg-type]
    ctx = AgentContext(run=run, agent_id="a1", defn=None, ordinal=1, tool_names=registry.names())  # type: ignore[arg-type]
    return ctx.for_call(CallInfo(call_id="c1", evidence_id="ev-1.1", turn=1))
