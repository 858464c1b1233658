"""The Diagnosis as terminal text and Markdown (the report, `show`, notebooks), and the number and plural wording the
HTML report shares. Pure functions of the models in `orchestrator/diagnosis.py`."""

from __future__ import annotations

import re
from typing import Any, Iterable

from orchestrator.diagnosis import Diagnosis, FleetTable, Number, Recommendation


def fleet_markdown(tables: list[FleetTable], esc=lambda s: s, max_rows: int = 40) -> list[str]:
    """The fleet comparison as Markdown lines (terminal, Markdown report, `show`)."""
    out: list[str] = []
    for t in tables:
        group = "" if t.group == "all" else f" ({esc(t.group)})"
        out += [f"## Fleet comparison{group}", "",
                f"{len(t.hosts)} hosts compared; {plural(t.identical, 'fact')} identical on all; {len(t.rows)} "
                f"{'differs' if len(t.rows) == 1 else 'differ'}.", ""]
        if t.outliers:
            out.append(("Odd host" if len(t.outliers) == 1 else "Odd hosts, most different first") + ": " + "; ".join(
                f"**{esc(o.host)}** ({esc(', '.join(o.differs[:3]))})" for o in t.outliers[:10]))
            out.append("")
        if t.rows:
            out += ["| fact | most hosts | differing hosts |", "|---|---|---|"]
            for r in t.rows[:max_rows]:
                odd = r.odd if r.majority is not None else list(r.values)
                cells = ", ".join(f"{h}: {r.values[h]}" for h in odd[:8]) + (" …" if len(odd) > 8 else "")
                maj = r.majority if r.majority is not None else "no majority"
                out.append(f"| {esc(r.label).replace('|', '/')} | {esc(maj).replace('|', '/')} | "
                           f"{esc(cells).replace('|', '/')} |")
            if len(t.rows) > max_rows:
                out.append(f"| … {len(t.rows) - max_rows} more | | |")
            out.append("")
    return out


def fmt_number(v: float) -> str:
    """A number as people read it: thousands separated, no trailing zeros, 3 significant digits below 1."""
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:,.2f}".rstrip("0").rstrip(".")
    return f"{v:.3g}"


def number_line(n: Number, esc=lambda s: s) -> str:
    """One Number as text; `esc` escapes the free-text parts (Markdown needs it)."""
    s = f"{esc(n.name)}: {fmt_number(n.value)} {esc(n.unit)}"
    if n.peak is not None and n.peak > 0:  # no percentage of a missing, zero or nonsensical peak
        s += f" of {fmt_number(n.peak)} {esc(n.unit)} ({100 * n.value / n.peak:.1f} %)"
    if n.note:
        s += f" — {esc(n.note)}"
    return s + f" [{esc(n.source)}]"


# Free text in a diagnosis comes from models and hosts: in Markdown it must stay text. Backslash-escape what would
# start emphasis, code, links, raw HTML or entities; intraword underscores (sm_120a) are left alone.
# A lone "[x]" stays as written: without "](" or "][" after it (or a definition, which needs a line start) it is no link.
_MD_INLINE = re.compile(r"[\\`*<]|\](?=[(\[])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|&(?=#?\w+;)|~(?=~)")
_MD_BLOCK_START = re.compile(r"^(\d{1,9}(?=[.)])|(?=[#>+=\[-]))")


def md_text(s: object) -> str:
    """Untrusted text as one line of literal Markdown inline content."""
    s = " ".join(str(s).split())
    s = _MD_INLINE.sub(lambda m: "\\" + m.group(0), s)
    m = _MD_BLOCK_START.match(s)
    if m is not None:  # a leading "#", ">", "-", "1.", "[x]:" ... would open a block
        s = s[:m.end()] + "\\" + s[m.end():]
    if s.endswith("#"):  # a heading's closing sequence would be dropped
        s = s[:-1] + "\\#"
    return s


