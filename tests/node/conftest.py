"""Fixtures for the node-health tests: a staged host (real captures, edited) run through the real LocalHost."""

from __future__ import annotations

import pytest

from orchestrator.hosts.local import LocalHost
from support.stage_node import stage_node
from support.staged_host import stage_host


@pytest.fixture
def node_host(tmp_path):
    """Factory: stage a node from a spec (see tests/support/stage_node.py); returns (staged, host)."""
    made = []

    def make(spec=None, variant="h200"):
        s = stage_host(tmp_path / f"n{len(made)}", variant=variant)
        stage_node(s, spec or {})
        made.append(s)
        return s, s.wrap(LocalHost())

    yield make
    for s in made:
        s.cleanup()
