"""The timeline of a recorded run: who ran when, for how long, with which tools, at what cost.

`build_timeline(events)` is a pure function of the transcript's events (one pass, then an interval sweep);
`render_timeline(timeline, console)` draws it with rich (a table with a text Gantt bar per agent); `--json` is
`timeline.model_dump_json()`. Times are seconds from the run's first event.
"""

from __future__ import annotations

import math

import itertools
import sys
from datetime import datetime
from typing import Iterable

from pydantic import BaseModel, Field
from pydantic.dataclasses import dataclass

from orchestrator.events import (
    AgentFinished,
    AgentStarted,
    DiagnosisSubmitted,
    Event,
    ModelCall,
    ModelError,
    PolicyRefusal,
    RunFinished,
    RunStarted,
    ToolCall,
    ToolResult,
)
from orchestrator.messages import Usage

UNFINISHED = "unfinished"
"""Status of an agent whose `AgentFinished` is missing (an interrupted run)."""

_USAGE_FIELDS = set(Usage.model_fields)
"""Usage is built with `model_construct` and this one shared set of field names (validated, each held its own)."""


def _usage(**values) -> Usage:
    return Usage.model_construct(_USAGE_FIELDS, **values)


def _no_usage() -> Usage:
    return _usage(input_tokens=0, output_tokens=0, cache_read_tokens=0, cache_write_tokens=0, cost_usd=0.0, calls=0)


@dataclass(slots=True, kw_only=True)
class ToolSpan:
    """One tool call of one agent."""

    call_id: str
    tool: str
    turn: int = 0
    start_s: float
    """Seconds from run start when the call was made."""
    duration_s: float = 0.0
    is_error: bool = False
    refused: bool = False
    """True when policy refused the call before anything ran."""
    finished: bool = True
    """False when the call never got a result (an interrupted run)."""
    evidence_id: str | None = None
    host: str | None = None


@dataclass(slots=True, kw_only=True)
class AgentSpan:
    """One agent's life in the run.

    A slotted (pydantic) dataclass, as ToolSpan, not a model: a model with its own dict and set of field names held
    2 kB a span, and `show` lays out 100,000 agents in 300 MB."""

    agent_id: str
    name: str = ""
    parent_id: str | None = None
    depth: int = 0
    """0 for the lead, 1 for its subagents, and so on."""
    model: str = ""
    status: str = UNFINISHED
    error: str | None = None
    start_s: float = 0.0
    end_s: float = 0.0
    duration_s: float = 0.0
    turns: int = 0
    model_calls: int = 0
    model_errors: int = 0
    tool_calls: list[ToolSpan] = Field(default_factory=list)
    omitted_calls: int = 0
    """Tool calls past MAX_TOOL_SPANS kept only as counts (`show` of a huge transcript in bounded memory)."""
    omitted_errors: int = 0
    usage: Usage = Field(default_factory=_no_usage)
    overlaps: list[str] = Field(default_factory=list)
    """Ids of the other agents that were running at some moment this one was (parents and children included): the
    first MAX_OVERLAPS of them, by start."""
    overlaps_omitted: int = 0
    """How many more agents overlapped this one than `overlaps` lists (100,000 concurrent agents are 10^10 pairs)."""

    @property
    def tool_errors(self) -> int:
        return sum(1 for t in self.tool_calls if t.is_error) + self.omitted_errors


class Timeline(BaseModel):
    """A whole run laid out in time."""

    run_id: str = ""
    question: str = ""
    backend: str = ""
    started: datetime | None = None
    status: str = UNFINISHED
    error: str | None = None
    duration_s: float = 0.0
    events: int = 0
    agents: list[AgentSpan] = Field(default_factory=list)
    """In start order; a parent comes before its children."""
    max_concurrency: int = 0
    """Most agents running at one moment (the lead included)."""
    peak_agents: list[str] = Field(default_factory=list)
    """Agents running together at the first moment of peak concurrency (the first MAX_OVERLAPS of them)."""
    usage: Usage = Field(default_factory=Usage)
    tool_calls: int = 0
    tool_errors: int = 0
    model_calls: int = 0
    diagnosis_submitted: bool = False

    def agent(self, agent_id: str) -> AgentSpan | None:
        return next((a for a in self.agents if a.agent_id == agent_id), None)


