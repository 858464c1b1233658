"""The files a served process names are read only as that process could read them (REDTEAM round 3, C1 and m1).

Another Unix user (`invtest-tenant`) runs fake vLLM processes whose command lines name files: a root-only file
(`--config`), a world-readable file under a directory only root may enter, a model directory whose `config.json` is
a symlink to root's file, a file at a credential location, a FIFO (which blocks whoever opens it for reading). The
settings probe (`settings_audit`, in every default investigation) and the engine probe then run as root over a real
sshd. None of root's text may come back; the tenant's own config still does, as parsed known settings only (an
unknown key, and the value of a secret-looking one, stay on the host); the FIFO does not stall the probe.
"""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest

from orchestrator.hosts.ssh import SshHost
from orchestrator.prongs.serving_engine.probe import collect_engine_report
from orchestrator.prongs.settings_audit.probe import collect_settings
from orchestrator.settings import Settings
from support.tenant import stage

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")

ROOT_CANARY = "ROOT-ONLY-CANARY-7f3a9c"
HIDDEN_CANARY = "BEHIND-0700-DIR-CANARY-51d2"
CRED_CANARY = "TENANT-CREDENTIAL-CANARY-0b8e"
TENANT_SECRET = "TenantApiKeyDoNotShip42"
TENANT_UNKNOWN = "tenant-unknown-key-value-9q"


@pytest.fixture
def tenant_stage():
    s = stage(uuid.uuid4().hex)
    try:
        secret = s.root_only / "ops-notes.txt"
        secret.write_text(f"# root-only operations notes\nbreakglass_hint: {ROOT_CANARY}\nmax-num-seqs: 7\n")
        os.chmod(secret, 0o600)
        vault = s.base / "vault"
        vault.mkdir(mode=0o700)  # root's umask-022 files under a 0700 directory: world-readable, yet out of reach
        hidden = vault / "serve.yaml"
        hidden.write_text(f"max-num-seqs: 9\nnote: {HIDDEN_CANARY}\n")
        os.chmod(hidden, 0o644)
        mine = s.mine
        model = mine / "model"
        model.mkdir()
        s.give(model)
        os.symlink(secret, model / "config.json")
        s.give(model / "config.json")
        gen = model / "generation_config.json"
        gen.write_text(json.dumps({"temperature": 0.3, "note": TENANT_UNKNOWN}))
        s.give(gen)
        own = mine / "serve.yaml"
        own.write_text(f"max-num-seqs: 64\napi-key: {TENANT_SECRET}\nnote: {TENANT_UNKNOWN}\n")
        s.give(own)
        cred = mine / "secrets.yaml"
        cred.write_text(f"max-num-seqs: 5\nnote: {CRED_CANARY}\n")
        s.give(cred)
        fifo = mine / "pipe.yaml"
        os.mkfifo(fifo)
        s.give(fifo)
        s.fake_server("--config", str(secret), "--model", str(model), "--port", "18001")
        s.fake_server("--config", str(hidden), "--port", "18002")
        s.fake_server("--config", "serve.yaml", "--port", "18003")  # relative to its working directory
        s.fake_server("--config", str(cred), "--port", "18004")
        s.fake_server("--config", str(fifo), "--port", "18005")
        yield s
    finally:
        s.stop()


async def test_a_local_users_server_gets_no_root_file_into_roots_transcript(tenant_stage, sshd_factory):
    s = tenant_stage
    sshd = sshd_factory(env={"INVESTIGATE_STAGED_TAG": s.tag})
    host = await SshHost(sshd.target(), Settings()).connect()
    try:
        started = time.monotonic()
        report = await collect_settings(host, timeout_s=60)
        took = time.monotonic() - started
        engines = await collect_engine_report(host, [])
    finally:
        await host.aclose()
    assert report.available, report.reason
    assert took < 20, f"the settings probe stalled ({took:.0f} s): the FIFO was opened"
    dumped = report.model_dump_json() + engines.model_dump_json()
    for canary in (ROOT_CANARY, HIDDEN_CANARY, CRED_CANARY, TENANT_SECRET, TENANT_UNKNOWN):
        assert canary not in dumped, canary
    by_port = {p.argv[p.argv.index("--port") + 1]: p for p in report.processes}
    assert set(by_port) == {"18001", "18002", "18003", "18004", "18005"}, sorted(by_port)
    files = {port: list(p.files.values()) for port, p in by_port.items()}
    # root's file, named and through the model's config.json link: refused, said why
    refused = files["18001"]
    assert [f.role for f in refused if f.text is None and f.error] == ["--config", "config.json"], refused
    assert "uid" in refused[0].error, refused[0].error
    assert [f.text for f in files["18002"]] == [None] and "search" in (files["18002"][0].error or "")
    assert [f.text for f in files["18004"]] == [None] and "credential" in (files["18004"][0].error or "")
    assert [f.text for f in files["18005"]] == [None] and "regular" in (files["18005"][0].error or "")
    # the tenant's own files are read, as parsed known settings: the secret-looking value masked, the unknown key
    # dropped on the host
    own = files["18003"][0]
    assert own.text is not None and json.loads(own.text) == {"max-num-seqs": 64, "api-key": "<redacted on host>"}
    gen = [f for f in refused if f.role == "generation_config.json"]
    assert gen and json.loads(gen[0].text or "null") == {"temperature": 0.3}, gen
    # the engine probe reads the same files for the engine's configuration: root's settings do not reach it either
    seqs = {e.port: e.value("max_num_seqs") for e in engines.engines}
    assert seqs[18003] == 64 and all(seqs[p] not in (5, 7, 9) for p in (18001, 18002, 18004)), seqs
