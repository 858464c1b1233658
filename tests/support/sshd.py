"""A real OpenSSH server on 127.0.0.1 for tests and benchmarks, as the current user, keys only.

Usage::

    from support.sshd import start_sshd

    def test_x(tmp_path):
        sshd = start_sshd(tmp_path, max_sessions=10, env={"PATH": "/staged/bin:/usr/bin", "HOME": "/staged/home"})
        target = sshd.target()            # SshTarget resolved from the client config written for it
        ...                               # or: open_host(sshd.alias, ssh_config=str(sshd.ssh_config), settings=...)
        sshd.kill(); sshd.start()         # drop every connection, come back on the same port with the same key
        sshd.stop()

`start_sshd` writes, under `tmp_path/<name>/`: a fresh ed25519 host key, a client key in `authorized_keys`,
`sshd_config` (`MaxSessions`, `StrictModes no`, `PidFile` here, `SetEnv` from `env` for every session, plus
`SHLVL=1` so the login shell (bash) does not source the runner's ~/.bashrc and PATH/HOME stay as given), a client
`ssh_config` with a `Host <alias>` block (HostName, Port, User, IdentityFile, UserKnownHostsFile,
`StrictHostKeyChecking yes`), and `known_hosts` holding the host key. `jump=` another `Sshd` adds `ProxyJump` to
that block (and the jump host's block to the same file). `trust=False` leaves known_hosts empty.
Call `sshd.stop()` when done (a pytest fixture wraps it: `sshd_factory`).
"""

from __future__ import annotations

import getpass
import os
import shlex
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SSHD = os.environ.get("INVESTIGATE_TEST_SSHD", "/usr/sbin/sshd")
"""The OpenSSH server the tests start (a machine without Debian's openssh-server may name a copy)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pid: int) -> list[int]:
    """pid's child processes, recursively (sshd's per-connection children call setsid, so no process group)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def keygen(path: Path, comment: str) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True)


