"""The replay backend: model responses and tool results from a transcript, keyed by agent and turn.

Every request is fingerprinted as when it was recorded; a request that differs raises `ReplayDivergence` naming the
agent, the turn and what differed. Tool results come from the recording too, so a replay needs no host and no
network; only the orchestration tools (`task`, the submit tools) run for real.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from orchestrator.agentdefs import AgentDef
from orchestrator.context import RunContext
from orchestrator.events import ModelCall, ToolResult
from orchestrator.messages import Message, ModelRequest, ModelResponse, ToolSpec
from orchestrator.models.base import ReplayDivergence
from orchestrator.tools.base import ExecutedCall, ToolOutput
from orchestrator.transcript import Transcript, fingerprint


@dataclass
class _AgentRecord:
    system: str = ""
    tools: list[ToolSpec] = field(default_factory=list)
    calls: dict[int, ModelCall] = field(default_factory=dict)
    messages_at: dict[int, list[Message]] = field(default_factory=dict)
    """The full message list each recorded turn was asked with (rebuilt from the recorded deltas)."""


def _short(obj: Any, limit: int = 160) -> str:
    s = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True, default=str)
    s = " ".join(s.split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def explain_difference(rec: _AgentRecord, turn: int, request: ModelRequest) -> str:
    """Say what part of the request differs from the recorded one."""
    if request.system != rec.system:
        return f"the system prompt differs (recorded {_short(rec.system)!r}, now {_short(request.system)!r})"
    old_tools = {t.name: t for t in rec.tools}
    new_tools = {t.name: t for t in request.tools}
    if old_tools.keys() != new_tools.keys():
        added, removed = sorted(new_tools.keys() - old_tools.keys()), sorted(old_tools.keys() - new_tools.keys())
        return f"the tool set differs (added {added or 'none'}, removed {removed or 'none'})"
    for name in old_tools:
        if old_tools[name] != new_tools[name]:
            return f"the definition of tool {name!r} differs"
    old_msgs = rec.messages_at.get(turn, [])
    if len(old_msgs) != len(request.messages):
        return f"the conversation has {len(request.messages)} messages, the recording {len(old_msgs)}"
    for i, (a, b) in enumerate(zip(old_msgs, request.messages)):
        da, db = a.model_dump(mode="json"), b.model_dump(mode="json")
        if da != db:
            return f"message {i + 1} ({b.role}) differs: recorded {_short(da['content'])!r}, now {_short(db['content'])!r}"
    return "the request fingerprint differs"


class ReplayTools:
    """Recorded tool results by (agent id, call id)."""

    def __init__(self, results: dict[tuple[str, str], ToolResult]):
        self.results = results

    def result_for(self, agent_id: str, call_id: str, tool: str, args: dict[str, Any]) -> ExecutedCall:
        rec = self.results.get((agent_id, call_id))
        if rec is None:
            raise ReplayDivergence(f"replay diverged: agent {agent_id} called {tool} (call {call_id}), "
                                   "which the transcript has no result for")
        if rec.tool != tool:
            raise ReplayDivergence(f"replay diverged: agent {agent_id} call {call_id} is {tool}, recorded {rec.tool}")
        out = ToolOutput(text=rec.content, data=rec.data, is_error=rec.is_error, untrusted=rec.untrusted, host=rec.host)
        return ExecutedCall(out, rec.truncated, rec.duration_s)


class ReplayModel:
    def __init__(self, agent_id: str, record: _AgentRecord | None, name: str):
        self.agent_id = agent_id
        self.record = record
        self.name = name

    async def complete(self, request: ModelRequest) -> ModelResponse:
        rec = self.record
        if rec is None or request.turn not in rec.calls:
            have = sorted(rec.calls) if rec else []
            raise ReplayDivergence(f"replay diverged: agent {self.agent_id} turn {request.turn} was not recorded "
                                   f"(recorded turns: {have or 'none'})")
        call = rec.calls[request.turn]
        if fingerprint(request.system, request.tools, request.messages) != call.fingerprint:
            why = explain_difference(rec, request.turn, request)
            raise ReplayDivergence(f"replay diverged: agent {self.agent_id} turn {request.turn}: {why}")
        return call.response


class ReplayBackend:
    name = "replay"

    def __init__(self, transcript: Transcript):
        self.transcript = transcript
        self.records: dict[str, _AgentRecord] = {}
        results: dict[tuple[str, str], ToolResult] = {}
        running: dict[str, list[Message]] = {}
        for ev in transcript.events:
            if isinstance(ev, ModelCall):
                rec = self.records.setdefault(ev.agent_id, _AgentRecord())
                if ev.turn == 1 or not rec.calls:
                    rec.system, rec.tools = ev.system, list(ev.tools)
                msgs = running.setdefault(ev.agent_id, [])
                msgs.extend(ev.messages)
                rec.messages_at[ev.turn] = list(msgs)
                rec.calls[ev.turn] = ev
                msgs.append(ev.response.message())
            elif isinstance(ev, ToolResult):
                results[(ev.agent_id, ev.call_id)] = ev
        self.tool_replay = ReplayTools(results)

    def model_for(self, defn: AgentDef, agent_id: str, run: RunContext) -> ReplayModel:
        rec = self.records.get(agent_id)
        model = next(iter(rec.calls.values())).model if rec and rec.calls else "replay"
        return ReplayModel(agent_id, rec, model)
