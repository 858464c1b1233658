"""What a new run takes from an earlier transcript: its inputs, settings and agents, and its finished subagents.

`replay` and `resume` (orchestrator.api) read a transcript with these; `Run(reuse=...)` calls `load_reuse` so that a
subagent that finished ok is reused (its recorded events copied into the new transcript) instead of run again.
"""

from __future__ import annotations

from typing import Any

from orchestrator.agentdefs import AgentDef, load_agents
from orchestrator.context import RunContext, RunInputs
from orchestrator.errors import InputError
from orchestrator.events import AgentFinished, AgentStarted, ModelCall, Notice, RunStarted, ToolCall, ToolResult
from orchestrator.evidence import Evidence
from orchestrator.findings import AgentResult
from orchestrator.settings import Settings
from orchestrator.transcript import Transcript


def _started(t: Transcript) -> RunStarted:
    started = t.of_type(RunStarted)
    if not started:
        raise InputError(f"{t.path}: the transcript has no run_started event; nothing to replay")
    return started[0]


def inputs_from(t: Transcript) -> RunInputs:
    """The recorded run's inputs (InputError when the transcript never started a run)."""
    rs = _started(t)
    return RunInputs(question=rs.question, **{k: v for k, v in rs.inputs.items() if k in RunInputs.model_fields})


def settings_from(t: Transcript) -> Settings:
    """The recorded run's settings (those this version still knows; the API key is never recorded)."""
    recorded: dict[str, Any] = _started(t).settings
    return Settings.model_validate({k: v for k, v in recorded.items() if k in Settings.model_fields})


def agents_from(t: Transcript) -> dict[str, AgentDef]:
    """The agent definitions the recorded run used (the installed ones for a transcript too old to carry them)."""
    started = t.of_type(RunStarted)
    if not started or not started[0].agent_defs:
        return load_agents()
    return {n: AgentDef.model_validate(d) for n, d in started[0].agent_defs.items()}


def load_reuse(run: RunContext, old: Transcript) -> None:
    """Mark every subagent that finished ok in an earlier transcript as reusable, with its events and evidence."""
    finished = {e.agent_id: e for e in old.of_type(AgentFinished) if e.status == "ok" and e.agent_id != "lead"}
    # descendants of a reusable agent travel with it
    parent = {e.agent_id: e.parent_id for e in old.of_type(AgentStarted)}

    def root(aid: str) -> str | None:
        while (up := parent.get(aid)) is not None and up != "lead":
            aid = up
        return aid if aid in finished else None

    for ev in old.events:
        aid = getattr(ev, "agent_id", None)
        if not aid or not isinstance(ev, (AgentStarted, ModelCall, ToolCall, ToolResult, AgentFinished, Notice)):
            continue
        top = root(aid)
        if top is None:
            continue
        run.reuse_events.setdefault(top, []).append(ev)
        if isinstance(ev, ToolResult):
            run.evidence.add(Evidence(id=ev.evidence_id, agent_id=ev.agent_id, tool=ev.tool, host=ev.host,
                                      text=ev.content, data=ev.data, is_error=ev.is_error))
    for aid, fin in finished.items():
        if root(aid) == aid:
            run.reuse[aid] = AgentResult.model_validate(fin.result)
