"""Slurm as host source and transport, against a real Slurm cluster on this machine (tests/support/slurm.py).

Four nodes (gpu1..gpu4, all this machine): gpu2 carries a GPU power limit lowered to 450 W (its twins 600 W),
gpu4 is drained by the administrator with a reason. Probes run through real `srun` job steps.
"""

from __future__ import annotations

import re
import subprocess
import uuid

import pytest
from support.fleet import SICK
from support.slurm import missing, start_cluster
from support.staged_host import VARIANTS, stage_host

from orchestrator.api import InputError, investigate
from orchestrator.events import ToolCall, ToolResult
from orchestrator.hosts.errors import HostConfigError
from orchestrator.hosts.slurm import (
    SlurmHost,
    expand_nodes,
    job_env,
    parse_scontrol_oneliner,
    show_job,
    slurm_entries,
)
from orchestrator.settings import Settings

REASON = "GPU 3 Xid 79 fallen off the bus"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = missing()
    if why:
        pytest.skip(why)
    c = start_cluster(tmp_path_factory.mktemp("slurm"), nodes=4)
    c.scontrol("update", "NodeName=gpu4", "State=DRAIN", f"Reason={REASON}")
    yield c
    c.stop()


@pytest.fixture
def staged(tmp_path, monkeypatch, cluster):
    """Job steps get the caller's PATH, HOME and cache variables (srun --export=NAMES): stage them, with nvidia-smi per
    node."""
    import dataclasses

    monkeypatch.setitem(VARIANTS, SICK, dataclasses.replace(VARIANTS["rtx-pro-6000x8"], power_limit_w=450.0))
    healthy = stage_host(tmp_path / "healthy")
    sick = stage_host(tmp_path / "sick", variant=SICK)
    # the engine probe reads /proc of this machine, which other tests share: see only engines staged here (none)
    healthy.env["INVESTIGATE_STAGED_TAG"] = f"slurm-{uuid.uuid4().hex}"
    disp = tmp_path / "dispatch"
    disp.mkdir()
    smi = disp / "nvidia-smi"
    # each job step knows its node (SLURMD_NODENAME): gpu2's GPUs are the sick ones
    smi.write_text(f'#!/bin/sh\ncase "$SLURMD_NODENAME" in gpu2) exec {sick.bin}/nvidia-smi "$@";; '
                   f'*) exec {healthy.bin}/nvidia-smi "$@";; esac\n')
    smi.chmod(0o755)
    for k, v in healthy.env.items():
        monkeypatch.setenv(k, f"{disp}:{v}" if k == "PATH" else v)
    for k, v in cluster.env().items():
        monkeypatch.setenv(k, v)
    for k in ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NODELIST"):
        monkeypatch.delenv(k, raising=False)
    return healthy


def test_scontrol_one_liner_keeps_values_with_spaces():
    line = ("NodeName=gpu4 Arch=x86_64 Gres=gpu:h200:8 State=IDLE+DRAIN OS=Linux 6.1 #1 SMP Reason=GPU 3 Xid 79 "
            "[root@2026-11-30T19:13:29] Comment=(null)\n")
    (rec,) = parse_scontrol_oneliner(line)
    assert rec["State"] == "IDLE+DRAIN" and rec["OS"] == "Linux 6.1 #1 SMP" and rec["Comment"] == "(null)"
    assert rec["Reason"] == "GPU 3 Xid 79 [root@2026-11-30T19:13:29]"


def test_srun_argv_inside_and_outside_an_allocation():
    out = SlurmHost("gpu7").srun_argv(["nvidia-smi", "-q", "-x"], 60)
    assert out[:1] == ["srun"] and "--overlap" not in out and "--immediate=5" in out
    assert out[out.index("-w") + 1] == "gpu7" and "-N1" in out and "-n1" in out
    assert out[out.index("--") + 1:] == ["timeout", "-k", "2", "60", "nvidia-smi", "-q", "-x"]
    inside = SlurmHost("gpu7", job_id="42").srun_argv(["true"], 10)
    assert inside[1:4] == ["--jobid", "42", "--overlap"] and "--immediate=5" not in inside
    with pytest.raises(HostConfigError):
        SlurmHost("gpu[1-2]")


async def test_nodelists_and_partitions_expand_through_scontrol_and_sinfo(staged):
    assert await expand_nodes("gpu") == ["gpu1", "gpu2", "gpu3", "gpu4"]
    assert await expand_nodes("gpu[2-3]") == ["gpu2", "gpu3"]
    with pytest.raises(HostConfigError, match="no such node"):
        await expand_nodes("gpu[7-8]")
    with pytest.raises(HostConfigError, match="neither a nodelist nor a partition"):
        await expand_nodes("gpu; rm -rf /")
    with pytest.raises(HostConfigError, match="not inside a Slurm allocation"):
        await expand_nodes(".")
    entries = await slurm_entries("gpu")
    assert [e.error is None for e in entries] == [True, True, True, False]
    assert REASON in entries[3].error and "DRAIN" in entries[3].error


