"""Fixtures of the multi-host tests (helpers in support/fleet.py)."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from support.fleet import SICK, dead_block, write_config
from support.sshd import free_port
from support.staged_host import VARIANTS, stage_host


@pytest.fixture
def sick_variant(monkeypatch):
    base = VARIANTS["rtx-pro-6000x8"]
    monkeypatch.setitem(VARIANTS, SICK, dataclasses.replace(base, power_limit_w=450.0))
    return SICK


@pytest.fixture
def fleet(tmp_path, sshd_factory, sick_variant):  # noqa: F811
    """Three healthy twins, one with its power limit lowered, and one unreachable host, in one ssh config."""
    healthy = stage_host(tmp_path / "healthy")
    sick = stage_host(tmp_path / "sick", variant=sick_variant)
    for st in (healthy, sick):  # the engine probe reads this machine's /proc: only engines staged here (none)
        st.env["INVESTIGATE_STAGED_TAG"] = f"fleet-{uuid.uuid4().hex}"
    sshds = [sshd_factory(name=f"node{i}", env=healthy.env) for i in (1, 2, 3)]
    sshds.append(sshd_factory(name="node4", env=sick.env))
    cfg = write_config(tmp_path / "ssh_config", sshds, dead_block("node5", free_port(), sshds[0]))
    return {"sshds": sshds, "config": cfg, "names": ["node1", "node2", "node3", "node4", "node5"]}
