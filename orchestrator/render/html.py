"""The Diagnosis as one self-contained HTML file: inline CSS, inline SVG, no script, no external asset.

`render_html(diagnosis, events)` is a pure function. Every piece of text goes through `html.escape`: verdicts, excerpts
and agent output come from models and hosts and are untrusted. Evidence ids become links (`#ev-…`) to an evidence
section that holds each id's agent, tool, host and excerpt (from the diagnosis, else from the transcript's tool
results, else a "not recorded" entry, so that every link has a target). With events, the fan-out is drawn as an SVG
Gantt chart (one bar per agent, built by `timeline.build_timeline`).

Roofline convention (how GEMM numbers are recognised among `Diagnosis.numbers`; units are case-insensitive):

- compute: a Number whose unit is a FLOP rate (`FLOP/s`, `FLOPS`, with an optional k/M/G/T/P/E prefix, e.g.
  `TFLOPS`, `TFLOP/s`). With a `peak`, `value` is the achieved throughput and `peak` the compute ceiling.
- bandwidth: a Number whose unit is a byte rate (`B/s`, `GB/s`, `TB/s`, `GiB/s`, ...). With a `peak`, `value` is the
  achieved bandwidth and `peak` the memory ceiling.
- a rate Number without `peak` is itself a ceiling (a spec-sheet figure) when its name says so ("peak", "ceiling",
  "spec", "theoretical", "max") or its source is the knowledge base (`knowledge…`); otherwise it is achieved.
- intensity: a Number whose name contains "intensity" and whose unit is FLOP per byte (`FLOP/B`, `FLOP/byte`,
  `FLOPs/byte`): `value` is the operating point; its `peak`, if set, is the ridge point.
- ridge: a Number whose name contains "ridge" with a FLOP-per-byte unit: the ridge point.

A roof needs two of (compute ceiling, memory ceiling, ridge point); the third follows from ridge = compute / memory.
Ceilings from a `peak` field win over spec-sheet ones (they were paired with a measurement); among equals the first
listed wins. Other compute ceilings (e.g. one per dtype) are drawn as dashed lines. Each intensity number is plotted
on the roof (its attainable throughput); when there is exactly one, its achieved point is plotted too: the achieved
FLOP rate if given, else achieved bandwidth x intensity. The chart is left out when the numbers do not make a roof.
"""

from __future__ import annotations

import math
import re
from html import escape

from orchestrator.analysis.roof_from_numbers import Roof, find_roof
from orchestrator.diagnosis import Diagnosis, EvidenceRef
from orchestrator.render.diagnosis import fmt_number as _fmt
from orchestrator.render.diagnosis import names_cause_apart, plural
from orchestrator.events import DiagnosisSubmitted, RunFinished, RunStarted, ToolResult
from orchestrator.render.timeline import Timeline, build_timeline

_EV_IN_TEXT = re.compile(r"\bev-[A-Za-z0-9_.:-]*[A-Za-z0-9_]")
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.:-]+$")

_STATUS_COLOR = {"ok": "#2e7d32", "error": "#c62828", "timeout": "#ef6c00", "turn_limit": "#ef6c00",
                 "budget": "#ef6c00", "cancelled": "#6a1b9a", "unfinished": "#6a1b9a"}


def anchor(eid: str) -> str:
    """The HTML id of an evidence entry: the id itself when it is safe in an attribute and a fragment."""
    if _SAFE_ID.match(eid):
        return eid
    return "ev-x" + "".join(f"{ord(ch):x}" for ch in eid)[:60]


def _e(s: object) -> str:
    return escape(str(s), quote=True)


# ---------------------------------------------------------------- evidence


