"""NCCL's configuration files are read as the serving process could read them (the prelude's reader with its
credentials): a local user's fake vLLM (`invtest-tenant`) whose NCCL_CONF_FILE names root's 0600 file, or the
tenant's link to it, gets nothing of it into root's report (NCCL in that process could not have read it either);
the tenant's own file is read, its known settings only."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from orchestrator.hosts.ssh import SshHost
from orchestrator.prongs.settings_audit.probe import collect_settings
from orchestrator.settings import Settings
from support.tenant import stage

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")

CANARY = "rootcanary9e4"


async def test_a_local_users_nccl_conf_file_gets_no_root_file_read(sshd_factory):
    s = stage(uuid.uuid4().hex)
    try:
        secret = s.root_only / "nccl.conf"
        secret.write_text(f"NCCL_SOCKET_IFNAME={CANARY}\nNCCL_P2P_DISABLE=1\n")
        os.chmod(secret, 0o600)
        link = s.mine / "nccl.conf"
        os.symlink(secret, link)
        s.give(link)
        own = s.mine / "own.conf"
        own.write_text("NCCL_ALGO=Tree\nNCCL_TENANT_NOTE=x\n")
        s.give(own)
        s.fake_server("--model", "m", "--port", "18041", env={"NCCL_CONF_FILE": str(secret)})
        s.fake_server("--model", "m", "--port", "18042", env={"NCCL_CONF_FILE": str(link)})
        s.fake_server("--model", "m", "--port", "18043", env={"NCCL_CONF_FILE": "own.conf"})  # relative to its cwd
        sshd = sshd_factory(env={"INVESTIGATE_STAGED_TAG": s.tag})
        host = await SshHost(sshd.target(), Settings()).connect()
        try:
            rep = await collect_settings(host)
        finally:
            await host.aclose()
    finally:
        s.stop()
    assert CANARY not in rep.model_dump_json()
    by_conf = {p.env.get("NCCL_CONF_FILE"): p for p in rep.processes}
    assert set(by_conf) == {str(secret), str(link), "own.conf"}, by_conf
    assert "may not be searched by uid" in (by_conf[str(secret)].files[str(secret)].error or "")
    assert by_conf[str(link)].files[str(link)].error, by_conf[str(link)].files
    mine = by_conf["own.conf"].files["own.conf"]
    assert mine.role == "nccl.conf" and json.loads(mine.text or "{}") == {"NCCL_ALGO": "Tree"} and mine.dropped == 1
