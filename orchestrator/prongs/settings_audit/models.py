"""Typed evidence of the settings probe: what each serving process was given (argv, known env vars, files)."""

from __future__ import annotations

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
    """The flag that named it (--config, --extra_llm_api_options, --generation-config) or config.json /
    generation_config.json of the model directory."""


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
