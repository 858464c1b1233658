"""Interruptions with real parts: Ctrl-C on the CLI, and the GPU host's sshd dying in the middle of a run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from orchestrator.api import investigate
from orchestrator.events import AgentFinished, ToolCall, ToolResult
from orchestrator.settings import Settings
from orchestrator.transcript import read_transcript
from support.blocking import COMMAND as BLOCKING, blocking_path, wait_for


def write_agents(d):
    """A lead that starts a prong blocked on the host (a command that never returns) and a steady one."""
    d.mkdir()
    (d / "lead.md").write_text(
        "---\nname: lead\ndescription: test lead\nrole: lead\ntools: [task]\nplan:\n"
        "  - {tool: task, args: {agent: stuck, brief: query the gpus}}\n"
        "  - {tool: task, args: {agent: steady, brief: look up fp4}}\n---\nlead\n")
    (d / "stuck.md").write_text(
        "---\nname: stuck\ndescription: blocks on the host\ntools: [shell]\nplan:\n"
        f"  - {{tool: shell, args: {{command: '{BLOCKING}'}}}}\n---\nstuck\n")
    (d / "steady.md").write_text(
        "---\nname: steady\ndescription: needs no host\ntools: [knowledge_search]\nplan:\n"
        "  - {tool: knowledge_search, args: {query: fp4 tensor cores}}\n---\nsteady\n")
    return d


def test_ctrl_c_cancels_every_subagent_and_ends_the_transcript_with_a_cancelled_run(tmp_path):
    agents = write_agents(tmp_path / "agents")
    transcript = tmp_path / "t.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env["PATH"] = blocking_path(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "orchestrator.cli", "why is FP4 slow", "--offline", "--agents",
                             str(agents), "--transcript", str(transcript), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert wait_for(lambda: transcript.exists() and '"tool":"shell"' in transcript.read_text())
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    last = json.loads(transcript.read_text().splitlines()[-1])
    assert last["type"] == "run_finished" and last["status"] == "cancelled"
    t = read_transcript(transcript)
    assert {(e.agent_id, e.call_id) for e in t.of_type(ToolCall)} == {(e.agent_id, e.call_id) for e in t.of_type(ToolResult)}
    statuses = {e.agent_id: e.status for e in t.of_type(AgentFinished)}
    assert statuses["stuck-1"] == "cancelled" and statuses["lead"] == "cancelled"


@pytest.mark.ssh
@pytest.mark.skipif(shutil.which("sshd") is None and not os.path.exists("/usr/sbin/sshd"), reason="no sshd")
async def test_sshd_killed_mid_run_is_a_gap_and_the_other_prongs_finish(tmp_path, sshd_factory):  # noqa: F811
    agents = write_agents(tmp_path / "agents")
    sshd = sshd_factory(env={"PATH": blocking_path(tmp_path)})  # the blocking command is on the host's PATH

    def kill_when_the_host_is_busy(event):
        if isinstance(event, ToolCall) and event.tool == "shell":
            sshd.kill()

    result = await investigate("why is FP4 slow", host=sshd.alias, ssh_config=str(sshd.ssh_config), offline=True,
                               agents_dirs=[agents], transcript=tmp_path / "t.jsonl", progress=kill_when_the_host_is_busy,
                               settings=Settings(command_timeout_s=20))
    assert result.status == "ok", result.error
    statuses = {e.agent_id: e.status for e in result.events if isinstance(e, AgentFinished)}
    assert statuses["steady-2"] == "ok" and statuses["lead"] == "ok"
    shell = [e for e in result.events if isinstance(e, ToolResult) and e.tool == "shell"][0]
    assert shell.is_error and "lost" in shell.content.lower()
    gaps = " ".join(f"{g.what}: {g.why}" for g in result.diagnosis.gaps)
    assert "shell" in gaps and "lost" in gaps.lower()
