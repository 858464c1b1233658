"""The shell/read_file/find_files tools on a real host: refusals are recorded and nothing reaches the host."""

from __future__ import annotations

import os

import pytest

from orchestrator.events import PolicyRefusal
from orchestrator.hosts.ssh import SshHost
from orchestrator.settings import Settings
from orchestrator.tools.base import ToolRegistry, execute
from orchestrator.tools.mock import MockToolContext
from orchestrator.tools.shell import register


class CountingHost:
    """Delegates to a real host, counting every call that would reach it."""

    def __init__(self, host):
        self.inner, self.name, self.calls = host, host.name, 0

    async def run(self, argv, **kw):
        self.calls += 1
        return await self.inner.run(argv, **kw)

    async def read_file(self, path, **kw):
        self.calls += 1
        return await self.inner.read_file(path, **kw)

    async def find(self, root, pattern="*", **kw):
        self.calls += 1
        return await self.inner.find(root, pattern, **kw)


REGISTRY = ToolRegistry()
register(REGISTRY)


def _ctx(host) -> MockToolContext:
    return MockToolContext(host)


SHAPES = [
    "touch {m}", "ls; touch {m}", "ls && touch {m}", "ls || touch {m}", "ls | tee {m}", "ls > {m}",
    "cat < /etc/hostname", "echo $(touch {m})", "echo `touch {m}`", "touch {m} &", "ls\ntouch {m}",
    "X=1 touch {m}", "find / -maxdepth 0 -fprint {m}", "find / -maxdepth 0 -exec touch {m} +", "python3 -c 'open(\"{m}\",\"w\")'",
    "sed -i s/a/b/ {m}", "cp /etc/hostname {m}", "dd of={m}", "/???/touch {m}", "env touch {m}",
]


@pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")
async def test_every_refused_shape_is_recorded_and_never_reaches_the_host(sshd_factory, tmp_path):
    marker = tmp_path / "marker"
    host = CountingHost(await SshHost(sshd_factory().target(), Settings()).connect())
    ctx = _ctx(host)
    tool = REGISTRY.get("shell")
    for shape in SHAPES:
        done = await execute(tool, "shell", {"command": shape.format(m=marker)}, ctx)
        assert done.output.is_error and "refused by the read-only policy" in done.output.text, shape
    assert host.calls == 0 and not marker.exists()
    refusals = [e for e in ctx.refusals if isinstance(e, PolicyRefusal)]
    assert len(refusals) == len(SHAPES)
    assert refusals[0].agent_id == "a1" and refusals[0].call_id == "c1" and refusals[0].tool == "shell"
    ok = await execute(tool, "shell", {"command": "cat /etc/hostname"}, ctx)
    assert not ok.output.is_error and ok.output.untrusted and ok.output.host == host.name
    assert "exit code 0" in ok.output.text and host.calls == 2  # its file resolved on the host (issue 15), then run
    await host.inner.aclose()


async def test_read_file_and_find_files_tools_on_the_local_host(tmp_path):
    from orchestrator.hosts.local import LocalHost

    (tmp_path / "a.json").write_text('{"k": 1}')
    ctx = _ctx(LocalHost())
    reg = REGISTRY
    got = await execute(reg.get("read_file"), "read_file", {"path": str(tmp_path / "a.json")}, ctx)
    assert got.output.text == '{"k": 1}' and got.output.untrusted and got.output.host == "local"
    missing = await execute(reg.get("read_file"), "read_file", {"path": str(tmp_path / "nope")}, ctx)
    assert missing.output.is_error and "does not exist" in missing.output.text
    found = await execute(reg.get("find_files"), "find_files", {"root": str(tmp_path), "pattern": "*.json"}, ctx)
    assert found.output.data["paths"] == [str(tmp_path / "a.json")]


async def test_read_file_refuses_credentials_before_reaching_the_host(tmp_path):
    from orchestrator.hosts.local import LocalHost

    key = tmp_path / ".ssh" / "id_ed25519"
    key.parent.mkdir()
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n-----END OPENSSH PRIVATE KEY-----\n")
    host = CountingHost(LocalHost())
    ctx = _ctx(host)
    out = await execute(REGISTRY.get("read_file"), "read_file", {"path": str(key)}, ctx)
    assert out.output.is_error and "credentials" in out.output.text and "secret" not in out.output.text
    assert host.calls == 0
    assert [e.subject for e in ctx.refusals if isinstance(e, PolicyRefusal)] == [str(key)]


async def test_secrets_in_host_output_are_redacted_before_the_model_sees_them(tmp_path):
    from orchestrator.hosts.local import LocalHost

    conf = tmp_path / "serve.env"
    conf.write_text("MODEL=glm\nHF_TOKEN=hf_abcdefghijklmnopqrstu\nANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnop\n")
    ctx = _ctx(LocalHost())
    out = await execute(REGISTRY.get("read_file"), "read_file", {"path": str(conf)}, ctx)
    assert "MODEL=glm" in out.output.text
    assert "hf_abcdefghijklmnopqrstu" not in out.output.text and "abcdefghijklmnop" not in out.output.text
