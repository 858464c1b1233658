"""The conversation vocabulary shared by the loop and every model backend.

The shapes follow the Messages API (text, tool_use and tool_result blocks) because that is the richest backend;
the offline, replay and test backends speak the same shapes so the loop cannot tell them apart.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field


class TextBlock(BaseModel):
    """Plain text from the model or the user."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["text"] = "text"
    text: str


class ToolUseBlock(BaseModel):
    """A tool call the model asked for."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ToolResultBlock(BaseModel):
    """The answer to one `ToolUseBlock`, sent back in the next user message."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str = ""
    is_error: bool = False


Block = Annotated[Union[TextBlock, ToolUseBlock, ToolResultBlock], Field(discriminator="type")]


class Message(BaseModel):
    """One conversation turn."""

    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "assistant"]
    content: list[Block]

    @classmethod
    def user_text(cls, text: str) -> "Message":
        return cls(role="user", content=[TextBlock(text=text)])

    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]

    def text(self) -> str:
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))


class ToolSpec(BaseModel):
    """A tool as a model sees it: name, description and JSON schema of the input."""

    model_config = ConfigDict(extra="forbid")
    name: str
    description: str
    input_schema: dict[str, Any]


class Usage(BaseModel):
    """Token counts and cost; adds up across calls and agents."""

    model_config = ConfigDict(extra="forbid")
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cost_usd=round(self.cost_usd + other.cost_usd, 6),
            calls=self.calls + other.calls,
        )


class ModelRequest(BaseModel):
    """Everything a backend is asked on one turn."""

    model_config = ConfigDict(extra="forbid")
    agent_id: str
    agent_name: str
    turn: int
    model: str
    system: str
    tools: list[ToolSpec]
    messages: list[Message]
    max_tokens: int = 8192
    temperature: float | None = None
    tool_choice: str | None = None
    """Name of a tool the model must call (the forced final turn), or None for free choice."""
    final: bool = False
    """True on the "report what you have" turn a limit forced."""


class ModelResponse(BaseModel):
    """One assistant message and why it stopped."""

    model_config = ConfigDict(extra="forbid")
    content: list[Block]
    stop_reason: str = "end_turn"
    model: str = ""
    usage: Usage = Field(default_factory=Usage)
    attempts: list[dict[str, Any]] = Field(default_factory=list)
    """Failed attempts before this answer (status, error, wait), for the transcript."""

    def message(self) -> Message:
        return Message(role="assistant", content=list(self.content))
