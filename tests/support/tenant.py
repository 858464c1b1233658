"""A second, unprivileged Unix user on this machine (`invtest-tenant`) and processes started as that user: the local
attacker of the host-side security tests, whose fake serving processes name files on their command line and in
their environment that root's probes then read.

Needs root (useradd, starting processes as another user); the tests that use it skip otherwise.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

TENANT = "invtest-tenant"
PYTHON = "/usr/bin/python3"
"""An interpreter every user can run (the test's own virtualenv may live under a directory only root can search)."""


def tenant() -> pwd.struct_passwd:
    """The tenant account (created once, reused by later tests)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: creates a second Unix user whose processes the probes find")
    if not os.path.exists(PYTHON):
        pytest.skip(f"needs {PYTHON}")
    try:
        return pwd.getpwnam(TENANT)
    except KeyError:
        r = subprocess.run(["useradd", "-M", "-d", f"/var/tmp/{TENANT}", "-s", "/bin/sh", "-p", "*", TENANT],
                           capture_output=True, text=True)
        if r.returncode not in (0, 9):  # 9: created meanwhile
            pytest.skip(f"cannot create user {TENANT}: {r.stderr.strip()}")
        return pwd.getpwnam(TENANT)


@dataclass
class Stage:
    """A directory under /var/tmp (searchable by everyone) with `root_only/` (0700, root's) and `tenant/` (the
    tenant's own), and the tenant's processes started in it."""

    base: Path
    pw: pwd.struct_passwd
    tag: str
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def root_only(self) -> Path:
        return self.base / "root_only"

    @property
    def mine(self) -> Path:
        return self.base / "tenant"

    def give(self, path: Path) -> Path:
        """Hand path (a file, link or directory, not followed) to the tenant."""
        os.lchown(path, self.pw.pw_uid, self.pw.pw_gid)
        return path

    def start(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.Popen:
        """Start argv as the tenant (no supplementary groups), in the tenant's directory (or cwd, one it may enter),
        tagged for this test."""
        full_env = {"PATH": "/usr/bin:/bin", "HOME": str(self.mine), "INVESTIGATE_STAGED_TAG": self.tag, **(env or {})}
        proc = subprocess.Popen(argv, user=self.pw.pw_uid, group=self.pw.pw_gid, extra_groups=[], env=full_env,
                                cwd=str(cwd or self.mine), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # its command line is in /proc once exec has happened
            try:
                if Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")[1:] == [a.encode() for a in argv[1:]] + [b""]:
                    break
            except OSError:
                pass
            time.sleep(0.02)
        return proc

    def start_setuid(self, program: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start the set-user-ID `program` (su: it waits for a password on its stdin, a pipe kept open) as the tenant,
        with a command line of the tenant's choosing, argv[0] included: the tenant's words in a process whose file
        access is the program owner's (its effective and file-system uid are root's, its real uid the tenant's)."""
        full_env = {"PATH": "/usr/bin:/bin", "INVESTIGATE_STAGED_TAG": self.tag, **(env or {})}
        proc = subprocess.Popen(argv, executable=program, user=self.pw.pw_uid, group=self.pw.pw_gid, extra_groups=[],
                                env=full_env, cwd=str(self.mine), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        self._wait_status(proc, lambda st: st.get("Uid", "").split()[3:4] == ["0"])
        return proc

    def start_root(self, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        """Start argv as root (a container's root, a chrooted service: see the caller), tagged for this test."""
        full_env = {"PATH": "/usr/bin:/bin", "INVESTIGATE_STAGED_TAG": self.tag, **(env or {})}
        proc = subprocess.Popen(argv, env=full_env, cwd=str(self.base), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc

    @staticmethod
    def _wait_status(proc: subprocess.Popen, ready) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                st = dict(line.split(":", 1) for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                          if ":" in line)
                if ready(st):
                    return
            except OSError:
                pass
            time.sleep(0.02)

    def fake_server(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        """A process whose command line reads `python3 -c ... -m vllm.entrypoints.openai.api_server ARGS`: what the
        probes take for vLLM (it only sleeps)."""
        return self.start([PYTHON, "-c", "import time; time.sleep(600)", "-m", "vllm.entrypoints.openai.api_server",
                           *args], env=env)

    def stop(self) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()
            if proc.stdin is not None:
                proc.stdin.close()
        shutil.rmtree(self.base, ignore_errors=True)


def stage(tag: str) -> Stage:
    pw = tenant()
    base = Path(tempfile.mkdtemp(prefix="invtest-tenant-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    s = Stage(base=base, pw=pw, tag=tag)
    s.root_only.mkdir(mode=0o700)
    s.mine.mkdir(mode=0o755)
    s.give(s.mine)
    return s
