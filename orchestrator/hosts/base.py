"""The `Host` protocol: the strict point of cut-off between probes and a machine.

A host runs a command, reads a file, finds files. It does not know what a GPU, a cache or an agent is.
Every call has a timeout and a size cap; nothing here raises for a non-zero exit: that is data.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from orchestrator.errors import InputError


class HostError(Exception):
    """The host could not be used at all (unreachable, refused key, lost connection)."""


class HostLost(HostError):
    """The connection dropped during a run and one reconnect did not bring it back."""


class HostUnusable(HostError, InputError):
    """The host cannot be used when the run starts (unreachable, refused key, bad destination): bad input, exit 2."""


class HostKeyRefused(HostUnusable):
    """The host's key is unknown or changed; nothing was run."""


class CommandRefused(Exception):
    """The read-only command policy refused a command before anything was sent."""


class CommandResult(BaseModel):
    """Outcome of one command."""

    argv: list[str]
    exit_code: int | None
    """None when the command was killed by the timeout."""
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@runtime_checkable
class Host(Protocol):
    """A machine to investigate: this one, or one reached over SSH."""

    name: str
    """How the host is named in evidence (`local`, `user@gpu-box:22`)."""

    async def run(
        self,
        argv: list[str],
        *,
        stdin: str | None = None,
        timeout_s: float = 60.0,
        max_output: int = 1_000_000,
    ) -> CommandResult:
        """Run argv (no shell) with optional stdin; stdout and stderr are read concurrently and capped."""
        ...

    async def read_file(self, path: str, *, max_bytes: int = 1_000_000) -> bytes:
        """Return up to max_bytes of a file; raises FileNotFoundError when it does not exist."""
        ...

    async def find(self, root: str, pattern: str = "*", *, max_results: int = 10_000) -> list[str]:
        """Paths under root whose basename matches the glob pattern, in one round trip."""
        ...

    async def aclose(self) -> None:
        """Release connections; the host may not be used afterwards."""
        ...
