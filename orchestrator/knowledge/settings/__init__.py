"""Every documented setting of the serving stack, harvested from the projects' own definitions (issue 27).

`<project>.json` files are written by scripts/harvest_settings.py (never by hand): per setting its kind (env, cli,
config, generation), type, default per version (change points), help, the versions it exists in and its source.
`effects.yaml` is the curated layer: the performance effect of the settings whose documented effect is on speed.

Lookups: `find(name)` (an env var, a field name or a flag, any project), `flags(project)`, `env_names()` (the
environment allowlist of the settings audit: only variables whose names are here are ever read on a host),
`default_at(doc, version)`, `typed(doc, raw)` / `differs(...)`, `effect_of(doc)`, `changed_defaults(...)`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import yaml
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field

from orchestrator.knowledge.envparse import nccl_int, torch_bool, vllm_bool

Kind = Literal["env", "cli", "config", "generation"]

ENGINE_PROJECT: dict[str, str] = {"vllm": "vllm", "sglang": "sglang", "tgi": "tgi", "trtllm": "tensorrt_llm",
                                  "llamacpp": "llamacpp", "ollama": "ollama"}
"""The engine probe's engine name -> the project whose settings it takes."""

ENV_PROJECTS = ("vllm", "sglang", "tgi", "nccl", "pytorch", "cuda", "ollama", "llamacpp")
"""Projects whose environment variables a serving process may carry (looked up in this order)."""


class Effect(BaseModel):
    """A curated, sourced performance effect of one setting."""

    model_config = ConfigDict(extra="forbid")
    setting: str
    when: Literal["nondefault"] | list[Any] = "nondefault"
    direction: Literal["slower", "faster", "depends"] = "depends"
    symptoms: list[Literal["throughput", "itl", "ttft", "startup", "regression", "errors", "cost"]]
    bound: Literal["latency", "communication", "memory", "compute"] | None = None
    """What the setting makes the workload bound by, where the effect says (launch/sync overhead: latency)."""
    effect: str
    fix: str = ""
    source: list[str] = Field(min_length=1)


class SettingDoc(BaseModel):
    """One setting of one project, as harvested."""

    model_config = ConfigDict(extra="ignore")
    project: str = ""
    label: str = ""
    name: str
    kind: Kind
    type: str = ""
    defaults: list[tuple[str, Any]] = Field(default_factory=list)
    """(first version, default) change points, oldest first."""
    help: str = ""
    since: str = ""
    until: str = ""
    source: str = ""
    url: str = ""
    flag: str = ""
    aliases: list[str] = Field(default_factory=list)
    env: str = ""
    flag_of: str = ""
    raw_default: str | None = None

    @property
    def key(self) -> str:
        return f"{self.project}:{self.name}"

    @property
    def latest_default(self) -> Any:
        return self.defaults[-1][1] if self.defaults else None


def _vkey(v: str) -> Any:
    try:
        return (0, Version(v.lstrip("v").split("-")[0]))
    except InvalidVersion:
        return (1, v)


def version_key(v: str) -> Any:
    """A release's sort key (`0.5.10` after `0.5.9`; a tag that is no version after every version)."""
    return _vkey(v)


