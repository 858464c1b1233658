"""Shared doubles for the security tests: a recording context around a real host."""

from __future__ import annotations

from orchestrator.inputs import RunInputs
from orchestrator.settings import Settings
from orchestrator.tools.mock import MockToolContext
from orchestrator.tools.registry import default_registry

REGISTRY = default_registry()
"""Every tool, for calling one by name through `execute`."""


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


def make_ctx(host, *, python: str | None = None, settings: Settings | None = None) -> MockToolContext:
    return MockToolContext(host, inputs=RunInputs(question="q", python=python), settings=settings)
