"""Replay: model responses (`ReplayBackend`) and tool results (`ReplayExecutor`) from a transcript, keyed by agent
and turn / call. The backend makes model turns and nothing else; the executor, handed to `Run`, answers the tool
calls, so a replay needs no host and no network; only the orchestration tools (`task`, the submit tools) run.

Every request is fingerprinted as when it was recorded; a request that differs raises `ReplayDivergence` naming the
agent, the turn and what differed.

A transcript outlives the version that wrote it: when only the agent's system prompt or tool definitions changed
since the recording (a newer release added a field to a tool, a tool to an agent, a sentence to a prompt) and the
conversation itself is the recorded one, message for message, the recorded answer is still the answer to it. Such a
turn replays, and the drift is said (`ReplayBackend.drift`, a notice in the run) instead of refusing every old
transcript after each upgrade. A conversation that differs is a divergence.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from orchestrator.agentdefs import AgentDef
from orchestrator.context import RunMode, RunView
from orchestrator.events import ModelCall, ModelError, ToolResult
from orchestrator.messages import Message, ModelRequest, ModelResponse, ToolSpec, ToolUseBlock
from orchestrator.models.base import ModelCallError, ReplayDivergence
from orchestrator.tools.base import ExecutedCall, ToolOutput
from orchestrator.transcript import Transcript, fingerprint


@dataclass
class _AgentRecord:
    system: str = ""
    tools: list[ToolSpec] = field(default_factory=list)
    calls: dict[int, ModelCall] = field(default_factory=dict)
    messages_at: dict[int, list[Message]] = field(default_factory=dict)
    """The full message list each recorded turn was asked with (rebuilt from the recorded deltas)."""
    errors: dict[int, ModelError] = field(default_factory=dict)
    """Turns whose call failed for good, as recorded."""


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


ORCHESTRATION = frozenset({"task", "submit_findings", "submit_diagnosis"})
"""Tools that run for real during a replay: they only orchestrate (start a recorded subagent, hand an agent's result
up), they touch no host or network, and what they do is what the replay shows happening again."""


class ReplayExecutor:
    """The executor of an exact replay: every tool call is answered with the result the transcript recorded for
    it (by agent id and call id), except the orchestration tools, which run (`live`)."""

    mode: RunMode = "replay"

    def __init__(self, transcript: Transcript):
        self.results: dict[tuple[str, str], ToolResult] = {
            (ev.agent_id, ev.call_id): ev for ev in transcript.events if isinstance(ev, ToolResult)}

    async def answer(self, agent_id: str, use: ToolUseBlock,
                     live: Callable[[], Awaitable[ExecutedCall]]) -> ExecutedCall:
        if use.name in ORCHESTRATION:
            return await live()
        return self.result_for(agent_id, use.id, use.name, use.input)

    def result_for(self, agent_id: str, call_id: str, tool: str, args: dict[str, Any]) -> ExecutedCall:
        rec = self.results.get((agent_id, call_id))
        if rec is None:
            raise ReplayDivergence(f"replay diverged: agent {agent_id} called {tool} (call {call_id}), "
                                   "which the transcript has no result for")
        if rec.tool != tool:
            raise ReplayDivergence(f"replay diverged: agent {agent_id} call {call_id} is {tool}, recorded {rec.tool}")
        out = ToolOutput(text=rec.content, data=rec.data, is_error=rec.is_error, untrusted=rec.untrusted, host=rec.host)
        return ExecutedCall(out, rec.truncated, rec.duration_s)


def _same_conversation(rec: _AgentRecord, turn: int, request: ModelRequest) -> bool:
    old = rec.messages_at.get(turn)
    return old is not None and len(old) == len(request.messages) and all(
        a.model_dump(mode="json") == b.model_dump(mode="json") for a, b in zip(old, request.messages))


class ReplayModel:
    def __init__(self, agent_id: str, record: _AgentRecord | None, name: str, drift: list[str] | None = None):
        self.agent_id = agent_id
        self.record = record
        self.name = name
        self.drift = drift if drift is not None else []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        rec = self.record
        if rec is not None and request.turn in rec.errors and request.turn not in rec.calls:
            # the recorded call failed (no network, a bad key): the replay fails there too, as recorded
            err = rec.errors[request.turn]
            raise ModelCallError(err.error, list(err.attempts), fatal=err.fatal)
        if rec is None or request.turn not in rec.calls:
            have = sorted(rec.calls) if rec else []
            raise ReplayDivergence(f"replay diverged: agent {self.agent_id} turn {request.turn} was not recorded "
                                   f"(recorded turns: {have or 'none'})")
        call = rec.calls[request.turn]
        if fingerprint(request.system, request.tools, request.messages) != call.fingerprint:
            same = _same_conversation(rec, request.turn, request)
            # a conversation that differs is the divergence to name, whatever else changed since the recording
            why = explain_difference(rec if same else _AgentRecord(request.system, request.tools, rec.calls,
                                                                    rec.messages_at), request.turn, request)
            recorded = fingerprint(rec.system, rec.tools, request.messages) == call.fingerprint
            if not (recorded and same):
                raise ReplayDivergence(f"replay diverged: agent {self.agent_id} turn {request.turn}: {why}")
            note = f"agent {self.agent_id}: {why} since the recording; the recorded answers were replayed"
            if note not in self.drift:
                self.drift.append(note)
        return call.response


class ReplayBackend:
    name = "replay"

    def __init__(self, transcript: Transcript):
        self.transcript = transcript
        self.records: dict[str, _AgentRecord] = {}
        running: dict[str, list[Message]] = {}
        for ev in transcript.events:
            if isinstance(ev, ModelError):
                self.records.setdefault(ev.agent_id, _AgentRecord()).errors[ev.turn] = ev
            if isinstance(ev, ModelCall):
                rec = self.records.setdefault(ev.agent_id, _AgentRecord())
                if ev.turn == 1 or not rec.calls:
                    rec.system, rec.tools = ev.system, list(ev.tools)
                msgs = running.setdefault(ev.agent_id, [])
                msgs.extend(ev.messages)
                rec.messages_at[ev.turn] = list(msgs)
                rec.calls[ev.turn] = ev
                msgs.append(ev.response.message())
        self.drift: list[str] = []
        """What changed since the recording in prompts or tool definitions, per agent (the conversation did not)."""

    def model_for(self, defn: AgentDef, agent_id: str, run: RunView) -> ReplayModel:
        rec = self.records.get(agent_id)
        model = next(iter(rec.calls.values())).model if rec and rec.calls else "replay"
        return ReplayModel(agent_id, rec, model, self.drift)
