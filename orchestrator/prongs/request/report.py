"""The request account in every renderer: the diagnosis's `request_account` field (JSON), its section of the HTML
and Markdown reports and of `investigate show`, and the text the `request_account` tool gives a model.

The field is written when the run has the request probe's evidence (`request_account` tool results), so a transcript
recorded before the prong existed assembles and replays to the same diagnosis.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any, Iterable

from orchestrator.diagnosis import (AccountFloor, AccountResidual, AccountTerm, AccountWaste, RequestAccountTable)
from orchestrator.prongs.request.account import RequestAccount, fmt

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView
    from orchestrator.evidence import Evidence

TOOL = "request_account"


def table_of(v: "EvidenceView", acct: RequestAccount) -> RequestAccountTable:
    """The account as the diagnosis's JSON carries it."""
    from orchestrator.prongs.request.rules import account_facts, judge_all
    from orchestrator.prongs.request.table import host_facts, render

    hf = host_facts(account_facts(v, acct))
    explained = judge_all(acct, hf)
    terms: list[AccountTerm] = []
    e = acct.engine
    fl = {k: f.ms for k, f in acct.floors.items()}
    for c in acct.clients[:4]:
        for term, label, unit in (("ttft", "TTFT", "ms"), ("itl", "inter-token latency", "ms"),
                                  ("e2e", "end-to-end latency", "ms")):
            cs, es = getattr(c, term), getattr(e, term) if e is not None else None
            cv = cs.typical if cs is not None else None
            ev_ = es.typical if es is not None else None
            if cv is None and ev_ is None:
                continue
            terms.append(AccountTerm(term=label, run=c.label, client=cv, engine=ev_, floor=fl.get(term), unit=unit))
        for term, label in (("tokens_in", "prompt tokens per request"), ("tokens_out", "output tokens per request")):
            cv, ev_ = getattr(c, term), getattr(e, term) if e is not None else None
            if cv is not None or ev_ is not None:
                terms.append(AccountTerm(term=label, run=c.label, client=cv, engine=ev_, unit="tokens"))
        if c.concurrency is not None or (e is not None and e.inflight is not None):
            terms.append(AccountTerm(term="requests in flight", run=c.label, client=c.concurrency or c.little_l,
                                     engine=e.inflight if e is not None else None, unit="requests"))
    if e is not None and not acct.clients:
        for term, label in (("ttft", "TTFT"), ("itl", "inter-token latency"), ("e2e", "end-to-end latency"),
                            ("queue", "queue time")):
            s = getattr(e, term)
            if s is not None and s.typical is not None:
                terms.append(AccountTerm(term=label, engine=s.typical, floor=fl.get(term), unit="ms"))
    if e is not None and e.requests is not None:
        offered = sum((c.requests or 0) + (c.failed or 0) for c in acct.clients) or None
        terms.append(AccountTerm(term="requests", client=offered, engine=e.requests, unit="requests"))
    residuals = []
    for r in acct.residuals:
        mine = [x for x in explained if r in x.residuals]
        conf = next((x for x in mine if x.judged.status == "confirmed"), None)
        residuals.append(AccountResidual(
            shape=r.shape, words=r.words(), layer=r.layer,
            mechanism=render(conf.judged.mechanism.title, hf)[0] if conf else "",
            candidates=[render(x.judged.mechanism.title, hf)[0] for x in mine if x.judged.status == "candidate"][:3],
            ruled_out=[x.judged.id for x in mine if x.judged.status == "refuted"]))
    return RequestAccountTable(
        terms=terms, residuals=residuals, evidence=acct.evidence,
        floors=[AccountFloor(term=k, ms=round(f.ms, 4), arithmetic=f.arithmetic, source=f.source)
                for k, f in acct.floors.items()],
        waste=[AccountWaste(phase=w.phase, what=w.what, share=round(w.share, 4), arithmetic=w.arithmetic)
               for w in acct.waste])


def account_table_of(evidence: list["Evidence"], inputs: Any) -> RequestAccountTable | None:
    """The field for a run's diagnosis: None unless the request probe ran in it."""
    if not any(ev.tool == TOOL and not ev.is_error for ev in evidence):
        return None
    from orchestrator.analysis.evidence_view import EvidenceView
    from orchestrator.prongs.request.account import build_account

    v = EvidenceView(evidence, inputs.parsed_observations(), question=inputs.question)
    acct = build_account(v)
    return table_of(v, acct) if acct is not None else None


