"""The path's settings knowledge: nginx's directives as harvested (knowledge/settings/path/nginx.json), the other
layers' documented settings (layers.yaml) and the curated effects (effects.yaml), each with its source."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml
from packaging.version import InvalidVersion, Version

_PKG = "orchestrator.knowledge.settings"


@dataclass(frozen=True)
class LayerDoc:
    layer: str
    name: str
    defaults: tuple[tuple[str, Any], ...]
    help: str
    url: str
    source: str
    unit: str = ""
    requires: tuple[str, ...] = ()
    """Settings of the layer that must have been read for this default to hold (a probe's timeout only where the
    probe exists)."""


@dataclass(frozen=True)
class PathEffect:
    id: str
    layer: str
    setting: str
    when: Any
    symptoms: tuple[str, ...]
    residuals: tuple[str, ...]
    effect: str
    fix: str
    source: tuple[str, ...]
    also: Any = None
    each: str = ""
    show: tuple[str, ...] = ()


def _read(name: str) -> str:
    return resources.files(_PKG).joinpath("path").joinpath(name).read_text()


@lru_cache(maxsize=1)
def docs() -> dict[tuple[str, str], LayerDoc]:
    """(layer, setting) -> its documented default(s), help and source."""
    import json

    out: dict[tuple[str, str], LayerDoc] = {}
    ngx = json.loads(_read("nginx.json"))
    for s in ngx["settings"]:
        points = tuple((str(v), d) for v, d in s["defaults"]) if s.get("defaults") else \
            ((s.get("since") or "0", s.get("default")),)
        out.setdefault(("nginx", s["name"]), LayerDoc("nginx", s["name"], points, s.get("help", ""), s["url"],
                                                      s["source"]))
    for layer, data in (yaml.safe_load(_read("layers.yaml")) or {}).items():
        for name, s in (data.get("settings") or {}).items():
            out[(layer, name)] = LayerDoc(layer, name, tuple((str(v), d) for v, d in s.get("defaults") or []),
                                          s.get("help", ""), s.get("url", ""), s.get("source", ""), s.get("unit", ""),
                                          tuple(s.get("requires") or ()))
    return out


@lru_cache(maxsize=1)
def labels() -> dict[str, str]:
    data = yaml.safe_load(_read("layers.yaml")) or {}
    return {"nginx": "nginx", **{k: v.get("label", k) for k, v in data.items()}}


def doc(layer: str, setting: str) -> LayerDoc | None:
    return docs().get((layer, setting))


def _vkey(v: str) -> Any:
    try:
        return (0, Version(v))
    except InvalidVersion:
        return (1, v)


def default(layer: str, setting: str, version: str | None = None) -> Any:
    """The documented default of a setting at `version` (the newest when unknown), or None."""
    d = doc(layer, setting)
    if d is None or not d.defaults:
        return None
    if not version:
        return d.defaults[-1][1]
    chosen = d.defaults[0][1]
    for since, value in d.defaults:
        if _vkey(since) <= _vkey(version):
            chosen = value
    return chosen


def default_words(layer: str, setting: str) -> str | None:
    """How the default changed between releases, where it did ("1.1 from nginx 1.29.7, 1.0 before"), for a layer
    whose version the probe does not read; None when one default holds for every release."""
    d = doc(layer, setting)
    if d is None or len({repr(v) for _, v in d.defaults}) < 2:
        return None
    label = labels().get(layer, layer)
    newest_since, newest = d.defaults[-1]
    before = "; ".join(f"{'unset' if v is None else v} from {since}" if since not in ("0", "1.0") else
                       f"{'unset' if v is None else v} before"
                       for since, v in d.defaults[:-1])
    return f"{'unset' if newest is None else newest} from {label} {newest_since} ({before}); the version in use decides"


@lru_cache(maxsize=1)
def effects() -> tuple[PathEffect, ...]:
    raw = yaml.safe_load(_read("effects.yaml")) or []
    return tuple(PathEffect(id=e["id"], layer=e["layer"], setting=e["setting"], when=e.get("when"),
                            symptoms=tuple(e.get("symptoms") or ()), residuals=tuple(e.get("residuals") or ()),
                            effect=e["effect"], fix=e.get("fix", ""), source=tuple(e["source"]), also=e.get("also"),
                            each=e.get("each", ""), show=tuple(e.get("show") or ()))
                 for e in raw)


@dataclass(frozen=True)
class AutoscaleMetric:
    """An engine metric an autoscaler may scale on, with what bounds it per pod (autoscale_metrics.yaml)."""

    metric: str
    what: str
    bound_words: str
    fix: str
    sources: tuple[str, ...]
    engine: str = ""
    value: float | None = None
    flags: tuple[str, ...] = ()
    log: str = ""
    queue: str = ""


@lru_cache(maxsize=1)
def autoscale_metrics() -> tuple[AutoscaleMetric, ...]:
    raw = yaml.safe_load(_read("autoscale_metrics.yaml")) or []
    out = []
    for e in raw:
        b = e.get("bound") or {}
        out.append(AutoscaleMetric(metric=e["metric"], what=e["what"], bound_words=b.get("words", ""), fix=e["fix"],
                                   sources=tuple(e["sources"]), engine=e.get("engine", ""),
                                   value=float(b["value"]) if b.get("value") is not None else None,
                                   flags=tuple(b.get("flags") or ()), log=b.get("log", ""), queue=e.get("queue", "")))
    return tuple(out)
