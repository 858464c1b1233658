"""Host errors beyond the core ones in `base.py`; each message is one line naming the problem and the fix."""

from __future__ import annotations

from orchestrator.hosts.base import HostError


class HostConfigError(HostError):
    """The destination or the ssh config cannot be used as given."""


class HostUnreachable(HostError):
    """No SSH connection could be made (name, route, port, proxy or timeout)."""


class HostAuthFailed(HostError):
    """The server refused every key offered (agent, IdentityFile, default keys)."""
