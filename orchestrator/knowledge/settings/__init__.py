"""Every documented setting of the serving stack, harvested from the projects' own definitions (issue 27).

`<project>.json` files are written by scripts/harvest_settings.py (never by hand): per setting its kind (env, cli,
config, generation), type, default per version (change points), help, the versions it exists in and its source.
`effects.yaml` is the curated layer: the performance effect of the settings whose documented effect is on speed.

Lookups: `find(name)` (an env var, a field name or a flag, any project), `flags(project)`, `env_names()` (the
environment allowlist of the settings audit: only variables whose names are here are ever read on a host),
`default_at(doc, version)`, `read(doc, raw)` (the value as the program that reads it parses it, or what the program
does with a value it refuses: knowledge/envparse.py), `typed(doc, raw)`, `same(...)`, `effect_of(doc)`,
`effect_applies(...)` (a refused value gets "the program refuses this value" and what then happens, never the
setting's effect), `changed_defaults(...)`.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, Literal

import yaml
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, Field

from orchestrator.knowledge import envparse as ep
from orchestrator.knowledge.envparse import Reading

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
    parsers: list[tuple[str, Any]] = Field(default_factory=list)
    """(first version, parse spec) change points of how the program turns the string into its value, where the
    harvest reads it from the program's own code (vLLM's envs.py lambdas: envparse.vllm_env)."""

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


def computed_defaults(project: str, version: str | None) -> tuple[dict[str, Any], str | None]:
    """Defaults the program computes at start-up, harvested per release (vLLM's get_batch_defaults tiers and
    CUDA-graph cap: `<project>.json` `computed`), at the nearest harvested release at or below `version` (the newest
    when unknown or newer, the oldest when older): (the computed defaults, the release they were read from)."""
    data = project_data(project).get("computed") or {}
    if not data:
        return {}, None
    versions = sorted(data, key=_vkey)
    if not version:
        at = versions[-1]
    else:
        vk = _vkey(version)
        at = max((v for v in versions if _vkey(v) <= vk), key=_vkey, default=versions[0])
    return dict(data[at]), at


def is_computed(default: Any) -> bool:
    return isinstance(default, dict) and "expr" in default


def _at(points: list[tuple[str, Any]], version: str | None) -> Any:
    if not points:
        return None
    if not version:
        return points[-1][1]
    vk = _vkey(version)
    chosen = points[0]
    for point in points:
        if _vkey(point[0]) <= vk:
            chosen = point
    return chosen[1]


def _kind(doc: SettingDoc, like: Any) -> str:
    """bool | int | float | str: the setting's declared type, else its default's."""
    t = doc.type.lower().replace("optional[", "").rstrip("]").split("|")[0].strip()
    if t.startswith("bool") or (isinstance(like, bool) and not t):
        return "bool"
    if t in ("int", "int64", "uint", "uint64", "usize", "u32", "u64", "u16") or (isinstance(like, int) and not t):
        return "int"
    if t.startswith("float") or t in ("f32", "f64") or (isinstance(like, float) and not t):
        return "float"
    return "str"


def _reader(doc: SettingDoc, version: str | None, like: Any) -> Callable[[str, Any], Reading] | None:
    """The parser of the program that reads this setting (knowledge/envparse.py), or None for a plain string."""
    kind = _kind(doc, like)
    p = doc.project
    if doc.kind == "env":
        if p == "vllm":
            spec = _at(doc.parsers, version)
            return lambda raw, d: ep.vllm_env(raw, d, spec)
        if p == "sglang":
            return lambda raw, d: ep.sglang_env(raw, d, kind)
        if p == "nccl":
            if doc.type.lower().startswith("int"):  # NCCL_PARAM: ncclLoadParam
                return ep.nccl_param
            if doc.name in ep.NCCL_STRTOL_VARS:
                return ep.nccl_strtol_int
            return None
        if p == "pytorch":
            if doc.name in ep.TORCH_NO_CACHING_VARS:
                old = version is not None and _vkey(version) < _vkey(ep.TORCH_NO_CACHING_CHECK_ENV_SINCE)
                return lambda raw, d: ep.torch_no_memory_caching(raw, d, before_check_env=old)
            cvar = ep.TORCH_CVAR.get(doc.name)
            if cvar == "bool":
                return ep.torch_cvar_bool
            if cvar == "int":
                return ep.torch_cvar_int
            if doc.type.lower() == "bool":  # c10::utils::check_env
                return ep.torch_check_env
            return None
        if p == "cuda":
            ckind = "int" if kind in ("int", "bool") else "str"  # NVIDIA documents its 0/1 switches as integers
            return lambda raw, d: ep.cuda_env(raw, d, ckind)
        if p == "tgi":
            return lambda raw, d: ep.tgi_clap(raw, d, doc.type)
        if p == "ollama":
            okind = {"bool": "bool", "uint": "uint", "uint64": "uint64"}.get(doc.type.lower(), "str")
            return lambda raw, d: ep.ollama_env(raw, d, okind)
        if p == "llamacpp":
            handler = (_at(doc.parsers, version) or {}).get("handler", "string")
            return lambda raw, d: ep.llamacpp_env(raw, d, handler)
    if doc.kind == "cli" and p in ("vllm", "sglang") and kind in ("int", "float"):
        label = project_data(p).get("label", p)
        return lambda raw, d: ep.argparse_value(raw, kind, label)
    if doc.kind == "cli" and p == "tgi":
        return lambda raw, d: ep.tgi_clap(raw, d, doc.type)
    if kind == "bool":
        return _loose_bool
    if kind in ("int", "float"):
        return lambda raw, d: _loose_number(raw, kind)
    return None


def _loose_bool(raw: str, default: Any) -> Reading:
    """A boolean of a program without a parser here (config files, flags parsed by the audit): the words as written."""
    low = raw.strip().lower()
    if low in ("true", "1"):
        return Reading(True)
    if low in ("false", "0"):
        return Reading(False)
    return Reading(raw)


def _loose_number(raw: str, kind: str) -> Reading:
    try:
        return Reading(int(raw.strip()) if kind == "int" else float(raw.strip()))
    except ValueError:
        return Reading(raw)


def read(doc: SettingDoc, raw: Any, version: str | None = None, like: Any = None) -> Reading:
    """A given value as the program that reads this setting parses it, at `version` where its parser changed
    between releases: the value it works with, or (`refused`) what it does with a value it does not take."""
    if not isinstance(raw, str):
        return Reading(raw)
    ref = like if like is not None and not is_computed(like) else None
    reader = _reader(doc, version, ref)
    if reader is None:
        return Reading(raw.strip())
    default = ref if ref is not None else _at([(v, d) for v, d in doc.defaults], version)
    return reader(raw, default if not is_computed(default) else None)


def typed(doc: SettingDoc, raw: Any, like: Any = None, version: str | None = None) -> Any:
    """A value as the program reads it (`read`); a value the program refuses stays the string given."""
    r = read(doc, raw, version, like)
    return raw if r.refused else r.value


def same(doc: SettingDoc, raw: Any, default: Any, version: str | None = None) -> bool:
    """Whether a given value equals the default, as the program reads both. A value the program refuses is never
    the same: it is listed, with what the program does with it (`effect_applies`)."""
    if is_computed(default):
        return False
    if default is None:
        return raw is None
    r = read(doc, raw, version, default)
    if r.refused:
        return False
    v = r.value
    d = typed(doc, default, default, version) if isinstance(default, str) else default
    if isinstance(d, str) and isinstance(v, str):
        return v.strip().lower() == d.strip().lower()
    if isinstance(d, (int, float)) and not isinstance(d, bool) and isinstance(v, (int, float)) \
            and not isinstance(v, bool):
        return float(v) == float(d)
    if isinstance(d, bool) and isinstance(v, int) and not isinstance(v, bool):
        return bool(v) == d  # an int-read flag (NCCL, int() in vLLM) against a boolean default
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


_OUTCOME_SYMPTOMS: dict[str, list[Any]] = {"refuses_to_start": ["errors", "startup"], "raises": ["errors", "startup"],
                                           "default": [], "undocumented": []}


def refusal(doc: SettingDoc, raw: Any, reading: Reading) -> Effect:
    """What a value the program does not take does: never the setting's effect, but 'the program refuses this value'
    and what then happens (it refuses to start, keeps the default, raises when the value is first read)."""
    label = project_data(doc.project).get("label", doc.project)
    name = doc.flag if doc.kind == "cli" and doc.flag else doc.name
    what = {"refuses_to_start": f"{label} refuses this value", "raises": f"{label} refuses this value",
            "default": f"{label} does not take this value", "undocumented": f"{label} documents no such value"}
    url = re.findall(r"https://\S+?(?=[),;]|\s|$)", reading.note)
    return Effect(setting=doc.key, when="nondefault", direction="depends",
                  symptoms=_OUTCOME_SYMPTOMS.get(reading.outcome, []),
                  effect=f"is a value the program does not accept ({what[reading.outcome]}): {reading.note}",
                  fix=f"set {name} to a value {label} accepts, or unset it",
                  source=url or [doc.url or "https://github.com/"])


def effect_applies(doc: SettingDoc, raw: Any, default: Any, version: str | None = None) -> Effect | None:
    """The curated effect when this value has it (`when`); for a value the program refuses, what the program does
    with it instead (`refusal`); else None."""
    r = read(doc, raw, version, default)
    if r.refused:
        return refusal(doc, raw, r)
    eff = effect_of(doc)
    if eff is None:
        return None
    if eff.when == "nondefault":
        return None if same(doc, raw, default, version) else eff
    v = r.value
    for w in eff.when:
        if w == "nonzero":
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v != 0 or v is True:
                return eff
            continue
        wv = typed(doc, w, default, version) if isinstance(w, str) else w
        if _equal(wv, v) or (isinstance(w, str) and isinstance(v, str) and w.lower() == v.lower()):
            return eff
    return None


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, (bool, int)) and isinstance(b, (bool, int)) and bool(a) == bool(b) and \
            (isinstance(a, bool) or a in (0, 1)) and (isinstance(b, bool) or b in (0, 1))
    return bool(a == b)


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