MAX_TOOL_SPANS = 500
"""Tool calls laid out per agent; later ones are counted (a transcript of any size shows in bounded memory)."""
_OMITTED = ToolSpan(call_id="", tool="", start_s=0.0)
"""Marks, by identity, an open call past MAX_TOOL_SPANS (counted, not laid out); never shown."""

_intern = sys.intern  # names that repeat in every event (tools, hosts, models, statuses) are held once


def build_timeline(events: Iterable[Event]) -> Timeline:
    """Lay out a transcript's events per agent, with concurrency and usage totals."""
    tl = Timeline()
    t0: datetime | None = None
    last_s = 0.0
    agents: dict[str, AgentSpan] = {}
    open_calls: dict[tuple[str, str], ToolSpan] = {}
    t: ToolSpan | None
    call_usage: dict[str, list] = {}
    max_turn: dict[str, int] = {}
    finished_usage: set[str] = set()
    run_finished: RunFinished | None = None

    def span(agent_id: str, at: float) -> AgentSpan:
        a = agents.get(agent_id)
        if a is None:  # events of an agent whose start was not recorded: start it at its first event
            a = agents[agent_id] = AgentSpan(agent_id=agent_id, start_s=at, end_s=at)
        return a

    for ev in events:
        tl.events += 1
        if t0 is None:
            t0 = ev.ts
            tl.started = ev.ts
            tl.run_id = ev.run_id
        at = (ev.ts - t0).total_seconds()
        last_s = max(last_s, at)
        if isinstance(ev, ToolCall):
            a = span(ev.agent_id, at)
            a.end_s = max(a.end_s, at)
            if len(a.tool_calls) >= MAX_TOOL_SPANS:
                a.omitted_calls += 1
                open_calls[(ev.agent_id, ev.call_id)] = _OMITTED
                continue
            t = ToolSpan(call_id=_intern(ev.call_id), tool=_intern(ev.tool), turn=ev.turn, start_s=at, finished=False)
            a.tool_calls.append(t)
            open_calls[(ev.agent_id, ev.call_id)] = t
        elif isinstance(ev, ToolResult):
            a = span(ev.agent_id, at)
            t = open_calls.pop((ev.agent_id, ev.call_id), None)
            if t is _OMITTED or (t is None and len(a.tool_calls) >= MAX_TOOL_SPANS):
                a.omitted_calls += t is None
                a.omitted_errors += bool(ev.is_error)
                a.end_s = max(a.end_s, at)
                continue
            if t is None:  # a result without its call: keep it, starting where it ended
                t = ToolSpan(call_id=_intern(ev.call_id), tool=_intern(ev.tool), turn=ev.turn,
                             start_s=max(0.0, at - ev.duration_s))
                a.tool_calls.append(t)
            t.finished = True
            t.is_error = t.is_error or ev.is_error
            t.evidence_id = ev.evidence_id
            t.host = None if ev.host is None else _intern(ev.host)
            t.duration_s = ev.duration_s or max(0.0, at - t.start_s)
            a.end_s = max(a.end_s, at)
        elif isinstance(ev, ModelCall):
            a = span(ev.agent_id, at)
            a.model_calls += 1
            max_turn[ev.agent_id] = max(max_turn.get(ev.agent_id, 0), ev.turn)
            # plain sums: building a Usage per call would dominate on big transcripts
            u, acc = ev.usage, call_usage.setdefault(ev.agent_id, [0, 0, 0, 0, 0.0, 0])
            acc[0] += u.input_tokens
            acc[1] += u.output_tokens
            acc[2] += u.cache_read_tokens
            acc[3] += u.cache_write_tokens
            acc[4] += u.cost_usd
            acc[5] += u.calls or 1
            a.end_s = max(a.end_s, at)
        elif isinstance(ev, AgentStarted):
            a = span(ev.agent_id, at)
            a.start_s = min(a.start_s, at)
            a.name, a.model = _intern(ev.name), _intern(ev.model)
            a.parent_id = None if ev.parent_id is None else _intern(ev.parent_id)
        elif isinstance(ev, AgentFinished):
            a = span(ev.agent_id, at)
            a.status, a.error, a.end_s = _intern(ev.status), ev.error, at
            if ev.turns:
                max_turn[ev.agent_id] = max(max_turn.get(ev.agent_id, 0), ev.turns)
            if ev.usage.calls or ev.usage.total_tokens or ev.usage.cost_usd:
                a.usage = _usage(**ev.usage.__dict__)  # not the event's own (it holds a set of field names)
                finished_usage.add(ev.agent_id)
            if ev.duration_s:
                a.duration_s = ev.duration_s
        elif isinstance(ev, ModelError):
            a = span(ev.agent_id, at)
            a.model_errors += 1
            a.end_s = max(a.end_s, at)
        elif isinstance(ev, PolicyRefusal):
            a = span(ev.agent_id, at)
            t = open_calls.get((ev.agent_id, ev.call_id))
            if t is not None and t is not _OMITTED:
                t.refused = t.is_error = True
        elif isinstance(ev, RunStarted):
            tl.question, tl.backend = ev.question, ev.backend
        elif isinstance(ev, DiagnosisSubmitted):
            tl.diagnosis_submitted = True
        elif isinstance(ev, RunFinished):
            run_finished = ev

    for a in agents.values():
        a.turns = max_turn.get(a.agent_id, 0)
        if a.agent_id not in finished_usage and a.agent_id in call_usage:
            i, o, cr, cw, cost, calls = call_usage[a.agent_id]
            a.usage = _usage(input_tokens=i, output_tokens=o, cache_read_tokens=cr, cache_write_tokens=cw,
                             cost_usd=round(cost, 6), calls=calls)
        if a.status == UNFINISHED:
            # an interrupted agent ran at least until the last thing the run recorded
            a.end_s = max(a.end_s, last_s)
        if not a.duration_s:
            a.duration_s = round(a.end_s - a.start_s, 6)
        if a.model_calls:
            a.usage = a.usage if a.usage.calls else a.usage.model_copy(update={"calls": a.model_calls})

    for a in agents.values():
        depth, p, seen = 0, a.parent_id, {a.agent_id}
        while p is not None and p in agents and p not in seen:
            seen.add(p)
            depth += 1
            p = agents[p].parent_id
        a.depth = depth + (1 if p is not None and p not in agents else 0)

    tl.agents = _tree_order(list(agents.values()))
    _concurrency(tl)

    tl.tool_calls = sum(len(a.tool_calls) + a.omitted_calls for a in tl.agents)
    tl.tool_errors = sum(a.tool_errors for a in tl.agents)
    tl.model_calls = sum(a.model_calls for a in tl.agents)
    total = Usage()
    for a in tl.agents:
        total = total + a.usage
    if run_finished is not None:
        tl.status, tl.error = run_finished.status, run_finished.error
        tl.usage = run_finished.usage if run_finished.usage.calls or run_finished.usage.total_tokens else total
        tl.duration_s = run_finished.duration_s or last_s
    else:
        tl.usage = total
        tl.duration_s = last_s
    return tl


