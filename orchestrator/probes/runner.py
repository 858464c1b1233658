"""Run a fixed probe script on a host under a chosen interpreter and read back its JSON."""

from __future__ import annotations

import json
import weakref
from typing import Any

import anyio

from orchestrator.hosts.base import CommandResult, Host
from orchestrator.probes import scripts


class ProbeUnavailable(Exception):
    """The probe could not look: no interpreter, or the script failed. The message is one line."""


ISOLATED = ["-I", "-S"]
"""Flags for the stdlib-only scripts run under the host's plain `python3`: isolated mode (no PYTHON* variables, no
user site, no current directory on sys.path: nothing on the host can shadow `json` or `subprocess`) and no `site`
(a large environment's .pth files cost more than the probe itself; these scripts import nothing from site-packages).
Scripts that read the serving interpreter's packages (pyenv, kernels, caches) run so too: `site` would execute the
environment's .pth files as the SSH user, and the environment may be another user's; they find its package
directories as files (scripts/_sitepath.py)."""


def with_params(source: str, params: dict[str, Any]) -> str:
    """The source to send on stdin with params ahead of it, as the script's argv[1] (the JSON the scripts read).

    On stdin, not on the command line: a command line of plain words reaches the login shell as it is, where JSON
    had to travel hex-encoded and be decoded by an `awk` on the host, a process per probe; and the parameters (log
    paths, the packages looked for) are not shown to the host's other users by `ps`."""
    return "import sys; sys.argv[1:] = [%r]\n" % json.dumps(params) + source


MAX_OUTPUT = 8_000_000
"""A probe script's stdout and stderr cap (each)."""

TOGETHER = {"discover": "quick", "engine": "quick", "settings": "quick", "path": "quick", "logscan": "quick",
            "trace_files": "quick", "pyenv": "environment", "caches": "environment", "kernels": "environment",
            "request_files": "environment",
            "account": "window", "sampler": "window", "node": "window"}
"""Scripts that may share one interpreter start with others of their kind started at the same moment (`run_script`):
stdlib only, no threads, nothing left running after they print. Scripts run together answer together, when the last
of them ends, so only those that take about as long are put together: the quick readings; the environment's
(the packages, caches and kernels of the chosen interpreter and the served model's files, started together once
`discover` answered); those that
watch the host over a window (the account, the power sampler, the node's NVLink counters). `discover` is never held
back by a window: what waits for its answer starts as soon as it ends. The measurement scripts (torch, threads)
always run alone."""

GATHER_YIELDS = 3
"""How many turns of the event loop a script started alone waits for others started with it (no time passes)."""

FORKS_SLACK_S = 5.0
"""What the driver of scripts run together may take beyond the longest part's own limit (it enforces each)."""


class _Together:
    """Scripts for one (host, interpreter, isolation) gathered to start in one interpreter (`_forks.py`)."""

    def __init__(self) -> None:
        self.parts: list[tuple[str, dict[str, Any], float]] = []
        self.results: list[CommandResult] | None = None
        self.done = anyio.Event()


_gathering: "weakref.WeakKeyDictionary[Any, dict[tuple[str, bool, str], _Together]]" = weakref.WeakKeyDictionary()


async def run_script(
    host: Host, python: str, name: str, params: dict[str, Any], *, timeout_s: float = 120.0, isolated: bool = False
) -> dict[str, Any]:
    """Send scripts/<name>.py to `python -` with params as JSON in its argv[1] (`with_params`); return the JSON it
    printed. `isolated`: run it as `python -I -S -` (see ISOLATED).

    Scripts of TOGETHER started at the same moment on one host under one interpreter (the prefetch's, a prong's
    several probes) share one interpreter start and one round trip: each still runs as its own process, all at the
    same time, with its own argv, output, exit code and time limit (scripts/_forks.py), and its result is read as
    the command's alone would be. A prefetched investigation started ten interpreters a host, each compiling the
    prelude again (~25 ms of the host's CPU and a login shell each)."""
    if name in TOGETHER:
        result = await _together(host, python, isolated, TOGETHER[name], name, params, timeout_s)
    else:
        result = await _alone(host, python, isolated, name, params, timeout_s)
    return parse_script_output(name, script_stdout(result, f"{name} probe", host, python, timeout_s))


async def _alone(host: Host, python: str, isolated: bool, name: str, params: dict[str, Any],
                 timeout_s: float) -> CommandResult:
    return await host.run([python, *(ISOLATED if isolated else []), "-"], stdin=with_params(scripts.load(name), params),
                          timeout_s=timeout_s, max_output=MAX_OUTPUT)


