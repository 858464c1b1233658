"""The signal engine: the failure-mode catalog evaluated over recorded evidence.

1. Facts: every recorded probe result's `facts()` (flat dotted keys, see `ProbeModel.facts`) and `log_lines()`,
   remembered with the evidence id and host they came from; the observations become `obs.*` facts for every host.
2. Signals: an entry's `log` regexes are matched against the log lines (case-insensitive, per `sources`); its `when`
   conditions are evaluated over one host's facts, `*` binding the same key segment (a GPU index) across them.
3. Scope: compute capabilities, GPU name substrings, installed library versions (PEP 440) and workload dtypes. A fact
   the evidence does not show lets a log signal through (the line is positive evidence) but not a `when`-only one.
4. Findings: one per fired entry, its claim and fixes rendered from templates ({fact.path}, {line}, {log.path},
   {log.line_no}, {match[N]}; missing values render "unknown"), citing the evidence ids of the facts and lines that
   matched, which are recorded in `Finding.matched`.

An entry whose evaluation raises becomes a notice naming it (`EvidenceView.notices`), re-raised when
`INVESTIGATE_STRICT_RULES=1` (the test suite sets it).
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from orchestrator import knowledge
from orchestrator.analysis.evidence_view import EvidenceView, probe_facts
from orchestrator.evidence import Evidence
from orchestrator.findings import Finding
from orchestrator.knowledge.catalog import _FACT_OPS, Condition, Entry, Signal, catalog
from orchestrator.knowledge.envparse import parse_env
from orchestrator.probes.results import ProbeModel
from orchestrator.probes.scripts import logscan as _script
from orchestrator.knowledge.catalog import entry as catalog_entry_by_id

FactValue = str | int | float | bool


def strict() -> bool:
    """Whether rule and signal failures re-raise (tests) instead of becoming notices."""
    return os.environ.get("INVESTIGATE_STRICT_RULES", "") == "1"


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
    shared: dict[str, Fact] | None = None
    hosts: dict[str, HostFacts] = {}
    for host, items in per_host.items():
        # the spec-sheet GPU counts only for a host whose evidence names no GPU (see _complete)
        spec_gpu = g is not None and not any(_has_gpu_facts(ev) for ev, _ in items)
        basis = (tuple(ev.id for ev, _ in items), oe[0].id if oe is not None else None,
                 (g.name, g.cc, tuple(g.evidence)) if spec_gpu and g is not None else None)
        memo = items[0][0].derived("host_facts", _new_host_memo)
        hf = memo.get(basis)
        if hf is None:
            if shared is None:
                shared = _observation_shared(view)
            hf = memo[basis] = _host_facts(host, items, shared, g, basis)
        hosts[host] = hf
    if not hosts and (g is not None or oe is not None):
        # a GPU known from the gpu_specs tool only, or only the observations: one host with no evidence of its own
        hf = HostFacts("")
        _complete(hf, _observation_shared(view) if shared is None else shared, g)
        if hf.facts:
            hosts[""] = hf
    return hosts


def prepare(ev: Evidence) -> None:
    """The evidence's facts as `gather` reads them (see analysis.prepare)."""
    _has_gpu_facts(ev)


def _has_gpu_facts(ev: Evidence) -> bool:
    return ev.derived("has_gpu_facts", lambda e: any(k.startswith("gpu.") for k in e.derived("probe_facts",
                                                                                              _model_facts)))


def _observation_shared(view: EvidenceView) -> dict[str, Fact]:
    oe = view.observations_evidence
    if oe is None:
        return {}
    return {k: Fact(v, oe[0].id) for k, v in observation_facts(oe[1]).items()}


# --- conditions ---------------------------------------------------------------------------------------------------