def _tree_order(spans: list[AgentSpan]) -> list[AgentSpan]:
    """Depth-first by start time, so each parent is followed by its children."""
    children: dict[str | None, list[AgentSpan]] = {}
    ids = {a.agent_id for a in spans}
    for a in spans:
        key = a.parent_id if a.parent_id in ids else None
        children.setdefault(key, []).append(a)
    for lst in children.values():
        lst.sort(key=lambda a: (a.start_s, a.agent_id))
    out: list[AgentSpan] = []
    seen: set[str] = set()
    stack = list(reversed(children.get(None, [])))
    while stack:
        a = stack.pop()
        if a.agent_id in seen:
            continue
        seen.add(a.agent_id)
        out.append(a)
        stack.extend(reversed(children.get(a.agent_id, [])))
    # a parent cycle leaves agents unreached; keep them rather than drop them
    out.extend(sorted((a for a in spans if a.agent_id not in seen), key=lambda a: a.start_s))
    return out


MAX_OVERLAPS = 16
"""Overlapping agents listed per agent, and agents listed at the peak; the rest are counted. Bounds `show`'s memory
and time on a transcript of 100,000 concurrent agents (5.8 GB) to O(agents x MAX_OVERLAPS)."""


def _concurrency(tl: Timeline) -> None:
    """Fill each agent's overlaps and the run's peak concurrency with one sweep over start/end points.

    An agent's overlaps are those running when it starts plus those that start while it runs: counted exactly with
    two counters, listed up to MAX_OVERLAPS (the earliest started first)."""
    points: list[tuple[float, int, int]] = []
    for i, a in enumerate(tl.agents):
        # at one instant: ends of spans that had length, then starts, then ends of zero-length spans. Touching is
        # not overlapping, and a zero-length span ends after it started (else it would stay "running" for good).
        points.append((a.start_s, 1, i))
        points.append((a.end_s, 0 if a.end_s > a.start_s else 2, i))
    points.sort()
    active: dict[int, None] = {}  # insertion-ordered: earliest started first
    hungry: dict[int, None] = {}  # active agents whose list is not full yet
    listed: list[list[int]] = [[] for _ in tl.agents]
    count = [0] * len(tl.agents)
    starts_at = [0] * len(tl.agents)
    starts = 0
    peak_at = -1
    for pos, (_, kind, i) in enumerate(points):
        if kind == 1:
            count[i] = len(active)
            listed[i] = list(itertools.islice(active, MAX_OVERLAPS))
            for j in list(hungry):
                listed[j].append(i)
                if len(listed[j]) >= MAX_OVERLAPS:
                    del hungry[j]
            starts += 1
            starts_at[i] = starts
            active[i] = None
            if len(listed[i]) < MAX_OVERLAPS:
                hungry[i] = None
            if len(active) > tl.max_concurrency:
                tl.max_concurrency, peak_at = len(active), pos
        else:
            active.pop(i, None)
            hungry.pop(i, None)
            count[i] += starts - starts_at[i]  # every agent that started while this one ran
    if peak_at >= 0:  # who ran at the peak: replay the sweep up to it (no list built per new maximum)
        running: dict[int, None] = {}
        for _, kind, i in points[:peak_at + 1]:
            if kind == 1:
                running[i] = None
            else:
                running.pop(i, None)
        tl.peak_agents = [tl.agents[k].agent_id for k in sorted(running)[:MAX_OVERLAPS]]
    for i, a in enumerate(tl.agents):
        a.overlaps = [tl.agents[j].agent_id for j in sorted(listed[i])]
        a.overlaps_omitted = count[i] - len(listed[i])


