"""The host survey of a multi-host run: the discover, engine and node scripts in one interpreter start.

A fleet prong calls node_health, engine_config and python_env on every host, and each would start its own
`python3` over its own round trip: on a 64-node fleet, 192 starts where 64 do. `survey(host, logs)` runs the three
shipped scripts, unchanged, in one `python3 -I -S` start (scripts/_bundle.py) and leaves each result in the host's
probe session under the key its own probe uses (`node_key`, `engine_key`, `DISCOVER_KEY`), parsed exactly as that
probe parses it; the tool calls that follow take them there (once each, like any prefetched snapshot), and a call
with other arguments runs its probe as before. A part that fails is that probe's failure alone.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from orchestrator.hosts.base import Host
from orchestrator.probes import engine, interpreter, node
from orchestrator.probes.runner import ProbeUnavailable, run_bundle
from orchestrator.probes.session import fill


def survey_keys(logs: list[str]) -> list[Hashable]:
    """The probe-session keys one survey fills (the default calls of node_health, engine_config, python_env)."""
    return [interpreter.DISCOVER_KEY, engine.engine_key(logs), node.node_key(logs)]


async def run_survey(host: Host, logs: list[str]) -> dict[Hashable, Any]:
    """One round trip: each key of `survey_keys(logs)` with its probe's result (or the exception it ended with)."""
    parts: list[tuple[str, dict[str, Any]]] = [("discover", interpreter.discover_params()),
                                               ("engine", engine.engine_params(logs)),
                                               ("node", node.node_params(logs))]
    timeout = interpreter.DISCOVER_TIMEOUT_S + engine.TIMEOUT_S + node.TIMEOUT_S
    try:
        got = await run_bundle(host, "python3", parts, timeout_s=timeout)
    except ProbeUnavailable as exc:
        got = {name: exc for name, _ in parts}
    disc = got["discover"]
    return {
        interpreter.DISCOVER_KEY: disc,  # an exception is raised to the caller, as the script alone would
        engine.engine_key(logs): engine.engine_from(host.name, got["engine"], logs),
        node.node_key(logs): node.node_from(host.name, got["node"]),
    }


async def survey(host: Host, logs: list[str]) -> None:
    """Prefetch node_health, engine_config and the interpreter discovery of this host in one round trip."""
    await fill(host, survey_keys(logs), lambda: run_survey(host, logs), once=True)