def _norm(v: Any) -> Any:
    """Numbers as floats, booleans as 'true'/'false', other strings case-folded and stripped."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return float(v)
    s = str(v).strip()
    try:
        return float(s)
    except ValueError:
        low = s.casefold()
        return {"yes": "true", "enabled": "true", "on": "true", "active": "true", "no": "false",
                "disabled": "false", "off": "false", "not active": "false"}.get(low, low)


def _num(v: Any) -> float | None:
    n = _norm(v)
    return n if isinstance(n, float) else None


def _eq(a: Any, b: Any) -> bool:
    return _norm(a) == _norm(b)


def _bind(key: str, binding: str | None) -> str:
    return key.replace("*", binding) if binding is not None and "*" in key else key


def _pattern(key: str) -> re.Pattern[str]:
    return re.compile("^" + re.escape(key).replace(r"\*", r"([^.]+)") + "$")


def _bindings(conds: Iterable[Condition], hf: HostFacts) -> list[str | None]:
    """Segment values `*` can take: those for which some wildcard fact key exists on this host."""
    keys = [c.fact for c in conds if "*" in c.fact]
    if not keys:
        return [None]
    found: dict[str, None] = {}
    for k in keys:
        for v in hf.star_values(k):
            found.setdefault(v, None)
    ordered: list[str | None] = [*sorted(found, key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s))]
    return ordered or [None]


_NUM_OPS: tuple[tuple[str, Callable[[float, float], bool]], ...] = (
    ("lt", float.__lt__), ("le", float.__le__), ("gt", float.__gt__), ("ge", float.__ge__))
_FACT_CMPS: tuple[tuple[str, Callable[[float, float], bool] | None], ...] = (
    ("eq_fact", None), ("ne_fact", None), ("lt_fact", float.__lt__), ("le_fact", float.__le__),
    ("gt_fact", float.__gt__), ("ge_fact", float.__ge__))


@dataclass(frozen=True)
class _Plan:
    """A condition's operators, read once (a fleet's catalog checks each condition thousands of times)."""

    exists_only: bool
    exists: bool | None
    eq: Any
    ne: Any
    nums: tuple[tuple[Callable[[float, float], bool], float], ...]
    facts: tuple[tuple[str, str, Callable[[float, float], bool] | None], ...]
    in_: list[Any] | None
    not_in: list[Any] | None
    matches: re.Pattern[str] | None
    program: str | None = None
    """Compare the value as this program parses it (knowledge/envparse.py); a value it rejects matches nothing."""


_PLANS: dict[int, tuple[Condition, _Plan]] = {}


def _plan(cond: Condition) -> _Plan:
    got = _PLANS.get(id(cond))
    if got is None or got[0] is not cond:
        plan = _Plan(
            exists_only=cond.exists is not None and len(cond.operators) == 1, exists=cond.exists, eq=cond.eq,
            ne=cond.ne, nums=tuple((cmp, float(getattr(cond, op))) for op, cmp in _NUM_OPS
                                   if getattr(cond, op) is not None),
            facts=tuple((op, getattr(cond, op), cmp) for op, cmp in _FACT_CMPS if getattr(cond, op) is not None),
            in_=cond.in_, not_in=cond.not_in,
            matches=re.compile(cond.matches, re.IGNORECASE) if cond.matches is not None else None,
            program=cond.program)
        got = _PLANS[id(cond)] = (cond, plan)
    return got[1]


def check(cond: Condition, hf: HostFacts, binding: str | None) -> tuple[bool, list[Fact], str]:
    """Whether one condition holds; the facts it read and a `key=value` note."""
    p = _plan(cond)
    key = _bind(cond.fact, binding)
    fact = hf.get(key) if "*" not in key else None
    if p.exists_only:
        ok = (fact is not None) == p.exists
        return ok, [fact] if fact else [], f"{key}={fact.value if fact else 'absent'}"
    if fact is None:
        return False, [], f"{key} absent"
    val = fact.value
    used = [fact]
    if p.program is not None:
        parsed = parse_env(p.program, str(val))
        if parsed is None:  # the program rejects or ignores the value: no comparison holds
            return False, used, f"{key}={val} (ignored by {p.program})"
        val = int(parsed) if isinstance(parsed, bool) else parsed
    ok = p.exists is not False
    if p.eq is not None:
        ok &= _eq(val, p.eq)
    if p.ne is not None:
        ok &= not _eq(val, p.ne)
    for cmp, want in p.nums:
        a = _num(val)
        ok &= a is not None and cmp(a, want)
    for op, other_key, fact_cmp in p.facts:
        other = hf.get(_bind(other_key, binding))
        if other is None:
            ok = False
            continue
        used.append(other)
        a, b = _num(val), _num(other.value)
        if fact_cmp is None:
            same = (a == b * cond.ratio) if a is not None and b is not None else _eq(val, other.value)
            ok &= same if op == "eq_fact" else not same
        else:
            ok &= a is not None and b is not None and fact_cmp(a, b * cond.ratio)
    if p.in_ is not None:
        ok &= any(_eq(val, x) for x in p.in_)
    if p.not_in is not None:
        ok &= not any(_eq(val, x) for x in p.not_in)
    if p.matches is not None:
        ok &= p.matches.search(str(val)) is not None
    return bool(ok), used, f"{key}={val}"


# --- scope --------------------------------------------------------------------------------------------------------


def _cc(v: Any) -> str:
    caps = knowledge.arch_caps(str(v))
    return caps.cc if caps else str(v)


def _values(hf: HostFacts, rx: str, binding: str | None) -> list[Fact]:
    """Facts whose key matches `gpu.<i>.<field>` (only the bound GPU's when a binding is a GPU index)."""
    pat = re.compile(rx)
    out = [f for k, f in hf.facts.items() if pat.fullmatch(k)]
    if binding is not None:
        bound = [f for k, f in hf.facts.items() if pat.fullmatch(k) and k.split(".")[1] == binding]
        if bound:
            return bound
    return out


def scope_ok(entry: Entry, hf: HostFacts, binding: str | None, positive: bool) -> tuple[bool, list[Fact]]:
    """Whether the entry's scope holds on this host. `positive`: a log line fired (unknown facts let it through)."""
    s = entry.scope
    used: list[Fact] = []
    if s.ccs or s.not_ccs:
        ccs = _values(hf, r"gpu\.[^.]+\.cc", binding)
        if not ccs:
            if s.not_ccs or not positive:
                return False, []
        else:
            have = {_cc(f.value) for f in ccs}
            if s.ccs and not have & {_cc(c) for c in s.ccs}:
                return False, []
            if s.not_ccs and have <= {_cc(c) for c in s.not_ccs}:
                return False, []
            used += ccs[:1]
    if s.gpus:
        names = _values(hf, r"gpu\.[^.]+\.name", binding)
        if not names:
            if not positive:
                return False, []
        else:
            hit = [f for f in names if any(sub.lower() in str(f.value).lower() for sub in s.gpus)]
            if not hit:
                return False, []
            used += hit[:1]
    for lib, spec in s.libraries.items():
        f = hf.get(f"lib.{lib}.version")
        if f is None:
            if hf.has_python_env or not positive:
                return False, []
            continue
        if spec:
            try:
                if Version(str(f.value)) not in SpecifierSet(spec, prereleases=True):
                    return False, []
            except InvalidVersion:
                return False, []
        used.append(f)
    if s.dtypes:
        q = hf.get("obs.model.quantization")
        if q is not None:
            if str(q.value).lower() not in {d.lower() for d in s.dtypes}:
                return False, []
            used.append(q)
    return True, used


# --- templates ----------------------------------------------------------------------------------------------------


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() and abs(v) >= 10000 else (str(int(v)) if v.is_integer() else f"{v:.3g}")
    return str(v)


def _lookup(path: str, hf: HostFacts, binding: str | None) -> Any:
    path = _bind(path, binding)
    f = hf.get(path)
    if f is not None:
        return f.value
    parts = path.split(".")
    if binding is not None:
        if parts[-1] == "index" and any(k.startswith(f"{'.'.join(parts[:-1])}.{binding}.") for k in hf.facts):
            return binding
        for i in range(1, len(parts)):
            f = hf.get(".".join(parts[:i] + [binding] + parts[i:]))
            if f is not None:
                return f.value
    # no binding: the first index that has it (gpu.cc -> gpu.0.cc on a host of identical GPUs)
    for i in range(1, len(parts)):
        rx = re.compile(re.escape(".".join(parts[:i])) + r"\.([^.]+)\." + re.escape(".".join(parts[i:])) + "$")
        hits = sorted((m.group(1), fv.value) for k, fv in hf.facts.items() if (m := rx.match(k)))
        if hits:
            return sorted(hits, key=lambda t: (not t[0].isdigit(), int(t[0]) if t[0].isdigit() else 0))[0][1]
    return None


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]+)\}")


def render(template: str, hf: HostFacts, binding: str | None = None, line: Line | None = None,
           match: re.Match[str] | None = None) -> str:
    """Fill a claim/fix template; anything missing renders as "unknown" (never raises)."""

    def one(m: re.Match[str]) -> str:
        if m.group(0) == "{{":
            return "{"
        if m.group(0) == "}}":
            return "}"
        key = m.group(1).strip()
        try:
            if key == "line":
                return line.text.strip()[:160] if line else "unknown"
            if key.startswith("log."):
                if line is None:
                    return "unknown"
                return str({"log.path": line.path, "log.line_no": line.line_no, "log.source": line.source}.get(key, "unknown"))
            mg = re.fullmatch(r"match\[(\d+)\]", key)
            if mg:
                return (match.group(int(mg.group(1))) or "unknown") if match else "unknown"
            v = _lookup(key, hf, binding)
            return "unknown" if v is None else _fmt(v)
        except Exception:  # a template must never cost the finding
            return "unknown"

    return _PLACEHOLDER.sub(one, template)


def fill(template: str, values: dict[str, Any]) -> str:
    """A catalog template filled from a rule's own values (flat names); missing ones render as "unknown"."""
    return render(template, HostFacts("", {k: Fact(v, "") for k, v in values.items() if v is not None}))


def entry_words(entry_id: str, values: dict[str, Any] | None = None, flags: Iterable[str] = ()) -> dict[str, Any]:
    """What a rule needs from its catalog entry, filled: title, claim, explanation, reasoning, fixes (each with
    the entry's first source appended), the entry's named `words` (the finding's own title/claim and the clauses
    a rule adds), and the entry's id, confidence, secondary confidence, severity and bound. A rule states no text of
    its own: it computes the values and picks which words apply (tests/catalog/test_one_source.py)."""
    e = catalog_entry_by_id(entry_id)
    values = values or {}
    return {"entry": e.id, "title": fill(e.title, values), "claim": fill(e.claim, values),
            "explanation": fill(e.explanation, values), "reasoning": fill(e.reasoning or "", values),
            "recommendations": [f"{fill(fx, values)} [{e.source}]" for fx in e.fixes(set(flags))],
            "words": {k: fill(t, values) for k, t in e.words.items()},
            "confidence": e.confidence, "secondary_confidence": (e.confidence if e.secondary_confidence is None
                                                                 else e.secondary_confidence),
            "severity": e.severity, "bound": e.bound, "source": e.source}


# --- evaluation ---------------------------------------------------------------------------------------------------


@dataclass
class Hit:
    signal: Signal
    binding: str | None
    facts: list[Fact]
    notes: list[str]
    line: Line | None = None
    match: re.Match[str] | None = None

    @property
    def confidence(self) -> float:
        return self.signal.confidence if self.signal.confidence is not None else -1.0


def _conditions(sig: Signal, hf: HostFacts) -> list[tuple[str | None, list[Fact], list[str]]]:
    """Bindings under which every condition of the signal holds, with the facts read."""
    out = []
    for b in _bindings(sig.when, hf):
        facts: list[Fact] = []
        notes: list[str] = []
        for c in sig.when:
            ok, used, note = check(c, hf, b)
            if not ok:
                break
            facts += used
            notes.append(note)
        else:
            out.append((b, facts, notes))
    return out


def evaluate_entry(entry: Entry, hf: HostFacts) -> list[Hit]:
    """Every way the entry's signals fire on this host, in scope."""
    hits: list[Hit] = []
    for sig in entry.signals:
        rx = sig.compiled()
        if rx is not None:
            for ln in hf.lines:
                if sig.sources and ln.source not in sig.sources:
                    continue
                m = rx.search(ln.text)
                if not m:
                    continue
                for b, facts, notes in (_conditions(sig, hf) if sig.when else [(None, [], [])]):
                    ok, sfacts = scope_ok(entry, hf, b, positive=True)
                    if ok:
                        hits.append(Hit(sig, b, facts + sfacts, notes, ln, m))
        else:
            for b, facts, notes in _conditions(sig, hf):
                ok, sfacts = scope_ok(entry, hf, b, positive=False)
                if ok:
                    hits.append(Hit(sig, b, facts + sfacts, notes))
    return hits


MAX_MATCHED = 8


def finding_for(entry: Entry, hf: HostFacts, hits: list[Hit]) -> Finding:
    """One finding for an entry that fired: worded from its strongest hit, citing every hit's evidence."""
    best = max(hits, key=lambda h: (h.line is not None, h.confidence if h.confidence >= 0 else entry.confidence))
    conf = best.signal.confidence if best.signal.confidence is not None else entry.confidence
    claim = render(best.signal.claim or entry.claim, hf, best.binding, best.line, best.match)
    expl = render(entry.explanation, hf, best.binding, best.line, best.match) if entry.explanation else ""
    text = " ".join(x for x in (claim, expl) if x).strip()
    text += f" [{entry.source}]"
    ids: list[str] = []
    matched: list[str] = []
    for h in hits:
        if h.line is not None:
            ids.append(h.line.evidence_id)
            matched.append(f"{h.line.path}:{h.line.line_no}: {h.line.text.strip()[:200]}")
        ids += [f.evidence_id for f in h.facts]
        matched += h.notes
    holds = lambda c: check(c, hf, best.binding)[0]  # noqa: E731  (a fix's preconditions, on the same GPU)
    fixes = [f"{render(fx, hf, best.binding, best.line, best.match)} [{entry.source}]"
             for fx in entry.fixes(holds=holds)]
    return Finding(
        id=entry.id, entry=entry.id, rule="catalog", category=entry.area, title=entry.title, claim=text,
        confidence=conf, evidence=list(dict.fromkeys(ids)), recommendations=fixes, severity=entry.severity,
        bound=best.signal.bound or entry.bound, matched=list(dict.fromkeys(matched))[:MAX_MATCHED],
        symptoms=list(entry.symptoms),
        informational=entry.severity == "info")


def _new_memo(_ev: Evidence) -> dict[tuple[Any, ...], tuple[Entry, list[Hit]]]:
    return {}


_OBS_READERS: dict[int, tuple[Entry, bool]] = {}


def reads_observations(entry: Entry) -> bool:
    """Whether what the entry finds can depend on the observations (`obs.*` facts): a condition names one (or a key
    starting with `*`, which could bind one), or the scope has workload dtypes (`obs.model.quantization`)."""
    got = _OBS_READERS.get(id(entry))
    if got is None or got[0] is not entry:
        keys = [k for sig in entry.signals for c in sig.when
                for k in (c.fact, *(getattr(c, op) for op in _FACT_OPS)) if k]
        reads = bool(entry.scope.dtypes) or any(k.startswith(("obs.", "*")) for k in keys)
        got = _OBS_READERS[id(entry)] = (entry, reads)
    return got[1]


def _hits(entry: Entry, hf: HostFacts) -> list[Hit]:
    """evaluate_entry, once per entry and host basis within a run: the fleet prong and the lead look at the same
    hosts' evidence (kept with the host's first piece of evidence, which lives as long as the run). An entry that
    reads no observation finds the same in views that differ only in their observations (the fleet prong has none,
    the lead has the user's)."""
    if hf.basis is None or not hf.sources:
        return evaluate_entry(entry, hf)
    memo = hf.sources[0].derived("catalog_hits", _new_memo)
    own, obs, spec_gpu = hf.basis
    key = (id(entry), own, spec_gpu, obs if reads_observations(entry) else None)
    got = memo.get(key)
    if got is None or got[0] is not entry:
        got = memo[key] = (entry, evaluate_entry(entry, hf))
    return got[1]


def catalog_findings(view: EvidenceView, entries: Iterable[Entry] | None = None) -> list[Finding]:
    """Findings of every catalog entry with signals that fires on the evidence (one per entry, first host first),
    then one finding for the log lines nothing explained (`unclassified-log-lines`)."""
    hosts = gather(view)
    out: list[Finding] = []
    explained: set[tuple[str, str, int]] = set()
    for entry in entries if entries is not None else catalog():
        if not entry.signals:
            continue
        try:
            for hf in hosts.values():
                hits = _hits(entry, hf)
                if hits:
                    out.append(finding_for(entry, hf, hits))
                    explained |= {(hf.host, h.line.path, h.line.line_no) for h in hits if h.line is not None}
                    break
        except Exception as e:
            if strict():
                raise
            view.notice(f"catalog entry {entry.id}", f"its signals could not be evaluated: {type(e).__name__}: {e}")
    if entries is None:
        out += unclassified_findings(hosts, explained)
    return out


MAX_QUOTED = 6


def _levels(hf: HostFacts) -> list[str | None]:
    """Each of the host's lines: `pattern` when a catalog pattern matches it (its entry did not apply here, or it
    would have explained the line), else its WARNING/ERROR level in a probe that hands over whole logs (kernel log,
    engine log), else None: plain informational lines are not news."""
    if hf._levels is None or len(hf._levels) != len(hf.lines):
        patterns = [s.compiled() for e in catalog() for s in e.signals if s.log]
        hf._levels = ["pattern" if any(rx.search(ln.text) for rx in patterns) else _script.level_of(ln.text)
                      for ln in hf.lines]
    return hf._levels


def unclassified_findings(hosts: dict[str, HostFacts], explained: set[tuple[str, str, int]]) -> list[Finding]:
    """WARNING/ERROR lines no fired entry explains: the scan's unclassified lines plus signature matches whose entry
    did not apply here. Counted and deduplicated, the most frequent errors first."""
    rows: dict[str, dict[str, Any]] = {}
    ids: list[str] = []
    total = 0
    for hf in hosts.values():
        for ln, level in zip(hf.lines, _levels(hf)):
            if level is None or (hf.host, ln.path, ln.line_no) in explained:
                continue
            key = _mask(ln.text)
            row = rows.setdefault(key, {"line": ln.text.strip(), "path": ln.path, "no": ln.line_no, "count": 0,
                                        "level": level})
            row["count"] += 1
            total += 1
            ids.append(ln.evidence_id)
        for u, ev_id in hf.unclassified:
            key = _mask(u.line)
            row = rows.setdefault(key, {"line": u.line.strip(), "path": u.path, "no": u.line_no, "count": 0,
                                        "level": u.level})
            row["count"] += u.count
            total += u.count
            ids.append(ev_id)
    if not rows:
        return []
    entry = catalog().get("unclassified-log-lines")
    order = {"error": 0, "pattern": 1, "warning": 2, "library": 3}
    ranked = sorted(rows.values(), key=lambda r: (order.get(r["level"], 4), -r["count"]))
    quoted = "; ".join(f"{r['path']}:{r['no']}: {r['line'][:160]!r}" + (f" (x{r['count']})" if r["count"] > 1 else "")
                       for r in ranked[:MAX_QUOTED])
    more = f" and {len(ranked) - MAX_QUOTED} more distinct line(s)" if len(ranked) > MAX_QUOTED else ""
    errors = sum(r["count"] for r in rows.values() if r["level"] == "error")
    values = {"count": total, "distinct": len(rows), "errors": errors}
    hf0 = HostFacts("", {k: Fact(v, "") for k, v in values.items()})
    title = render(entry.title, hf0) if entry else "Unclassified warnings in the logs"
    claim = (render(entry.claim, hf0) if entry else f"{total} unclassified warning/error line(s).") + f" {quoted}{more}."
    if entry and entry.explanation:
        claim += " " + render(entry.explanation, hf0)
    return [Finding(
        id="unclassified-log-lines", entry=entry.id if entry else "", rule="catalog", category="log", title=title,
        claim=claim, confidence=entry.confidence if entry else 0.3, evidence=list(dict.fromkeys(ids)),
        recommendations=[render(fx, hf0) + (f" [{entry.source}]" if entry else "") for fx in (entry.fixes() if entry else [])],
        severity=entry.severity if entry else "low", secondary=True,
        matched=[f"{r['path']}:{r['no']}: {r['line'][:200]}" for r in ranked[:MAX_MATCHED]])]


def _mask(text: str) -> str:
    return re.sub(r"0x[0-9a-fA-F]+|\b[0-9a-f]{8,}\b|\d+(\.\d+)*", "#", text.strip())[:300]