def evidence_entries(d: Diagnosis, events: list | None) -> dict[str, EvidenceRef]:
    """Every evidence id the report shows or cites, with its reference, in a stable order."""
    recorded: dict[str, EvidenceRef] = {}
    for ev in events or ():
        if isinstance(ev, ToolResult) and ev.evidence_id:
            excerpt = " ".join(ev.content.split())
            recorded[ev.evidence_id] = EvidenceRef(agent=ev.agent_id, tool=ev.tool, host=ev.host,
                                                   excerpt=excerpt[:399] + "…" if len(excerpt) > 400 else excerpt,
                                                   is_error=ev.is_error)
    out: dict[str, EvidenceRef] = dict(d.evidence)
    for eid in _cited_in_order(d):
        if eid not in out:
            out[eid] = recorded.get(eid) or EvidenceRef(agent="?", tool="?", excerpt="(not recorded in this run)",
                                                        is_error=True)
    return out


def _cited_in_order(d: Diagnosis) -> list[str]:
    ids: list[str] = []
    for c in d.causes:
        ids += c.evidence
    for a in d.also_noticed:
        ids += a.evidence
    ids += [n.source for n in d.numbers if n.source.startswith("ev-")]
    return list(dict.fromkeys(ids))


def _ev_link(eid: str) -> str:
    return f'<a class="ev" href="#{_e(anchor(eid))}">{_e(eid)}</a>'


def _text(s: str, known: set[str]) -> str:
    """Escape free text and turn the evidence ids it mentions into links."""
    out, pos = [], 0
    for m in _EV_IN_TEXT.finditer(s):
        if m.group(0) in known:
            out += [_e(s[pos:m.start()]), _ev_link(m.group(0))]
            pos = m.end()
    out.append(_e(s[pos:]))
    return "".join(out)


# ---------------------------------------------------------------- numbers and roofline


def _bar(frac: float, width: int = 220) -> str:
    frac = max(0.0, frac)
    fill = min(1.0, frac)
    color = "#c62828" if frac < 0.3 else "#ef6c00" if frac < 0.7 else "#2e7d32"
    return (f'<svg class="numbar" width="{width}" height="14" viewBox="0 0 {width} 14" role="img">'
            f'<rect x="0" y="2" width="{width}" height="10" fill="#e0e0e0"/>'
            f'<rect x="0" y="2" width="{fill * width:.1f}" height="10" fill="{color}"/></svg>')


_CHAR_W = 6.4
"""Width of one character of the chart's 11 px sans-serif labels, a little generous (digits are ~6.1 px)."""


def _text_w(text: str) -> float:
    return len(text) * _CHAR_W


class _Labels:
    """Notes on the chart, each kept inside [lo, hi] x [top, bottom] (the drawing, so inside the chart at every size:
    the SVG scales with the page) and off the ones placed before it. Text is escaped here."""

    LINE = 13.0

    def __init__(self, lo: float, hi: float, top: float, bottom: float):
        self.lo, self.hi, self.top, self.bottom = lo, hi, top, bottom
        self.boxes: list[tuple[float, float, float, float]] = []
        self.svg: list[str] = []

    def add(self, x: float, y: float, text: str, *, anchor: str = "start", gap: float = 8.0) -> None:
        """A label beside point (x, y): it flips to the other side of its point, or is pushed in, where it would
        run past an edge, and moves a line down (or up) while it would cover another label."""
        w = _text_w(text)
        if anchor == "middle":
            x0 = min(max(x, self.lo + w / 2), self.hi - w / 2) - w / 2
        elif anchor == "end":
            x0 = x - gap - w
            if x0 < self.lo:  # no room on the left: put it on the right of the point
                x0 = x + gap
        else:
            x0 = x + gap
            if x0 + w > self.hi:  # no room on the right: put it on the left of the point
                x0 = x - gap - w
        x0 = max(self.lo, min(x0, self.hi - w))
        y = self._free_y(x0, w, min(max(y, self.top + 11), self.bottom - 3))
        self.boxes.append((x0, y - 11, x0 + w, y + 2))
        self.svg.append(f'<text x="{x0:.1f}" y="{y:.1f}" text-anchor="start" class="note">{_e(text)}</text>')

    def _free_y(self, x0: float, w: float, y: float) -> float:
        def clear(yy: float) -> bool:
            return all(x0 + w <= a or x0 >= c or yy + 2 <= b or yy - 11 >= d for a, b, c, d in self.boxes)

        for k in range(0, 12):
            for yy in (y + k * self.LINE, y - k * self.LINE):
                if self.top + 11 <= yy <= self.bottom - 3 and clear(yy):
                    return yy
        return y


