"""Serious #1 of issue 23: an interpreter chosen from another user's running process never runs that user's code as
the SSH user.

Another Unix user (`invtest-tenant`) starts a process from a virtualenv with a command line naming vLLM. Its
site-packages holds a .pth file (code `site` runs at start-up) and a `torch` package whose import runs code; each
writes `ran-as-<uid>` into a marker directory. The probes that run under the discovered interpreter (`python_env`,
`kernel_inventory`, `autotune_caches`, and the host survey's chained pyenv) then run over a real sshd as root. The
SSH user must never produce `ran-as-0`, and the virtualenv's packages are still reported (read as files).

Two environments: the tenant's own virtualenv (the interpreter is refused for its owner, said as a gap, and its
packages read as files by python3 on PATH), and a root-owned virtualenv whose site-packages the tenant can write
(the interpreter runs, isolated: -I -S, and torch is not imported since another user controls it).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from orchestrator.hosts.ssh import SshHost
from orchestrator.prongs.fleet.survey import survey
from orchestrator.settings import Settings
from orchestrator.tools.base import execute
from support.security import REGISTRY, make_ctx

PYTHON = "/usr/bin/python3"
TENANT = "invtest-tenant"

pytestmark = [
    pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd"),
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: creates a second Unix user (useradd) whose process "
                       "the probes find"),
    pytest.mark.skipif(not os.path.exists(PYTHON), reason=f"needs {PYTHON} (an interpreter every user can run)"),
]


def _tenant() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(TENANT)
    except KeyError:
        r = subprocess.run(["useradd", "-M", "-d", f"/var/tmp/{TENANT}", "-s", "/bin/sh", "-p", "*", TENANT],
                           capture_output=True, text=True)
        if r.returncode not in (0, 9):
            pytest.skip(f"cannot create user {TENANT}: {r.stderr.strip()}")
        return pwd.getpwnam(TENANT)


def _version() -> str:
    out = subprocess.run([PYTHON, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    for root, dirs, files in os.walk(path):
        os.lchown(root, uid, gid)
        for n in dirs + files:
            os.lchown(os.path.join(root, n), uid, gid)


@pytest.fixture(params=["tenant_venv", "shared_venv"])
def hostile(request):
    """(the venv, the marker directory, the staged tag, the tenant) with the tenant's vLLM process running."""
    pw = _tenant()
    base = Path(tempfile.mkdtemp(prefix="invtest-owner-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    marks = base / "marks"
    marks.mkdir()
    os.chmod(marks, 0o1777)
    venv = base / "venv"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    site = venv / "lib" / f"python{_version()}" / "site-packages"
    mark = f"open({str(marks)!r} + '/ran-as-%d' % __import__('os').getuid(), 'w').close()"
    (site / "zz_evil.pth").write_text(f"import os; {mark}\n")
    (site / "vllm" / "entrypoints" / "openai").mkdir(parents=True)
    for d in (site / "vllm", site / "vllm" / "entrypoints", site / "vllm" / "entrypoints" / "openai"):
        (d / "__init__.py").write_text("")
    (site / "vllm" / "entrypoints" / "openai" / "api_server.py").write_text("import time\ntime.sleep(600)\n")
    (site / "vllm-0.11.2.dist-info").mkdir()
    (site / "vllm-0.11.2.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.11.2\n\n")
    # torch with no libtorch_python.so: the pyenv probe would import it to ask for the arch list
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text(mark + "\n")
    (site / "torch" / "version.py").write_text("__version__ = '2.9.0+cu128'\ncuda = '12.8'\n")
    (site / "torch-2.9.0+cu128.dist-info").mkdir()
    (site / "torch-2.9.0+cu128.dist-info" / "METADATA").write_text("Name: torch\nVersion: 2.9.0+cu128\n\n")
    if request.param == "tenant_venv":
        _chown_tree(venv, pw.pw_uid, pw.pw_gid)
    else:  # root's virtualenv, but the tenant may install into it
        _chown_tree(site, pw.pw_uid, pw.pw_gid)
    tag = uuid.uuid4().hex
    env = {"PATH": "/usr/bin:/bin", "HOME": "/var/tmp", "INVESTIGATE_STAGED_TAG": tag}
    proc = subprocess.Popen([str(venv / "bin" / "python3"), "-m", "vllm.entrypoints.openai.api_server", "--model", "x"],
                            user=pw.pw_uid, group=pw.pw_gid, extra_groups=[], env=env, cwd="/var/tmp",
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not (marks / f"ran-as-{pw.pw_uid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (marks / f"ran-as-{pw.pw_uid}").exists(), "the tenant's own start-up ran its .pth (the setup works)"
    try:
        yield request.param, venv, marks, tag
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(base, ignore_errors=True)


def _ran_as_root(marks: Path) -> bool:
    return (marks / "ran-as-0").exists()


async def test_probes_never_run_another_users_code_as_the_ssh_user(hostile, sshd_factory):
    kind, venv, marks, tag = hostile
    sshd = sshd_factory(env={"INVESTIGATE_STAGED_TAG": tag})
    texts = {}
    host = await SshHost(sshd.target(), Settings()).connect()
    try:
        for tool, extra in [("python_env", {}), ("kernel_inventory", {"arch": "sm_90"}),
                            ("autotune_caches", {"device_name": "NVIDIA H200"})]:
            out = (await execute(REGISTRY.get(tool), tool, extra, make_ctx(host))).output
            texts[tool] = out.text
            assert not _ran_as_root(marks), f"{tool} ran the {kind}'s code as root"
    finally:
        await host.aclose()
    # the survey's chained check and pyenv (one bundle) behave the same
    host = await SshHost(sshd.target(), Settings()).connect()
    try:
        await survey(host, [])
        out = (await execute(REGISTRY.get("python_env"), "python_env", {}, make_ctx(host))).output
        texts["survey"] = out.text
        assert not _ran_as_root(marks), f"the survey ran the {kind}'s code as root"
    finally:
        await host.aclose()
    for key in ("python_env", "survey"):
        # the environment is still read: its packages as files
        assert "vllm 0.11.2" in texts[key] and "torch 2.9.0+cu128" in texts[key], texts[key]
    if kind == "tenant_venv":
        for key, text in texts.items():
            assert "not started" in text and "owned by uid" in text, (key, text)
        assert f"{venv}/bin/python3" in texts["python_env"] and "as files" in texts["python_env"]
    else:
        # root's interpreter runs, isolated; torch (another user's files) is not imported to ask for its arch list
        assert "torch not imported" in texts["python_env"] and "owned by uid" in texts["python_env"], texts
