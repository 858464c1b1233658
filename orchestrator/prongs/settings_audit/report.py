"""The settings audit in the report and in `investigate show`: every setting each serving process was given that
differs from its version's default, as a table (setting, value, default, where it came from, documented effect).

Pure functions of recorded events (the settings_audit tool's results); render/html.py and the show command call
`settings_html` / `render_settings_terminal` through one-line hooks.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Iterable

from orchestrator.prongs.settings_audit.audit import audit_process
from orchestrator.prongs.settings_audit.models import SettingsReport

COLUMNS = ("setting", "value", "default", "from", "effect", "source")


@dataclass
class SettingsTable:
    host: str
    label: str
    pid: int
    evidence_id: str
    rows: list[tuple[str, str, str, str, str, str]]


def settings_tables(events: Iterable[Any]) -> list[SettingsTable]:
    """One table per serving process of every settings_audit result (first result per host)."""
    out: list[SettingsTable] = []
    hosts: set[str] = set()
    for ev in events:
        if getattr(ev, "tool", None) != "settings_audit" or not getattr(ev, "data", None) or \
                getattr(ev, "is_error", False):
            continue
        try:
            rep = SettingsReport.model_validate(ev.data)
        except Exception:  # a recording of another shape is not a settings report
            continue
        host = getattr(ev, "host", None) or rep.host
        if host in hosts:
            continue
        hosts.add(host)
        for p in rep.processes:
            a = audit_process(p)
            rows = []
            for nd in a.nondefaults:
                r = nd.row
                dv = f"{r['default']}" + (f" ({r['default_version']})" if r["default_version"] else "")
                eff = f"{r['direction']} ({', '.join(r['symptoms'])}): {r['effect']}" if r["effect"] else ""
                rows.append((r["setting"], r["value"], dv, r["origin"], eff, r["source"] or ""))
            out.append(SettingsTable(host=host, label=a.label, pid=p.pid,
                                     evidence_id=getattr(ev, "evidence_id", ""), rows=rows))
    return out


def _e(s: object) -> str:
    return html.escape(str(s), quote=True)


def settings_html(events: Iterable[Any] | None, diagnosis: Any = None, known: set[str] | None = None) -> str:
    """The report's non-default settings section ('' when no serving process was audited)."""
    tables = settings_tables(events or [])
    if not tables:
        return ""
    p = ['<h2 id="settings">Non-default settings</h2>']
    for t in tables:
        ev = (f' <a href="#ev-{_e(t.evidence_id)}">{_e(t.evidence_id)}</a>' if known and t.evidence_id in known
              else f" {_e(t.evidence_id)}")
        p.append(f"<p><strong>{_e(t.label)}</strong> pid {t.pid} on {_e(t.host)}: {len(t.rows)} "
                 f"{'setting differs' if len(t.rows) == 1 else 'settings differ'} from the defaults of its version;"
                 f"{ev}</p>")
        if not t.rows:
            continue
        p.append('<table class="numbers settings"><tr>' + "".join(f"<th>{c}</th>" for c in COLUMNS) + "</tr>")
        for row in t.rows:
            cells = [_e(x) for x in row[:5]]
            src = f'<a href="{_e(row[5])}">source</a>' if row[5].startswith("https://") else ""
            p.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + f'<td class="muted">{src}</td></tr>')
        p.append("</table>")
    return "".join(p)


def settings_markdown(events: Iterable[Any], diagnosis: Any, esc) -> list[str]:
    """The non-default settings tables as Markdown (the Markdown report's counterpart of `settings_html`); []
    when no serving process was audited."""
    tables = settings_tables(events)
    if not tables:
        return []
    out = ["## Non-default settings", ""]
    for t in tables:
        out += [f"**{esc(t.label)}** pid {t.pid} on {esc(t.host)}: {len(t.rows)} "
                f"{'setting differs' if len(t.rows) == 1 else 'settings differ'} from the defaults of its version "
                f"(evidence {esc(t.evidence_id)})", ""]
        if not t.rows:
            continue
        out += ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        out += ["| " + " | ".join(esc(x).replace("|", "\\|") for x in row) + " |" for row in t.rows]
        out.append("")
    return out


def render_settings_terminal(events: Iterable[Any], diagnosis: Any, console) -> None:
    """The non-default settings tables, as rich tables (nothing when no process was audited).

    What the host said (argv, environment, config files) is scrubbed: secrets redacted, terminal control removed,
    rich markup escaped."""
    from rich.markup import escape
    from rich.table import Table

    from orchestrator.redact import scrub_text

    def shown(text: object) -> str:
        return escape(scrub_text(str(text)))

    for t in settings_tables(events):
        if not t.rows:
            continue
        tab = Table(title=shown(f"Non-default settings: {t.label} pid {t.pid} on {t.host}"), title_justify="left")
        for c in COLUMNS[:5]:
            tab.add_column(c, overflow="fold")
        for row in t.rows:
            tab.add_row(*(shown(x) for x in row[:5]))
        console.print(tab)
