"""The `Model` protocol: the one seam between the agent loop and whatever answers it; `Backend`, which makes one
per agent.

A backend knows nothing of tools, hosts or transcripts: it gets a `ModelRequest` and returns a `ModelResponse`.
Recording, limits and tool execution belong to the loop.
"""

from __future__ import annotations

import ipaddress
import os
from typing import TYPE_CHECKING, Protocol, runtime_checkable
from urllib.parse import urlsplit

from orchestrator.messages import ModelRequest, ModelResponse
from orchestrator.errors import InputError, RunAbort

if TYPE_CHECKING:
    from orchestrator.agentdefs import AgentDef
    from orchestrator.context import RunView


class ModelCallError(Exception):
    """A model call failed for good; `attempts` lists what was tried. The message is one line, never a key."""

    def __init__(self, message: str, attempts: list[dict] | None = None, fatal: bool = False):
        super().__init__(message)
        self.attempts = attempts or []
        self.fatal = fatal
        """True when retrying cannot help and the whole run should stop (bad key, malformed request)."""


class AnthropicConfigError(InputError):
    """The backend cannot start (no API key); the message is one line naming the fix."""


ALLOW_MODEL_REQUESTS = True
"""Kill switch for real model requests (like pydantic-ai's): False, or `INVESTIGATE_ALLOW_MODEL_REQUESTS=0` in the
environment (inherited by subprocesses), refuses every request to a non-loopback API endpoint. The test suite sets
it, so no test can reach the real API; a local fake of the Messages API on 127.0.0.1 stays reachable."""


class ModelRequestsDisabled(RunAbort):
    """A real model request was attempted while the kill switch is on."""


def model_requests_allowed(base_url: str | None) -> bool:
    """Whether a request to base_url (None: the SDK's default, the real API) may be sent."""
    if ALLOW_MODEL_REQUESTS and os.environ.get("INVESTIGATE_ALLOW_MODEL_REQUESTS", "1").strip() not in ("0", "false"):
        return True
    host = urlsplit(base_url).hostname if base_url else None
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ReplayDivergence(RunAbort):
    """A replayed run asked something the transcript did not record."""


@runtime_checkable
class Model(Protocol):
    """Answers one turn of one agent."""

    name: str
    """Model id as recorded in the transcript."""

    async def complete(self, request: ModelRequest) -> ModelResponse: ...


class Backend(Protocol):
    """Makes the model of each agent, and nothing else: tool calls are the run's `Executor`'s."""

    @property
    def name(self) -> str: ...

    def model_for(self, defn: "AgentDef", agent_id: str, run: "RunView") -> Model: ...
