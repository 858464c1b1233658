"""Facts: what the recorded evidence shows about each host, as the failure-mode catalog reads it.

Every recorded probe result's `facts()` (flat dotted keys, see `ProbeModel.facts`) and `log_lines()`, remembered with
the evidence id and host they came from; the observations become `obs.*` facts for every host. `*` in a key stands
for one whole dot-separated part (a GPU index), bound to the same value across an entry's conditions.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterable

from orchestrator import knowledge
from orchestrator.analysis.evidence_view import EvidenceView, probe_facts
from orchestrator.evidence import Evidence
from orchestrator.probes.results import ProbeModel

FactValue = str | int | float | bool


@dataclass(frozen=True)
class Fact:
    value: FactValue
    evidence_id: str


@dataclass
class Line:
    source: str
    path: str
    line_no: int
    text: str
    evidence_id: str


@dataclass
class HostFacts:
    """What the evidence shows about one host (observations are folded into every host)."""

    host: str
    facts: dict[str, Fact] = field(default_factory=dict)
    lines: list[Line] = field(default_factory=list)
    has_python_env: bool = False
    unclassified: list[tuple[Any, str]] = field(default_factory=list)
    """(UnclassifiedLine, evidence id): WARNING/ERROR lines the log scan could not match to any signature."""

    sources: list[Evidence] = field(default_factory=list, repr=False, compare=False)
    """The recorded evidence these facts and lines come from (in the view's order)."""
    basis: tuple[Any, ...] | None = field(default=None, repr=False, compare=False)
    """Everything these facts are a function of (the sources' ids, the observations, the spec-sheet GPU): two views
    with the same basis hold the same facts, so what the catalog found in one holds for the other."""

    _star_n: int = field(default=-1, init=False, repr=False, compare=False)
    _star: _KeyIndex | None = field(default=None, init=False, repr=False, compare=False)
    """The index of `_star_n` fact keys `star_values` reads (looked up again when facts were added since)."""
    _levels: list[str | None] | None = field(default=None, init=False, repr=False, compare=False)
    """What `unclassified_findings` makes of each of `lines` (worked out once: every view asks)."""

    def get(self, key: str) -> Fact | None:
        return self.facts.get(key)

    def star_values(self, key: str) -> list[str]:
        """The values `*` takes in the fact keys matching `key` (each `*` one whole dot-separated part, the first
        one's value). A fleet's catalog asks thousands of times over thousands of facts, and its hosts have the same
        fact keys: the answers are kept per set of keys, shared by every host that has that set."""
        if self._star is None or self._star_n != len(self.facts):  # facts were added since: look the keys up again
            self._star_n, self._star = len(self.facts), _key_index(tuple(self.facts))
        return self._star.star_values(key)


class _KeyIndex:
    """`star_values` over one set of fact keys: answers by key, from keys grouped by shape (references only)."""

    def __init__(self, keys: tuple[str, ...]):
        self.keys = keys
        self._groups: dict[tuple[int, str, str | None], list[str]] | None = None
        self._values: dict[str, list[str]] = {}

    def star_values(self, key: str) -> list[str]:
        got = self._values.get(key)
        if got is None:
            got = self._values[key] = self._star_values(key)
        return got

    def _star_values(self, key: str) -> list[str]:
        parts = key.split(".")
        if parts.count("*") != 1 or any("*" in p for p in parts if p != "*"):  # rare shapes: a regex over the keys
            rx = _pattern(key)
            return list(dict.fromkeys(m.group(1) for fk in self.keys if (m := rx.match(fk))))
        i = parts.index("*")
        prefix = "".join(p + "." for p in parts[:i])
        suffix = "".join("." + p for p in parts[i + 1:])
        if i == 0:
            candidates: Iterable[str] = self.keys
        else:
            # the keys with as many parts, the same first part and, unless `*` is last, the same last part
            groups = self._groups
            if groups is None:
                groups = self._groups = {}
                for fk in self.keys:
                    segs = fk.split(".")
                    groups.setdefault((len(segs), segs[0], None), []).append(fk)
                    groups.setdefault((len(segs), segs[0], segs[-1]), []).append(fk)
            last = parts[-1] if i < len(parts) - 1 else None
            candidates = groups.get((len(parts), parts[0], last), [])
        out: dict[str, None] = {}
        for fk in candidates:
            if fk.startswith(prefix) and fk.endswith(suffix) and len(fk) > len(prefix) + len(suffix):
                value = fk[len(prefix):len(fk) - len(suffix)]
                if "." not in value:
                    out.setdefault(value, None)
        return list(out)


_KEY_INDEXES: OrderedDict[tuple[str, ...], _KeyIndex] = OrderedDict()
_KEY_INDEXES_MAX = 16
"""The indexes of the last key sets seen (a fleet's hosts share a few: one per GPU count and software stack)."""
_key_lock = threading.Lock()


def _key_index(keys: tuple[str, ...]) -> _KeyIndex:
    with _key_lock:  # analysis runs in worker threads too (the CLI's report, notebooks)
        got = _KEY_INDEXES.get(keys)
        if got is None:
            got = _KEY_INDEXES[keys] = _KeyIndex(keys)
            while len(_KEY_INDEXES) > _KEY_INDEXES_MAX:
                _KEY_INDEXES.popitem(last=False)
        else:
            _KEY_INDEXES.move_to_end(keys)
        return got


# --- gathering ----------------------------------------------------------------------------------------------------


def _flatten(prefix: str, value: Any, out: dict[str, FactValue]) -> None:
    if value is None:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}", v, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _flatten(f"{prefix}.{i}", v, out)
    elif isinstance(value, (str, int, float, bool)):
        out[prefix] = value


