"""Hosts: the machine under investigation, local or over SSH, behind the `Host` protocol in `base.py`."""

from __future__ import annotations

from orchestrator.hosts.base import (CommandRefused, CommandResult, Host, HostError, HostKeyRefused, HostLost,
                                     HostUnusable)
from orchestrator.hosts.errors import HostAuthFailed, HostConfigError, HostUnreachable
from typing import TYPE_CHECKING, Any

from orchestrator.hosts.local import LocalHost
from orchestrator.settings import Settings

if TYPE_CHECKING:
    from orchestrator.hosts.ssh import SshHost
    from orchestrator.hosts.sshconfig import SshTarget, resolve_destination

_SSH = {"SshHost": "orchestrator.hosts.ssh", "SshTarget": "orchestrator.hosts.sshconfig",
        "resolve_destination": "orchestrator.hosts.sshconfig"}
"""What needs paramiko, imported on first use: a local run never pays for it (~0.3-0.4 s of start-up)."""

__all__ = [
    "CommandRefused", "CommandResult", "Host", "HostAuthFailed", "HostConfigError", "HostError", "HostKeyRefused",
    "HostLost", "HostUnreachable", "HostUnusable", "LocalHost", "SshHost", "SshTarget", "open_host", "resolve_destination",
]


async def open_host(dest: str | None, *, ssh_config: str | None = None, settings: Settings | None = None) -> Host:
    """The host named by dest: None or "local" is this machine; anything else is connected and verified now.

    Raises a HostError subclass whose message is one line naming the problem and the fix (unreachable, refused
    key, failed authentication, bad destination or config); nothing has run on the host then.
    """
    settings = settings or Settings()
    if dest is None or dest.strip() in ("", "local"):
        return LocalHost()
    from orchestrator.hosts.ssh import SshHost
    from orchestrator.hosts.sshconfig import resolve_destination

    target = resolve_destination(dest, ssh_config)
    return await SshHost(target, settings).connect()


async def open_entry(entry: Any, ssh_config: str | None, settings: Settings) -> Host:
    """The `ssh` opener of the registry (orchestrator/hosts/entry.py): the entry's destination over SSH."""
    return await open_host(entry.dest, ssh_config=ssh_config, settings=settings)


def __getattr__(name: str) -> Any:
    if name in _SSH:
        import importlib

        return getattr(importlib.import_module(_SSH[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
