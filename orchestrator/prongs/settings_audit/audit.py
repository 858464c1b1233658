"""The settings audit: what each serving process was told to do, against the defaults of its version.

Pure: a `ProcessSettings` (prongs/settings_audit/models.py) and the settings knowledge base (knowledge/settings) in, the
list of settings that differ from their default out, each with where the value came from, the version whose default
it was compared with, and the curated effect when the value has one.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from orchestrator.knowledge import settings as kb
from orchestrator.prongs.settings_audit.models import ProcessSettings

_BOOL_WORDS = {"true": True, "false": False, "1": True, "0": False}


@dataclass
class NonDefault:
    """One setting a process was given that differs from its default."""

    doc: kb.SettingDoc
    value: Any
    default: Any
    default_version: str | None
    origin: str
    """`flag --x`, `env`, `config file F`, `F (generation_config.json)`, `NCCL config file F`."""
    effect: kb.Effect | None = None

    @property
    def name(self) -> str:
        return self.doc.flag if self.doc.kind == "cli" and self.doc.flag else self.doc.name

    def shown(self, v: Any) -> str:
        if kb.is_computed(v):
            return f"computed ({v['expr']})"
        if v is None:
            return "unset"
        return json.dumps(v) if not isinstance(v, str) else v

    @property
    def row(self) -> dict[str, Any]:
        return {"project": self.doc.project, "setting": self.name, "kind": self.doc.kind,
                "value": self.shown(self.value), "default": self.shown(self.default),
                "default_version": self.default_version, "origin": self.origin,
                "effect": self.effect.effect if self.effect else None,
                "direction": self.effect.direction if self.effect else None,
                "symptoms": list(self.effect.symptoms) if self.effect else [], "source": self.doc.url}


@dataclass
class ProcessAudit:
    process: ProcessSettings
    project: str | None
    version: str | None
    nondefaults: list[NonDefault] = field(default_factory=list)
    unknown_flags: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        name = kb.project_data(self.project)["label"] if self.project else self.process.engine
        return name + (f" {self.version}" if self.version else "")


def _is_bool(doc: kb.SettingDoc) -> bool:
    return doc.type.lower().startswith("bool") or doc.type.lower() == "optional[bool]" or \
        isinstance(doc.latest_default, bool)


def _argv_settings(project: str, argv: list[str]) -> tuple[list[tuple[kb.SettingDoc, Any, str]], list[str]]:
    flags = kb.flags(project)
    out: list[tuple[kb.SettingDoc, Any, str]] = []
    unknown: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        i += 1
        if not tok.startswith("-") or tok in ("-", "--", "-m"):
            continue
        name, eq, val = tok.partition("=")
        doc = flags.get(name)
        negated = False
        if doc is None and name.startswith("--no-"):
            doc = flags.get("--" + name[5:])
            negated = doc is not None and _is_bool(doc)
            if not negated:
                doc = None
        if doc is None:
            if name.startswith("--"):
                unknown.append(name)
            continue
        value: Any
        if negated:
            value = False
        elif eq:
            value = val
        elif _is_bool(doc):
            nxt = argv[i].lower() if i < len(argv) else ""
            if nxt in _BOOL_WORDS and nxt not in ("0", "1"):
                value = _BOOL_WORDS[nxt]
                i += 1
            else:
                value = True
        elif i < len(argv) and not argv[i].startswith("--"):
            value = argv[i]
            i += 1
        else:
            value = True
        out.append((doc, value, f"flag {name}"))
    return out, unknown


def _config_settings(project: str, path: str, text: str) -> list[tuple[kb.SettingDoc, Any, str]]:
    """A --config YAML (vLLM / SGLang: keys are the flags' field names). The text is the host's (recorded, and read
    again by `show` and `report`): parsed within orchestrator.safeload's bounds, so an alias bomb or deep nesting is
    left out in milliseconds instead of expanded."""
    from orchestrator.safeload import SafeLoadError, load_yaml

    try:
        data = load_yaml(text, source=f"config file {path}", fast=True)
    except SafeLoadError:
        return []
    if not isinstance(data, dict):
        return []
    out = []
    for k, v in _flat(data):
        docs = [d for d in kb.find(k.replace("-", "_"), project) if d.kind in ("cli", "config")]
        if docs:
            out.append((docs[0], v, f"config file {path}"))
    return out


def _flat(data: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """YAML keys as dotted names (TensorRT-LLM's `kv_cache_config.enable_block_reuse`), nested dicts flattened; a
    dict-valued key is also given whole (vLLM's `compilation-config: {...}`). At most CONFIG_MAX_SETTINGS names and
    DOC_MAX_DEPTH levels (iterative: a dict reached through many aliases is walked once per name, within the cap)."""
    from orchestrator.limits import CONFIG_MAX_SETTINGS, DOC_MAX_DEPTH

    out: list[tuple[str, Any]] = []
    stack: list[tuple[str, Iterator[tuple[Any, Any]]]] = [(prefix, iter(data.items()))]
    while stack and len(out) < CONFIG_MAX_SETTINGS:
        pre, items = stack[-1]
        item = next(items, None)
        if item is None:
            stack.pop()
            continue
        key = f"{pre}{item[0]}"
        out.append((key, item[1]))
        if isinstance(item[1], dict) and len(stack) < DOC_MAX_DEPTH:
            stack.append((key + ".", iter(item[1].items())))
    return out


def _generation_settings(path: str, text: str) -> list[tuple[kb.SettingDoc, Any, str]]:
    try:
        data = json.loads(text)
    except ValueError:
        return []
    out = []
    for k, v in (data.items() if isinstance(data, dict) else []):
        docs = [d for d in kb.find(str(k), "transformers") if d.kind == "generation"]
        if docs:
            out.append((docs[0], v, f"{path}"))
    return out


def env_file_settings(path: str, text: str) -> list[tuple[kb.SettingDoc, Any, str]]:
    """The known environment variables an NCCL configuration file sets (its role `nccl.conf`: the probe kept those in
    effect, JSON text of name -> value)."""
    try:
        data = json.loads(text)
    except ValueError:
        return []
    out = []
    for name, value in (data.items() if isinstance(data, dict) else []):
        doc = kb.env_settings().get(str(name))
        if doc is not None:
            out.append((doc, value, f"NCCL config file {path}"))
    return out


def audit_process(p: ProcessSettings) -> ProcessAudit:
    """Every setting the process was given that differs from the default of its version."""
    project = kb.ENGINE_PROJECT.get(p.engine)
    project = project if project in kb.projects() else None
    audit = ProcessAudit(process=p, project=project, version=p.version)
    given: list[tuple[kb.SettingDoc, Any, str]] = []
    if project:
        flags, audit.unknown_flags = _argv_settings(project, p.argv)
        given += flags
    for name, value in sorted(p.env.items()):
        doc = kb.env_settings().get(name)
        if doc is not None:
            given.append((doc, value, "env"))
    for path, f in p.files.items():
        if f.text is None:
            continue
        if f.role in ("--config", "--extra_llm_api_options", "--extra-llm-api-options") and project:
            given += _config_settings(project, path, f.text)
        elif f.role in ("generation_config.json", "--generation-config") and "transformers" in kb.projects():
            given += _generation_settings(path, f.text)
        elif f.role == "nccl.conf":
            given += env_file_settings(path, f.text)
    seen: set[str] = set()
    for doc, value, origin in given:
        if doc.key in seen:
            continue
        seen.add(doc.key)
        version = p.version if doc.project == project else None
        default, at = kb.default_at(doc, version)
        if kb.same(doc, value, default):
            continue
        audit.nondefaults.append(NonDefault(doc=doc, value=value, default=default, default_version=at, origin=origin,
                                            effect=kb.effect_applies(doc, value, default)))
    return audit


# --- regressions ----------------------------------------------------------------------------------------------------

_UPGRADE = re.compile(r"(?:upgrad\w*|updat\w*|mov\w*|bump\w*|go\w*|switch\w*)\s+(?:(?P<what>[A-Za-z][\w.-]*)\s+)?"
                      r"from\s+v?(?P<old>\d+(?:\.\d+)+[\w.-]*)\s+to\s+v?(?P<new>\d+(?:\.\d+)+[\w.-]*)", re.I)
_FROM_TO = re.compile(r"(?P<what>[A-Za-z][\w.-]*)\s+v?(?P<old>\d+(?:\.\d+)+)\s*(?:->|→|to)\s*v?(?P<new>\d+(?:\.\d+)+)",
                      re.I)
_PROJECT_WORDS = {"vllm": "vllm", "sglang": "sglang", "tgi": "tgi", "text-generation-inference": "tgi",
                  "nccl": "nccl", "torch": "pytorch", "pytorch": "pytorch", "transformers": "transformers",
                  "ollama": "ollama", "llama.cpp": "llamacpp", "cuda": "cuda"}


def upgrade_in(question: str, default_project: str | None) -> tuple[str, str, str] | None:
    """(project, old version, new version) when the question says what was upgraded from which version to which."""
    m = _UPGRADE.search(question)
    if m is None:
        m = _FROM_TO.search(question)
        if m is not None and (m.group("what") or "").lower().strip(".") not in _PROJECT_WORDS:
            # "<project> 0.6 -> 0.7" names what changed; "dropped from 1.9 to 0.8" (a rate, req/s) names no project
            m = None
    if not m:
        return None
    what = (m.group("what") or "").lower().strip(".")
    project = _PROJECT_WORDS.get(what) or next((p for w, p in _PROJECT_WORDS.items()
                                                if re.search(r"\b" + re.escape(w) + r"\b", question, re.I)),
                                               default_project)
    if project is None or project not in kb.projects():
        return None
    return project, m.group("old").rstrip("."), m.group("new").rstrip(".")
