"""`LocalHost`: the machine `investigate` runs on, through subprocesses (argv, never a shell)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream

from orchestrator.hosts import safeopen, walk
from orchestrator.hosts.base import CommandResult
from orchestrator.hosts.output import CappedBuffer
from orchestrator.hosts.policy import unsafe_read


async def _drain(stream: ByteReceiveStream | None, sink: CappedBuffer) -> None:
    if stream is None:
        return
    try:
        async for chunk in stream:
            sink.feed(chunk)
    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class LocalHost:
    """This machine. Commands run in their own process group so a timeout kills everything they started."""

    def __init__(self, name: str = "local", *, io_timeout_s: float = 60.0, env: dict[str, str] | None = None):
        self.name = name
        self.io_timeout_s = io_timeout_s
        """Deadline for read_file and find: a thread stuck on a hung mount or a pipe is abandoned after it."""
        self.env = env
        """The environment commands run with (None: this process's)."""

    async def run(
        self,
        argv: list[str],
        *,
        stdin: str | None = None,
        timeout_s: float = 60.0,
        max_output: int = 1_000_000,
    ) -> CommandResult:
        """Run argv with optional stdin; a program that does not exist exits 127 as it would under a shell."""
        started = time.monotonic()
        out, err = CappedBuffer(max_output), CappedBuffer(max_output)
        try:
            # shielded: a cancellation landing while the process is being created would leave it running, unwaited
            # (the caller's deadline under load); once created, the `finally` below kills and reaps it
            with anyio.CancelScope(shield=True):
                proc = await anyio.open_process(
                    argv,
                    stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    env=self.env,
                )
        except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
            return CommandResult(argv=argv, exit_code=127, stderr=f"{argv[0]}: {exc.strerror or exc}",
                                 duration_s=time.monotonic() - started)
        timed_out = False
        try:
            await anyio.lowlevel.checkpoint()  # a cancellation held off while it was created lands here
            with anyio.move_on_after(timeout_s) as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_drain, proc.stdout, out)
                    tg.start_soon(_drain, proc.stderr, err)
                    if stdin is not None and proc.stdin is not None:
                        try:
                            await proc.stdin.send(stdin.encode())
                        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                            pass  # the program exited without reading all of its input: that is its business
                        finally:
                            await proc.stdin.aclose()
                    await proc.wait()
            timed_out = scope.cancelled_caught
        finally:
            if proc.returncode is None or timed_out:
                _kill_group(proc.pid)
            with anyio.CancelScope(shield=True):
                await proc.wait()
                await proc.aclose()
        return CommandResult(
            argv=argv,
            exit_code=None if timed_out else proc.returncode,
            stdout=out.text(),
            stderr=err.text(),
            timed_out=timed_out,
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
            duration_s=time.monotonic() - started,
        )

    async def read_file(self, path: str, *, max_bytes: int = 1_000_000) -> bytes:
        """Return up to max_bytes of the file at path."""

        why = unsafe_read(path)
        if why is not None:
            raise PermissionError(f"not opened: {why}")

        def _read() -> bytes:
            # one open with no symlink followed, the descriptor checked (only regular files: opening a device arms
            # a watchdog, a FIFO blocks), read from it (safeopen.py, the code remote hosts run too)
            try:
                return safeopen.read_checked(os.path.abspath(path), max_bytes)
            except safeopen.Refused as exc:
                if exc.code == safeopen.MISSING:
                    raise FileNotFoundError(str(exc)) from None
                if exc.code == safeopen.DENIED:
                    raise PermissionError(str(exc)) from None
                raise OSError(str(exc)) from None

        try:
            with anyio.fail_after(self.io_timeout_s):
                return await anyio.to_thread.run_sync(_read, abandon_on_cancel=True)
        except TimeoutError:
            raise TimeoutError(f"reading {path} timed out after {self.io_timeout_s:g} s") from None

    async def find(self, root: str, pattern: str = "*", *, max_results: int = 10_000) -> list[str]:
        """Files under root whose basename matches pattern (see `walk.walk`)."""
        try:
            with anyio.fail_after(self.io_timeout_s):
                paths, _ = await anyio.to_thread.run_sync(walk.walk, root, pattern, max_results,
                                                          abandon_on_cancel=True)
        except TimeoutError:
            raise TimeoutError(f"listing {root} timed out after {self.io_timeout_s:g} s") from None
        return paths

    async def aclose(self) -> None:
        """Nothing to release."""


async def open_entry(entry: object, ssh_config: str | None, settings: object) -> LocalHost:
    """The `local` opener of the registry (orchestrator/hosts/entry.py): this machine."""
    return LocalHost()