def _cell(s: object) -> str:
    # a pipe would end a Markdown table cell
    return md_text(s).replace("|", "\\|")


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 token`, `2 tokens`, `1 model call`; `many` for irregular plurals."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def paid(d: Diagnosis) -> bool:
    """Whether the run used model tokens (an offline run, or a replay of one, did not: no usage to show)."""
    t = d.usage.total
    return bool(t.total_tokens or t.cost_usd)


def names_cause_apart(r: Recommendation) -> bool:
    """A recommendation names the cause it addresses once: not again when its `why` already names it."""
    return bool(r.addresses) and r.addresses.strip().rstrip(".").lower() not in r.why.lower()


def to_markdown(d: Diagnosis, events: Iterable[Any] | None = None) -> str:
    """The diagnosis as Markdown; with the run's events, also the serving engine's configuration and its latency
    percentiles against the roofline floor (the sections the HTML report has)."""
    e = md_text
    out = [f"# Diagnosis: {e(d.question)}", "", e(d.verdict), "",
           f"**Bound:** {d.bound} — {e(d.bound_reasoning)}".rstrip(" —"), ""]
    if d.causes:
        out += ["## Causes (ranked)", ""]
        for i, c in enumerate(d.causes, 1):
            out.append(f"{i}. **{e(c.title)}** (confidence {c.confidence:.2f}; evidence "
                       f"{', '.join(e(x) for x in c.evidence)})  ")
            out.append(f"   {e(c.explanation)}")
        out.append("")
    if d.also_noticed:  # true, but not what the question asks about (or history to watch): never a ranked cause
        out += ["## Also noticed", ""]
        for item in d.also_noticed:
            cited = f" (evidence {', '.join(e(x) for x in item.evidence)})" if item.evidence else ""
            out.append(f"- **{e(item.title)}**{': ' + e(item.note) if item.note else ''}{cited}")
        out.append("")
    if d.numbers:
        out += ["## Numbers", ""] + [f"- {number_line(n, e)}" for n in d.numbers] + [""]
    if d.recommendations:
        out += ["## Recommendations", ""]
        for r in d.recommendations:
            tail = f" (addresses: {e(r.addresses)})" if names_cause_apart(r) else ""
            out.append(f"- **{e(r.action)}** — {e(r.why)}{tail}")
        out.append("")
    if d.gaps:
        out += ["## Gaps", ""] + [f"- {e(g.what)}: {e(g.why)}" for g in d.gaps] + [""]
    if d.fleet:
        out += fleet_markdown(d.fleet, e)
    if events is not None:
        from orchestrator.prongs import sections  # each prong's own section, as the HTML has it

        events = list(events)
        for section in sections("markdown"):
            out += section(events, d, e)
    if d.evidence:
        out += ["## Evidence", ""]
        for eid, ev in d.evidence.items():
            err = " (error)" if ev.is_error else ""
            host = f" on {e(ev.host)}" if ev.host else ""
            code = f"`{eid}`" if "`" not in eid and eid.strip() == eid and eid else e(eid)
            out.append(f"- {code} {e(ev.agent)} · {e(ev.tool)}{host}{err}: {e(ev.excerpt)}")
        out.append("")
    t = d.usage.total
    if not paid(d):  # an offline run (or a replay of one) used no model tokens: no "0 tokens, $0.0000" rows
        return "\n".join(out).rstrip() + "\n"
    if t.calls:
        out += ["## Usage", "", f"{plural(t.calls, 'model call')}, {t.input_tokens:,} in / {t.output_tokens:,} out / "
                f"{t.cache_read_tokens:,} cache read / {t.cache_write_tokens:,} cache write tokens, "
                f"${t.cost_usd:.4f}", ""]
    if d.usage.agents:
        out += ["| agent | status | calls | tokens | cost | time |", "|---|---|--:|--:|--:|--:|"]
        for a in d.usage.agents:
            u = a.usage
            out.append(f"| {_cell(a.agent_id)} | {_cell(a.status)} | {u.calls} | {u.total_tokens:,} | ${u.cost_usd:.4f} | "
                       f"{a.duration_s:.1f} s |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_terminal(d: Diagnosis, console) -> None:
    """Print the diagnosis with rich onto console (a string console in tests)."""
    from rich.markdown import Markdown

    console.print(Markdown(to_markdown(d)))
