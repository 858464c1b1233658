"""Helpers of the multi-host tests: staged GPU hosts behind real sshds on loopback, one ssh config for all."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

needs_sshd = pytest.mark.skipif(shutil.which("sshd") is None and not os.path.exists("/usr/sbin/sshd"),
                                reason="OpenSSH sshd not installed")

SICK = "rtx-pro-6000x8-capped"
"""The seed GPU model with every GPU's power limit lowered to 450 W (600 W on its twins)."""


def write_config(path: Path, sshds, extra: str = "") -> Path:
    """One ssh config with a Host block per sshd (and any extra blocks)."""
    path.write_text("\n".join(s.config_block() for s in sshds) + "\n" + extra)
    return path


def dead_block(alias: str, port: int, like) -> str:
    """A Host block for a destination where nothing listens (connection refused)."""
    return (f"Host {alias}\n  HostName 127.0.0.1\n  Port {port}\n  User {like.user}\n  IdentityFile {like.client_key}\n"
            f"  IdentitiesOnly yes\n  UserKnownHostsFile {like.known_hosts}\n  StrictHostKeyChecking yes\n"
            "  ConnectTimeout 3\n")
