"""Typed evidence of the settings probe: what each serving process was given (argv, known env vars, files)."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.probes.results import ProbeModel


class SettingsFile(BaseModel):
    text: str | None = None
    """The file's known settings as JSON text, parsed on the host (never the file's own text)."""
    dropped: int = 0
    """Keys of the file that are not known settings: left on the host."""
    error: str | None = None
    truncated: bool = False
    role: str = ""
    """The flag that named it (--config, --extra_llm_api_options, --generation-config), config.json /
    generation_config.json of the model directory, or `nccl.conf`: one of NCCL's configuration files
    ($NCCL_CONF_FILE or ~/.nccl.conf, /etc/nccl.conf), whose text holds the variables it sets that are in effect (the
    process's environment and an earlier file win, as NCCL applies them)."""
    overridden: list[str] = Field(default_factory=list)
    """nccl.conf: known variables the file sets that the environment or an earlier file had already set (NCCL
    ignores them here)."""


class ProcessSettings(BaseModel):
    pid: int
    engine: str
    """vllm | sglang | trtllm | tgi | llamacpp | ollama"""
    argv: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Only variables whose names are known settings (the allowlist, applied on the host)."""
    env_readable: bool = True
    version: str | None = None
    files: dict[str, SettingsFile] = Field(default_factory=dict)


class SettingsReport(ProbeModel):
    kind: Literal["settings_audit"] = "settings_audit"
    processes: list[ProcessSettings] = Field(default_factory=list)

    def facts(self) -> dict[str, str | int | float | bool]:
        """`env.<NAME>` for each variable an NCCL configuration file sets in a serving process: NCCL puts a file's
        values into the process's environment itself (setenv without overwriting), so a rule on the environment
        holds for them too. Only the values in effect (the probe left out what the environment or an earlier file
        set); the first process that has one gives it."""
        out: dict[str, str | int | float | bool] = {}
        for p in self.processes:
            for f in p.files.values():
                if f.role != "nccl.conf" or not f.text:
                    continue
                try:
                    data = json.loads(f.text)
                except ValueError:
                    continue
                for name, value in (data.items() if isinstance(data, dict) else []):
                    if isinstance(value, (str, int, float, bool)):
                        out.setdefault(f"env.{name}", value)
        return out
