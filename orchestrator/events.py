"""The transcript schema: every record a run writes, as pydantic models.

This module is the transcript's documentation. It does no I/O: `transcript.py` writes and reads these records.
A transcript is JSONL: the first line is a `Header`, every later line one `Event` (a union tagged by `type`).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from orchestrator.messages import Message, ModelResponse, ToolSpec, Usage

SCHEMA_VERSION = 2
"""Current transcript schema. Older versions are upgraded by the named steps in `transcript_upgrade.py`."""

AgentStatus = Literal["ok", "error", "timeout", "turn_limit", "budget", "cancelled"]
RunStatus = Literal["ok", "error", "cancelled"]


def utcnow() -> datetime:
    """Now, timezone-aware, in UTC."""
    return datetime.now(timezone.utc)


class Header(BaseModel):
    """First line of every transcript."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["header"] = "header"
    schema_version: int = SCHEMA_VERSION
    """Version of this schema the file was written with."""
    tool_version: str
    """Version of `investigate` that wrote the file."""
    created: datetime = Field(default_factory=utcnow)
    """When the file was created (UTC)."""
    run_id: str
    """The run this transcript records."""


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str
    """Identifier of the run, shared by every event of one transcript."""
    seq: int = 0
    """Position of the event in the transcript, from 1; assigned by the writer."""
    ts: datetime = Field(default_factory=utcnow)
    """When the event happened (UTC)."""


class RunStarted(_Event):
    """A run began: the question and every input that shapes it."""

    type: Literal["run_started"] = "run_started"
    question: str
    """The user's question, verbatim (after redaction)."""
    backend: str
    """Model backend that drives the agents: `offline`, `anthropic`, `replay`, `scripted`, `function`."""
    host: str | None = None
    """Investigated host as given (`local` when absent)."""
    inputs: dict[str, Any] = Field(default_factory=dict)
    """Run inputs: observations, log paths, python path, measure flag."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """Every limit, cap and timeout in force for the run."""
    agents: list[str] = Field(default_factory=list)
    """Names of the agent definitions available to the run."""
    agent_defs: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """The agent definitions as run (front matter, plan and prompt), so a replay asks exactly what was asked."""


class AgentStarted(_Event):
    """A lead or subagent started its tool loop."""

    type: Literal["agent_started"] = "agent_started"
    agent_id: str
    """Stable id: `lead`, or the parent's id, a slash, the dispatch ordinal and the agent name."""
    parent_id: str | None = None
    """Id of the agent whose `task` call started this one."""
    name: str
    """Agent definition name (e.g. `kernel-research`)."""
    model: str
    """Model the agent runs on (backend-specific id)."""
    brief: str = ""
    """The brief the parent wrote for this agent (empty for the lead)."""
    tools: list[str] = Field(default_factory=list)
    """Tool names available to the agent."""
    limits: dict[str, Any] = Field(default_factory=dict)
    """max_turns, timeout_s and max_tokens_budget in force."""


class ModelCall(_Event):
    """One model request and its response."""

    type: Literal["model_call"] = "model_call"
    agent_id: str
    """Agent that made the call."""
    turn: int
    """Turn number within the agent's loop, from 1."""
    model: str
    """Model id asked."""
    fingerprint: str
    """Hash of the canonical request (system, tools, messages) after redaction; replay checks it."""
    system: str = ""
    """System prompt sent (recorded once per agent at turn 1; empty on later turns)."""
    tools: list[ToolSpec] = Field(default_factory=list)
    """Tool definitions sent (recorded at turn 1 only)."""
    messages: list[Message] = Field(default_factory=list)
    """Messages added since the previous call (the whole list at turn 1)."""
    response: ModelResponse
    """What the model answered."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens and cost of this call."""
    latency_s: float = 0.0
    """Wall time of the call, retries included."""
    attempts: list[dict[str, Any]] = Field(default_factory=list)
    """Failed attempts before the answer: status code, error type, wait before retry."""
    final: bool = False
    """True when this was the "report what you have" turn forced by a limit."""


class ModelError(_Event):
    """A model call failed for good (after retries)."""

    type: Literal["model_error"] = "model_error"
    agent_id: str
    """Agent whose call failed."""
    turn: int
    """Turn of the failed call."""
    error: str
    """One line: what failed (never the API key)."""
    attempts: list[dict[str, Any]] = Field(default_factory=list)
    """Every attempt: status code, error type, wait before retry."""
    fatal: bool = False
    """The failure stopped the whole run (a bad key, an API never reached); an exact replay stops it again."""


