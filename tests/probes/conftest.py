"""Fixtures for the probe tests: staged GPU hosts run through the real LocalHost."""

from __future__ import annotations

import pytest

from orchestrator.hosts.base import CommandResult
from orchestrator.hosts.local import LocalHost
from support.staged_host import stage_host


class CountingHost:
    """Passes everything to the wrapped host and counts round trips (run, read_file, find)."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.calls: list[list[str]] = []

    async def run(self, argv, *, stdin=None, timeout_s=60.0, max_output=1_000_000) -> CommandResult:
        self.calls.append(list(argv))
        return await self.inner.run(argv, stdin=stdin, timeout_s=timeout_s, max_output=max_output)

    async def read_file(self, path, *, max_bytes=1_000_000):
        self.calls.append(["read_file", path])
        return await self.inner.read_file(path, max_bytes=max_bytes)

    async def find(self, root, pattern="*", *, max_results=10_000):
        self.calls.append(["find", root])
        return await self.inner.find(root, pattern, max_results=max_results)

    async def aclose(self):
        await self.inner.aclose()


@pytest.fixture
def staged(tmp_path):
    """Factory: stage_host(tmp_path, ...) and a LocalHost running under its environment."""

    def make(variant="rtx-pro-6000x8", **kw):
        s = stage_host(tmp_path, variant=variant, **kw)
        return s, s.wrap(LocalHost())

    return make
