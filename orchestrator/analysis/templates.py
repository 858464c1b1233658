"""Templates: a catalog entry's words filled with facts or with a rule's own values.

`{fact.path}` (a fact of the host, `*` bound), `{line}`, `{log.path}`, `{log.line_no}`, `{log.source}`,
`{match[N]}`; anything missing renders "unknown". `entry_words` is what a Python rule takes from its entry: it
computes the values and picks which words apply, and states no text of its own (tests/catalog/test_one_source.py).
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from orchestrator.analysis.facts import Fact, HostFacts, Line, _bind
from orchestrator.knowledge.catalog import entry as catalog_entry_by_id


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
    the source that says it appended, Entry.cite), the entry's named `words` (the finding's own title/claim and the clauses
    a rule adds), and the entry's id, confidence, secondary confidence, severity and bound. A rule states no text of
    its own: it computes the values and picks which words apply (tests/catalog/test_one_source.py)."""
    e = catalog_entry_by_id(entry_id)
    values = values or {}
    return {"entry": e.id, "title": fill(e.title, values), "claim": fill(e.claim, values),
            "explanation": fill(e.explanation, values), "reasoning": fill(e.reasoning or "", values),
            "recommendations": [e.cite(fx, fill(fx, values)) for fx in e.fixes(set(flags))],
            "words": {k: fill(t, values) for k, t in e.words.items()},
            "confidence": e.confidence, "secondary_confidence": (e.confidence if e.secondary_confidence is None
                                                                 else e.secondary_confidence),
            "severity": e.severity, "bound": e.bound, "source": e.source}
