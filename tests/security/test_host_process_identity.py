"""A file a process names is read as the process's own user would read it, in the file system the process sees.

Two ways a process's words get more than its user's reach (red team round 4):

- a set-user-ID program started by another Unix user (`invtest-tenant`) with a command line of the tenant's choosing:
  `su`'s argv[0] says `nginx: master process nginx -c <root's file>`, or `python3 -- root -m
  vllm.entrypoints.openai.api_server --config <root's file>`; while su waits for a password its file uid is root's.
  The probes took the file uid from /proc/PID/status and read root's file for the tenant.
- a process in another root directory (a container, here a chroot) running as root: the path it names is a file of
  its own tree, and the host's file of that name (root's) was read instead.

The path, settings and engine probes run as root over a real sshd; none of root's text may come back, and each
refusal says why.
"""

from __future__ import annotations

import os
import uuid

import pytest

from orchestrator.hosts.ssh import SshHost
from orchestrator.prongs.path.probe import collect_path
from orchestrator.prongs.serving_engine.probe import collect_engine_report
from orchestrator.prongs.settings_audit.probe import collect_settings
from orchestrator.settings import Settings
from support.tenant import PYTHON, stage

SU = "/usr/bin/su"
pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")

NGINX_CANARY = "ROOT-NGINX-CANARY-e41b"
SERVE_SEQS = 7331  # max-num-seqs in root's serve.yaml: a known setting, so it would leave the host if read


def _root_files(s):
    conf = s.root_only / "nginx.conf"
    conf.write_text(f"worker_processes 3;\nevents {{}}\nhttp {{ server {{ location /v1/{NGINX_CANARY}/ {{ proxy_pass "
                    f"http://127.0.0.1:8000; }} }} }}\n")
    serve = s.root_only / "serve.yaml"
    serve.write_text(f"max-num-seqs: {SERVE_SEQS}\n")
    for f in (conf, serve):
        os.chmod(f, 0o600)
    return conf, serve


async def _probe(s, sshd_factory):
    sshd = sshd_factory(env={"INVESTIGATE_STAGED_TAG": s.tag})
    host = await SshHost(sshd.target(), Settings()).connect()
    try:
        return (await collect_path(host, timeout_s=60), await collect_settings(host, timeout_s=60),
                await collect_engine_report(host, []))
    finally:
        await host.aclose()


def _no_root_text(path, settings, engines):
    dumped = path.model_dump_json() + settings.model_dump_json() + engines.model_dump_json()
    assert NGINX_CANARY not in dumped
    assert str(SERVE_SEQS) not in dumped
    for p in settings.processes:
        for f in p.files.values():
            assert f.text is None and f.error, f


@pytest.mark.skipif(not os.path.exists(SU) or not os.stat(SU).st_mode & 0o4000, reason="needs a set-user-ID su")
async def test_a_set_user_id_program_with_a_tenants_command_line_reads_as_the_tenant(sshd_factory):
    s = stage(uuid.uuid4().hex)
    try:
        conf, serve = _root_files(s)
        s.start_setuid(SU, [f"nginx: master process /usr/sbin/nginx -c {conf}", "root"])
        s.start_setuid(SU, ["python3", "--", "root", "-m", "vllm.entrypoints.openai.api_server", "--config",
                            str(serve), "--port", "18011"])
        path, settings, engines = await _probe(s, sshd_factory)
    finally:
        s.stop()
    assert "nginx" in {p.kind for p in path.processes}, path.processes
    assert [p.engine for p in settings.processes] == ["vllm"], settings.processes
    _no_root_text(path, settings, engines)
    errors = [e for x in path.layers for e in x.errors]
    assert any("nginx.conf" in e and f"uid {s.pw.pw_uid}" in e for e in errors), errors
    (refused,) = settings.processes[0].files.values()
    assert f"uid {s.pw.pw_uid}" in (refused.error or ""), refused


async def test_a_chrooted_root_process_does_not_name_the_hosts_files(sshd_factory):
    s = stage(uuid.uuid4().hex)
    try:
        conf, serve = _root_files(s)
        jail = s.base / "jail"
        jail.mkdir()
        (jail / "stage").mkdir()
        # the jail's own file at the path the host's canary has: what the process really names
        inside = jail / str(conf).lstrip("/")
        inside.parent.mkdir(parents=True)
        inside.write_text("events {}\n")
        open_to_all = s.base / "world.yaml"  # the host's, world-readable: still not the file the jailed process names
        open_to_all.write_text(f"max-num-seqs: {SERVE_SEQS}\n")
        os.chmod(open_to_all, 0o644)
        sleeper = s.base / "nginx"
        sleeper.write_text(f"import os, time\nos.chroot({str(jail)!r})\nos.chdir('/')\ntime.sleep(600)\n")
        s.start_root([PYTHON, str(sleeper), "-c", str(conf)])
        vllm = s.base / "serve"
        vllm.write_text(sleeper.read_text())
        s.start_root([PYTHON, str(vllm), "-m", "vllm.entrypoints.openai.api_server", "--config", str(serve),
                      "--port", "18012"])
        s.start_root([PYTHON, str(vllm), "-m", "vllm.entrypoints.openai.api_server", "--config", str(open_to_all),
                      "--port", "18013"])
        _wait_chrooted(s.procs)
        path, settings, engines = await _probe(s, sshd_factory)
    finally:
        s.stop()
    assert "nginx" in {p.kind for p in path.processes}, path.processes
    assert sorted(p.engine for p in settings.processes) == ["vllm", "vllm"], settings.processes
    _no_root_text(path, settings, engines)
    errors = [e for x in path.layers for e in x.errors]
    assert any("nginx.conf" in e and "root directory" in e for e in errors), errors
    for p in settings.processes:
        (refused,) = p.files.values()
        assert "root directory" in (refused.error or ""), refused


def _wait_chrooted(procs) -> None:
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if all(os.readlink(f"/proc/{p.pid}/root") != "/" for p in procs):
                return
        except OSError:
            pass
        time.sleep(0.02)
    pytest.fail("the jailed processes did not chroot")
