"""The report's trace section: a stacked bar per step (busy by kernel class, idle by cause) and the top kernels,
from the `trace_analysis` evidence. Pure: events in, HTML out."""

from __future__ import annotations

import html
from typing import Any, Iterable

from pydantic import ValidationError

from orchestrator.traces.classes import LABELS, PRIORITY
from orchestrator.traces.model import RankAccount, TraceReport

COLORS = {"gemm": "#1565c0", "attention": "#6a1b9a", "moe": "#00838f", "norm_act": "#2e7d32", "other": "#9e9d24",
          "communication": "#ef6c00", "memcpy": "#8d6e63", "memset": "#bcaaa4",
          "host_bound": "#e53935", "short_gap": "#ffcdd2", "other_idle": "#cfd8dc"}
IDLE_LABELS = {"host_bound": "idle: host-bound", "short_gap": "idle: back-to-back gaps", "other": "idle: other"}
MAX_BARS = 64


def _e(s: object) -> str:
    return html.escape(str(s), quote=True)


def _reports(events: Iterable[Any]) -> list[tuple[str, TraceReport]]:
    out = []
    for ev in events:
        data = getattr(ev, "data", None)
        if getattr(ev, "type", "") == "tool_result" and isinstance(data, dict) and data.get("kind") == "trace_report":
            try:
                out.append((getattr(ev, "evidence_id", "") or "", TraceReport.model_validate(data)))
            except ValidationError:
                continue
    return out


def step_bars_svg(a: RankAccount) -> str:
    """One horizontal stacked bar per step: busy by class then idle by cause, scaled to the longest step."""
    steps = a.steps[:MAX_BARS]
    if not steps:
        return ""
    # scaled to the longest steady step: a warm-up step many times longer is clipped, not allowed to flatten the rest
    longest = max((s.dur_us for s in steps if s.steady), default=0.0) or max(s.dur_us for s in steps) or 1.0
    width, row, left = 640, 14, 150
    h = row * len(steps) + 24
    parts = [f'<svg class="trace-steps" width="{left + width + 10}" height="{h}" role="img" '
             f'aria-label="per-step time: busy by class, idle by cause">']
    for i, s in enumerate(steps):
        y = 4 + i * row
        label = s.label + ("" if s.steady else " (left out)")
        parts.append(f'<text x="{left - 6}" y="{y + 10}" text-anchor="end" font-size="10">{_e(label[:26])}</text>')
        x = float(left)
        segs = [(c, s.busy_us.get(c, 0.0)) for c in PRIORITY] + \
               [("other_idle" if k == "other" else k, s.idle_us.get(k, 0.0)) for k in ("host_bound", "short_gap", "other")]
        for key, us in segs:
            if us <= 0:
                continue
            w = min(width * us / longest, left + width - x)
            if w <= 0:
                break
            name = IDLE_LABELS.get("other" if key == "other_idle" else key) if key in ("host_bound", "short_gap",
                                                                                     "other_idle") else LABELS.get(key, key)
            fade = "" if s.steady else ' opacity="0.45"'
            parts.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{row - 3}" fill="{COLORS.get(key, "#999")}"'
                         f'{fade}><title>{_e(name)}: {us:.1f} us</title></rect>')
            x += w
    parts.append(f'<text x="{left}" y="{h - 4}" font-size="10">0</text><text x="{left + width}" y="{h - 4}" '
                 f'font-size="10" text-anchor="end">{longest / 1e3:.3f} ms</text></svg>')
    return "".join(parts)


def _legend() -> str:
    items = [(LABELS[c], COLORS[c]) for c in PRIORITY] + [(IDLE_LABELS["host_bound"], COLORS["host_bound"]),
                                                          (IDLE_LABELS["short_gap"], COLORS["short_gap"]),
                                                          (IDLE_LABELS["other"], COLORS["other_idle"])]
    return "<p>" + "".join(f'<span class="swatch" style="background:{c}"></span>{_e(n)}' for n, c in items) + "</p>"


def trace_html(events: Iterable[Any] | None, diagnosis: Any = None, known: set[str] | None = None) -> str:
    """The trace section ('' when the run read no trace)."""
    reports = _reports(events or ())
    if not reports:
        return ""
    p = ['<h2 id="trace">Where each step\'s time went (trace)</h2>', _legend()]
    for eid, r in reports:
        link = f' <a href="#ev-{_e(eid)}">{_e(eid)}</a>' if known and eid in known else f" {_e(eid)}"
        for a in r.ranks:
            b = a.breakdown
            p.append(f"<p><strong>rank {_e(a.rank)}</strong> {_e(a.source.rsplit('/', 1)[-1])} ({_e(a.step_source)}): "
                     f"{a.steady_steps} steady of {a.steps_total} steps, {b.step_us / 1e3:.3f} ms each; GPU busy "
                     f"{100 * b.busy_share:.1f} %, idle {100 * b.idle_share:.1f} %;{link}</p>")
            p.append(step_bars_svg(a))
            p.append('<table class="numbers trace-kernels"><tr><th>kernel</th><th>class</th><th class="num">per step'
                     '</th><th class="num">share</th><th class="num">mean us</th><th class="num">p50 us</th>'
                     '<th class="num">p99 us</th></tr>')
            for k in a.top_kernels:
                p.append(f'<tr><td title="{_e(k.name)}">{_e(k.name[:90])}</td><td>{_e(LABELS.get(k.cls, k.cls))}</td>'
                         f'<td class="num">{k.count_per_step:g}</td><td class="num">{100 * k.share_of_step:.1f} %</td>'
                         f'<td class="num">{k.mean_us:.1f}</td><td class="num">{k.p50_us:.1f}</td>'
                         f'<td class="num">{k.p99_us:.1f}</td></tr>')
            p.append("</table>")
        if r.straggler:
            p.append(f"<p>Straggler: rank {_e(r.straggler.rank)}: {_e(r.straggler.reason)}.</p>")
    return "".join(p)
