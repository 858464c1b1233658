"""The request probe (scripts/request_files.py) reads the model directory an engine's command line names: a local
user's fake vLLM (`invtest-tenant`) whose `--model` is root's 0700 directory (or the tenant's link to it) had root's
config.json read as root, its architecture keys and their values in root's report: the settings probe's flaw of round 3
(C1) in this round's new code. The files must be read as the naming process could (the prelude's proc_creds), as the
settings and engine probes read the same directory's config.json: each model reference carries the pid that names
it, and a reference no running process names is not read by a root probe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from orchestrator.hosts.ssh import SshHost
from orchestrator.prongs.request.probe import collect_request_files, model_refs
from orchestrator.prongs.serving_engine.probe import collect_engine_report
from orchestrator.settings import Settings
from support.tenant import stage

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")

CANARY = "ROOT-MODEL-CANARY-7c21"


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
    assert sorted(r.ref for r in refs) == sorted([str(model), str(link)]), refs
    assert all(r.pid for r in refs), refs
    assert CANARY not in files.model_dump_json()
    assert files.models == [] and sorted(files.refused) == sorted([str(model), str(link)]), files.refused
    assert all("may not be searched by uid" in why for why in files.refused.values()), files.refused


async def test_a_local_users_own_model_files_are_read_as_that_user(sshd_factory):
    """The tenant's own model directory, and its hub-cache snapshot under ITS home (not root's), are read: the check
    refuses what the naming process could not read, nothing more."""
    s = stage(uuid.uuid4().hex)
    try:
        own = s.mine / "own-model"
        own.mkdir()
        s.give(own)
        (own / "config.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 2048}))
        s.give(own / "config.json")
        snap = s.mine / ".cache" / "huggingface" / "hub" / "models--org--tiny" / "snapshots" / "abc123"
        snap.mkdir(parents=True)
        for d in [snap, *snap.parents][:5]:
            s.give(d)
        (snap / "config.json").write_text(json.dumps({"model_type": "qwen2", "hidden_size": 896}))
        s.give(snap / "config.json")
        s.fake_server("--model", str(own), "--port", "18033")
        s.fake_server("--model", "org/tiny", "--port", "18034")
        sshd = sshd_factory(env={"INVESTIGATE_STAGED_TAG": s.tag})
        host = await SshHost(sshd.target(), Settings()).connect()
        try:
            refs = model_refs(await collect_engine_report(host, []))
            files = await collect_request_files(host, refs)
        finally:
            await host.aclose()
    finally:
        s.stop()
    got = {m.ref: m.config.get("hidden_size") for m in files.models}
    assert got == {str(own): 2048, "org/tiny": 896}, (got, files.refused)


def _run_script(models: list, env: dict[str, str]) -> dict:
    from orchestrator.probes import scripts
    from orchestrator.probes.runner import with_params

    src = with_params(scripts.load("request_files"), {"models": models, "servers": False})
    out = subprocess.run([sys.executable, "-I", "-S", "-"], input=src, capture_output=True, text=True, timeout=60,
                         env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_root_probe_reads_no_model_that_no_running_process_names(tmp_path):
    """A name with no process (a model's request, a log's), or with a pid whose command line does not name it (the
    engine exited and its pid was reused), is refused by a root probe: root would read it for whoever wrote the
    name."""
    if os.geteuid() != 0:
        pytest.skip("the refusal is a root probe's")
    d = tmp_path / "m"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"model_type": CANARY}))
    data = _run_script([{"ref": str(d), "pid": None}, {"ref": str(d) + "/", "pid": os.getpid()}],
                       {"PATH": "/usr/bin:/bin"})
    assert data["models"] == [] and CANARY not in json.dumps(data)
    assert "no running process names it" in data["refused"][str(d)]
    assert "no longer names it" in data["refused"][str(d) + "/"]