def roofline_svg(r: Roof) -> str:
    """A log-log roofline: memory slope up to the ridge, the compute ceiling after, and the operating points.

    Every label stays inside the drawing (the SVG scales with the page, so inside the viewBox is inside the chart at
    every width): tick labels sit in the margins sized for them, notes flip sides or are pushed in at the edges."""
    W, H, L, R, T, B = 620, 380, 70, 24, 20, 50
    xs = [r.ridge] + [x for _, x in r.points] + [c / r.memory for _, c in r.other_ceilings]
    x0 = 10 ** math.floor(math.log10(min(xs) / 4))
    x1 = 10 ** math.ceil(math.log10(max(xs) * 4))
    achieved: list[tuple[str, float, float]] = []
    if len(r.points) == 1:
        name, x = r.points[0]
        y = r.achieved_flops if r.achieved_flops is not None else (r.achieved_bw * x if r.achieved_bw else None)
        if y:
            achieved.append((f"achieved ({name})", x, y))
    ys = [r.memory * x0, r.compute] + [y for _, _, y in achieved] + [v for _, v in r.other_ceilings]
    y0 = 10 ** math.floor(math.log10(min(ys)))
    y1 = 10 ** math.ceil(math.log10(max(ys) * 1.5))

    def px(x: float) -> float:
        return L + (math.log10(x) - math.log10(x0)) / (math.log10(x1) - math.log10(x0)) * (W - L - R)

    def py(y: float) -> float:
        return H - B - (math.log10(y) - math.log10(y0)) / (math.log10(y1) - math.log10(y0)) * (H - T - B)

    notes = _Labels(2.0, W - 2.0, 2.0, H - B)  # notes: anywhere in the drawing above the x tick labels
    out = [f'<svg class="roofline" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
           f'aria-label="roofline chart">']
    for k in range(int(round(math.log10(x0))), int(round(math.log10(x1))) + 1):
        x = px(10 ** k)
        tick = _fmt(10 ** k)
        tx = min(max(x, _text_w(tick) / 2 + 2), W - _text_w(tick) / 2 - 2)  # the last tick's label stays inside
        out.append(f'<line x1="{x:.1f}" y1="{T}" x2="{x:.1f}" y2="{H - B}" class="grid"/>'
                   f'<text x="{tx:.1f}" y="{H - B + 16}" text-anchor="middle" class="tick">{tick}</text>')
    for k in range(int(round(math.log10(y0))), int(round(math.log10(y1))) + 1):
        y = py(10 ** k)
        ty, tick = min(max(y + 4, T + 4), H - B + 4), _fmt(10 ** k / 1e12)
        out.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - R}" y2="{y:.1f}" class="grid"/>'
                   f'<text x="{L - 6}" y="{ty:.1f}" text-anchor="end" class="tick">{tick}</text>')
        notes.boxes.append((L - 6 - _text_w(tick), ty - 11, L - 6, ty + 2))  # notes keep off the tick labels
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 10}" text-anchor="middle">arithmetic intensity (FLOP/byte)</text>'
               f'<text x="16" y="{(T + H - B) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {(T + H - B) / 2})">TFLOP/s</text>')
    roof = [(x0, r.memory * x0), (r.ridge, r.compute), (x1, r.compute)]
    pts = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in roof)
    out.append(f'<polyline class="roof" points="{pts}"/>')
    for _label, c in r.other_ceilings:
        xr = c / r.memory
        out.append(f'<polyline class="roof-other" points="{px(x0):.1f},{py(r.memory * x0):.1f} '
                   f'{px(xr):.1f},{py(c):.1f} {px(x1):.1f},{py(c):.1f}"/>')
    notes.add(px(r.ridge), py(r.compute) - 8, f"ridge {_fmt(r.ridge)} FLOP/B · {_fmt(r.compute / 1e12)} "
              f"TFLOP/s · {_fmt(r.memory / 1e9)} GB/s", anchor="middle")
    for label, c in r.other_ceilings:
        notes.add(px(x1), py(c) - 4, f"{label} {_fmt(c / 1e12)} TFLOP/s", anchor="end", gap=4)
    for name, x in r.points:
        y = min(r.compute, r.memory * x)
        out.append(f'<circle class="attainable" cx="{px(x):.1f}" cy="{py(y):.1f}" r="5">'
                   f'<title>{_e(name)}: {_fmt(x)} FLOP/B, attainable {_fmt(y / 1e12)} TFLOP/s</title></circle>')
        notes.add(px(x), py(y) - 6, f"{name} = {_fmt(x)}")
    for name, x, y in achieved:
        out.append(f'<circle class="achieved" cx="{px(x):.1f}" cy="{py(y):.1f}" r="6">'
                   f'<title>{_e(name)}: {_fmt(y / 1e12)} TFLOP/s</title></circle>')
        below = py(y) + 16 if py(y) + 16 <= H - B - 3 else py(y) - 10  # under the point, or above it at the axis
        notes.add(px(x), below, f"achieved: {_fmt(y / 1e12)} TFLOP/s", gap=9)
    out += notes.svg  # drawn last: over the lines, each with a white halo (CSS) so it reads where it crosses one
    out.append("</svg>")
    return "".join(out)