class ToolCall(_Event):
    """An agent asked for a tool."""

    type: Literal["tool_call"] = "tool_call"
    agent_id: str
    """Agent that asked."""
    turn: int
    """Turn in which the call was made."""
    call_id: str
    """The model's id for the call (`tool_use` id)."""
    tool: str
    """Tool name."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Arguments as the model gave them."""


class ToolResult(_Event):
    """What a tool returned; every `ToolCall` gets exactly one."""

    type: Literal["tool_result"] = "tool_result"
    agent_id: str
    """Agent that made the call."""
    turn: int
    """Turn in which the call was made."""
    call_id: str
    """Id of the `ToolCall` this answers."""
    tool: str
    """Tool name."""
    evidence_id: str
    """Evidence id a diagnosis cites (e.g. `ev-2-3`)."""
    is_error: bool = False
    """True when the tool failed, was refused, or timed out."""
    content: str = ""
    """Text given back to the model (after output capping)."""
    data: dict[str, Any] | None = None
    """Typed payload (a probe's pydantic model dumped), when the tool has one."""
    host: str | None = None
    """Host the tool ran against, if any."""
    untrusted: bool = False
    """True when the content came from a host or a web page and is fenced as untrusted data."""
    truncated: bool = False
    """True when the output cap cut the content."""
    duration_s: float = 0.0
    """Wall time of the call."""


class PolicyRefusal(_Event):
    """A command or address was refused by policy before anything was sent."""

    type: Literal["policy_refusal"] = "policy_refusal"
    agent_id: str
    """Agent whose call was refused."""
    call_id: str
    """Tool call that was refused."""
    tool: str
    """Tool that refused."""
    subject: str
    """The command line or URL that was refused."""
    reason: str
    """Why, in one line."""


class Notice(_Event):
    """Something a reader should know that is no error (backend chosen, host lost, retry storm)."""

    type: Literal["notice"] = "notice"
    agent_id: str | None = None
    """Agent concerned, if any."""
    level: Literal["info", "warning"] = "info"
    """Severity."""
    message: str
    """One line."""


class AgentFinished(_Event):
    """An agent's loop ended; carries its result whatever the status."""

    type: Literal["agent_finished"] = "agent_finished"
    agent_id: str
    """Agent that finished."""
    status: AgentStatus
    """`ok`, or which failure or limit ended it."""
    result: dict[str, Any] = Field(default_factory=dict)
    """The agent's `AgentResult` (summary, findings, evidence ids), dumped."""
    error: str | None = None
    """One line when status is not `ok`."""
    turns: int = 0
    """Model turns taken."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens and cost of this agent alone."""
    duration_s: float = 0.0
    """Wall time of the agent's loop."""


class DiagnosisSubmitted(_Event):
    """The lead submitted its diagnosis (after the evidence-id check)."""

    type: Literal["diagnosis_submitted"] = "diagnosis_submitted"
    agent_id: str = "lead"
    """Agent that submitted (the lead)."""
    diagnosis: dict[str, Any]
    """The `Diagnosis`, dumped."""


class RunFinished(_Event):
    """Last event of every run, also a cancelled or failed one."""

    type: Literal["run_finished"] = "run_finished"
    status: RunStatus
    """`ok` when a diagnosis was produced, `error` or `cancelled` otherwise."""
    error: str | None = None
    """One line when status is not `ok`."""
    usage: Usage = Field(default_factory=Usage)
    """Totals for the run."""
    usage_by_agent: dict[str, Usage] = Field(default_factory=dict)
    """Usage per agent id."""
    duration_s: float = 0.0
    """Wall time of the run."""


Event = Annotated[
    Union[
        RunStarted,
        AgentStarted,
        ModelCall,
        ModelError,
        ToolCall,
        ToolResult,
        PolicyRefusal,
        Notice,
        AgentFinished,
        DiagnosisSubmitted,
        RunFinished,
    ],
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)
EVENT_TYPES: tuple[type[BaseModel], ...] = (
    RunStarted,
    AgentStarted,
    ModelCall,
    ModelError,
    ToolCall,
    ToolResult,
    PolicyRefusal,
    Notice,
    AgentFinished,
    DiagnosisSubmitted,
    RunFinished,
)
