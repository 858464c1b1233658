"""The request probe (scripts/request_files.py) reads the model directory an engine's command line names: a local
user's fake vLLM (`invtest-tenant`) whose `--model` is root's 0700 directory (or the tenant's link to it) had root's
config.json read as root, its architecture keys and their values in root's report: the settings probe's flaw of round 3
(C1) in this round's new code. The files must be read as the naming process could (the prelude's proc_creds), as the
settings and engine probes read the same directory's config.json."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from orchestrator.hosts.ssh import SshHost
from orchestrator.prongs.request.probe import collect_request_files, model_refs
from orchestrator.prongs.serving_engine.probe import collect_engine_report
from orchestrator.settings import Settings
from support.tenant import stage

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")

CANARY = "ROOT-MODEL-CANARY-7c21"


@pytest.mark.xfail(strict=True, reason="request_files.py reads a model directory without the naming process's "
                   "credentials (red team round 4; branch request)")
async def test_a_local_users_engine_gets_no_root_model_file_read(sshd_factory):
    s = stage(uuid.uuid4().hex)
    try:
        model = s.root_only / "model"
        model.mkdir()
        (model / "config.json").write_text(json.dumps({"model_type": CANARY, "hidden_size": 4096}))
        link = s.mine / "model"
        os.symlink(model, link)
        s.give(link)
        s.fake_server("--model", str(model), "--port", "18031")
        s.fake_server("--model", str(link), "--port", "18032")
        sshd = sshd_factory(env={"INVESTIGATE_STAGED_TAG": s.tag})
        host = await SshHost(sshd.target(), Settings()).connect()
        try:
            engines = await collect_engine_report(host, [])
            refs = model_refs(engines)
            files = await collect_request_files(host, refs)
        finally:
            await host.aclose()
    finally:
        s.stop()
    assert sorted(refs) == sorted([str(model), str(link)]), refs
    assert CANARY not in files.model_dump_json()
