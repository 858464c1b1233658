"""Fixtures for the adversarial tests: sshd sessions whose login shell is bash, fish or csh.

sshd hands every command line to the user's login shell, so these tests need real accounts with those shells.
`login_shell_sshd(shell)` creates (once, idempotently) a unix user `invtest-<shell>` with that login shell and a
home of its own, and starts an sshd (as root, like every test sshd) that logs in as that user. Needs root (CI runs
as root on a fresh Debian, where `.ci/run` installs fish and csh); skipped otherwise.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from support.sshd import SSHD, Sshd, start_sshd

SHELLS = {"bash": "bash", "fish": "fish", "csh": "csh"}


def _shell_path(shell: str) -> str | None:
    return shutil.which(shell)


def ensure_user(shell: str) -> pwd.struct_passwd:
    """A unix user whose login shell is `shell`, with a writable home (created once, reused by later tests)."""
    path = _shell_path(shell)
    if path is None:
        pytest.skip(f"needs {shell} (apt-get install {shell})")
    if os.geteuid() != 0:
        pytest.skip("needs root to create a user with another login shell")
    name = f"invtest-{shell}"
    home = Path(f"/var/tmp/{name}")
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        # `*`, not `!`: OpenSSH without PAM refuses accounts whose password field marks them locked
        r = subprocess.run(["useradd", "-M", "-d", str(home), "-s", path, "-p", "*", name],
                           capture_output=True, text=True)
        if r.returncode not in (0, 9):  # 9: created meanwhile by a parallel test process
            pytest.skip(f"cannot create user {name}: {r.stderr.strip()}")
        pw = pwd.getpwnam(name)
    if pw.pw_shell != path:
        subprocess.run(["usermod", "-s", path, name], check=True)
        pw = pwd.getpwnam(name)
    home.mkdir(exist_ok=True)
    os.chown(home, pw.pw_uid, pw.pw_gid)
    return pw


@pytest.fixture
def login_shell_sshd():
    """`login_shell_sshd(shell, **opts)`: an sshd logging in as a user whose login shell is `shell`."""
    if not os.path.exists(SSHD):
        pytest.skip("needs sshd")
    started: list[tuple[Sshd, str]] = []

    def make(shell: str, **opts) -> Sshd:
        pw = ensure_user(shell)
        base = tempfile.mkdtemp(prefix="invtest-sshd-")
        os.chmod(base, 0o755)  # sshd reads authorized_keys as the user
        sshd = start_sshd(Path(base), user=pw.pw_name, **opts)
        os.chmod(sshd.dir, 0o755)
        os.chmod(sshd.dir / "authorized_keys", 0o644)
        started.append((sshd, base))
        return sshd

    yield make
    for sshd, base in started:
        sshd.stop()
        shutil.rmtree(base, ignore_errors=True)
