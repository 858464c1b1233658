"""The host survey of a multi-host run: the discover, engine and node scripts in one interpreter start, and the
serving interpreter's Python environment chained after them.

A fleet prong calls node_health, engine_config and python_env on every host, and each would start its own
`python3` over its own round trip (python_env two or three: discover, the interpreter's check, pyenv): on a 64-node
fleet, 192 starts where 64 do. `survey(host, logs)` runs the shipped scripts, unchanged, in one `python3 -I -S`
start (scripts/_bundle.py) and leaves each result in the host's probe session under the key its own probe uses
(`node_key`, `engine_key`, `DISCOVER_KEY`), parsed exactly as that probe parses it; with no --python the
`pyenv_chain` part then checks the running servers' executables on the host with the interpreter check
(scripts/_interp.py, the one probes/interpreter.py runs) and runs pyenv.py under the interpreter
`interpreter.resolve` would choose, filling the interpreter and python_env keys too. The tool calls that follow take
them there (once each for the readings, like any prefetched snapshot), and a call with other arguments runs its
own probe. A part that fails is that probe's failure alone; a chain that cannot answer leaves python_env to
its own probe.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from orchestrator.hosts.base import CommandResult, Host
from orchestrator.probes import interpreter, pyenv
from orchestrator.prongs.kernel_research import probe as kernels
from orchestrator.prongs.node_health import probe as node
from orchestrator.prongs.serving_engine import probe as engine
from orchestrator.probes.runner import ProbeUnavailable, parse_script_output, run_bundle, script_stdout
from orchestrator.probes.session import UNFILLED, fill, session_of


def survey_keys(logs: list[str]) -> list[Hashable]:
    """The probe-session keys one survey fills (the default calls of node_health, engine_config, python_env)."""
    return [interpreter.DISCOVER_KEY, engine.engine_key(logs), node.node_key(logs)]


CHAIN_KEYS: list[Hashable] = [kernels.interpreter_key(None), pyenv.pyenv_key(None)]
"""The keys the chained part fills (the interpreter and the Python environment with no --python): static facts,
shared by every caller, where the survey's other results are readings (one caller each)."""


CHECKS_S = 60.0
"""What the chained part may spend checking server executables, over the pyenv script's own limit."""


async def run_survey(host: Host, logs: list[str], chain: bool = False) -> dict[Hashable, Any]:
    """One round trip: each key of `survey_keys(logs)` with its probe's result (or the exception it ended with);
    with `chain`, also the interpreter and the Python environment (`CHAIN_KEYS`), checked and read on the host
    after discover (scripts/pyenv_chain.py), each UNFILLED when the chain could not answer for it."""
    parts: list[tuple[str, dict[str, Any]]] = [("discover", interpreter.discover_params()),
                                               ("engine", engine.engine_params(logs)),
                                               ("node", node.node_params(logs))]
    timeout = interpreter.DISCOVER_TIMEOUT_S + engine.TIMEOUT_S + node.TIMEOUT_S
    if chain:
        parts.append(("pyenv_chain", {"host": host.name, "pyenv": pyenv.PARAMS, "timeout_s": pyenv.TIMEOUT_S}))
        timeout += pyenv.TIMEOUT_S + CHECKS_S
    try:
        got = await run_bundle(host, "python3", parts, timeout_s=timeout)
    except ProbeUnavailable as exc:
        got = {name: exc for name, _ in parts}
    disc = got["discover"]
    out: dict[Hashable, Any] = {
        interpreter.DISCOVER_KEY: disc,  # an exception is raised to the caller, as the script alone would
        engine.engine_key(logs): engine.engine_from(host.name, got["engine"], logs),
        node.node_key(logs): node.node_from(host.name, got["node"]),
    }
    if chain:
        out.update(_chained(host, disc, got["pyenv_chain"]))
    return out


def _chained(host: Host, disc: dict[str, Any] | ProbeUnavailable,
             chain: dict[str, Any] | ProbeUnavailable) -> dict[Hashable, Any]:
    """The interpreter `interpreter.resolve` would choose, from what the chain checked on the host, and the Python
    environment under it; UNFILLED for both when the chain has no answer (the probes then run as their own)."""
    unfilled = {key: UNFILLED for key in CHAIN_KEYS}
    if isinstance(disc, ProbeUnavailable) or isinstance(chain, ProbeUnavailable) or chain.get("error"):
        return unfilled
    checked, refused = chain.get("checked") or {}, chain.get("refused") or {}
    foreign = set(chain.get("foreign") or [])
    for exe, path in checked.items():
        interpreter.verified(host, str(exe), str(path))
    for s in disc.get("servers") or []:
        exe = s.get("exe") if isinstance(s, dict) else None
        if exe and exe in refused:  # kept for its environment and cwd, never chosen (as interpreter.resolve does)
            s["exe_refused"] = s.pop("exe")
            s["refused_why"], s["exe_foreign"] = str(refused[exe]), exe in foreign
        elif exe and exe not in checked:
            return unfilled  # the chain did not check every executable resolve would: let resolve do it
    interp = interpreter.choose(None, disc)
    if interp.path != chain.get("interpreter") or interp.target != chain.get("target"):
        return unfilled
    ran = chain.get("pyenv") or {}
    result = CommandResult(argv=[interp.path, "-"], exit_code=ran.get("rc"), stdout=str(ran.get("stdout") or ""),
                           stderr=str(ran.get("stderr") or ""), timed_out=bool(ran.get("timed_out")))
    try:
        data: dict[str, Any] | ProbeUnavailable = parse_script_output(
            "pyenv", script_stdout(result, "pyenv probe", host, interp.path, pyenv.TIMEOUT_S))
    except ProbeUnavailable as exc:
        data = exc
    return {kernels.interpreter_key(None): interp, pyenv.pyenv_key(None): pyenv.env_from(host, None, interp, data)}


async def survey(host: Host, logs: list[str], python: str | None = None) -> None:
    """Prefetch node_health, engine_config and the interpreter discovery of this host in one round trip; with no
    --python, also the interpreter's check and python_env (unless they are already there or under way)."""
    chain = python is None and not any(key in session_of(host).slots for key in CHAIN_KEYS)
    keys = survey_keys(logs) + (CHAIN_KEYS if chain else [])
    await fill(host, keys, lambda: run_survey(host, logs, chain), once=set(survey_keys(logs)))
