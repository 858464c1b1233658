"""File reads and listings for hosts that only run commands (Slurm steps, `kubectl exec`).

Both go through the host's own `run`, so the command policy, timeouts and caps apply: a read is `head -c` behind
`safeopen.py` sent to the remote `python3 -I -S` (one open, no symlink followed, the descriptor checked), a listing is
`walk.py` sent to the remote `python3`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator.hosts import safeopen
from orchestrator.hosts.base import CommandResult, HostError
from orchestrator.hosts.policy import unsafe_read
from orchestrator.settings import Settings

_WALK_SOURCE = (Path(__file__).parent / "walk.py").read_text()
SAFEOPEN_SOURCE = (Path(__file__).parent / "safeopen.py").read_text()


def read_argv(path: str, max_bytes: int) -> list[str]:
    """The command that reads up to max_bytes of the regular file at path on a host (safeopen.py, isolated)."""
    return ["python3", "-I", "-S", "-c", SAFEOPEN_SOURCE, "read", path, str(max_bytes)]


def exec_opened_argv(argv: list[str], opened: dict[int, str]) -> list[str]:
    """The command that runs argv with argv[i] replaced by the file opened (checked, no symlink followed) at
    opened[i]: the program reads /dev/fd/(safeopen.FIRST_FD + k) for the k-th index (safeopen.py `exec`)."""
    spec = json.dumps({"argv": argv, "open": {str(i): p for i, p in opened.items()}})
    return ["python3", "-I", "-S", "-c", SAFEOPEN_SOURCE, "exec", spec]


def read_failure(path: str, host_name: str, exit_code: int | None, stderr: str) -> OSError:
    """The exception for a failed `read_argv` command (safeopen.py's exit codes)."""
    why = stderr.strip().splitlines()[-1][:300] if stderr.strip() else f"exit {exit_code}"
    if exit_code == safeopen.MISSING:
        return FileNotFoundError(f"{path} does not exist on {host_name}")
    if exit_code == safeopen.DENIED:
        return PermissionError(f"cannot read {path} on {host_name}: {why}")
    if exit_code == 127:
        return OSError(f"cannot read {path} on {host_name}: no python3 there (files are read only by a checked open)")
    return OSError(f"{path} on {host_name}: {why}")


async def read_via_run(host: Any, path: str, max_bytes: int, timeout_s: float) -> bytes:
    """Up to max_bytes of a regular file on host; FileNotFoundError, PermissionError or OSError otherwise."""
    why = unsafe_read(path)
    if why is not None:
        raise PermissionError(f"not opened on {host.name}: {why}")
    res = await host.run(read_argv(path, max_bytes), timeout_s=timeout_s, max_output=max_bytes + 4096)
    if res.timed_out:
        raise TimeoutError(f"reading {path} on {host.name} timed out")
    if res.exit_code != 0:
        raise read_failure(path, host.name, res.exit_code, res.stderr)
    return res.stdout.encode("utf-8", "surrogateescape")


async def find_via_run(host: Any, root: str, pattern: str, max_results: int, timeout_s: float,
                       output_bytes: int) -> list[str]:
    """Paths under root on host whose basename matches pattern, in one command."""
    params = json.dumps({"root": root, "pattern": pattern, "max_results": max_results})
    res = await host.run(["python3", "-c", _WALK_SOURCE, params], timeout_s=timeout_s,
                         max_output=max(output_bytes, max_results * 1024))
    if res.timed_out:
        raise TimeoutError(f"listing {root} on {host.name} timed out")
    try:
        return list(json.loads(res.stdout)["paths"])
    except (ValueError, KeyError, TypeError):
        raise HostError(f"listing {root} on {host.name} failed: {res.stderr.strip()[:300]}") from None


class FilesOverRun:
    """`read_file` and `find` for a host that reaches files only by running commands (`read_via_run`,
    `find_via_run`), bounded by its settings' command timeout and output cap. The host supplies `run`, `name` and
    `settings`."""

    name: str
    settings: Settings

    async def run(self, argv: list[str], *, stdin: str | None = None, timeout_s: float = 60.0,
                  max_output: int = 1_000_000) -> CommandResult:
        raise NotImplementedError

    async def read_file(self, path: str, *, max_bytes: int = 1_000_000) -> bytes:
        return await read_via_run(self, path, max_bytes, self.settings.command_timeout_s)

    async def find(self, root: str, pattern: str = "*", *, max_results: int = 10_000) -> list[str]:
        return await find_via_run(self, root, pattern, max_results, self.settings.command_timeout_s,
                                  self.settings.command_output_bytes)

