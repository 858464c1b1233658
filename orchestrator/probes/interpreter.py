"""Choose the interpreter probe scripts run under: `--python`, else a running server's, else python3."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any

from orchestrator.hosts.base import Host
from orchestrator.probes.runner import ProbeUnavailable, run_script
from orchestrator.probes.scripts import _interp
from orchestrator.probes.session import shared

SERVER_ENV_KEYS = [
    "HOME", "XDG_CACHE_HOME", "VIRTUAL_ENV", "FLASHINFER_WORKSPACE_BASE", "FLASHINFER_AUTOTUNER_LOAD_FROM_FILE",
    "TLLM_AUTOTUNER_CACHE_PATH", "VLLM_TUNED_CONFIG_FOLDER", "VLLM_CACHE_ROOT", "VLLM_FLASHINFER_AUTOTUNE_CACHE_DIR",
    "SGLANG_MOE_CONFIG_DIR", "TRITON_CACHE_DIR", "TRITON_HOME", "TRITON_CACHE_AUTOTUNING", "TORCHINDUCTOR_CACHE_DIR",
    "PYTORCH_TUNABLEOP_ENABLED", "PYTORCH_TUNABLEOP_FILENAME", "PYTORCH_TUNABLEOP_TUNING",
]
"""Variables copied from a server process's environment: they move the caches it wrote."""


@dataclass
class Interpreter:
    path: str
    source: str
    """Why: "--python", "vllm process 1234", "python3 on PATH"."""
    seen: list[str] = field(default_factory=list)
    servers: list[dict[str, Any]] = field(default_factory=list)
    target: str | None = None
    """A server's interpreter that is not started (another user can change what it runs): the probes run under
    `path` and read this interpreter's environment as files (scripts/_sitepath.py)."""
    refused: dict[str, str] = field(default_factory=dict)
    """Server interpreters not started because another user controls them, and why (one line each): said in the
    probes' results as gaps (an executable that is no interpreter at all is passed over silently)."""

    @property
    def gap(self) -> str | None:
        """One line for the probes' results when a server's interpreter was not started, else None."""
        if not self.refused:
            return None
        return "; ".join(self.refused.values())

    def script_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """A probe script's params, with the environment to read as files when the server's was not started."""
        return {**params, "target": self.target} if self.target else params

    @property
    def server_env(self) -> dict[str, str]:
        return dict(self.servers[0].get("env") or {}) if self.servers else {}

    @property
    def server_cwds(self) -> list[str]:
        return [s["cwd"] for s in self.servers if s.get("cwd")]

    @property
    def server_pids(self) -> list[int]:
        """The processes whose environment and working directories name the places read for them: the host
        reads there only what every one of them could read."""
        return [int(s["pid"]) for s in self.servers if s.get("pid")]


def choose(python: str | None, discovered: dict[str, Any] | None) -> Interpreter:
    """Pure choice from the discover script's output."""
    servers = (discovered or {}).get("servers") or []
    seen = [s["exe"] for s in servers if s.get("exe")]
    if discovered and discovered.get("python3"):
        seen.append(discovered["python3"])
    refused = {str(s["exe_refused"]): str(s.get("refused_why")) for s in servers
               if s.get("exe_refused") and s.get("exe_foreign")}
    if python:
        return Interpreter(python, "--python", [python, *seen], servers, refused=refused)
    for s in servers:
        if s.get("exe"):
            return Interpreter(s["exe"], f"{s['kind']} process {s['pid']}", seen, servers, refused=refused)
    for s in servers:
        if s.get("exe_refused") and s.get("exe_foreign"):
            return Interpreter("python3", f"python3 on PATH, reading the environment of {s['kind']} process {s['pid']} "
                               f"({s['exe_refused']}) as files", seen or ["python3"], servers,
                               target=str(s["exe_refused"]), refused=refused)
    return Interpreter("python3", "python3 on PATH", seen or ["python3"], servers, refused=refused)


_VERIFY = _interp.INTERP_VERIFY
"""The check a named interpreter passes before any probe script is sent to it (scripts/_interp.py: the same code
runs it on the host in the survey's pyenv_chain)."""


class InterpreterRefused(ProbeUnavailable):
    """The named interpreter is not one, or another user controls it: refused before any probe script is sent."""

    @property
    def foreign(self) -> bool:
        """Refused because another user owns or can write it (its environment can still be read as files)."""
        return _interp.FOREIGN.split("%r")[1] in str(self)


def name_refusal(python: str) -> str | None:
    """Why `python` cannot name an interpreter (pure: the name alone), or None."""
    why: str | None = _interp.interp_name_refusal(python)
    return why


_verified: "weakref.WeakKeyDictionary[Any, dict[str, str]]" = weakref.WeakKeyDictionary()


async def verify(host: Host, python: str) -> str:
    """Check on the host that `python` is a Python >= 3.8 interpreter; returns its absolute path, else raises
    InterpreterRefused (one line). Nothing but the fixed check runs until it has passed."""
    why = name_refusal(python)
    if why is not None:
        raise InterpreterRefused(why)
    try:
        cache = _verified.setdefault(host, {})
    except TypeError:  # a host that cannot be weakly referenced: verify every time
        cache = {}
    if python in cache:
        return cache[python]
    res = await host.run(["/bin/sh", "-c", _VERIFY, "sh", python], timeout_s=30, max_output=4096)
    path, why = _interp.interp_verdict(python, res.exit_code, res.stdout, host.name)
    if why is not None:
        raise InterpreterRefused(why)
    cache[python] = path
    return str(path)


def verified(host: Host, python: str, path: str) -> None:
    """Record that `python` passed the check on this host (run there by the survey's pyenv_chain): later probes
    under it do not check again."""
    try:
        _verified.setdefault(host, {})[python] = path
    except TypeError:  # a host that cannot be weakly referenced keeps no record
        pass


DISCOVER_KEY = ("discover",)
"""The probe session's key of the discover script's result (probes.session; the host survey fills it)."""
DISCOVER_TIMEOUT_S = 30.0


def discover_params() -> dict[str, Any]:
    return {"env_keys": SERVER_ENV_KEYS}


async def discover(host: Host) -> dict[str, Any]:
    """The running servers' interpreters, environment and cwd (scripts/discover.py, one round trip)."""
    return await run_script(host, "python3", "discover", discover_params(), timeout_s=DISCOVER_TIMEOUT_S,
                            isolated=True)


async def resolve(host: Host, python: str | None = None) -> Interpreter:
    """Look for running servers with python3 (one round trip) and choose; `python` wins when given.

    The chosen interpreter is verified on the host (`verify`) before any probe script is sent to it; a server
    process whose executable is not an interpreter is passed over."""
    if python:
        await verify(host, python)
    try:
        discovered = await shared(host, DISCOVER_KEY, lambda: discover(host), once=True)
    except ProbeUnavailable:
        if python:
            return Interpreter(python, "--python", [python])
        raise
    if not python and discovered:
        # a server whose executable is no interpreter keeps its environment and cwd (they locate caches) but is
        # not chosen to run probes
        for s in discovered.get("servers") or []:
            exe = s.get("exe") if isinstance(s, dict) else None
            if exe:
                try:
                    await verify(host, str(exe))
                except InterpreterRefused as exc:
                    s["exe_refused"] = s.pop("exe")
                    s["refused_why"] = str(exc)
                    s["exe_foreign"] = exc.foreign
    return choose(python, discovered)