async def _together(host: Host, python: str, isolated: bool, kind: str, name: str, params: dict[str, Any],
                    timeout_s: float) -> CommandResult:
    """This script's command result, from a start shared with the scripts started with it (or alone)."""
    try:
        gathering = _gathering.setdefault(host, {})
    except TypeError:  # a host that cannot be weakly referenced: alone
        return await _alone(host, python, isolated, name, params, timeout_s)
    key = (python, isolated, kind)
    batch = gathering.get(key)
    if batch is not None:  # one is gathering: join it
        index = len(batch.parts)
        batch.parts.append((name, params, timeout_s))
        await batch.done.wait()
        if batch.results is None:  # the one that started it was cancelled or failed: run this one alone
            return await _alone(host, python, isolated, name, params, timeout_s)
        return batch.results[index]
    batch = gathering[key] = _Together()
    batch.parts.append((name, params, timeout_s))
    try:
        for _ in range(GATHER_YIELDS):
            await anyio.sleep(0)
    except BaseException:  # cancelled while gathering: those that joined run alone
        batch.done.set()
        raise
    finally:
        if gathering.get(key) is batch:
            del gathering[key]
    try:
        if len(batch.parts) == 1:
            batch.results = [await _alone(host, python, isolated, name, params, timeout_s)]
        else:
            batch.results = await _run_forked(host, python, isolated, batch.parts)
    finally:
        batch.done.set()
    return batch.results[0]


async def _run_forked(host: Host, python: str, isolated: bool,
                      parts: list[tuple[str, dict[str, Any], float]]) -> list[CommandResult]:
    """Run the parts in one interpreter start (scripts/_forks.py); each part's command result as if run alone."""
    argv = [python, *(ISOLATED if isolated else []), "-"]
    stdin = with_params(scripts.forks(tuple(name for name, _, _ in parts)),
                        {"parts": [[params, timeout_s, MAX_OUTPUT] for _, params, timeout_s in parts]})
    outer = await host.run(argv, stdin=stdin, timeout_s=max(t for _, _, t in parts) + FORKS_SLACK_S,
                           max_output=MAX_OUTPUT * 6 * len(parts))
    got: Any = None
    if outer.ok:
        lines = [ln for ln in outer.stdout.strip().splitlines() if ln.strip()]
        try:
            got = json.loads(lines[-1]) if lines else None
        except ValueError:
            got = None
    if not isinstance(got, dict) or not all(isinstance(got.get(str(i)), dict) for i in range(len(parts))):
        # the driver itself did not answer (no interpreter, killed, too old): each part ends as the command did
        failed = outer if not outer.ok else outer.model_copy(update={"exit_code": outer.exit_code or 1})
        return [failed for _ in parts]
    out = []
    for i in range(len(parts)):
        d = got[str(i)]
        out.append(CommandResult(argv=argv, exit_code=d.get("rc"), stdout=str(d.get("stdout") or ""),
                                 stderr=str(d.get("stderr") or ""), timed_out=bool(d.get("timed_out")),
                                 stdout_truncated=bool(d.get("stdout_truncated")),
                                 stderr_truncated=bool(d.get("stderr_truncated")), duration_s=float(d.get("s") or 0)))
    return out


def script_stdout(result: CommandResult, what: str, host: Host, python: str, timeout_s: float) -> str:
    """The script's output, or the ProbeUnavailable that says in one line why there is none."""
    if result.timed_out:
        raise ProbeUnavailable(f"{what} timed out after {timeout_s:g} s under {python}")
    if result.exit_code == 127:
        raise ProbeUnavailable(f"interpreter {python} not found on {host.name}")
    if result.exit_code != 0:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise ProbeUnavailable(f"{what} failed under {python} (exit {result.exit_code}): {tail[:200]}")
    return result.stdout


async def run_bundle(
    host: Host, python: str, parts: list[tuple[str, dict[str, Any]]], *, timeout_s: float = 180.0,
    isolated: bool = True,
) -> dict[str, dict[str, Any] | ProbeUnavailable]:
    """Run several fixed scripts in one interpreter start and one round trip (scripts/_bundle.py); each part's JSON,
    or the ProbeUnavailable that says why that part has none (the others are unaffected)."""
    names = tuple(name for name, _ in parts)
    label = "+".join(names)
    result = await host.run(
        [python, *(ISOLATED if isolated else []), "-"],
        stdin=with_params(scripts.bundle(names), {"parts": [[n, p] for n, p in parts]}), timeout_s=timeout_s,
        max_output=8_000_000 * len(parts),
    )
    outer = parse_script_output(label, script_stdout(result, f"{label} probes", host, python, timeout_s))
    out: dict[str, dict[str, Any] | ProbeUnavailable] = {}
    for name in names:
        part = outer.get(name)
        if not isinstance(part, dict):
            out[name] = ProbeUnavailable(f"{name} probe printed nothing")
        elif part.get("error"):
            out[name] = ProbeUnavailable(f"{name} probe failed under {python}: {str(part['error'])[:200]}")
        else:
            try:
                out[name] = parse_script_output(name, str(part.get("stdout") or ""))
            except ProbeUnavailable as exc:
                out[name] = exc
    return out


def parse_script_output(name: str, stdout: str) -> dict[str, Any]:
    """The JSON document a probe script printed (its last non-empty line)."""
    lines = [ln for ln in stdout.strip().splitlines() if ln.strip()]
    if not lines:
        raise ProbeUnavailable(f"{name} probe printed nothing")
    try:
        data = json.loads(lines[-1])
    except json.JSONDecodeError as exc:
        raise ProbeUnavailable(f"{name} probe printed something other than JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ProbeUnavailable(f"{name} probe printed {type(data).__name__}, expected an object")
    return data
