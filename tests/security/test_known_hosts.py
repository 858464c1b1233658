"""Item 9 of issue 15: known_hosts matching as OpenSSH does it, checked against the real `ssh` client.

OpenSSH accepts a wildcard `* key` entry, and a hashed file where a wrong key for the host precedes the right one
(any matching line holding the offered key will do).
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from orchestrator.hosts import HostKeyRefused
from orchestrator.hosts.ssh import SshHost
from orchestrator.settings import Settings
from support.sshd import keygen

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(not (os.path.exists("/usr/sbin/sshd") and shutil.which("ssh")),
                                                  reason="needs sshd and ssh")]


def _openssh_accepts(sshd) -> bool:
    r = subprocess.run(["ssh", "-F", str(sshd.ssh_config), "-o", "BatchMode=yes", sshd.alias, "true"],
                       capture_output=True, text=True, timeout=30)
    return r.returncode == 0


async def _we_accept(sshd) -> bool:
    try:
        host = await SshHost(sshd.target(), Settings()).connect()
    except HostKeyRefused:
        return False
    ok = (await host.run(["true"])).ok
    await host.aclose()
    return ok


def _wrong_key_line(tmp_path, name: str) -> str:
    other = tmp_path / "other_host_key"
    if not other.exists():
        keygen(other, "other")
    kind, b64 = other.with_suffix(".pub").read_text().split()[:2]
    return f"{name} {kind} {b64}\n"


@pytest.mark.parametrize("case,accepted", [
    ("wildcard", True),                 # `* key`
    ("wildcard-port", True),            # `[127.0.0.1]:* key`
    ("wrong-then-right", True),         # the same host twice: a wrong key first
    ("hashed-wrong-then-right", True),  # the same, hashed with ssh-keygen -H
    ("wrong-only", False),              # CHANGED
    ("question-mark", True),            # `[127.0.0.?]:PORT key`
])
async def test_known_hosts_matching_agrees_with_openssh(sshd_factory, tmp_path, case, accepted):
    sshd = sshd_factory()
    right = sshd.host_key_line()
    name, kind, b64 = right.split()
    lines = {
        "wildcard": f"* {kind} {b64}\n",
        "wildcard-port": f"[127.0.0.1]:* {kind} {b64}\n",
        "wrong-then-right": _wrong_key_line(tmp_path, name) + right,
        "hashed-wrong-then-right": _wrong_key_line(tmp_path, name) + right,
        "wrong-only": _wrong_key_line(tmp_path, name),
        "question-mark": f"{name.replace('127.0.0.1', '127.0.0.?')} {kind} {b64}\n",
    }[case]
    sshd.known_hosts.write_text(lines)
    if case.startswith("hashed"):
        subprocess.run(["ssh-keygen", "-H", "-f", str(sshd.known_hosts)], check=True, capture_output=True)
        assert "|1|" in sshd.known_hosts.read_text() and "127.0.0.1" not in sshd.known_hosts.read_text()
    before = sshd.known_hosts.read_text()
    assert _openssh_accepts(sshd) is accepted  # the reference
    assert await _we_accept(sshd) is accepted
    assert sshd.known_hosts.read_text() == before


async def test_known_hosts_is_parsed_once_per_content_and_a_changed_file_is_read_again(sshd_factory, tmp_path,
                                                                                       monkeypatch):
    """A fleet connects to every host with the same known_hosts: parsed once while its content stays the same; a
    key replaced in it (the same length, at once) is what the next check sees."""
    import paramiko

    from orchestrator.hosts import hostkeys

    hostkeys._PARSED.clear()  # the cache is cleared at 64 entries: earlier tests on this worker must not fill it here
    parsed = []
    real = paramiko.hostkeys.HostKeyEntry.from_line

    def counting(line, lineno=None):
        parsed.append(line)
        return real(line, lineno)

    monkeypatch.setattr(paramiko.hostkeys.HostKeyEntry, "from_line", staticmethod(counting))
    sshd = sshd_factory(name="kh")
    good = sshd.known_hosts.read_text()
    assert await _we_accept(sshd) and await _we_accept(sshd)
    assert len(parsed) == 1  # one line, parsed once for two connections (each reads the file twice)
    name = good.split()[0]
    sshd.known_hosts.write_text(_wrong_key_line(tmp_path, name))
    assert len(sshd.known_hosts.read_text()) == len(good)  # same size, same second: only the content tells
    assert not await _we_accept(sshd)  # CHANGED: refused
    sshd.known_hosts.write_text(good)
    assert await _we_accept(sshd)
    assert len(parsed) == 2  # the wrong key's content parsed once; the good content's parse was kept
    hostkeys._PARSED.clear()
