"""Test doubles that are real `Model`s: a scripted queue and a function. Shipped for tests and notebooks.

    model = ScriptedModel([respond(call("task", agent="x", brief="...")), RuntimeError("boom")])
    backend = DoublesBackend({"lead": model, "x": FunctionModel(lambda req: respond(text("done")))})
"""

from __future__ import annotations

import inspect
import itertools
from collections import deque
from typing import Any, Awaitable, Callable, Iterable, Union

import anyio

from orchestrator.messages import Block, ModelRequest, ModelResponse, TextBlock, ToolUseBlock, Usage

_ids = itertools.count(1)


def call(name: str, id: str | None = None, **input: Any) -> ToolUseBlock:
    """A tool_use block (ids are unique per process unless given)."""
    return ToolUseBlock(id=id or f"toolu_double_{next(_ids)}", name=name, input=input)


def text(t: str) -> TextBlock:
    return TextBlock(text=t)


def respond(*blocks: Block, usage: Usage | None = None, stop_reason: str | None = None) -> ModelResponse:
    """A model response made of blocks; stop_reason follows the blocks unless given."""
    has_tools = any(isinstance(b, ToolUseBlock) for b in blocks)
    return ModelResponse(content=list(blocks), stop_reason=stop_reason or ("tool_use" if has_tools else "end_turn"),
                         usage=usage or Usage(calls=1))


Scripted = Union[ModelResponse, BaseException, str, Callable[[ModelRequest], Any]]


class ScriptedModel:
    """Answers from a queue: a response, a string (text reply), an exception to raise, or a callable.

    `requests` holds every request received, for assertions. `delay_s` sleeps before each answer (latency).
    An exhausted queue raises AssertionError: a test asked more turns than it scripted.
    """

    def __init__(self, outputs: Iterable[Scripted], *, name: str = "scripted", delay_s: float = 0.0):
        self.name = name
        self.queue: deque[Scripted] = deque(outputs)
        self.requests: list[ModelRequest] = []
        self.delay_s = delay_s

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if self.delay_s:
            await anyio.sleep(self.delay_s)
        if not self.queue:
            raise AssertionError(f"ScriptedModel {self.name!r} has no output left for turn {request.turn}")
        item = self.queue.popleft()
        if isinstance(item, BaseException):
            raise item
        if callable(item) and not isinstance(item, ModelResponse):
            item = item(request)
            if inspect.isawaitable(item):
                item = await item
        if isinstance(item, str):
            return respond(text(item))
        return item


class FunctionModel:
    """Answers every request by calling fn(request) (sync or async)."""

    def __init__(self, fn: Callable[[ModelRequest], ModelResponse | Awaitable[ModelResponse]], *, name: str = "function"):
        self.fn = fn
        self.name = name
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        out = self.fn(request)
        if inspect.isawaitable(out):
            out = await out
        return out


class DoublesBackend:
    """A backend handing each agent its double: looked up by agent id, then by agent name, then `default`.

    A value may also be a factory `(agent_id) -> Model` so that several instances of one agent get their own.
    """

    name = "scripted"

    def __init__(self, models: dict[str, Any], default: Any = None):
        self.models = models
        self.default = default

    def model_for(self, defn, agent_id, run):
        m = self.models.get(agent_id, self.models.get(defn.name, self.default))
        if m is None:
            raise KeyError(f"no model double for agent {agent_id} ({defn.name})")
        if callable(m) and not hasattr(m, "complete"):
            m = m(agent_id)
        return m
