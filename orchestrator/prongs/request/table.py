"""The residual table (orchestrator/knowledge/residuals.yaml): residual shapes -> mechanisms, read and judged.

Each mechanism is judged over one flat set of facts (every probe's `facts()`, the observations', and the request
account's own `request.*` facts) with the catalog's condition engine (orchestrator/analysis/conditions.py):
confirmed (every condition of one `confirm` group holds), refuted (a `refute` condition holds), absent (its layer's
`present` conditions all fail: no such proxy or file on this host), or a candidate (none of these: the evidence does
not say). Pure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from orchestrator.analysis.conditions import check
from orchestrator.analysis.facts import Fact, HostFacts
from orchestrator.findings import Symptom
from orchestrator.knowledge.catalog import Condition

Layer = Literal["client", "path", "engine-runtime", "engine", "model-config", "workload", "hardware"]
Probe = Literal["engine_config", "request_files", "resource_account", "observations", "path_layers"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Shape(_Strict):
    says: str
    mechanisms: list[str]
    symptoms: list[Symptom] = Field(default_factory=list)


class Mechanism(_Strict):
    layer: Layer
    title: str
    name: str = ""
    """The mechanism in words without figures: said instead of the title where a figure of the title is not known."""
    claim: str
    sources: list[str] = Field(min_length=1)
    confirm: list[list[Condition]] = Field(default_factory=list)
    refute: list[Condition] = Field(default_factory=list)
    present: list[list[Condition]] = Field(default_factory=list)
    probe: Probe
    fix: str
    split: str


class RequestTimeout(_Strict):
    """A setting of a layer between the client and the engine that bounds one request's duration."""

    bounds: Literal["whole", "gap"]
    """`whole`: the whole response, from the request to its last byte; `gap`: the longest wait between two reads of
    the response (for a streamed answer the wait for the first token, for one not streamed the whole of it)."""
    source: str


class Table(_Strict):
    shapes: dict[str, Shape]
    mechanisms: dict[str, Mechanism]
    request_timeouts: dict[str, RequestTimeout] = Field(default_factory=dict)
    """`<layer>.<setting>` (the path prong's names) -> what of a request it bounds; other timeouts (a probe's, a
    connection's, keep-alive) bound something else and are never set against a request's time."""
    reasoning_models: list[str] = Field(default_factory=list)
    """Regexes of model names that reason before they answer by default (their chat template thinks)."""


def _check_refs(t: Table) -> Table:
    for name, s in t.shapes.items():
        for m in s.mechanisms:
            if m not in t.mechanisms:
                raise ValueError(f"residuals.yaml: shape {name} names mechanism {m!r}, which is not defined")
    return t


def load_table(text: str) -> Table:
    return _check_refs(Table.model_validate(yaml.safe_load(text)))


@lru_cache(maxsize=1)
def table() -> Table:
    text = resources.files("orchestrator.knowledge").joinpath("residuals.yaml").read_text(encoding="utf-8")
    return load_table(text)


Status = Literal["confirmed", "candidate", "absent", "refuted"]


@dataclass
class Judged:
    id: str
    mechanism: Mechanism
    status: Status
    used: list[tuple[str, Any, str]] = field(default_factory=list)
    seen: bool = False
    """Its layer's `present` conditions hold: the evidence shows the layer on this host (a candidate to name first)."""
    seen_at: str = ""
    """What showed it (a process, a log file), when that is a place."""
    """(fact key, value, evidence id) of the facts that confirmed or refuted it."""

    @property
    def evidence(self) -> list[str]:
        return list(dict.fromkeys(e for _, _, e in self.used if e))


def host_facts(facts: dict[str, Fact]) -> HostFacts:
    return HostFacts("", facts=dict(facts))


def _all(group: list[Condition], hf: HostFacts) -> tuple[bool, list[Fact]]:
    used: list[Fact] = []
    for c in group:
        ok, got, _ = check(c, hf, None)
        if not ok:
            return False, []
        used += got
    return True, used


