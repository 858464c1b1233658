"""The Diagnosis as terminal text and Markdown (the report, `show`, notebooks), and the number and plural wording the
HTML report shares. Pure functions of the models in `orchestrator/diagnosis.py`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
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


def number_line(n: Number, esc=lambda s: s, *, source: bool = True) -> str:
    """One Number as text; `esc` escapes the free-text parts (Markdown needs it); `source=False`: without its
    source (said once for a group of numbers that share it)."""
    s = f"{esc(n.name)}: {fmt_number(n.value)} {esc(n.unit)}"
    percent_of_100 = n.unit.strip() == "%" and n.peak == 100  # "99.8 % of 100 % (99.8 %)" says one thing thrice
    if n.peak is not None and n.peak > 0 and not percent_of_100:  # no percentage of a missing, zero or odd peak
        s += f" of {fmt_number(n.peak)} {esc(n.unit)} ({100 * n.value / n.peak:.1f} %)"
    if n.note:
        s += f" — {esc(n.note)}"
    return s + (f" [{esc(n.source)}]" if source else "")


def number_lines(numbers: list[Number], esc=lambda s: s) -> list[str]:
    """The numbers, one line each; consecutive ones that share a long source (a spec sheet's URLs) name it once,
    on the last of them."""
    out: list[str] = []
    i = 0
    while i < len(numbers):
        j = i
        while j + 1 < len(numbers) and numbers[j + 1].source == numbers[i].source:
            j += 1
        group = numbers[i:j + 1]
        if len(group) > 1 and len(numbers[i].source) > 24:
            out += [number_line(n, esc, source=False) for n in group[:-1]]
            out.append(number_line(group[-1], esc) + f" (the source of the {len(group)} numbers above)")
        else:
            out += [number_line(n, esc) for n in group]
        i = j + 1
    return out


_SENTENCE = re.compile(r"(?<=[.!?\]])\s+(?=[A-Z0-9(~`'\"])")  # "... less. [source] The next" is two


def _sentences(text: str) -> list[str]:
    return [x.strip() for x in _SENTENCE.split(" ".join(text.split())) if x.strip()]


def said_once(d: Diagnosis) -> tuple[str, str]:
    """The verdict and the bound reasoning as printed: a sentence of the bound reasoning the verdict or a cause
    already says is not said again, and the verdict's "Start with: ..." names the first recommendation (printed in full below)
    instead of repeating it. The recorded diagnosis (JSON) keeps both texts whole."""
    verdict = " ".join(d.verdict.split())
    if d.recommendations:
        first = " ".join(d.recommendations[0].action.split())
        for form in (first, re.sub(r"\s*\[[^\]]*\]$", "", first)):  # with or without its trailing [source]
            said = f"Start with: {form.rstrip('.')}."
            if form and said in verdict:
                verdict = verdict.replace(said, "Start with the first recommendation below.")
                break
    # nor one a ranked cause explains in full below (the bound is often the first cause's mechanism, word for word)
    said = " ".join([verdict, *(" ".join(c.explanation.split()) for c in d.causes)])
    reasoning = " ".join(s for s in _sentences(d.bound_reasoning) if s.rstrip(".") not in said)
    return verdict, reasoning


def explained_once(explanation: str, verdict: str) -> str:
    """A cause's explanation as printed under the verdict: its sentences the verdict already quotes are not said
    again (the verdict often opens with the first cause's claim); never emptied."""
    kept = [s for s in _sentences(explanation) if s.rstrip(".") not in verdict]
    return " ".join(kept) if kept else " ".join(explanation.split())


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


def _plain(s: object) -> str:
    return " ".join(str(s).split())


def to_text(d: Diagnosis) -> str:
    """The diagnosis as plain text, for a pipe or a file: no Markdown marks, no escapes, no wrapping (each paragraph
    one line, for the reader's own tools to wrap), no trailing spaces."""
    return to_markdown(d, plain=True)


def to_markdown(d: Diagnosis, events: Iterable[Any] | None = None, *, plain: bool = False) -> str:
    """The diagnosis as Markdown; with the run's events, also the serving engine's configuration and its latency
    percentiles against the roofline floor (the sections the HTML report has). `plain`: the same text without
    Markdown (`to_text`)."""
    e = _plain if plain else md_text
    h1, h2, b = ("", "", "") if plain else ("# ", "## ", "**")
    verdict, reasoning = said_once(d)
    out = [f"{h1}Diagnosis: {e(d.question)}", "", e(verdict), "",
           f"{b}Bound:{b} {d.bound} — {e(reasoning)}".rstrip(" —"), ""]
    if d.causes:
        out += [f"{h2}Causes (ranked)", ""]
        for i, c in enumerate(d.causes, 1):
            out.append(f"{i}. {b}{e(c.title)}{b} (confidence {c.confidence:.2f}; evidence "
                       f"{', '.join(e(x) for x in c.evidence)})" + ("" if plain else "  "))
            out.append(f"   {e(explained_once(c.explanation, verdict))}")
        out.append("")
    if d.also_noticed:  # true, but not what the question asks about (or history to watch): never a ranked cause
        out += [f"{h2}Also noticed", ""]
        for item in d.also_noticed:
            cited = f" (evidence {', '.join(e(x) for x in item.evidence)})" if item.evidence else ""
            out.append(f"- {b}{e(item.title)}{b}{': ' + e(item.note) if item.note else ''}{cited}")
        out.append("")
    if d.numbers:
        out += [f"{h2}Numbers", ""] + [f"- {line}" for line in number_lines(d.numbers, e)] + [""]
    if d.recommendations:
        out += [f"{h2}Recommendations", ""]
        for r in d.recommendations:
            tail = f" (addresses: {e(r.addresses)})" if names_cause_apart(r) else ""
            out.append(f"- {b}{e(r.action)}{b} — {e(r.why)}{tail}")
        out.append("")
    if d.gaps:
        out += [f"{h2}Gaps", ""] + [f"- {e(g.what)}: {e(g.why)}" for g in d.gaps] + [""]
    if d.fleet:
        fleet = fleet_markdown(d.fleet, e)
        out += [ln.removeprefix("## ").replace("**", "") for ln in fleet] if plain else fleet
    if events is not None:
        from orchestrator.prongs import sections  # each prong's own section, as the HTML has it

        events = list(events)
        for section in sections("markdown"):
            out += section(events, d, e)
    if d.evidence:
        out += [f"{h2}Evidence", ""]
        for eid, ev in d.evidence.items():
            err = " (error)" if ev.is_error else ""
            host = f" on {e(ev.host)}" if ev.host else ""
            code = e(eid) if plain else f"`{eid}`" if "`" not in eid and eid.strip() == eid and eid else e(eid)
            out.append(f"- {code} {e(ev.agent)} · {e(ev.tool)}{host}{err}: {e(ev.excerpt)}")
        out.append("")
    t = d.usage.total
    if not paid(d):  # an offline run (or a replay of one) used no model tokens: no "0 tokens, $0.0000" rows
        return "\n".join(out).rstrip() + "\n"
    if t.calls:
        out += [f"{h2}Usage", "", f"{plural(t.calls, 'model call')}, {t.input_tokens:,} in / {t.output_tokens:,} out / "
                f"{t.cache_read_tokens:,} cache read / {t.cache_write_tokens:,} cache write tokens, "
                f"${t.cost_usd:.4f}", ""]
    if d.usage.agents and plain:
        for a in d.usage.agents:
            u = a.usage
            out.append(f"- {e(a.agent_id)} ({e(a.status)}): {plural(u.calls, 'call')}, {u.total_tokens:,} tokens, "
                       f"${u.cost_usd:.4f}, {a.duration_s:.1f} s")
        out.append("")
    elif d.usage.agents:
        out += ["| agent | status | calls | tokens | cost | time |", "|---|---|--:|--:|--:|--:|"]
        for a in d.usage.agents:
            u = a.usage
            out.append(f"| {_cell(a.agent_id)} | {_cell(a.status)} | {u.calls} | {u.total_tokens:,} | ${u.cost_usd:.4f} | "
                       f"{a.duration_s:.1f} s |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_terminal(d: Diagnosis, console) -> None:
    """Print the diagnosis onto console: rendered with rich on a terminal; as plain text (`to_text`) into a pipe or
    a file, where rich would hard-wrap every paragraph at 80 columns and pad each line with spaces."""
    if not console.is_terminal:
        console.file.write(to_text(d))
        return
    from rich.markdown import Markdown

    console.print(Markdown(to_markdown(d)))
