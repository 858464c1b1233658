"""The signal engine: the failure-mode catalog evaluated over recorded evidence.

1. Facts (analysis/facts.py): every recorded probe result's facts and log lines per host, the observations as `obs.*`.
2. Signals: an entry's `log` regexes are matched against the log lines (case-insensitive, per `sources`); its `when`
   conditions and scope are evaluated over one host's facts (analysis/conditions.py).
3. Findings: one per fired entry, its claim and fixes rendered from templates (analysis/templates.py), citing the
   evidence ids of the facts and lines that matched, which are recorded in `Finding.matched`.

An entry whose evaluation raises becomes a notice naming it (`EvidenceView.notices`), re-raised when
`INVESTIGATE_STRICT_RULES=1` (the test suite sets it).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Iterable

from orchestrator.analysis.conditions import check, scope_ok, _bindings
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.analysis.facts import Fact, HostFacts, Line, gather
from orchestrator.analysis.templates import entry_words, fill, render
from orchestrator.evidence import Evidence
from orchestrator.findings import Finding
from orchestrator.knowledge.catalog import _FACT_OPS, Entry, Signal, catalog
from orchestrator.probes.scripts import logscan as _script

__all__ = ["Fact", "HostFacts", "Hit", "Line", "catalog_findings", "entry_words", "evaluate_entry", "fill",
           "finding_for", "gather", "reads_observations", "render", "strict", "unclassified_findings"]
"""What callers import from here; the facts, conditions and templates live in their own modules."""


def strict() -> bool:
    """Whether rule and signal failures re-raise (tests) instead of becoming notices."""
    return os.environ.get("INVESTIGATE_STRICT_RULES", "") == "1"


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
        ids += [f.evidence_id for f in h.facts if f.evidence_id]  # what the question says cites nothing
        matched += h.notes
    holds = lambda c: check(c, hf, best.binding)[0]  # noqa: E731  (a fix's preconditions, on the same GPU)
    fixes = [entry.cite(fx, render(fx, hf, best.binding, best.line, best.match)) for fx in entry.fixes(holds=holds)]
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
    """Whether what the entry finds can depend on the observations (`obs.*` facts) or the question (`ask.*`): a
    condition names one (or a key
    starting with `*`, which could bind one), or the scope has workload dtypes (`obs.model.quantization`)."""
    got = _OBS_READERS.get(id(entry))
    if got is None or got[0] is not entry:
        keys = [k for sig in entry.signals for c in sig.when
                for k in (c.fact, *(getattr(c, op) for op in _FACT_OPS)) if k]
        reads = bool(entry.scope.dtypes) or any(k.startswith(("obs.", "ask.", "*")) for k in keys)
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


QUOTE_CHARS = 160
"""How much of a log line a finding quotes."""


def quote_line(line: str) -> str:
    """A log line as a finding quotes it: its first QUOTE_CHARS characters, escaped (a line may hold control
    characters), and an ellipsis where it was cut, so a reader knows the quote is not the whole line."""
    return repr(line[:QUOTE_CHARS]) + ("\u2026" if len(line) > QUOTE_CHARS else "")


def unclassified_findings(hosts: dict[str, HostFacts], explained: set[tuple[str, str, int]]) -> list[Finding]:
    """WARNING/ERROR lines no fired entry explains: the scan's unclassified lines plus signature matches whose entry
    did not apply here. Counted and deduplicated, the most frequent errors first."""
    rows: dict[str, dict[str, Any]] = {}
    ids: list[str] = []
    total = 0
    for hf in hosts.values():
        # the engine probe's lines and the log scan's counts are two reads of the same logs: per host, a line is
        # counted by whichever read saw more of it, never by both (one 'enforce eager' warning is not 'x2')
        seen: dict[str, int] = {}
        for ln, level in zip(hf.lines, _levels(hf)):
            if level is None or (hf.host, ln.path, ln.line_no) in explained:
                continue
            key = _mask(ln.text)
            rows.setdefault(key, {"line": ln.text.strip(), "path": ln.path, "no": ln.line_no, "count": 0,
                                  "level": level})
            seen[key] = seen.get(key, 0) + 1
            ids.append(ln.evidence_id)
        scanned: dict[str, int] = {}
        for u, ev_id in hf.unclassified:
            key = _mask(u.line)
            rows.setdefault(key, {"line": u.line.strip(), "path": u.path, "no": u.line_no, "count": 0,
                                  "level": u.level})
            scanned[key] = scanned.get(key, 0) + u.count
            ids.append(ev_id)
        for key in seen.keys() | scanned.keys():
            n = max(seen.get(key, 0), scanned.get(key, 0))
            rows[key]["count"] += n
            total += n
    if not rows:
        return []
    entry = catalog().get("unclassified-log-lines")
    order = {"error": 0, "pattern": 1, "warning": 2, "library": 3}
    ranked = sorted(rows.values(), key=lambda r: (order.get(r["level"], 4), -r["count"]))
    quoted = "; ".join(f"{r['path']}:{r['no']}: {quote_line(r['line'])}" + (f" (x{r['count']})" if r["count"] > 1 else "")
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
        recommendations=[entry.cite(fx, render(fx, hf0)) for fx in entry.fixes()] if entry else [],
        severity=entry.severity if entry else "low", secondary=True,
        matched=[f"{r['path']}:{r['no']}: {r['line'][:200]}" for r in ranked[:MAX_MATCHED]])]


def _mask(text: str) -> str:
    return re.sub(r"0x[0-9a-fA-F]+|\b[0-9a-f]{8,}\b|\d+(\.\d+)*", "#", text.strip())[:300]