def observation_facts(obs: Any) -> dict[str, FactValue]:
    """`obs.model.*`, `obs.gpu.*`, `obs.runs.<i>.*`, and the first run's fields as `obs.tp`, `obs.batch`, ..."""
    out: dict[str, FactValue] = {}
    raw = obs.model_dump(mode="json", exclude_none=True)
    _flatten("obs", raw, out)
    runs = raw.get("runs") or []
    out["obs.runs.count"] = len(runs)
    if runs:
        first = runs[0]
        for k, v in first.items():
            if isinstance(v, (str, int, float, bool)):
                out.setdefault(f"obs.{k}", v)
        if "batch" not in first and "concurrency" in first:
            out.setdefault("obs.batch", first["concurrency"])
    quant = (raw.get("model") or {}).get("quantization")
    if quant:
        out["obs.model.quantization"] = str(quant).lower()
    return out


def _model_facts(ev: Evidence) -> dict[str, Fact]:
    return {k: Fact(v, ev.id) for k, v in probe_facts(ev).items() if v is not None}


def _new_host_memo(_ev: Evidence) -> dict[tuple[Any, ...], HostFacts]:
    return {}


def _host_facts(host: str, items: list[tuple[Evidence, ProbeModel]], shared: dict[str, Fact], gpu: Any,
                basis: tuple[Any, ...]) -> HostFacts:
    hf = HostFacts(host, basis=basis)
    for ev, model in items:
        # every agent's view parses the same recorded evidence the same way: its facts are worked out once
        facts: dict[str, Fact] = ev.derived("probe_facts", _model_facts)
        hf.facts.update(facts)
        hf.sources.append(ev)
        for source, path, no, text in model.log_lines():
            hf.lines.append(Line(source, path, no, text, ev.id))
        for u in getattr(model, "unclassified", None) or []:
            hf.unclassified.append((u, ev.id))
        if model.kind == "python_env":
            hf.has_python_env = True
    _complete(hf, shared, gpu)
    return hf


def _complete(hf: HostFacts, shared: dict[str, Fact], gpu: Any) -> None:
    """The spec-sheet GPU where the host's evidence names none, compute capabilities the inventory left out, and
    the observations' facts."""
    if gpu is not None and not any(k.startswith("gpu.") for k in hf.facts):
        hf.facts["gpu.0.name"] = Fact(gpu.name, gpu.evidence[0])
        if gpu.cc:
            hf.facts["gpu.0.cc"] = Fact(gpu.cc, gpu.evidence[0])
    # a GPU the inventory names without a compute capability: the spec database knows it (the keys read directly:
    # `star_values` would index this host's facts only for the index to be redone once these are added)
    names = [k for k in hf.facts if k.startswith("gpu.") and k.endswith(".name") and k.count(".") == 2]
    for key in names:
        cc_key = key[:-len("name")] + "cc"
        if cc_key not in hf.facts:
            spec = knowledge.gpu_spec(str(hf.facts[key].value))
            if spec is not None:
                hf.facts[cc_key] = Fact(spec.cc, hf.facts[key].evidence_id)
    for k, f in shared.items():
        hf.facts.setdefault(k, f)


