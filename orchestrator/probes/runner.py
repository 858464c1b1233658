"""Run a fixed probe script on a host under a chosen interpreter and read back its JSON."""

from __future__ import annotations

import json
from typing import Any

from orchestrator.hosts.base import Host
from orchestrator.probes import scripts


class ProbeUnavailable(Exception):
    """The probe could not look: no interpreter, or the script failed. The message is one line."""


async def run_script(
    host: Host, python: str, name: str, params: dict[str, Any], *, timeout_s: float = 120.0
) -> dict[str, Any]:
    """Send scripts/<name>.py to `python -` with params as JSON on argv[1]; return the JSON it printed."""
    result = await host.run(
        [python, "-", json.dumps(params)], stdin=scripts.load(name), timeout_s=timeout_s, max_output=8_000_000
    )
    if result.timed_out:
        raise ProbeUnavailable(f"{name} probe timed out after {timeout_s:g} s under {python}")
    if result.exit_code == 127:
        raise ProbeUnavailable(f"interpreter {python} not found on {host.name}")
    if result.exit_code != 0:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise ProbeUnavailable(f"{name} probe failed under {python} (exit {result.exit_code}): {tail[:200]}")
    return parse_script_output(name, result.stdout)


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