def _fmt_s(s: float) -> str:
    if not math.isfinite(s):  # a recorded NaN or infinity (a transcript is data someone wrote): int() of it raised
        return "?s"
    if s < 10:
        return f"{s:.2f}s"
    if s < 600:
        return f"{s:.1f}s"
    return f"{int(s // 60)}m{int(s % 60):02d}s"


def _n(n: int, word: str, shown: str | None = None) -> str:
    """`1 tool call`, `2 tool calls`: agreement with the count."""
    return f"{shown if shown is not None else n} {word if n == 1 else word + 's'}"


def _fmt_tokens(n: int) -> str:
    if n >= 10**15:  # no real run; a hostile transcript's 4,000-digit count would overflow a float
        digits = str(n)
        return f"{digits[0]}.{digits[1:3]}e{len(digits) - 1}"
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    return str(n)


def gantt_bar(start: float, end: float, total: float, width: int) -> str:
    """A text bar of `width` cells with the span [start, end] of [0, total] filled."""
    if not total > 0 or not math.isfinite(total):
        return "█" * width

    def cell(x: float) -> float:  # a recorded time before the run's start, or not finite, lies at an edge
        return min(max(x / total * width, 0.0), float(width)) if math.isfinite(x) else 0.0

    a = min(width - 1, int(cell(start)))
    b = max(a + 1, min(width, round(cell(end))))
    return "·" * a + "█" * (b - a) + "·" * (width - b)