def gather(view: EvidenceView) -> dict[str, HostFacts]:
    """Facts and log lines per host, from every parsed probe result plus the observations.

    A host's facts are a function of its basis (its evidence ids, the observations, the spec-sheet GPU): they are
    worked out once per basis in a run and shared by every view with the same basis (kept with the host's first
    piece of evidence, which lives as long as the run). Nothing changes a HostFacts after this."""
    per_host: dict[str, list[tuple[Evidence, ProbeModel]]] = {}
    for ev, model in view.models():
        if model.available:
            per_host.setdefault(ev.host or model.host or "", []).append((ev, model))
    oe = view.observations_evidence
    g = view.gpu
    asks = question_facts(view)
    shared: dict[str, Fact] | None = None
    hosts: dict[str, HostFacts] = {}
    for host, items in per_host.items():
        # the spec-sheet GPU counts only for a host whose evidence names no GPU (see _complete)
        spec_gpu = g is not None and not any(_has_gpu_facts(ev) for ev, _ in items)
        basis = (tuple(ev.id for ev, _ in items), (oe[0].id if oe is not None else None, tuple(sorted(asks.items()))),
                 (g.name, g.cc, tuple(g.evidence)) if spec_gpu and g is not None else None)
        memo = items[0][0].derived("host_facts", _new_host_memo)
        hf = memo.get(basis)
        if hf is None:
            if shared is None:
                shared = _observation_shared(view)
            hf = memo[basis] = _host_facts(host, items, shared, g, basis)
        hosts[host] = hf
    if not hosts and (g is not None or oe is not None or asks):
        # a GPU known from the gpu_specs tool only, or only the observations: one host with no evidence of its own
        hf = HostFacts("")
        _complete(hf, _observation_shared(view) if shared is None else shared, g)
        if hf.facts:
            hosts[""] = hf
    return hosts


def precompute(ev: Evidence) -> None:
    """The evidence's facts as `gather` reads them (see analysis.precompute)."""
    _has_gpu_facts(ev)


def _has_gpu_facts(ev: Evidence) -> bool:
    return ev.derived("has_gpu_facts", lambda e: any(k.startswith("gpu.") for k in e.derived("probe_facts",
                                                                                              _model_facts)))


def _observation_shared(view: EvidenceView) -> dict[str, Fact]:
    """The observations' facts (`obs.*`) and what the question itself says of the host (`ask.*`, cited by nothing:
    the question is not evidence, but it can tell which hardware the user has)."""
    oe = view.observations_evidence
    asked = {k: Fact(v, "") for k, v in question_facts(view).items()}
    if oe is None:
        return asked
    return {**asked, **{k: Fact(v, oe[0].id) for k, v in observation_facts(oe[1]).items()}}


_RDMA_WORDS = re.compile(r"\b(?:infiniband|ib|roce(?:v2)?|rdma|mlx5\w*|connectx(?:-\d)?|hcas?|ibverbs|gpudirect)\b",
                         re.IGNORECASE)


def question_facts(view: EvidenceView) -> dict[str, FactValue]:
    """What the question and the observations' notes say of the host: `ask.rdma` when they name RDMA hardware
    (InfiniBand, RoCE, ConnectX, an mlx5 HCA)."""
    oe = view.observations_evidence
    text = " ".join(x for x in (view.question, str(oe[1].notes) if oe is not None and oe[1].notes else "") if x)
    return {"ask.rdma": True} if _RDMA_WORDS.search(text) else {}


def _bind(key: str, binding: str | None) -> str:
    return key.replace("*", binding) if binding is not None and "*" in key else key


def _pattern(key: str) -> re.Pattern[str]:
    return re.compile("^" + re.escape(key).replace(r"\*", r"([^.]+)") + "$")
