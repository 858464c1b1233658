"""Issue 23, "also broken" (Slurm): srun's default --export=ALL put this machine's ANTHROPIC_API_KEY and AWS secret
into every job step on the cluster's nodes. A job step now gets the variables the probes need and Slurm's own only.

Against a real Slurm cluster on loopback (tests/support/slurm.py: munged, slurmctld, slurmd per node); skipped only
where the Slurm packages are not installed.
"""

from __future__ import annotations

import pytest

from orchestrator.hosts.slurm import SlurmHost, step_environ
from orchestrator.settings import Settings
from support.slurm import missing, start_cluster

PLANTED = {"ANTHROPIC_API_KEY": "sk-ant-api03-PLANTEDslurmKEY0123456789", "AWS_SECRET_ACCESS_KEY": "PLANTEDawsSECRETslurm/0123",
           "HF_TOKEN": "hf_PLANTEDslurmTOKEN0123456789", "GITHUB_TOKEN": "ghp_PLANTEDslurm0123456789"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = missing()
    if why:
        pytest.skip(why)
    c = start_cluster(tmp_path_factory.mktemp("slurm"), nodes=2)
    yield c
    c.stop()


async def test_a_job_step_gets_only_what_the_probes_need(cluster, monkeypatch, tmp_path):
    for k, v in {**cluster.env(), **PLANTED, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}.items():
        monkeypatch.setenv(k, v)
    for k in ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NODELIST"):
        monkeypatch.delenv(k, raising=False)
    host = await SlurmHost("gpu1", Settings()).connect()
    res = await host.run(["cat", "/proc/self/environ"], timeout_s=60)
    assert res.ok, res.stderr
    step = dict(item.partition("=")[::2] for item in res.stdout.split("\0") if "=" in item)
    for k, v in PLANTED.items():
        assert k not in step and v not in res.stdout, k
    # what the probes need still arrives: programs on PATH, HOME, where caches were moved
    assert step.get("PATH") and step.get("HOME") and step.get("TORCHINDUCTOR_CACHE_DIR") == str(tmp_path / "inductor")
    assert step.get("SLURMD_NODENAME") == "gpu1"
    # srun itself ran without them too
    assert not set(PLANTED) & set(step_environ())