# ---------------------------------------------------------------- fan-out timeline


def gantt_svg(tl: Timeline) -> str:
    """The fan-out as a Gantt chart: one bar per agent (class `agent-bar`), tool calls as ticks inside it."""
    row, label_w, W = 22, 220, 900
    chart_w = W - label_w - 20
    total = max([tl.duration_s] + [a.end_s for a in tl.agents]) or 1.0
    H = row * len(tl.agents) + 40
    out = [f'<svg class="gantt" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
           f'aria-label="agent timeline">']
    step = _nice_step(total / 8)
    t = 0.0
    while t <= total + 1e-9:
        x = label_w + t / total * chart_w
        out.append(f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{H - 24}" class="grid"/>'
                   f'<text x="{x:.1f}" y="{H - 8}" text-anchor="middle">{_fmt(t)}s</text>')
        t += step
    for i, a in enumerate(tl.agents):
        y = i * row + 4
        x = label_w + a.start_s / total * chart_w
        w = max(2.0, (a.end_s - a.start_s) / total * chart_w)
        color = _STATUS_COLOR.get(a.status, "#546e7a")
        label = "\u2003" * a.depth + (a.agent_id.rsplit("/", 1)[-1] if a.depth else a.agent_id)
        out.append(f'<text x="4" y="{y + 13}" class="label">{_e(label)}</text>')
        out.append(f'<rect class="agent-bar" data-agent="{_e(a.agent_id)}" data-status="{_e(a.status)}" '
                   f'x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 8}" fill="{color}" fill-opacity="0.35" '
                   f'stroke="{color}"><title>{_e(a.agent_id)} · {_e(a.status)} · {a.start_s:.2f}s → '
                   f'{a.end_s:.2f}s · {a.turns} turns · {len(a.tool_calls)} tool calls</title></rect>')
        for tc in a.tool_calls:
            tx = label_w + tc.start_s / total * chart_w
            tw = max(1.5, tc.duration_s / total * chart_w)
            tcol = "#c62828" if tc.is_error else "#37474f"
            out.append(f'<rect class="tool-tick" x="{tx:.1f}" y="{y + 3}" width="{tw:.1f}" height="{row - 14}" '
                       f'fill="{tcol}"><title>{_e(tc.tool)} {tc.duration_s:.2f}s'
                       f'{" (error)" if tc.is_error else ""}</title></rect>')
    out.append("</svg>")
    return "".join(out)


def _nice_step(raw: float) -> float:
    if raw <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


# ---------------------------------------------------------------- the page