@lru_cache(maxsize=None)
def project_data(project: str) -> dict[str, Any]:
    """The harvested file of a project (versions, count, provenance and its settings)."""
    text = resources.files(__package__).joinpath(f"{project}.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


@lru_cache(maxsize=None)
def projects() -> tuple[str, ...]:
    counts = json.loads(resources.files(__package__).joinpath("counts.json").read_text())
    return tuple(sorted(counts))


@lru_cache(maxsize=None)
def settings_of(project: str) -> tuple[SettingDoc, ...]:
    d = project_data(project)
    return tuple(SettingDoc(project=project, label=d.get("label", project), **s) for s in d["settings"])


@lru_cache(maxsize=None)
def _index() -> dict[str, list[SettingDoc]]:
    out: dict[str, list[SettingDoc]] = {}
    for p in projects():
        for s in settings_of(p):
            keys = {s.name, s.name.lower()}
            for f in [s.flag, *s.aliases]:
                if f:
                    keys.add(f)
                    keys.add(f.lstrip("-").replace("-", "_"))
            for k in keys:
                out.setdefault(k, []).append(s)
    return out


def find(name: str, project: str | None = None) -> list[SettingDoc]:
    """Settings named `name` (an env var, a field name, a flag `--x-y`), in any project or in `project`."""
    hits = _index().get(name) or _index().get(name.lstrip("-").replace("-", "_")) or \
        _index().get(name.lower(), [])
    return [s for s in hits if project is None or s.project == project]


@lru_cache(maxsize=None)
def flags(project: str) -> dict[str, SettingDoc]:
    """A project's command-line flags (primary and aliases) -> their setting."""
    out: dict[str, SettingDoc] = {}
    for s in settings_of(project):
        if s.kind != "cli":
            continue
        for f in [s.flag, *s.aliases]:
            if f and f.startswith("-"):
                out.setdefault(f, s)
    return out


@lru_cache(maxsize=None)
def env_settings() -> dict[str, SettingDoc]:
    """Every known environment variable -> its setting (the first project of ENV_PROJECTS that defines it)."""
    out: dict[str, SettingDoc] = {}
    for p in ENV_PROJECTS + tuple(x for x in projects() if x not in ENV_PROJECTS):
        if p not in projects():
            continue
        for s in settings_of(p):
            if s.kind == "env":
                out.setdefault(s.name, s)
    return out


def env_names() -> list[str]:
    """The environment allowlist: names of every known environment variable, sorted."""
    return sorted(env_settings())


def default_at(doc: SettingDoc, version: str | None) -> tuple[Any, str | None]:
    """(the default at `version`, the harvested version it was read from); the newest when the version is unknown
    or newer than the harvest, the oldest harvested when older."""
    if not doc.defaults:
        return None, None
    if not version:
        return doc.defaults[-1][1], doc.until or None
    vk = _vkey(version)
    chosen = doc.defaults[0]
    for point in doc.defaults:
        if _vkey(point[0]) <= vk:
            chosen = point
    versions = project_data(doc.project).get("versions", [])
    at = max((v for v in versions if _vkey(v) <= vk), key=_vkey, default=versions[0] if versions else None)
    return chosen[1], at


def is_computed(default: Any) -> bool:
    return isinstance(default, dict) and "expr" in default


def typed(doc: SettingDoc, raw: Any, like: Any = None) -> Any:
    """A value as the program reads it, typed like `like` (the default) or the setting's declared type."""
    if not isinstance(raw, str):
        return raw
    t = doc.type.lower()
    ref = like if like is not None and not is_computed(like) else None
    if isinstance(ref, bool) or t in ("bool", "bool | none", "optional[bool]") or t.startswith("bool"):
        if doc.project == "pytorch":
            return torch_bool(raw) if raw in ("0", "1") else raw  # check_env ignores anything else
        if raw.strip().lower() in ("false", "no", "off"):
            return False
        try:
            return vllm_bool(raw)
        except ValueError:  # `bool(int(value))` refuses `true`: compare the value as given
            return raw
    if isinstance(ref, int) or t in ("int", "int64", "uint", "uint64", "usize", "u32", "int | none", "optional[int]"):
        if doc.project == "nccl":
            return nccl_int(raw)
        try:
            return int(raw.strip())
        except ValueError:
            return raw
    if isinstance(ref, float) or t.startswith("float") or t == "optional[float]":
        try:
            return float(raw.strip())
        except ValueError:
            return raw
    return raw.strip()


def same(doc: SettingDoc, raw: Any, default: Any) -> bool:
    """Whether a given value equals the default (as the program reads both)."""
    if is_computed(default):
        return False
    if default is None:
        return raw is None
    v = typed(doc, raw, default)
    d = typed(doc, default, default) if isinstance(default, str) else default
    if isinstance(d, str) and isinstance(v, str):
        return v.strip().lower() == d.strip().lower()
    if isinstance(d, (int, float)) and not isinstance(d, bool) and isinstance(v, (int, float)) \
            and not isinstance(v, bool):
        return float(v) == float(d)
    if isinstance(d, list) and isinstance(v, str):
        return [str(x) for x in d] == [x.strip() for x in v.strip("[]").split(",") if x.strip()]
    return bool(v == d)


@lru_cache(maxsize=1)
def _effects() -> dict[str, Effect]:
    raw = yaml.safe_load(resources.files(__package__).joinpath("effects.yaml").read_text()) or []
    return {e.setting: e for e in (Effect.model_validate(x) for x in raw)}


def effects() -> dict[str, Effect]:
    return dict(_effects())


def effect_of(doc: SettingDoc) -> Effect | None:
    return _effects().get(doc.key)


def effect_applies(doc: SettingDoc, raw: Any, default: Any) -> Effect | None:
    """The curated effect when this value has it (`when`), else None."""
    eff = effect_of(doc)
    if eff is None:
        return None
    if eff.when == "nondefault":
        return None if same(doc, raw, default) else eff
    v = typed(doc, raw, default)
    for w in eff.when:
        if (typed(doc, w, default) if isinstance(w, str) else w) == v or (isinstance(w, str) and isinstance(v, str)
                                                                          and w.lower() == v.lower()):
            return eff
    return None


def changed_defaults(project: str, old: str, new: str) -> list[tuple[SettingDoc, Any, Any]]:
    """Settings whose default differs between two versions of a project: (setting, default then, default now)."""
    out = []
    for s in settings_of(project):
        a, _ = default_at(s, old)
        b, _ = default_at(s, new)
        exists_old = _vkey(s.since) <= _vkey(old) if s.since else True
        if exists_old and a != b:
            out.append((s, a, b))
    return out
