"""The autotune-cache inventory reads the places a serving process's environment names only as that process could
read them: another Unix user's fake vLLM whose VLLM_TUNED_CONFIG_FOLDER is a directory only root may enter gets
nothing of it listed or read into root's transcript; its own folder is read as before."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from orchestrator.hosts.ssh import SshHost
from orchestrator.prongs.autotune.probe import collect_autotune_caches
from orchestrator.settings import Settings
from support.tenant import stage

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")

CANARY = "ROOT-TUNED-CONFIG-CANARY-3e1f"
NAME = "E=8,N=128,device_name=NVIDIA_H200.json"


@pytest.mark.parametrize("owner", ["root_only", "tenant"])
async def test_a_local_users_server_env_lists_and_reads_nothing_of_roots_directory(owner, sshd_factory):
    s = stage(uuid.uuid4().hex)
    try:
        folder = (s.root_only if owner == "root_only" else s.mine) / "tuned"
        folder.mkdir()
        (folder / NAME).write_text(json.dumps({"1": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128,
                                                     "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 3}},
                                              indent=1).replace("\n}", f',\n"note": "{CANARY}"\n}}', 1))
        os.chmod(folder / NAME, 0o644)
        if owner == "tenant":
            s.give(folder)
            s.give(folder / NAME)
        s.fake_server("--model", "x", env={"VLLM_TUNED_CONFIG_FOLDER": str(folder)})
        host = await SshHost(sshd_factory(env={"INVESTIGATE_STAGED_TAG": s.tag}).target(), Settings()).connect()
        try:
            report = await collect_autotune_caches(host, None, "NVIDIA H200")
        finally:
            await host.aclose()
    finally:
        s.stop()
    assert report.available, report.reason
    dumped = report.model_dump_json()
    locs = [loc for loc in report.locations if loc.path == str(folder)]
    assert locs, [loc.path for loc in report.locations]
    if owner == "root_only":
        assert NAME not in dumped and CANARY not in dumped
        assert not locs[0].exists and locs[0].files == 0
    else:  # the tenant's own folder: listed and read
        assert locs[0].exists and locs[0].files == 1
        assert any(f.path.endswith(NAME) for f in report.files), report.files