_STATUS_STYLE = {"ok": "green", "error": "red", "timeout": "yellow", "turn_limit": "yellow", "budget": "yellow",
                 "cancelled": "magenta", UNFINISHED: "magenta"}


def render_tools(tl: Timeline, console, labels: list[str] | None = None) -> None:
    """Each agent's tool calls in order, with the duration each took (as recorded) and ✗ for a failed one."""
    from rich.text import Text

    if not any(a.tool_calls for a in tl.agents):
        return
    labels = labels or [a.agent_id for a in tl.agents]
    console.print(Text("tools (in call order, with their durations)", style="bold"))
    for a, label in zip(tl.agents, labels):
        if not a.tool_calls:
            continue
        calls = ", ".join(f"{t.tool} {_fmt_s(t.duration_s)}{' ✗' if t.is_error else ''}" for t in a.tool_calls)
        if a.omitted_calls:
            calls += f", … and {a.omitted_calls} more (only the first {MAX_TOOL_SPANS} are listed)"
        # into a pipe a list is one line (grep finds an agent's calls); on a terminal it folds at the width
        console.print(Text(f"{label}: {calls}", overflow="fold"), soft_wrap=not console.is_terminal)


TABLE_ROWS = 500
"""Rows of the agents' table laid out and printed at a time."""


