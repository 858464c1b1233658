"""Run a piece of Python in a child process under an address-space and a CPU limit, and say what it cost.

The hostile-input tests plant files that, unbounded, take gigabytes or minutes: run in-process, a regression would take
the shared test machine down with it. In a child under RLIMIT_AS it ends in a MemoryError there instead, and the test
reports it as a failure."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_MARK = "@@bounded-peak@@"


@dataclass
class Bounded:
    rc: int
    out: str
    err: str
    elapsed_s: float
    peak_mb: float
    """The child's peak resident set since its exec (VmHWM, MB), or -1 when it did not get to say."""
    timed_out: bool = False


def run_bounded(code: str, *, mem_mb: int = 1024, timeout_s: float = 60, args: list[str] | None = None,
                env: dict[str, str] | None = None) -> Bounded:
    """`code` run as `python -c` in the repository (argv[1:] = args), at most `mem_mb` of address space, `timeout_s`
    of wall time (killed after) and as much CPU time."""
    # VmHWM, the high-water mark of this process's own memory since it exec'd: ru_maxrss keeps what the forked
    # parent had resident before the exec (an xdist worker that ran many tests: 340 MB before the child did anything)
    wrapped = (code + "\nimport sys as _s\n"
               "_hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
               f"print({_MARK!r}, _hwm[0] if _hwm else -1024, file=_s.stderr)\n")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (mem_mb << 20, mem_mb << 20))
        cpu = int(timeout_s) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))

    started = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-c", wrapped, *(args or [])], cwd=REPO, capture_output=True,
                              text=True, timeout=timeout_s, preexec_fn=limit, env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired as exc:
        return Bounded(-9, _text(exc.stdout), _text(exc.stderr), time.monotonic() - started, -1, timed_out=True)
    elapsed = time.monotonic() - started
    peak = -1.0
    err_lines = []
    for line in proc.stderr.splitlines():
        if line.startswith(_MARK):
            peak = int(line.split()[1]) / 1024
        else:
            err_lines.append(line)
    return Bounded(proc.returncode, proc.stdout, "\n".join(err_lines), elapsed, peak)


def _text(b: bytes | str | None) -> str:
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else (b or "")


def json_out(b: Bounded) -> object:
    """The last line of the child's stdout as JSON (the child prints its results there)."""
    assert b.rc == 0 and not b.timed_out, (b.rc, b.timed_out, b.err[-3000:])
    return json.loads(b.out.strip().splitlines()[-1])
