"""The `Model` protocol: the one seam between the agent loop and whatever answers it.

A backend knows nothing of tools, hosts or transcripts: it gets a `ModelRequest` and returns a `ModelResponse`.
Recording, limits and tool execution belong to the loop.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from orchestrator.messages import ModelRequest, ModelResponse


class RunAbort(Exception):
    """An error that must stop the whole run, not just one agent: it passes through tool and agent boundaries."""


class ModelCallError(Exception):
    """A model call failed for good; `attempts` lists what was tried. The message is one line, never a key."""

    def __init__(self, message: str, attempts: list[dict] | None = None, fatal: bool = False):
        super().__init__(message)
        self.attempts = attempts or []
        self.fatal = fatal
        """True when retrying cannot help and the whole run should stop (bad key, malformed request)."""


class AnthropicConfigError(ValueError):
    """The backend cannot start (no API key); the message is one line naming the fix."""


class ReplayDivergence(RunAbort):
    """A replayed run asked something the transcript did not record."""


@runtime_checkable
class Model(Protocol):
    """Answers one turn of one agent."""

    name: str
    """Model id as recorded in the transcript."""

    async def complete(self, request: ModelRequest) -> ModelResponse: ...
