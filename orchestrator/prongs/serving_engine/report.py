"""The serving engine in the report and in `investigate show`: its effective configuration as a table, and the
measured latency percentiles (TTFT, ITL/TPOT) drawn against the roofline floor of their phase.

Pure functions of recorded events (the engine_config tool's results, the observations' benchmark runs) and the
diagnosis's numbers (the floors from prongs/serving_engine/rules.py). The renderers (render/html.py, the show command)
call `engine_html` / `render_engine_terminal` through one-line hooks.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Iterable

from orchestrator.prongs.serving_engine.models import EngineReport
from orchestrator.render.summaries import config_rows

PHASES = (("prefill", "TTFT", "ttft"), ("decode", "ITL", "itl"))


@dataclass
class EngineTable:
    host: str
    label: str
    where: str
    evidence_id: str
    rows: list[tuple[str, str, str]]
    """(setting, value, where it came from)."""
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class LatencyChart:
    phase: str
    metric: str
    source: str
    percentiles: list[tuple[str, float]]
    """(name, ms), e.g. [("p50", 26.5), ("p99", 44.0)]."""
    floor_ms: float | None


def _events_of(events: Iterable[Any], tool: str) -> list[Any]:
    return [e for e in events if getattr(e, "tool", None) == tool and getattr(e, "data", None)
            and not getattr(e, "is_error", False)]


def engine_tables(events: Iterable[Any]) -> list[EngineTable]:
    """One table per engine found, from every engine_config result in the transcript (first result per host)."""
    out: list[EngineTable] = []
    seen: set[tuple[str, str]] = set()
    for ev in _events_of(events, "engine_config"):
        try:
            rep = EngineReport.model_validate(ev.data)
        except Exception:  # a recording of another shape is not an engine report
            continue
        for e in rep.engines:
            key = (ev.host or rep.host, e.where)
            if key in seen:
                continue
            seen.add(key)
            rows = config_rows(e)
            if e.model:
                rows.insert(0, ("model", e.model, e.origin))
            out.append(EngineTable(host=ev.host or rep.host, label=e.label, where=e.where,
                                   evidence_id=getattr(ev, "evidence_id", ""), rows=rows, env=dict(e.env)))
    return out


def _floors(diagnosis: Any) -> dict[str, float]:
    floors: dict[str, float] = {}
    for n in getattr(diagnosis, "numbers", []) or []:
        for phase, _, _ in PHASES:
            if n.name == f"{phase} roofline floor" and n.unit == "ms":
                floors[phase] = n.value
    return floors


def latency_charts(events: Iterable[Any], diagnosis: Any = None) -> list[LatencyChart]:
    """Measured percentiles per phase (benchmark runs first, else the engine's /metrics histograms) with the floor."""
    events = list(events)
    floors = _floors(diagnosis) if diagnosis is not None else {}
    charts: list[LatencyChart] = []
    for ev in _events_of(events, "observations"):
        try:  # recorded data, read as the recording has it: a value of another shape leaves the chart out
            obs = (ev.data or {}).get("observations") or {}
            for b in (obs.get("bench") or [])[:1]:
                name = f"{b.get('format')} {b.get('source') or ''}".strip()
                if b.get("max_concurrency"):
                    name += f", concurrency {b['max_concurrency']}"
                for phase, metric, key in PHASES:
                    lat = b.get(key) or (b.get("tpot") if key == "itl" else None) or {}
                    pts = [(k, float(lat[k])) for k in ("mean", "p50", "p90", "p95", "p99") if lat.get(k) is not None]
                    if pts:
                        charts.append(LatencyChart(phase, metric, name, pts, floors.get(phase)))
        except (AttributeError, TypeError, ValueError, KeyError, OverflowError):
            continue
        if charts:
            return charts
    for ev in _events_of(events, "engine_config"):
        try:
            rep = EngineReport.model_validate(ev.data)
        except Exception:
            continue
        e = rep.primary
        if e is None or not e.metrics or not e.metrics.metrics:
            continue
        ms = e.metrics.metrics
        for phase, metric, _ in PHASES:
            names = (["vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds",
                      "trtllm_time_to_first_token_seconds"] if phase == "prefill" else
                     ["vllm:inter_token_latency_seconds", "sglang:inter_token_latency_seconds",
                      "trtllm_time_per_output_token_seconds"])
            h = next((ms[n] for n in names if n in ms and ms[n].count), None)
            if h is None:
                continue
            pts = [(k, getattr(h, k) * 1e3) for k in ("mean", "p50", "p90", "p99") if getattr(h, k) is not None]
            if pts:
                charts.append(LatencyChart(phase, metric, f"{h.name} (/metrics)", pts, floors.get(phase)))
        if charts:
            break
    return charts


# --- HTML ------------------------------------------------------------------------------------------------------


def _e(s: object) -> str:
    return html.escape(str(s), quote=True)


def latency_svg(c: LatencyChart, width: int = 520) -> str:
    """Horizontal bars, one per percentile, on a shared log-free linear scale, with the floor as a dashed line."""
    vmax = max([v for _, v in c.percentiles] + ([c.floor_ms] if c.floor_ms else [])) * 1.1 or 1.0
    left, bar_h, gap = 60, 16, 6
    plot = width - left - 90
    h = len(c.percentiles) * (bar_h + gap) + 28
    parts = [f'<svg class="latency" width="{width}" height="{h}" role="img" aria-label="{_e(c.metric)} percentiles '
             f'against the roofline floor">']
    for i, (name, v) in enumerate(c.percentiles):
        y = 6 + i * (bar_h + gap)
        w = max(1.0, plot * v / vmax)
        parts.append(f'<text x="{left - 6}" y="{y + bar_h - 4}" text-anchor="end" class="note">{_e(name)}</text>'
                     f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" class="achieved"/>'
                     f'<text x="{left + w + 4:.1f}" y="{y + bar_h - 4}" class="note">{v:,.1f} ms</text>')
    if c.floor_ms:
        x = left + plot * c.floor_ms / vmax
        y2 = len(c.percentiles) * (bar_h + gap) + 4
        parts.append(f'<line x1="{x:.1f}" y1="2" x2="{x:.1f}" y2="{y2}" stroke="#1565c0" stroke-width="2" '
                     f'stroke-dasharray="5 3"/><text x="{x + 3:.1f}" y="{y2 + 14}" class="note">roofline floor '
                     f'{c.floor_ms:,.2f} ms</text>')
    parts.append("</svg>")
    return "".join(parts)


def engine_html(events: Iterable[Any] | None, diagnosis: Any = None, known: set[str] | None = None) -> str:
    """The report's serving-engine section: configuration tables and latency-vs-floor charts ('' when none)."""
    if not events:
        return ""
    events = list(events)
    tables = engine_tables(events)
    charts = latency_charts(events, diagnosis)
    if not tables and not charts:
        return ""
    p = ['<h2 id="engine">Serving engine</h2>']
    for t in tables:
        ev = (f' <a href="#ev-{_e(t.evidence_id)}">{_e(t.evidence_id)}</a>' if known and t.evidence_id in known
              else f" {_e(t.evidence_id)}")
        p.append(f'<p><strong>{_e(t.label)}</strong> on {_e(t.host)} ({_e(t.where)});{ev}</p>'
                 '<table class="numbers engine-config"><tr><th>setting</th><th>effective value</th><th>from</th></tr>')
        for label, value, source in t.rows:
            p.append(f"<tr><td>{_e(label)}</td><td>{_e(value)}</td><td class=\"muted\">{_e(source)}</td></tr>")
        p.append("</table>")
        if t.env:
            p.append('<p class="muted">env (allowlisted on the host): '
                     + _e(", ".join(f"{k}={v}" for k, v in sorted(t.env.items())[:30])) + "</p>")
    for c in charts:
        ratio = ""
        p50 = next((v for k, v in c.percentiles if k == "p50"), None)
        if c.floor_ms and p50:
            ratio = f": median {p50 / c.floor_ms:.1f}x the floor"
        p.append(f'<h3>{_e(c.phase.capitalize())} ({_e(c.metric)}) against the roofline floor{_e(ratio)}</h3>'
                 f'<p class="muted">{_e(c.source)}</p>{latency_svg(c)}')
    return "".join(p)


# --- terminal (investigate show) --------------------------------------------------------------------------------


def engine_markdown(events: Iterable[Any], diagnosis: Any, esc) -> list[str]:
    """The serving engine's configuration tables and its latency percentiles against the roofline floor, as Markdown
    (the Markdown report's counterpart of `engine_html`); [] when the run found no engine and no benchmark."""
    events = list(events)
    out: list[str] = []
    tables = engine_tables(events)
    charts = latency_charts(events, diagnosis)
    if not tables and not charts:
        return out
    out += ["## Serving engine", ""]
    for t in tables:
        out += [f"**{esc(t.label)} on {esc(t.host)}** ({esc(t.where)}; evidence {esc(t.evidence_id)})", "",
                "| setting | effective value | from |", "|---|---|---|"]
        out += [f"| {esc(label)} | {esc(value)} | {esc(source)} |" for label, value, source in t.rows]
        out.append("")
    for c in charts:
        out += [f"**{esc(c.phase)} ({esc(c.metric)})**, {esc(c.source)}", "", "| percentile | ms | x roofline floor |",
                "|---|---:|---:|"]
        out += [f"| {esc(name)} | {v:,.1f} | {f'{v / c.floor_ms:.1f}x' if c.floor_ms else 'n/a'} |"
                for name, v in c.percentiles]
        if c.floor_ms:
            out.append(f"| floor | {c.floor_ms:,.2f} | 1.0x |")
        out.append("")
    return out


def render_engine_terminal(events: Iterable[Any], diagnosis: Any, console) -> None:
    """The engine configuration tables and latency percentiles vs floor, as rich tables (nothing when none).

    What the host said (a model name, a flag's value, an environment variable) is scrubbed: secrets redacted, terminal
    control removed, rich markup escaped."""
    from rich.markup import escape
    from rich.table import Table

    from orchestrator.redact import scrub_text

    def shown(text: object) -> str:
        return escape(scrub_text(str(text)))

    events = list(events)
    tables = engine_tables(events)
    for t in tables:
        tab = Table(title=shown(f"{t.label} on {t.host} ({t.where})"), title_justify="left")
        tab.add_column("setting")
        tab.add_column("effective value")
        tab.add_column("from", style="dim", overflow="fold")
        for label, value, source in t.rows:
            tab.add_row(shown(label), shown(value), shown(source))
        console.print(tab)
    if diagnosis is None:
        from orchestrator.events import DiagnosisSubmitted

        from orchestrator.diagnosis import Diagnosis

        sub = [e for e in events if isinstance(e, DiagnosisSubmitted)]
        try:
            diagnosis = Diagnosis.model_validate(sub[-1].diagnosis) if sub else None
        except Exception:  # a malformed recorded diagnosis: the percentiles are still shown, without floors
            diagnosis = None
    for c in latency_charts(events, diagnosis):
        tab = Table(title=shown(f"{c.phase} ({c.metric}), {c.source}"), title_justify="left")
        tab.add_column("percentile")
        tab.add_column("ms", justify="right")
        tab.add_column("x roofline floor", justify="right")
        for name, v in c.percentiles:
            tab.add_row(shown(name), f"{v:,.1f}", f"{v / c.floor_ms:.1f}x" if c.floor_ms else "")
        if c.floor_ms:
            tab.add_row("floor", f"{c.floor_ms:,.2f}", "1.0x")
        console.print(tab)