_CSS = """
.inv-report{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1b1b;max-width:960px;
 margin:0 auto;padding:16px;overflow-wrap:anywhere}
.inv-report h1{font-size:1.5em;margin:.2em 0}.inv-report h2{font-size:1.2em;border-bottom:1px solid #ddd;
 margin-top:1.6em}
.inv-report .verdict{font-size:1.1em;background:#f5f7fa;border-left:4px solid #1565c0;padding:8px 12px}
.inv-report .bound{display:inline-block;padding:2px 8px;border-radius:10px;background:#1565c0;color:#fff;
 font-weight:600}
.inv-report table{border-collapse:collapse;width:100%}.inv-report td,.inv-report th{padding:4px 8px;
 border-bottom:1px solid #eee;text-align:left;vertical-align:top}
.inv-report .num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.inv-report a.ev{font-family:ui-monospace,monospace;font-size:.9em;background:#eef3fb;padding:0 3px;
 border-radius:3px;text-decoration:none}
.inv-report .conf{display:inline-block;width:80px;height:8px;background:#e0e0e0;vertical-align:middle}
.inv-report .conf span{display:block;height:8px;background:#1565c0}
.inv-report .evidence dt{font-family:ui-monospace,monospace;margin-top:.6em}
.inv-report .evidence dt:target,.inv-report .evidence dt:target+dd{background:#fff8e1}
.inv-report .evidence dd{margin-left:1.5em}.inv-report pre{white-space:pre-wrap;word-break:break-word;
 background:#fafafa;border:1px solid #eee;padding:6px;margin:4px 0;font-size:.85em}
.inv-report .err{color:#c62828}.inv-report .muted{color:#666}
.inv-report svg text{font:11px system-ui,sans-serif;fill:#333}.inv-report svg .grid{stroke:#e3e3e3}
.inv-report svg .roof{fill:none;stroke:#1565c0;stroke-width:2.5}
.inv-report svg.roofline,.inv-report svg.gantt{max-width:100%;height:auto}.inv-report td.barcell{white-space:nowrap}
.inv-report svg .roof-other{fill:none;stroke:#90a4ae;stroke-width:1.5;stroke-dasharray:5 4}
.inv-report svg .attainable{fill:#fff;stroke:#1565c0;stroke-width:2}.inv-report svg .achieved{fill:#c62828}
.inv-report svg .note{font-size:11px;fill:#1b1b1b;paint-order:stroke;stroke:#fff;stroke-width:3px;
 stroke-linejoin:round}
.inv-report .swatch{display:inline-block;width:10px;height:10px;margin:0 3px 0 10px;vertical-align:middle}
"""


def _fleet_html(tables, known) -> str:
    parts = []
    for t in tables:
        group = "" if t.group == "all" else f" ({_e(t.group)})"
        parts.append(f'<h2 id="fleet">Fleet comparison{group}</h2><p class="muted">{len(t.hosts)} hosts compared; '
                     f"{plural(t.identical, 'fact')} identical on all; {len(t.rows)} "
                     f"{'differs' if len(t.rows) == 1 else 'differ'}.</p>")
        if t.outliers:
            parts.append("<p>" + ("Odd host" if len(t.outliers) == 1 else "Odd hosts, most different first") + ": "
                         + "; ".join(
                f"<strong>{_e(o.host)}</strong> ({_e(', '.join(o.differs[:3]))})" for o in t.outliers[:10]) + "</p>")
        if t.rows:
            parts.append('<table class="numbers"><tr><th>fact</th><th>most hosts</th><th>differing hosts</th>'
                         "<th>evidence</th></tr>")
            for r in t.rows[:60]:
                odd = r.odd if r.majority is not None else list(r.values)
                cells = ", ".join(f"{h}: {r.values[h]}" for h in odd[:12])
                links = " ".join(_ev_link(x) if x in known else _e(x) for x in r.evidence[:6])
                parts.append(f"<tr><td>{_e(r.label)}</td><td>{_e(r.majority or 'no majority')}</td>"
                             f"<td>{_e(cells)}</td><td>{links}</td></tr>")
            parts.append("</table>")
    return "".join(parts)


