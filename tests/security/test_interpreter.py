"""Item 1 of issue 15: a probe interpreter is an interpreter, verified on the host before any script is sent.

The adversarial review ran `python: "tee"` (it wrote a file in the host user's home), `"rm"` (deleted it),
`"mkdir"`/`"rmdir"`: the `python` argument became the program. Now only python/python3/python3.N names pass, and
the host confirms the file is an executable whose real name is an interpreter's and that reports a Python >= 3.8.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.events import PolicyRefusal
from orchestrator.hosts.ssh import SshHost
from orchestrator.probes.interpreter import InterpreterRefused, name_refusal, verify
from orchestrator.settings import Settings
from orchestrator.tools.base import execute
from support.security import REGISTRY, CountingHost, make_ctx

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")


@pytest.mark.parametrize("name", ["python", "python3", "python3.8", "python3.12", "/usr/bin/python3",
                                  "/opt/venv/bin/python", "/root/.pyenv/versions/3.11.7/bin/python3.11"])
def test_interpreter_names_pass(name):
    assert name_refusal(name) is None


@pytest.mark.parametrize("name", ["tee", "rm", "mkdir", "rmdir", "/usr/bin/tee", "sh", "bash", "env", "python4",
                                  "python3.12.1", "pythonw", "python3-config", "python3 -c x", "./python3",
                                  "bin/python3", "", "python3\n", "-python3", "/usr/bin/python3/", "ipython3"])
def test_anything_else_is_refused_by_name(name):
    assert name_refusal(name) is not None


@pytest.fixture
def trap(tmp_path):
    """Files that look like interpreters but are not, each logging every invocation (argv and stdin)."""
    d = tmp_path / "trap"
    d.mkdir()
    log = tmp_path / "trap.log"
    fake = d / "python3"  # a shell script named python3: it runs for the version check, and prints no version
    fake.write_text(f"#!/bin/sh\necho \"ARGV $*\" >> {log}\nif [ \"$1\" = - ]; then cat >> {log}; fi\necho hello\n")
    fake.chmod(0o755)
    (d / "python3.11").symlink_to("/usr/bin/tee")  # a link to another program: refused before it runs
    (d / "python").write_text("not executable")
    return d, log


async def test_named_interpreters_are_verified_on_the_host_before_any_script(sshd_factory, trap, tmp_path):
    d, log = trap
    host = await SshHost(sshd_factory().target(), Settings()).connect()
    try:
        assert (await verify(host, "python3")).startswith("/")
        assert await verify(host, sys.executable) == sys.executable
        for bad, words in [(str(d / "python3"), "did not report a Python"), (str(d / "python3.11"), "not a python"),
                           (str(d / "python"), "not found"), (str(tmp_path / "nope" / "python3"), "not found"),
                           ("tee", "only python")]:
            with pytest.raises(InterpreterRefused, match=words):
                await verify(host, bad)
        # the fake ran once, for the version check, and never received a probe script
        assert "ARGV -I -S -c" in log.read_text() and "ARGV - " not in log.read_text()
    finally:
        await host.aclose()


@pytest.mark.parametrize("tool,extra", [("python_env", {}), ("kernel_inventory", {"arch": "sm_90"}),
                                        ("autotune_caches", {"device_name": "NVIDIA H200"})])
async def test_probe_tools_refuse_and_record_non_interpreters(sshd_factory, trap, tool, extra, tmp_path):
    d, log = trap
    host = CountingHost(await SshHost(sshd_factory().target(), Settings()).connect())
    marker = tmp_path / "written"
    try:
        for python in ["tee", "rm", "mkdir", "rmdir", "/usr/bin/tee", str(d / "python3"), str(d / "python3.11")]:
            ctx = make_ctx(host)
            host.calls.clear()
            out = (await execute(REGISTRY.get(tool), tool, {"python": python, **extra}, ctx)).output
            refusals = [e for e in ctx.refusals if isinstance(e, PolicyRefusal)]
            assert refusals and refusals[0].subject == python, (python, out.text)
            assert "refused" in out.text or "refused" in (out.data or {}).get("reason", ""), out.text
            # nothing but the fixed check reached the host, and no probe script was sent anywhere
            assert all(stdin is None for _, stdin in host.calls), host.calls
            assert all(argv[0] in ("/bin/sh", "nvidia-smi") for argv, _ in host.calls), host.calls
        assert not marker.exists()
        assert "ARGV - " not in log.read_text()
    finally:
        await host.inner.aclose()


def _cli(*args, cwd):
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
    env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


@pytest.mark.parametrize("command", [["why slow", "--offline", "--no-progress"], ["probe"]])
def test_cli_python_option_takes_only_an_interpreter(command, tmp_path):
    for bad in ["tee", "rm", "/bin/mkdir"]:
        proc = _cli(*command, "--python", bad, cwd=tmp_path)
        assert proc.returncode == 2, proc.stderr
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and "python" in lines[0] and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []
