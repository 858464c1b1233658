"""The condition engine: whether a catalog entry's `when` conditions and its scope hold over one host's facts.

Conditions compare a fact (`*` binding the same key segment, a GPU index, across them) with a value or another
fact. Scope: compute capabilities, GPU name substrings, installed library versions (PEP 440) and workload dtypes;
a fact the evidence does not show lets a log signal through (the line is positive evidence) but not a `when`-only
one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from orchestrator import knowledge
from orchestrator.analysis.facts import Fact, HostFacts, _bind
from orchestrator.knowledge.catalog import Condition, Entry
from orchestrator.knowledge.envparse import parse_env


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
