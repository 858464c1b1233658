"""Several hosts in one investigation over real sshds: a sick twin named, an unreachable one a gap, replay exact."""

from __future__ import annotations

import re

import pytest
from support.fleet import dead_block, needs_sshd, write_config

from orchestrator.api import InputError, investigate, replay
from orchestrator.events import ToolResult
from orchestrator.hosts.base import HostError
from orchestrator.settings import Settings

pytestmark = [pytest.mark.ssh, needs_sshd]

QUESTION = "why is node4 slower than its twins?"


def _words(d) -> str:
    """The diagnosis's own words (titles, explanations, verdict, recommendations), not evidence excerpts."""
    return " ".join([d.verdict, d.bound_reasoning] + [f"{c.title} {c.explanation}" for c in d.causes]
                    + [r.action for r in d.recommendations])


async def test_fleet_names_the_sick_twin_and_records_the_unreachable_host_as_a_gap(fleet, tmp_path):
    path = tmp_path / "fleet.jsonl"
    result = await investigate(QUESTION, host=fleet["names"], ssh_config=str(fleet["config"]), offline=True,
                               transcript=path, settings=Settings(power_sample_s=0.3, hosts_in_flight=2))
    assert result.status == "ok", result.error
    d = result.diagnosis
    # each usable host was probed, its evidence labelled with it
    for tool in ("node_health", "python_env"):
        probed = {e.host for e in result.events if isinstance(e, ToolResult) and e.tool == tool and not e.is_error
                  and e.data and e.data.get("available", True)}
        assert probed == {"node1", "node2", "node3", "node4"}, tool
    # the unreachable host is a gap, the run still succeeded
    assert any(g.what.startswith("host node5") and re.search(r"connect|refused", g.why) for g in d.gaps), d.gaps
    # the comparison names the staged outlier, and nothing else
    assert d.fleet and len(d.fleet) == 1
    t = d.fleet[0]
    assert sorted(t.hosts) == ["node1", "node2", "node3", "node4"]
    assert [o.host for o in t.outliers] == ["node4"]
    assert all(r.odd == ["node4"] for r in t.rows), [(r.fact, r.odd) for r in t.rows]
    assert any(re.search(r"power", r.label) and r.values["node4"] == "450" and r.majority == "600" for r in t.rows)
    words = _words(d)
    assert re.search(r"node4 is the odd host", words)
    assert re.search(r"450 where the others have 600", words)
    assert re.search(r"nvidia-smi -i [\d,]+ -pl 600", words)
    for other in ("node1", "node2", "node3"):
        assert f"{other} is the odd" not in words
    md = d._repr_markdown_()
    assert "Fleet comparison" in md and "node4" in md

    # the replay needs no host and gives the same diagnosis, fleet table included
    for s in fleet["sshds"]:
        s.stop()
    again = await replay(path)
    assert again.status == "ok", again.error
    assert again.diagnosis.model_dump(exclude={"usage"}) == d.model_dump(exclude={"usage"})


async def test_identical_hosts_have_no_outlier(tmp_path, sshd_factory):
    from support.staged_host import stage_host

    staged = stage_host(tmp_path / "twins")
    staged.env["INVESTIGATE_STAGED_TAG"] = "twins-only"
    sshds = [sshd_factory(name=f"twin{i}", env=staged.env) for i in (1, 2)]
    cfg = write_config(tmp_path / "ssh_config", sshds)
    result = await investigate("are my replicas the same?", host=["twin1", "twin2"], ssh_config=str(cfg),
                               offline=True, transcript=False, settings=Settings(power_sample_s=0.3))
    assert result.status == "ok", result.error
    d = result.diagnosis
    assert d.fleet and d.fleet[0].outliers == [] and d.fleet[0].rows == []
    assert d.fleet[0].identical > 10
    assert "odd host" not in _words(d)


async def test_every_host_unreachable_is_bad_input(tmp_path, sshd_factory):
    from support.sshd import free_port

    like = sshd_factory(name="alive")
    cfg = tmp_path / "ssh_config"
    cfg.write_text(dead_block("gone1", free_port(), like) + dead_block("gone2", free_port(), like))
    with pytest.raises(HostError, match=r"none of the 2 hosts can be used.*gone1.*gone2"):
        await investigate("q", host=["gone1", "gone2"], ssh_config=str(cfg), offline=True, transcript=False)


async def test_host_sources_exclude_each_other(tmp_path):
    f = tmp_path / "hosts.txt"
    f.write_text("a\nb\n")
    with pytest.raises(InputError, match="exclude each other"):
        await investigate("q", host=["a", "b"], hosts_file=f, offline=True, transcript=False)


def test_cli_several_hosts_exit_0_with_the_gap_and_show_renders_the_table(fleet, tmp_path):
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(repo), "INVESTIGATE_POWER_SAMPLE_S": "0.3"}
    path = tmp_path / "cli.jsonl"
    args = [sys.executable, "-m", "orchestrator.cli", "why is node4 slow?", "--ssh-config", str(fleet["config"]),
            "--offline", "--json", "--no-progress", "--transcript", str(path)]
    for h in ("node1", "node2", "node4", "node5"):
        args += ["--host", h]
    r = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert any(g["what"] == "host node5" for g in d["gaps"])
    assert d["fleet"][0]["hosts"] == ["node1", "node2", "node4"]
    assert [o["host"] for o in d["fleet"][0]["outliers"]] == ["node4"]
    shown = subprocess.run([sys.executable, "-m", "orchestrator.cli", "show", str(path)], capture_output=True,
                           text=True, env=env, timeout=120)
    assert shown.returncode == 0 and "Fleet comparison" in shown.stdout and "node4: 450" in shown.stdout, shown.stdout


async def test_unknown_host_key_is_a_gap_and_hosts_open_within_the_bound(tmp_path, sshd_factory):
    from orchestrator.hosts.multi import entries_from_dests, open_hosts

    ok = [sshd_factory(name=f"ok{i}") for i in range(3)]
    stranger = sshd_factory(name="stranger", trust=False)  # its key is in no known_hosts
    cfg = write_config(tmp_path / "ssh_config", ok + [stranger])
    hs = await open_hosts(entries_from_dests(["ok0", "stranger", "ok1", "ok2"]), ssh_config=str(cfg),
                          settings=Settings(hosts_in_flight=2))
    try:
        assert list(hs.hosts) == ["ok0", "ok1", "ok2"] and hs.primary is hs.hosts["ok0"]
        err = {e.name: e.error for e in hs.entries}
        assert err["ok0"] is None and re.search(r"key|known", err["stranger"], re.IGNORECASE), err
        assert hs.gate.peak <= 2
        res = await hs.hosts["ok1"].run(["echo", "hi"])
        assert res.stdout.strip() == "hi"
    finally:
        await hs.aclose()