async def test_commands_run_as_job_steps_on_the_named_node(staged):
    h = await SlurmHost("gpu3").connect()
    res = await h.run(["sh", "-c", 'echo "$SLURMD_NODENAME $SLURM_STEP_ID"'])
    assert res.ok and res.stdout.split()[0] == "gpu3", res
    assert (await h.run(["python3", "-"], stdin="print(6 * 7)\n")).stdout.strip() == "42"
    data = await h.read_file(str(staged.bin / "nvidia-smi.json"), max_bytes=20)
    assert data.startswith(b"{") and len(data) == 20
    with pytest.raises(FileNotFoundError):
        await h.read_file("/nonexistent/file")
    assert str(staged.bin / "nvidia-smi") in await h.find(str(staged.bin), "nvidia-*")
    slow = await h.run(["sleep", "30"], timeout_s=1)
    assert slow.timed_out


async def test_inside_an_allocation_steps_overlap_the_job(staged, cluster, monkeypatch):
    out = cluster.run("salloc", "--no-shell", "-N1", "-w", "gpu1", "--immediate=10", check=False).stderr
    m = re.search(r"Granted job allocation (\d+)", out)
    assert m, out
    job = m.group(1)
    try:
        monkeypatch.setenv("SLURM_JOB_ID", job)
        monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu1")
        (entry,) = await slurm_entries(".")
        assert entry.name == "gpu1" and entry.detail == {"job_id": job}
        h = await SlurmHost("gpu1", job_id=job).connect()
        res = await h.run(["sh", "-c", "echo $SLURM_JOB_ID"])
        assert res.stdout.strip() == job
        # the allocation and the job's environment are evidence: allowlisted SLURM_* only, nothing else
        alloc = await show_job(job)
        assert alloc["JobId"] == job and alloc["NodeList"] == "gpu1" and "gres/gpu" not in alloc.get("Command", "")
        env = job_env({"SLURM_JOB_ID": job, "SLURM_JOB_NODELIST": "gpu1", "SLURM_GPUS_PER_NODE": "8",
                       "HF_TOKEN": "hf_secret", "SLURM_JOB_PASSWORD_X": "x", "PATH": "/bin"})
        assert env == {"SLURM_GPUS_PER_NODE": "8", "SLURM_JOB_ID": job, "SLURM_JOB_NODELIST": "gpu1"}
    finally:
        subprocess.run(["scancel", job], env={**cluster.env(), "PATH": "/usr/bin:/bin"}, check=False)


async def test_investigation_through_slurm_names_the_sick_node_and_the_drained_one(staged, tmp_path):
    result = await investigate("why is one of my replicas slower?", slurm="gpu", offline=True,
                               transcript=tmp_path / "slurm.jsonl", settings=Settings(power_sample_s=0.3))
    assert result.status == "ok", result.error
    d = result.diagnosis
    probed = {e.host for e in result.events if isinstance(e, ToolResult) and e.tool == "node_health"
              and not e.is_error}
    assert probed == {"gpu1", "gpu2", "gpu3"}
    # the drained node: a gap with the reason, and a cause in the diagnosis's own words
    assert any(g.what == "host gpu4" and REASON in g.why for g in d.gaps), d.gaps
    drained = [c for c in d.causes if c.title.startswith("Slurm node gpu4 is drained")]
    assert drained and REASON in drained[0].title and "State=RESUME" in " ".join(r.action for r in d.recommendations)
    # the fleet comparison over the three usable nodes names gpu2 and nothing else
    (t,) = d.fleet
    assert [o.host for o in t.outliers] == ["gpu2"], [(r.fact, r.values) for r in t.rows]
    assert any("gpu2 is the odd host" in c.title for c in d.causes)
    # the Slurm evidence: node state with GRES and the drain reason
    slurm = [e for e in result.events if isinstance(e, ToolResult) and e.tool == "slurm_nodes"]
    assert slurm and "gpu:h200:8" in slurm[0].content and REASON in slurm[0].content
    # every host call went to a named node
    calls = [e for e in result.events if isinstance(e, ToolCall) and e.tool == "node_health"]
    assert {c.args.get("host") for c in calls} >= {"gpu1", "gpu2", "gpu3"}


async def test_bad_slurm_spec_is_bad_input(staged):
    with pytest.raises(InputError, match="no such node"):
        await investigate("q", slurm="gpu[9]", offline=True, transcript=False)