def render_html_fragment(d: Diagnosis, events: list | None = None) -> str:
    """The report as one `<div>` with its own scoped `<style>` (for notebooks' `_repr_html_`)."""
    events = list(events) if events is not None else None
    evidence = evidence_entries(d, events)
    known = set(evidence)
    tl = build_timeline(events) if events else None
    p: list[str] = [f'<div class="inv-report"><style>{_CSS}</style>']
    p.append(f"<h1>Diagnosis: {_e(d.question)}</h1>")
    p.append(f'<p class="verdict" id="verdict">{_text(d.verdict, known)}</p>')
    p.append(f'<p><span class="bound">bound: {_e(d.bound)}</span> {_text(d.bound_reasoning, known)}</p>')

    if d.causes:
        p.append('<h2 id="causes">Causes (ranked)</h2><ol class="causes">')
        for c in d.causes:
            links = " ".join(_ev_link(e) for e in c.evidence)
            p.append(f'<li><strong>{_e(c.title)}</strong> <span class="conf" title="confidence {c.confidence:.2f}">'
                     f'<span style="width:{c.confidence * 100:.0f}%"></span></span> '
                     f'<span class="muted">confidence {c.confidence:.2f}</span><br>{_text(c.explanation, known)}'
                     f'<br><span class="muted">evidence:</span> {links}</li>')
        p.append("</ol>")

    if d.also_noticed:  # true, but not what the question asks about (or history to watch)
        p.append('<h2 id="also-noticed">Also noticed</h2><ul class="noticed">')
        for a in d.also_noticed:
            links = " ".join(_ev_link(x) for x in a.evidence)
            note = f" — {_text(a.note, known)}" if a.note else ""
            p.append(f"<li><strong>{_e(a.title)}</strong>{note}"
                     + (f' <span class="muted">evidence:</span> {links}' if links else "") + "</li>")
        p.append("</ul>")

    if d.numbers:
        p.append('<h2 id="numbers">Numbers</h2><table class="numbers"><tr><th>name</th><th class="num">value</th>'
                 '<th class="num">peak</th><th>achieved vs peak</th><th>source</th></tr>')
        for n in d.numbers:
            pct = bar = ""
            if n.peak is not None and n.peak > 0:  # a zero or negative peak is no ceiling
                frac = n.value / n.peak
                pct = f" ({100 * frac:.1f} %)"
                bar = _bar(frac)
            src = _ev_link(n.source) if n.source in known else _e(n.source)
            note = f'<br><span class="muted">{_text(n.note, known)}</span>' if n.note else ""
            peak = f"{_fmt(n.peak)} {_e(n.unit)}" if n.peak else ""
            p.append(f"<tr><td>{_e(n.name)}{note}</td><td class=\"num\">{_fmt(n.value)} {_e(n.unit)}</td>"
                     f'<td class="num">{peak}</td><td class="barcell">{bar}{pct}</td><td>{src}</td></tr>')
        p.append("</table>")
        roof = find_roof(d.numbers)
        if roof is not None:
            p.append(f'<h2 id="roofline">Roofline</h2>{roofline_svg(roof)}')

    from orchestrator.prongs import sections  # each prong's own section (engine config, settings, trace steps...)

    p += [section(events, d, known) for section in sections("html")]

    if d.recommendations:
        p.append('<h2 id="recommendations">Recommendations</h2><ul>')
        for r in d.recommendations:
            tail = f' <span class="muted">(addresses: {_e(r.addresses)})</span>' if names_cause_apart(r) else ""
            p.append(f"<li><strong>{_text(r.action, known)}</strong> — {_text(r.why, known)}{tail}</li>")
        p.append("</ul>")

    if d.gaps:
        p.append('<h2 id="gaps">Gaps</h2><ul>')
        p += [f"<li><strong>{_e(g.what)}</strong>: {_text(g.why, known)}</li>" for g in d.gaps]
        p.append("</ul>")

    if d.fleet:  # multi-host runs (prongs/fleet/rules.py)
        p.append(_fleet_html(d.fleet, known))

    if tl is not None and tl.agents:
        p.append(f'<h2 id="timeline">Fan-out timeline</h2><p class="muted">{len(tl.agents)} agents, peak '
                 f"{tl.max_concurrency} running at once, {tl.duration_s:.1f} s in all.</p>{gantt_svg(tl)}"
                 f"{_legend(sorted({a.status for a in tl.agents}))}")

    p.append(_usage_html(d, tl))

    if evidence:
        p.append('<h2 id="evidence">Evidence</h2><dl class="evidence">')
        for eid, ev in evidence.items():
            host = f" on {_e(ev.host)}" if ev.host else ""
            err = ' <span class="err">(error)</span>' if ev.is_error else ""
            p.append(f'<dt id="{_e(anchor(eid))}">{_e(eid)}</dt><dd>{_e(ev.agent)} · {_e(ev.tool)}{host}{err}'
                     f"<pre>{_e(ev.excerpt)}</pre></dd>")
        p.append("</dl>")
    p.append("</div>")
    return "\n".join(p)


