"""The path in the report and in `investigate show`: each layer found between the user and the engine, with the
settings it was given against their defaults and where each was set. Pure functions of recorded events."""

from __future__ import annotations

import html
from typing import Any, Iterable

from orchestrator.prongs.path.models import PathReport

COLUMNS = ("layer", "setting", "value", "default", "set at")


def path_rows(events: Iterable[Any]) -> list[tuple[str, str, str, str, str]]:
    """(layer, setting, value, default, where) of every setting a layer was given (not its untouched defaults), from
    the first path_layers result of each host."""
    rows: list[tuple[str, str, str, str, str]] = []
    hosts: set[str] = set()
    for ev in events:
        if getattr(ev, "tool", None) != "path_layers" or not getattr(ev, "data", None) or getattr(ev, "is_error", False):
            continue
        try:
            rep = PathReport.model_validate(ev.data)
        except Exception:  # a recording of another shape is not a path report
            continue
        if rep.host in hosts:
            continue
        hosts.add(rep.host)
        for x in rep.layers:
            for k, s in x.settings.items():
                if s.where == "default":
                    continue
                rows.append((x.label, k, str(s.value), "" if s.default is None else str(s.default), s.where))
    return rows[:400]


def path_html(events: Iterable[Any] | None, diagnosis: Any = None, known: set[str] | None = None) -> str:
    rows = path_rows(events or [])
    if not rows:
        return ""
    e = lambda s: html.escape(str(s), quote=True)  # noqa: E731
    out = ['<h2 id="path">The path between the user and the engine</h2>',
           '<table class="numbers path"><tr>' + "".join(f"<th>{c}</th>" for c in COLUMNS) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{e(x)}</td>" for x in row) + "</tr>" for row in rows]
    out.append("</table>")
    return "".join(out)


def path_markdown(events: Iterable[Any], diagnosis: Any, esc) -> list[str]:
    rows = path_rows(events)
    if not rows:
        return []
    out = ["## The path between the user and the engine", "", "| " + " | ".join(COLUMNS) + " |",
           "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(esc(x).replace("|", "\\|") for x in row) + " |" for row in rows]
    return out + [""]


def path_terminal(events: Iterable[Any], diagnosis: Any, console) -> None:
    from rich.markup import escape
    from rich.table import Table

    from orchestrator.redact import scrub_text

    rows = path_rows(events)
    if not rows:
        return
    tab = Table(title="The path between the user and the engine", title_justify="left")
    for c in COLUMNS:
        tab.add_column(c, overflow="fold")
    for row in rows:
        tab.add_row(*(escape(scrub_text(str(x))) for x in row))
    console.print(tab)
