"""Synthetic transcripts built from the `events.py` models: a lead fanning out to subagents, on a fake clock."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from orchestrator.events import (
    AgentFinished,
    AgentStarted,
    DiagnosisSubmitted,
    Header,
    ModelCall,
    RunFinished,
    RunStarted,
    ToolCall,
    ToolResult,
)
from orchestrator.messages import ModelResponse, TextBlock, ToolUseBlock, Usage

T0 = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)
RUN = "run-synth-0001"


class Clock:
    """Hands out timestamps at given offsets (seconds) from T0 and numbers events in order."""

    def __init__(self) -> None:
        self.events: list = []

    def add(self, cls, at: float, **kw):
        ev = cls(run_id=RUN, seq=len(self.events) + 1, ts=T0 + timedelta(seconds=at), **kw)
        self.events.append(ev)
        return ev


def usage(inp: int, out: int, cost: float) -> Usage:
    return Usage(input_tokens=inp, output_tokens=out, cost_usd=cost, calls=1)


def model_call(c: Clock, at: float, agent_id: str, turn: int, u: Usage, tool: str | None = None) -> None:
    content = [ToolUseBlock(id=f"{agent_id}-{turn}", name=tool, input={})] if tool else [TextBlock(text="done")]
    c.add(ModelCall, at, agent_id=agent_id, turn=turn, model="offline", fingerprint=f"fp-{agent_id}-{turn}",
          response=ModelResponse(content=content, usage=u), usage=u, latency_s=0.1)


def agent_run(c: Clock, agent_id: str, parent: str | None, name: str, start: float, end: float, *,
              tools: int = 2, status: str = "ok", ordinal: int = 1, tool_error_at: int | None = None,
              finish: bool = True, host: str | None = "gpu-box") -> Usage:
    """Record one agent: start, `tools` turns each with a model call and a tool call/result, a final model call."""
    c.add(AgentStarted, start, agent_id=agent_id, parent_id=parent, name=name, model="offline", brief="look")
    step = (end - start) / (tools + 2)
    total = Usage()
    for i in range(tools):
        t = start + step * (i + 1)
        u = usage(1000, 100, 0.01)
        total = total + u
        model_call(c, t, agent_id, i + 1, u, tool="shell")
        c.add(ToolCall, t + step * 0.1, agent_id=agent_id, turn=i + 1, call_id=f"c{i}", tool="shell",
              args={"cmd": "nvidia-smi"})
        err = tool_error_at == i
        c.add(ToolResult, t + step * 0.6, agent_id=agent_id, turn=i + 1, call_id=f"c{i}", tool="shell",
              evidence_id=f"ev-{ordinal}.{i + 1}", is_error=err, content="boom" if err else "GPU 0: H200",
              host=host, duration_s=round(step * 0.5, 6))
    u = usage(500, 50, 0.005)
    total = total + u
    model_call(c, start + step * (tools + 1), agent_id, tools + 1, u)
    if finish:
        c.add(AgentFinished, end, agent_id=agent_id, status=status, turns=tools + 1, usage=total,
              duration_s=end - start, error=None if status == "ok" else f"{status} after {end - start:g}s")
    return total


def fanout_run(n_sub: int = 3, tools: int = 2, *, statuses: dict[int, str] | None = None,
               sequential: bool = False, interrupted: bool = False, diagnosis: dict | None = None) -> list:
    """A lead that dispatches `n_sub` subagents at once (or one after another), then submits and finishes."""
    c = Clock()
    statuses = statuses or {}
    c.add(RunStarted, 0.0, question="why is FP8 slow at small batch?", backend="offline", host="gpu-box")
    c.add(AgentStarted, 0.0, agent_id="lead", name="lead", model="offline")
    lead_u = usage(2000, 200, 0.02)
    model_call(c, 0.5, "lead", 1, lead_u, tool="task")
    total = lead_u
    end = 1.0
    for i in range(n_sub):
        start, stop = (1.0 + 10 * i, 10.0 + 10 * i) if sequential else (1.0 + 0.01 * i, 10.0 + i)
        aid = f"sub{i + 1}-{i + 1}"  # the live scheme: <definition name>-<ordinal>
        total = total + agent_run(c, aid, "lead", f"sub{i + 1}", start, stop, tools=tools, ordinal=i + 2,
                                  status=statuses.get(i, "ok"), finish=not interrupted)
        end = max(end, stop)
    if interrupted:
        return _ordered(c.events)
    u2 = usage(3000, 400, 0.03)
    total = total + u2
    lead_u = lead_u + u2
    model_call(c, end + 0.5, "lead", 2, u2, tool="submit_diagnosis")
    if diagnosis is not None:
        c.add(DiagnosisSubmitted, end + 0.8, diagnosis=diagnosis)
    c.add(AgentFinished, end + 1.0, agent_id="lead", status="ok", turns=2, usage=lead_u, duration_s=end + 1.0)
    c.add(RunFinished, end + 1.1, status="ok", usage=total, duration_s=end + 1.1)
    return _ordered(c.events)


def _ordered(events: list) -> list:
    # the recorder writes in arrival order: concurrent agents interleave
    events.sort(key=lambda e: e.ts)
    for n, ev in enumerate(events, 1):
        ev.seq = n
    return events


def write_jsonl(path: Path, events: list) -> Path:
    """Write a transcript the way the recorder does: a header line, then one event per line."""
    lines = [Header(tool_version="0.1.0", run_id=RUN, created=T0).model_dump_json()]
    lines += [ev.model_dump_json() for ev in events]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list:
    """Read a transcript: the lead's `read_transcript` when it exists, else the header line then events."""
    try:
        from orchestrator.transcript import read_transcript
    except ImportError:
        from orchestrator.events import EVENT_ADAPTER

        lines = Path(path).read_text(encoding="utf-8").splitlines()
        Header.model_validate_json(lines[0])
        return [EVENT_ADAPTER.validate_json(line) for line in lines[1:] if line.strip()]
    return read_transcript(path).events
