"""Choose the interpreter probe scripts run under: `--python`, else a running server's, else python3."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orchestrator.hosts.base import Host
from orchestrator.probes.runner import ProbeUnavailable, run_script

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

    @property
    def server_env(self) -> dict[str, str]:
        return dict(self.servers[0].get("env") or {}) if self.servers else {}

    @property
    def server_cwds(self) -> list[str]:
        return [s["cwd"] for s in self.servers if s.get("cwd")]


def choose(python: str | None, discovered: dict[str, Any] | None) -> Interpreter:
    """Pure choice from the discover script's output."""
    servers = (discovered or {}).get("servers") or []
    seen = [s["exe"] for s in servers if s.get("exe")]
    if discovered and discovered.get("python3"):
        seen.append(discovered["python3"])
    if python:
        return Interpreter(python, "--python", [python, *seen], servers)
    for s in servers:
        if s.get("exe"):
            return Interpreter(s["exe"], f"{s['kind']} process {s['pid']}", seen, servers)
    return Interpreter("python3", "python3 on PATH", seen or ["python3"], servers)


async def resolve(host: Host, python: str | None = None) -> Interpreter:
    """Look for running servers with python3 (one round trip) and choose; `python` wins when given."""
    try:
        discovered = await run_script(host, "python3", "discover", {"env_keys": SERVER_ENV_KEYS}, timeout_s=30)
    except ProbeUnavailable:
        if python:
            return Interpreter(python, "--python", [python])
        raise
    return choose(python, discovered)
