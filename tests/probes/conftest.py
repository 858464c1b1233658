"""Fixtures for the probe tests: staged GPU hosts run through the real LocalHost."""

from __future__ import annotations

import pytest

from orchestrator.hosts.local import LocalHost
from support.staged_host import stage_host


@pytest.fixture
def staged(tmp_path):
    """Factory: stage_host(tmp_path, ...) and a LocalHost running under its environment."""

    def make(variant="rtx-pro-6000x8", **kw):
        s = stage_host(tmp_path, variant=variant, **kw)
        return s, s.wrap(LocalHost())

    return make
