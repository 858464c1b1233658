"""Host errors beyond the core ones in `base.py`; each message is one line naming the problem and the fix."""

from __future__ import annotations

from orchestrator.hosts.base import HostUnusable


class HostConfigError(HostUnusable):
    """The destination or the ssh config cannot be used as given."""


class HostUnreachable(HostUnusable):
    """No SSH connection could be made (name, route, port, proxy or timeout)."""


class HostAuthFailed(HostUnusable):
    """The server refused every key offered (agent, IdentityFile, default keys)."""
