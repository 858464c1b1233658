"""Issue 23, "also broken" (host keys): known_hosts decisions as OpenSSH 9.2 makes them, checked against the real `ssh`
client on the same files: `@revoked` in the global known-hosts file, a key of another type for a known host under
accept-new (CHANGED), `!name,*` negation entries OpenSSH accepts, and the bare-host-name lookup behind them."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from orchestrator.hosts import HostKeyRefused
from orchestrator.hosts.ssh import SshHost
from orchestrator.settings import Settings
from support.sshd import keygen

pytestmark = pytest.mark.skipif(not (os.path.exists("/usr/sbin/sshd") and shutil.which("ssh")),
                                reason="needs sshd and ssh")


def _openssh_accepts(sshd, mode: str) -> bool:
    r = subprocess.run(["ssh", "-F", str(sshd.ssh_config), "-o", "BatchMode=yes", "-o",
                        f"StrictHostKeyChecking={mode}", sshd.alias, "true"], capture_output=True, text=True, timeout=30)
    return r.returncode == 0


async def _we_accept(sshd, mode: str) -> bool:
    try:
        host = await SshHost(sshd.target(strict_host_key_checking=mode), Settings()).connect()
    except HostKeyRefused:
        return False
    ok = (await host.run(["true"])).ok
    await host.aclose()
    return ok


def _pub(tmp_path, name: str, kind: str) -> tuple[str, str]:
    path = tmp_path / name
    if not path.exists():
        if kind == "ed25519":
            keygen(path, name)
        else:
            subprocess.run(["ssh-keygen", "-q", "-t", kind, "-N", "", "-f", str(path)], check=True)
    t, b = path.with_suffix(".pub").read_text().split()[:2]
    return t, b


CASES = {
    # case: (user known_hosts, global known_hosts); {name} {key} {bare} {other} {ecdsa} are filled in
    "revoked-in-global": ("{name} {key}\n", "@revoked * {key}\n"),
    "revoked-in-global-by-name": ("* {key}\n", "@revoked {name} {key}\n"),
    "known-in-global-only": ("", "{name} {key}\n"),
    "other-type-known": ("{name} {ecdsa}\n", ""),
    "other-type-known-by-wildcard": ("* {ecdsa}\n", ""),
    "other-type-in-global": ("", "{name} {ecdsa}\n"),
    "other-type-under-bare-name": ("{bare} {ecdsa}\n", ""),
    "negated-self-then-star": ("!{name},* {key}\n", ""),
    "negated-other-then-star": ("!10.9.9.9,* {key}\n", ""),
    "negated-everything": ("!*,* {key}\n", ""),
    "bare-name-right-key": ("{bare} {key}\n", ""),
    "bare-name-wrong-key": ("{bare} {other}\n", ""),
    "wrong-key": ("{name} {other}\n", ""),
    "right-key": ("{name} {key}\n", ""),
}


@pytest.mark.parametrize("mode", ["yes", "accept-new"])
@pytest.mark.parametrize("case", sorted(CASES))
async def test_host_key_decisions_agree_with_openssh(sshd_factory, tmp_path, case, mode):
    sshd = sshd_factory()
    name, kind, b64 = sshd.host_key_line().split()
    other, ecdsa = " ".join(_pub(tmp_path, "other", "ed25519")), " ".join(_pub(tmp_path, "ec", "ecdsa"))
    fill = {"name": name, "key": f"{kind} {b64}", "bare": "127.0.0.1", "other": other, "ecdsa": ecdsa}
    user, global_ = (t.format(**fill) for t in CASES[case])
    glob_file = tmp_path / "ssh_known_hosts"
    config = sshd.ssh_config.read_text().replace(
        f"Host {sshd.alias}\n", f"Host {sshd.alias}\n  GlobalKnownHostsFile {glob_file}\n", 1)
    sshd.ssh_config.write_text(config)
    glob_file.write_text(global_)
    sshd.known_hosts.write_text(user)
    reference = _openssh_accepts(sshd, mode)
    added_by_openssh = sshd.known_hosts.read_text()
    sshd.known_hosts.write_text(user)
    assert await _we_accept(sshd, mode) is reference, (case, mode, reference)
    # accept-new writes what OpenSSH writes: the new key when it took one, nothing otherwise
    assert (sshd.known_hosts.read_text() != user) == (added_by_openssh != user)
    assert glob_file.read_text() == global_  # the global file is never written