@dataclass
class Sshd:
    """One sshd on loopback; see the module docstring."""

    dir: Path
    port: int
    alias: str
    max_sessions: int = 10
    env: dict[str, str] = field(default_factory=dict)
    user: str = field(default_factory=getpass.getuser)
    jump: "Sshd | None" = None
    extra_config: str = ""
    proc: subprocess.Popen | None = None

    @property
    def host_key(self) -> Path:
        return self.dir / "host_ed25519"

    @property
    def client_key(self) -> Path:
        return self.dir / "client_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.dir / "known_hosts"

    @property
    def ssh_config(self) -> Path:
        return self.dir / "ssh_config"

    @property
    def log(self) -> Path:
        return self.dir / "sshd.log"

    @property
    def dest(self) -> str:
        """`user@127.0.0.1:port`, usable without the ssh config (then known_hosts must be given another way)."""
        return f"{self.user}@127.0.0.1:{self.port}"

    def host_key_line(self) -> str:
        kind, b64 = (self.host_key.with_suffix(".pub").read_text().split()[:2])
        where = "127.0.0.1" if self.port == 22 else f"[127.0.0.1]:{self.port}"  # OpenSSH's known_hosts forms
        return f"{where} {kind} {b64}\n"

    def fingerprint(self) -> str:
        out = subprocess.run(["ssh-keygen", "-l", "-f", str(self.host_key)], capture_output=True, text=True, check=True)
        return out.stdout.split()[1]

    def write_sshd_config(self) -> None:
        lines = [
            f"Port {self.port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {self.host_key}",
            f"PidFile {self.dir / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.dir / 'authorized_keys'}",
            "PermitRootLogin prohibit-password",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            f"MaxSessions {self.max_sessions}",
            "MaxStartups 100:30:200",
            "AllowTcpForwarding yes",
            "LogLevel ERROR",
        ]
        # bash started by sshd sources ~/.bashrc unless SHLVL is set: keep the runner's rc files out of sessions
        env = {"SHLVL": "1", **self.env}
        lines.append("SetEnv " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()))
        (self.dir / "sshd_config").write_text("\n".join(lines) + "\n" + self.extra_config)

    def config_block(self) -> str:
        block = (
            f"Host {self.alias}\n  HostName 127.0.0.1\n  Port {self.port}\n  User {self.user}\n"
            f"  IdentityFile {self.client_key}\n  IdentitiesOnly yes\n  UserKnownHostsFile {self.known_hosts}\n"
            "  StrictHostKeyChecking yes\n  LogLevel ERROR\n"
        )
        if self.jump is not None:
            block += f"  ProxyJump {self.jump.alias}\n"
        return block

    def write_client_config(self) -> None:
        text = self.config_block()
        if self.jump is not None:
            text += "\n" + self.jump.config_block()
        self.ssh_config.write_text(text)

    def trust(self) -> None:
        """Put the current host key in known_hosts (replacing what was there)."""
        self.known_hosts.write_text(self.host_key_line())

    def new_host_key(self) -> None:
        """Replace the host key (the server must be restarted to use it)."""
        for p in (self.host_key, self.host_key.with_suffix(".pub")):
            p.unlink(missing_ok=True)
        keygen(self.host_key, "host")

    def start(self) -> "Sshd":
        """Start (or restart) sshd on this port and wait until it answers with a banner."""
        Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation directory sshd insists on
        self.write_sshd_config()
        log = self.log.open("ab")
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(self.dir / "sshd_config")], stdout=log, stderr=log, start_new_session=True
        )
        log.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited with {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    if s.recv(64).startswith(b"SSH-"):
                        return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"sshd on port {self.port} did not answer: {self.log.read_text()[-2000:]}")

    def _signal_all(self, sig: int) -> None:
        if self.proc is None:
            return
        for pid in [self.proc.pid, *_descendants(self.proc.pid)]:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL sshd and every session it serves: connections drop as when a machine goes away."""
        self._signal_all(signal.SIGKILL)

    def stop(self) -> None:
        """Stop sshd and its sessions."""
        self._signal_all(signal.SIGKILL)

    def target(self, **overrides):
        """The `SshTarget` the client config resolves to, with fields overridden (e.g. strict_host_key_checking)."""
        from orchestrator.hosts.sshconfig import resolve_destination

        t = resolve_destination(self.alias, str(self.ssh_config))
        return t.model_copy(update=overrides) if overrides else t


def start_sshd(
    tmp_path: Path,
    *,
    name: str = "sshd",
    max_sessions: int = 10,
    env: dict[str, str] | None = None,
    jump: Sshd | None = None,
    trust: bool = True,
    extra_config: str = "",
    user: str | None = None,
) -> Sshd:
    """Start an sshd under tmp_path/name with fresh keys and a client config whose `Host` alias is name.

    `user` logs in as another account than the current one (sshd runs as root then; the directory must be
    readable by that user, since sshd reads `authorized_keys` as the user).
    """
    d = Path(tmp_path) / name
    d.mkdir(parents=True, exist_ok=True)
    sshd = Sshd(dir=d, port=free_port(), alias=name, max_sessions=max_sessions, env=dict(env or {}), jump=jump,
                extra_config=extra_config, **({"user": user} if user else {}))
    keygen(sshd.host_key, "host")
    keygen(sshd.client_key, "client")
    auth = sshd.client_key.with_suffix(".pub").read_text()
    if jump is not None:
        # one client key for the whole chain keeps the config simple
        auth += jump.client_key.with_suffix(".pub").read_text()
    (d / "authorized_keys").write_text(auth)
    if trust:
        sshd.trust()
    else:
        sshd.known_hosts.write_text("")
    sshd.write_client_config()
    return sshd.start()


@pytest.fixture
def sshd_factory(tmp_path):
    """A pytest fixture: `sshd_factory(name=..., **opts)` starts sshds that are stopped after the test.

    Every test directory has it (tests/conftest.py loads this module as a plugin).
    """
    started: list[Sshd] = []

    def make(**opts) -> Sshd:
        s = start_sshd(tmp_path, **opts)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()