def account_lines(v: "EvidenceView", acct: RequestAccount) -> list[str]:
    """The account as lines of text (the `request_account` tool's answer to a model)."""
    t = table_of(v, acct)
    out = ["request account (client = the benchmark or the user's timings; engine = its /metrics and logs, "
           "cumulative since it started):"]
    for x in t.terms:
        bits = [f"client {fmt(x.client, x.unit)}" if x.client is not None else "",
                f"engine {fmt(x.engine, x.unit)}" if x.engine is not None else "",
                f"floor {fmt(x.floor, x.unit)}" if x.floor is not None else ""]
        out.append(f"- {x.term}{f' [{x.run}]' if x.run else ''}: " + ", ".join(b for b in bits if b))
    for f in t.floors:
        out.append(f"- floor {f.term}: {fmt(f.ms, 'ms')} = {f.arithmetic} ({f.source})")
    for w in t.waste:
        out.append(f"- work nobody asked for ({w.phase}): {w.share:.0%}: {w.arithmetic}")
    if not t.residuals:
        out.append("residuals: none; every pair of figures agrees within measurement noise.")
    for r in t.residuals:
        out.append(f"residual {r.shape}: {r.words}; it sits {r.layer}.")
        if r.mechanism:
            out.append(f"  confirmed: {r.mechanism}")
        for c in r.candidates:
            out.append(f"  candidate: {c}")
        if r.ruled_out:
            out.append(f"  ruled out: {', '.join(r.ruled_out)}")
    return out


def _table(diagnosis: Any) -> RequestAccountTable | None:
    t = getattr(diagnosis, "request_account", None)
    if t is None and isinstance(diagnosis, dict):
        raw = diagnosis.get("request_account")
        t = RequestAccountTable.model_validate(raw) if raw else None
    return t if isinstance(t, RequestAccountTable) else None


def _v(x: float | None, unit: str) -> str:
    return fmt(x, unit) if x is not None else "—"


def _settled(r: Any) -> str:
    """What the account made of a residual: its confirmed mechanism, the candidates left, or none."""
    return (f"confirmed: {r.mechanism}" if r.mechanism else
            "candidates: " + "; ".join(r.candidates) if r.candidates else "no candidate left")


def account_markdown(events: Iterable[Any], diagnosis: Any, esc) -> list[str]:
    t = _table(diagnosis)
    if t is None:
        return []
    out = ["## Request account", "", "| term | run | client | engine | floor |", "|---|---|---:|---:|---:|"]
    out += [f"| {esc(x.term)} | {esc(x.run)} | {esc(_v(x.client, x.unit))} | {esc(_v(x.engine, x.unit))} | "
            f"{esc(_v(x.floor, x.unit))} |" for x in t.terms]
    out.append("")
    for f in t.floors:
        out.append(f"- floor of {esc(f.term)}: {esc(fmt(f.ms, 'ms'))} = {esc(f.arithmetic)}")
    for w in t.waste:
        out.append(f"- work nobody asked for ({esc(w.phase)}): {w.share:.0%}: {esc(w.arithmetic)}")
    for r in t.residuals:
        what = _settled(r)
        out.append(f"- residual: {esc(r.words)} (sits {esc(r.layer)}); {esc(what)}")
    out.append("")
    return out


def account_html(events: Iterable[Any] | None, diagnosis: Any = None, known: set[str] | None = None) -> str:
    t = _table(diagnosis)
    if t is None:
        return ""
    e = html.escape
    p = ['<h2 id="request-account">Request account</h2>',
         "<table><tr><th>term</th><th>run</th><th>client</th><th>engine</th><th>floor</th></tr>"]
    for x in t.terms:
        p.append(f"<tr><td>{e(x.term)}</td><td>{e(x.run)}</td><td class=\"num\">{e(_v(x.client, x.unit))}</td>"
                 f"<td class=\"num\">{e(_v(x.engine, x.unit))}</td><td class=\"num\">{e(_v(x.floor, x.unit))}</td></tr>")
    p.append("</table><ul>")
    for f in t.floors:
        p.append(f"<li>floor of {e(f.term)}: {e(fmt(f.ms, 'ms'))} = {e(f.arithmetic)}</li>")
    for w in t.waste:
        p.append(f"<li>work nobody asked for ({e(w.phase)}): {w.share:.0%}: {e(w.arithmetic)}</li>")
    for r in t.residuals:
        what = _settled(r)
        p.append(f"<li><strong>residual</strong>: {e(r.words)} (sits {e(r.layer)}); {e(what)}</li>")
    p.append("</ul>")
    return "".join(p)


def render_account_terminal(events: Iterable[Any], diagnosis: Any, console) -> None:
    """`investigate show`: the recorded diagnosis's request account as a table (nothing when it has none)."""
    from rich.markup import escape
    from rich.table import Table

    from orchestrator.redact import scrub_text

    t = _table(diagnosis)
    if t is None:
        for ev in reversed(list(events)):
            d = getattr(ev, "diagnosis", None)
            if isinstance(d, dict) and d.get("request_account"):
                t = _table(d)
                break
    if t is None:
        return
    tab = Table(title="Request account")
    for col in ("term", "run", "client", "engine", "floor"):
        tab.add_column(col)
    for x in t.terms:
        tab.add_row(*(escape(scrub_text(s)) for s in (x.term, x.run, _v(x.client, x.unit), _v(x.engine, x.unit),
                                                         _v(x.floor, x.unit))))
    console.print(tab)
    for f in t.floors:
        console.print(escape(scrub_text(f"floor of {f.term}: {fmt(f.ms, 'ms')} = {f.arithmetic}")))
    for r in t.residuals:
        what = _settled(r)
        console.print(escape(scrub_text(f"residual: {r.words} ({what})")))
