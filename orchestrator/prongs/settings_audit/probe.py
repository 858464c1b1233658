"""The settings probe: run scripts/settings.py on the host with the environment allowlist (every environment
variable name in the settings knowledge base) and return what the serving processes were given."""

from __future__ import annotations

import functools
from typing import Any

from orchestrator.hosts.base import Host
from orchestrator.knowledge import settings as kb
from orchestrator.probes.runner import ProbeUnavailable, run_script
from orchestrator.probes.session import shared
from orchestrator.prongs.settings_audit.models import ProcessSettings, SettingsReport

TIMEOUT_S = 60.0
MAX_FILE_BYTES = 65536


def settings_params() -> dict[str, Any]:
    """The script's parameters: the allowlists travel with it, so the filters run on the host (environment variables
    by name; config files parsed there, only their keys that are known settings leave)."""
    return {"env_names": kb.env_names(), "config_keys": config_keys(), "max_file_bytes": MAX_FILE_BYTES}


@functools.lru_cache(maxsize=1)
def config_keys() -> list[str]:
    """Every name a config file's key may carry for a known setting (field names, flags and their aliases), in the
    form the probe compares them (`max_num_seqs`)."""
    names = {n.strip().lstrip("-").replace("-", "_").lower() for p in kb.projects() for d in kb.settings_of(p)
             if d.kind in ("cli", "config", "generation") for n in (d.name, d.flag, *d.aliases) if n}
    return sorted(names)


def settings_from(host_name: str, data: dict[str, Any] | ProbeUnavailable) -> SettingsReport:
    if isinstance(data, ProbeUnavailable):
        return SettingsReport(host=host_name, available=False, reason=str(data))
    procs = [ProcessSettings.model_validate(p) for p in data.get("processes") or []]
    report = SettingsReport(host=host_name, processes=procs,
                            commands=["python3 - < settings.py (/proc/PID/cmdline, /proc/PID/environ filtered by "
                                      f"{len(kb.env_names())} known setting names, files the command line names)"])
    if not procs:
        report.reason = "no serving process (vLLM, SGLang, TensorRT-LLM, TGI, llama.cpp, Ollama) runs on the host"
    return report


async def collect_settings(host: Host, *, timeout_s: float = TIMEOUT_S) -> SettingsReport:
    try:
        data: dict[str, Any] | ProbeUnavailable = await run_script(
            host, "python3", "settings", settings_params(), timeout_s=timeout_s, isolated=True)
    except ProbeUnavailable as exc:
        data = exc
    return settings_from(host.name, data)


async def settings_report(host: Host) -> SettingsReport:
    """collect_settings, once per host and run."""
    return await shared(host, ("settings_audit",), lambda: collect_settings(host))