def judge(mid: str, m: Mechanism, hf: HostFacts, looked: frozenset[str] = frozenset()) -> Judged:
    """Confirmed, refuted, absent or a candidate (see the module docstring). `looked`: the probes that ran; a layer
    whose `present` conditions fail is absent only when the probe that reads it ran (the path probe's facts are
    missing when it did not run, which says nothing of the layer)."""
    def keyed(fs: list[Fact]) -> list[tuple[str, Any, str]]:
        rev = {id(f): k for k, f in hf.facts.items()}
        return [(rev.get(id(f), "?"), f.value, f.evidence_id) for f in fs]

    for c in m.refute:
        ok, got, _ = check(c, hf, None)
        if ok:
            return Judged(mid, m, "refuted", keyed(got))
    for group in m.confirm:
        if not group:
            continue
        ok, used = _all(group, hf)
        if ok:
            return Judged(mid, m, "confirmed", keyed(used))
    shown = next((used for ok, used in (_all(g, hf) for g in m.present) if ok), None)
    if m.present and shown is None and (m.probe != "path_layers" or m.probe in looked):
        return Judged(mid, m, "absent")
    at = next((str(f.value) for f in shown or [] if isinstance(f.value, str) and
               f.value.startswith(("process ", "log "))), "")
    return Judged(mid, m, "candidate", seen=shown is not None, seen_at=at)


_FIELD = re.compile(r"\{([A-Za-z0-9_.:\-]+)(?:\|(int|pct|s))?\}")


def _value(v: Any, fmt: str | None) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        if fmt == "pct":
            return f"{100 * v:.0f} %"
        if fmt == "int" or (isinstance(v, float) and abs(v) >= 100):
            return f"{v:,.0f}"
        if isinstance(v, float):
            return f"{v:.3g}"
        return f"{v:,}"
    return str(v)


def render(template: str, hf: HostFacts, extra: dict[str, str] | None = None) -> tuple[str, list[str]]:
    """The template with `{fact.key}` (optionally `|int`, `|pct`) replaced by the facts' values; (text, the keys that
    were missing)."""
    missing: list[str] = []
    extra = extra or {}

    def sub(m: re.Match[str]) -> str:
        key, fmt = m.group(1), m.group(2)
        if key in extra:
            return extra[key]
        if "." not in key:
            return m.group(0)  # not a fact (curl's -w '%{time_connect}')
        f = hf.get(key)
        if f is None or f.value is None or f.value == "":
            missing.append(key)
            return UNKNOWN
        return _value(f.value, fmt)

    text = _FIELD.sub(sub, template)
    if missing:
        text = without_unknowns(text)
    # whatever held an unknown figure goes, with the unit after it: the words never show a placeholder
    text = _LEFT.sub("", text)
    return " ".join(text.split()), missing


def title_of(m: Mechanism, hf: HostFacts) -> str:
    """The mechanism's title with its figures, or its name where a figure is not known."""
    text, missing = render(m.title, hf)
    return m.name if missing and m.name else text


UNKNOWN = "\u2047"
"""What a figure that is not known renders as before the words around it are cut (never a "?" of the text itself)."""
_LEFT = re.compile(UNKNOWN + r"\S*(?:\s+(?:ms|s|tokens?|requests?|%|x|KB|MB/s|GB|Mb/s|Gb/s|B)\b)?")


def without_unknowns(text: str) -> str:
    """The words with each figure that is not known left out: a parenthesis holding one, else the clause (after a
    colon) or the sentence that holds one."""
    text = re.sub(r"\s*\([^()]*" + UNKNOWN + r"[^()]*\)", "", text)
    if UNKNOWN not in text:
        return text
    sentences = re.split(r"(?<=[.!?])\s+", text)
    kept = []
    for sent in sentences:
        if UNKNOWN not in sent:
            kept.append(sent)
            continue
        clauses = [c for c in sent.split(": ") if UNKNOWN not in c]
        if clauses:
            kept.append(": ".join(clauses).rstrip(".") + ("." if sent.rstrip().endswith(".") else ""))
    return " ".join(kept) or _LEFT.sub("", text)
