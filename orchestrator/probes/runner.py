"""Run a fixed probe script on a host under a chosen interpreter and read back its JSON."""

from __future__ import annotations

import json
from typing import Any

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


async def run_script(
    host: Host, python: str, name: str, params: dict[str, Any], *, timeout_s: float = 120.0, isolated: bool = False
) -> dict[str, Any]:
    """Send scripts/<name>.py to `python -` with params as JSON in its argv[1] (`with_params`); return the JSON it
    printed. `isolated`: run it as `python -I -S -` (see ISOLATED)."""
    result = await host.run(
        [python, *(ISOLATED if isolated else []), "-"], stdin=with_params(scripts.load(name), params),
        timeout_s=timeout_s, max_output=8_000_000
    )
    return parse_script_output(name, script_stdout(result, f"{name} probe", host, python, timeout_s))


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
