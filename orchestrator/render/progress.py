"""Live per-subagent progress on stderr: a rich table on a terminal, plain lines otherwise.

A subscriber of the run's recorder: it only reads events, so a display bug can never change a run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TextIO

from rich import box
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from orchestrator.events import (
    AgentFinished,
    AgentStarted,
    Event,
    ModelCall,
    ModelError,
    Notice,
    PolicyRefusal,
    RunFinished,
    ToolCall,
    ToolResult,
)
from orchestrator.messages import Usage
from orchestrator.sanitize import sanitize


@dataclass
class _Row:
    agent_id: str
    name: str
    started: float
    status: str = "running"
    turns: int = 0
    tools: int = 0
    errors: int = 0
    last: str = ""
    usage: Usage = field(default_factory=Usage)
    ended: float | None = None


def _clean(text: str) -> str:
    """One line without terminal control: escape sequences removed, controls escaped, line breaks as spaces."""
    return " ".join(sanitize(text).split())


def _tokens(u: Usage) -> str:
    n = u.total_tokens
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


class Progress:
    """Call as the recorder's subscriber; `close()` when the run ends."""

    def __init__(self, stream: TextIO, *, live: bool | None = None):
        self.console = Console(file=stream, stderr=True)
        self.live_mode = self.console.is_terminal if live is None else live
        self.stream = stream
        self.t0 = time.monotonic()
        self.rows: dict[str, _Row] = {}
        self.total = Usage()
        self._live: Live | None = None
        if self.live_mode:
            self._live = Live(self._table(), console=self.console, refresh_per_second=8, transient=False)
            self._live.start()

    def _line(self, text: str) -> None:
        if not self.live_mode:
            # host text (an SSH banner, an error, a notice) may carry terminal controls and line breaks: one clean line
            self.stream.write(f"[{time.monotonic() - self.t0:6.1f}s] {_clean(text)}\n")
            self.stream.flush()

    def __call__(self, ev: Event) -> None:
        now = time.monotonic()
        if isinstance(ev, AgentStarted):
            self.rows[ev.agent_id] = _Row(ev.agent_id, ev.name, now)
            self._line(f"{ev.agent_id} started ({ev.model})")
        elif isinstance(ev, ModelCall):
            row = self.rows.get(ev.agent_id)
            self.total = self.total + ev.usage
            if row:
                row.turns, row.usage = ev.turn, row.usage + ev.usage
            retries = f", {len(ev.attempts)} retries" if ev.attempts else ""
            if self.total.total_tokens or self.total.cost_usd:
                self._line(f"{ev.agent_id} turn {ev.turn}: {_tokens(ev.usage)} tokens{retries}"
                           f" (run: {_tokens(self.total)} tokens, ${self.total.cost_usd:.4f})")
            else:  # an offline (or replayed offline) run uses no tokens: no "0 tokens, $0.0000" on every line
                self._line(f"{ev.agent_id} turn {ev.turn}{retries}")
        elif isinstance(ev, ModelError):
            self._line(f"{ev.agent_id} model call failed: {ev.error}")
        elif isinstance(ev, ToolCall):
            row = self.rows.get(ev.agent_id)
            if row:
                row.tools += 1
                row.last = ev.tool
        elif isinstance(ev, ToolResult):
            row = self.rows.get(ev.agent_id)
            if row and ev.is_error:
                row.errors += 1
            status = "error" if ev.is_error else "ok"
            self._line(f"{ev.agent_id} {ev.tool} -> {status} ({ev.duration_s:.2f}s) [{ev.evidence_id}]")
        elif isinstance(ev, PolicyRefusal):
            self._line(f"{ev.agent_id} refused {ev.tool}: {ev.reason}")
        elif isinstance(ev, Notice):
            self._line(f"notice: {ev.message}")
        elif isinstance(ev, AgentFinished):
            row = self.rows.get(ev.agent_id)
            if row:
                row.status, row.ended = ev.status, now
            err = f": {ev.error}" if ev.error else ""
            self._line(f"{ev.agent_id} finished {ev.status} after {ev.turns} turns, {ev.duration_s:.1f}s{err}")
        elif isinstance(ev, RunFinished):
            paid = f": {_tokens(ev.usage)} tokens, ${ev.usage.cost_usd:.4f}" if ev.usage.total_tokens or ev.usage.cost_usd else ""
            self._line(f"run {ev.status} in {ev.duration_s:.1f}s{paid}")
        if self._live is not None:
            self._live.update(self._table())

    def _table(self) -> Table:
        """The live table, within 80 columns: token and cost columns only once a model call has used tokens (an
        offline run uses none; with them the turn count gives way), an error column only once a tool failed; long
        agent ids and tool names are cut with an ellipsis, never wrapped."""
        paid = bool(self.total.total_tokens or self.total.cost_usd)
        errors = any(r.errors for r in self.rows.values())
        t = Table(title="investigate", title_justify="left", expand=False, box=box.SIMPLE_HEAD, show_edge=False,
                  padding=(0, 1, 0, 0), pad_edge=False)
        t.add_column("agent", min_width=12, max_width=21, no_wrap=True, overflow="ellipsis")
        t.add_column("status", min_width=7, max_width=10, no_wrap=True, overflow="ellipsis")
        numeric = ([] if paid else [("turns", 5)]) + [("tools", 5)] + ([("err", 3)] if errors else []) + (
            [("tokens", 6), ("cost", 6)] if paid else []) + [("time", 6)]
        for name, width in numeric:
            t.add_column(name, justify="right", min_width=width, no_wrap=True)
        t.add_column("last tool", min_width=8, max_width=11 if paid else 20, no_wrap=True, overflow="ellipsis")
        now = time.monotonic()
        for r in self.rows.values():
            took = (r.ended or now) - r.started
            cells = ([] if paid else [str(r.turns)]) + [str(r.tools)] + ([str(r.errors or "")] if errors else [])
            if paid:
                cells += [_tokens(r.usage), f"${r.usage.cost_usd:.3f}"]
            # agent ids and tool names are data (a model names its tools), never rich markup
            t.add_row(*(Text(_clean(c)) for c in [r.agent_id, r.status, *cells, f"{took:.1f}s", r.last]))
        return t

    def close(self) -> None:
        if self._live is not None:
            self._live.update(self._table())
            self._live.stop()
            self._live = None
