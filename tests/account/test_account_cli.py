"""`investigate --sample-s`: a bad window is one line and exit 2 before anything runs; a good one reaches the account
probe on the host (a staged host behind a real sshd), and the account is in the transcript with its numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.cli import investigate, one_line
from support.stagers import stage

from orchestrator.events import ToolResult
from orchestrator.transcript import read_transcript


@pytest.mark.parametrize("value", ["0", "-1", "61"])
def test_a_window_out_of_range_is_bad_input(tmp_path, value):
    line = one_line(investigate("why slow?", "--offline", "--no-progress", "--sample-s", value, tmp_path=tmp_path))
    assert "--sample-s" in line and "more than 0 and at most 60 seconds" in line


@pytest.mark.ssh
@pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="OpenSSH sshd not installed")
def test_the_window_reaches_the_probe_and_the_account_leads_the_diagnosis(tmp_path, sshd_factory):
    ctx = stage(tmp_path, tmp_path / "host", {
        "gpu": {"model": "h100", "count": 1},
        "account": {"cpus": 32, "gpus": [{"busy": [20, 25, 18, 22]}], "processes": [
            {"argv": ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen2.5-7B-Instruct"],
             "gpus": [0], "threads": [{"comm": "python3", "cpu": 1.0, "state": "R"}]}]}})
    try:
        sshd = sshd_factory(env=ctx.env)
        out = tmp_path / "run.jsonl"
        proc = investigate("why is throughput low?", "--host", sshd.alias, "--ssh-config", str(sshd.ssh_config),
                           "--offline", "--no-progress", "--json", "--sample-s", "0.7", "--transcript", str(out),
                           tmp_path=tmp_path, timeout=300)
    finally:
        ctx.close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    d = json.loads(proc.stdout)
    assert d["bound"] == "latency" and "GPU busy 2" in d["verdict"], d["verdict"]
    accounts = [e for e in read_transcript(Path(out)).of_type(ToolResult) if (e.data or {}).get("kind") == "resource_account"]
    assert accounts, "no resource_account result in the transcript"
    data = accounts[0].data
    assert 0.6 <= data["window_s"] <= 1.5, data["window_s"]
    assert data["processes"][0]["threads"][0]["cpu_pct"] >= 85
    assert "gpu 0: busy 2" in accounts[0].content  # the numbers the model-driven mode reads