def render_timeline(tl: Timeline, console, bar_width: int | None = None) -> None:
    """Print the timeline onto a rich console: a summary line, then one row per agent with a Gantt bar."""
    from rich.table import Table
    from rich.text import Text

    width = console.width or 100
    labels = ["  " * a.depth + a.agent_id for a in tl.agents]
    head = Text()
    head.append(f"run {tl.run_id}", style="bold")
    head.append(f"  {tl.status}", style=_STATUS_STYLE.get(tl.status, ""))
    head.append(f"  {_fmt_s(tl.duration_s)}  {len(tl.agents)} agents, peak {tl.max_concurrency} concurrent")
    console.print(head)
    paid = bool(tl.usage.total_tokens or tl.usage.cost_usd)  # an offline run: no "0 tokens, $0.0000"
    calls = (f"{_n(tl.model_calls, 'model call')}, {_n(tl.tool_calls, 'tool call')} ({tl.tool_errors} failed)"
             + (f", {_n(tl.usage.total_tokens, 'token', _fmt_tokens(tl.usage.total_tokens))}, "
                f"${tl.usage.cost_usd:.4f}" if paid else ""))
    console.print(Text(calls))
    if tl.question:
        console.print(Text(f"question: {tl.question}"))
    if tl.error:
        console.print(Text(f"error: {tl.error}", style="red"))

    headers = ["agent", "status", "start", "dur", "turns", "tools"] + (["tokens", "cost"] if paid else [])

    def row(a: AgentSpan, label: str) -> list[str]:
        tools = str(len(a.tool_calls) + a.omitted_calls) + (f" ({a.tool_errors}✗)" if a.tool_errors else "")
        return ([label, a.status, _fmt_s(a.start_s), _fmt_s(a.duration_s), str(a.turns), tools]
                + ([_fmt_tokens(a.usage.total_tokens), f"${a.usage.cost_usd:.3f}"] if paid else []))

    # every column but the bar at its natural width, two cells between columns; the bar gets what is left. The rows
    # are made twice (for the widths, then to print) rather than held: a run of 100,000 agents shows in bounded memory
    widths = [len(h) for h in headers]
    for a, label in zip(tl.agents, labels):
        widths = [max(w, len(c)) for w, c in zip(widths, row(a, label))]
    widths[0] = min(widths[0], 30)
    others = sum(widths) + 2 * len(widths)
    if bar_width is None:
        bar_width = min(40, width - others)
    separate = bar_width < 10  # too narrow beside the numbers: the bars go in a table of their own below
    if separate:
        bar_width = max(0, min(60, width - widths[0] - 2))
    total = max(tl.duration_s, max((a.end_s for a in tl.agents), default=0.0))
    dur = _fmt_s(tl.duration_s)
    bar_head = f"0 {'─' * max(0, bar_width - 3 - len(dur))} {dur}"

    def bar(a: AgentSpan) -> Text:
        return Text(gantt_bar(a.start_s, a.end_s, total, bar_width), style=_STATUS_STYLE.get(a.status, ""))

    def table(first: bool) -> Table:
        t = Table(box=None, pad_edge=False, show_edge=False, expand=False, header_style="bold", show_header=first)
        for i, h in enumerate(headers):
            # agent ids and statuses are data, never rich markup: every cell is a Text
            t.add_column(h, justify="left" if i < 2 else "right", no_wrap=True, min_width=widths[i],
                         max_width=30 if i == 0 else None, overflow="ellipsis" if i == 0 else "fold")
        if not separate:
            t.add_column(bar_head, no_wrap=True, min_width=bar_width)
        return t

    # printed TABLE_ROWS rows at a time, each part laid out with the same column widths: rich holds a whole table's
    # cells and lines until it is printed (100,000 rows took 1.2 GB)
    for start in range(0, max(len(tl.agents), 1), TABLE_ROWS):  # (no agents: the header alone, as before)
        part = table(first=start == 0)
        for a, label in zip(tl.agents[start:start + TABLE_ROWS], labels[start:start + TABLE_ROWS]):
            r = row(a, label)
            cells = [Text(r[0]), Text(r[1], style=_STATUS_STYLE.get(a.status, ""))] + [Text(c) for c in r[2:]]
            part.add_row(*cells, *([] if separate else [bar(a)]))
        console.print(part)
    if separate and bar_width >= 10:
        for start in range(0, max(len(tl.agents), 1), TABLE_ROWS):
            gantt = Table(box=None, pad_edge=False, show_edge=False, expand=False, header_style="bold",
                          show_header=start == 0)
            gantt.add_column("agent", no_wrap=True, min_width=widths[0], max_width=30, overflow="ellipsis")
            gantt.add_column(bar_head, no_wrap=True, min_width=bar_width)
            for a, label in zip(tl.agents[start:start + TABLE_ROWS], labels[start:start + TABLE_ROWS]):
                gantt.add_row(Text(label), bar(a))
            console.print(gantt)
    if tl.peak_agents and tl.max_concurrency > 1:
        more = tl.max_concurrency - len(tl.peak_agents)
        console.print(Text(f"concurrent at peak: {', '.join(tl.peak_agents)}" + (f" and {more:,} more" if more > 0
                                                                                  else ""), overflow="fold"),
                      soft_wrap=not console.is_terminal)
    render_tools(tl, console, labels)
    for a in tl.agents:
        if a.error:
            console.print(Text(f"{a.agent_id}: {a.error}", style=_STATUS_STYLE.get(a.status, "")))