def _legend(statuses: list[str]) -> str:
    items = [f'<span class="swatch" style="background:{_STATUS_COLOR.get(st, "#546e7a")}"></span>{_e(st)}'
             for st in statuses]
    return ('<p class="legend muted">' + " ".join(items) +
            ' <span class="swatch" style="background:#37474f"></span>tool call'
            ' <span class="swatch" style="background:#c62828"></span>failed tool call</p>')


def _usage_html(d: Diagnosis, tl: Timeline | None) -> str:
    total = d.usage.total
    rows = [(a.agent_id, a.status, a.usage, a.duration_s) for a in d.usage.agents]
    if not rows and tl is not None:
        rows = [(a.agent_id, a.status, a.usage, a.duration_s) for a in tl.agents]
        if not total.calls:
            total = tl.usage
    if not rows and not total.calls:
        return ""
    if not (total.total_tokens or total.cost_usd):  # an offline run: no "0 tokens, $0.0000" table
        return ""
    out = ['<h2 id="usage">Usage</h2>',
           f"<p>{plural(total.calls, 'model call')}, {total.input_tokens:,} in / {total.output_tokens:,} out / "
           f"{total.cache_read_tokens:,} cache read / {total.cache_write_tokens:,} cache write tokens, "
           f"${total.cost_usd:.4f}</p>"]
    if rows:
        out.append('<table class="usage"><tr><th>agent</th><th>status</th><th class="num">calls</th>'
                   '<th class="num">tokens</th><th class="num">cost</th><th class="num">time</th></tr>')
        for aid, status, u, dur in rows:
            out.append(f"<tr><td>{_e(aid)}</td><td>{_e(status)}</td><td class=\"num\">{u.calls}</td>"
                       f'<td class="num">{u.total_tokens:,}</td><td class="num">${u.cost_usd:.4f}</td>'
                       f'<td class="num">{dur:.1f} s</td></tr>')
        out.append("</table>")
    return "".join(out)


def render_html(diagnosis: Diagnosis, events: list | None = None) -> str:
    """The whole report as one self-contained HTML document."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>Diagnosis: {_e(diagnosis.question)}</title></head><body>\n"
            f"{render_html_fragment(diagnosis, events)}\n</body></html>\n")


# ---------------------------------------------------------------- from a transcript


def diagnosis_from_events(events: list) -> Diagnosis:
    """The run's submitted Diagnosis; for a run that submitted none, one that says so and names what failed."""
    from orchestrator.diagnosis import Gap

    submitted = [ev for ev in events if isinstance(ev, DiagnosisSubmitted)]
    if submitted:  # the last one stands (a re-synthesis submits again)
        return Diagnosis.model_validate(submitted[-1].diagnosis)
    question, status, error = "", "unfinished", "the transcript ends before the run finished"
    for ev in events:
        if isinstance(ev, RunStarted):
            question = ev.question
        elif isinstance(ev, RunFinished):
            status, error = ev.status, ev.error or ""
    tl = build_timeline(events)
    gaps = [Gap(what=a.agent_id, why=f"{a.status}: {a.error or 'no result'}") for a in tl.agents if a.status != "ok"]
    return Diagnosis(question=question or "(unknown question)",
                     verdict=f"No diagnosis was submitted: run {status}" + (f" ({error})" if error else "") + ".",
                     gaps=gaps)

