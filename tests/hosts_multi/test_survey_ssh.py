"""A multi-host run over real sshds surveys each host in one round trip (node, engine, discovery and the Python
environment together)."""

from __future__ import annotations

from collections import defaultdict

import pytest
from support.fleet import needs_sshd, write_config

from orchestrator.api import investigate
from orchestrator.events import ToolResult
from orchestrator.hosts import multi
from orchestrator.settings import Settings

pytestmark = [pytest.mark.ssh, needs_sshd]


async def test_each_host_is_surveyed_in_one_round_trip(tmp_path, sshd_factory, monkeypatch):
    from support.staged_host import stage_host

    staged = stage_host(tmp_path / "twins")
    staged.env["INVESTIGATE_STAGED_TAG"] = "survey-twins"
    sshds = [sshd_factory(name=f"s{i}", env=staged.env) for i in (1, 2, 3)]
    cfg = write_config(tmp_path / "ssh_config", sshds)
    scripts: dict[str, list[str]] = defaultdict(list)
    real_run = multi.GatedHost.run

    async def run(self, argv, *, stdin=None, **kw):  # which probe scripts each host was sent, in order
        text = stdin or ""
        if "def run_parts(" in text:
            scripts[self.name].append("survey")
        else:
            for name, marker in (("node", "def kernel_log("), ("engine", "def scan_processes("),
                                 ("discover", "def interpreter_path("), ("pyenv", "def read_metadata(")):
                if marker in text:
                    scripts[self.name].append(name)
        return await real_run(self, argv, stdin=stdin, **kw)

    monkeypatch.setattr(multi.GatedHost, "run", run)
    result = await investigate("are my replicas the same?", host=["s1", "s2", "s3"], ssh_config=str(cfg),
                               offline=True, transcript=False, settings=Settings(power_sample_s=0.3))
    assert result.status == "ok", result.error
    for name in ("s2", "s3"):  # the fleet's hosts: one survey (python_env chained in it), nothing run again alone
        assert scripts[name] == ["survey"], (name, scripts[name])
    assert scripts["s1"].count("survey") == 1  # the primary's other agents may look again (a fresh snapshot)
    for tool in ("node_health", "engine_config", "python_env"):
        probed = {e.host for e in result.events if isinstance(e, ToolResult) and e.tool == tool and not e.is_error}
        assert probed == {"s1", "s2", "s3"}, tool
    nodes = [e.data for e in result.events if isinstance(e, ToolResult) and e.tool == "node_health" and e.data]
    assert all(len(d["gpus"]) == 8 for d in nodes)
