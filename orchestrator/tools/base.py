"""The `Tool` protocol, the registry agents select from, and the wrapper that makes every call end in a result.

A tool knows its input model (whose JSON schema the model sees) and how to run. It does not know about
transcripts, evidence ids or limits: `execute` applies the timeout and output cap and turns any exception into an
`is_error` result, so no tool call is ever left without an answer.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Protocol

import anyio
from pydantic import BaseModel, ValidationError

from orchestrator.errors import ToolFailure  # noqa: F401  (re-exported: tools raise it from here)
from orchestrator.messages import ToolSpec
from orchestrator.errors import RunAbort
from orchestrator.redact import redact

if TYPE_CHECKING:
    from orchestrator.inputs import RunInputs
    from orchestrator.findings import AgentResult
    from orchestrator.hosts.base import Host
    from orchestrator.settings import Settings


class ToolContext(Protocol):
    """What a tool may reach of the run it is called in; nothing else (not the recorder, the backend, the registry,
    other agents or other hosts' connections).

    The loop's `AgentContext` satisfies it; `orchestrator.tools.mock.MockToolContext` is a stand-alone one (tests,
    notebooks). A tool that needs more than this asks for a new member here, where the seam is reviewed.
    """

    @property
    def agent_id(self) -> str:
        """The calling agent (e.g. `node-health-2`)."""
        ...

    @property
    def inputs(self) -> "RunInputs":
        """The run's inputs: question, observations, --log paths, --python, --measure, the hosts of the run."""
        ...

    @property
    def settings(self) -> "Settings":
        """The run's limits and defaults."""
        ...

    @property
    def final(self) -> bool:
        """True during the agent's forced "report what you have" turn."""
        ...

    def host(self) -> "Host":
        """The host this call runs on: the one its `host` argument names (multi-host runs), else the run's primary
        host. Raises `ToolFailure` when there is none (a replay, a host-less call, a name not among the run's hosts).
        """
        ...

    def for_host(self, name: str) -> "ToolContext":
        """This context aimed at the run's host `name` (a call's `host: NAME` argument)."""
        ...

    def has_evidence(self, evidence_id: str) -> bool:
        """Whether `evidence_id` names a recorded tool result of this run."""
        ...

    def refuse(self, tool: str, subject: str, reason: str) -> None:
        """Record a policy refusal (a refused command, path or address) before the tool answers with an error."""
        ...

    def submit(self, result: dict[str, Any]) -> None:
        """Hand the agent's result (findings or diagnosis, as JSON) to whoever runs the agent."""
        ...

    async def spawn(self, agent: str, brief: str) -> "AgentResult":
        """Run subagent `agent` on `brief` to completion and return its result (the `task` tool)."""
        ...


class ToolOutput(BaseModel):
    """What a tool returns: text for the model, an optional typed payload for the rules."""

    text: str
    data: dict[str, Any] | None = None
    is_error: bool = False
    untrusted: bool = False
    """True when text carries content from a host or web page (fenced as untrusted for the model)."""
    host: str | None = None


class RunShape(Protocol):
    """What a tool may read of the run to shape its schema (`Tool.prepare`): the inputs and the loaded agents."""

    @property
    def inputs(self) -> "RunInputs": ...

    @property
    def agents(self) -> dict[str, Any]: ...


def with_host_arg(spec: ToolSpec, hosts: list[str]) -> ToolSpec:
    """The tool's spec with an optional `host` argument naming one of the run's usable hosts."""
    schema = dict(spec.input_schema)
    props = dict(schema.get("properties") or {})
    props["host"] = {"type": "string", "enum": list(hosts),
                     "description": "Which host of this multi-host run to run on (default: the primary host)."}
    schema["properties"] = props
    return spec.model_copy(update={"input_schema": schema})


class Tool:
    """Base class of every tool. Subclasses set name, description, Input and implement `run`."""

    name: ClassVar[str]
    description: ClassVar[str]
    Input: ClassVar[type[BaseModel]]
    timeout_s: ClassVar[float | None] = None
    """Per-call timeout; None takes the run's default tool timeout."""
    acts: ClassVar[bool] = True
    """True: the tool reaches a host, the network or the GPU. A replay (`context.RunMode` other than `live`) never
    runs such a tool: only the pure ones (knowledge lookups, arithmetic, the submit tools) run there."""
    on_host: ClassVar[bool] = False
    """The tool looks at a host: in a multi-host run its schema offers `host` (any tool accepts it, see
    `split_host_arg`)."""
    spawns: ClassVar[bool] = False
    """A call starts a subagent: the loop reserves its ordinal (and so its agent id) before any call of the message
    runs, so ids are stable across runs and replays."""

    def prepare(self, spec: ToolSpec, run: RunShape) -> ToolSpec:
        """The tool's schema for this run (as pydantic-ai's `prepare`): a host tool offers `host` in a multi-host
        run; a one-host run keeps the spec exactly. Override to shape it further from the run."""
        if self.on_host and run.inputs.hosts:
            return with_host_arg(spec, run.inputs.usable_hosts)
        return spec

    def spec(self) -> ToolSpec:
        return _spec(type(self))

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutput:  # pragma: no cover - abstract
        raise NotImplementedError


_SPECS: dict[type[Tool], ToolSpec] = {}


def _spec(cls: type[Tool]) -> ToolSpec:
    # JSON-schema generation costs milliseconds; every agent of every run asks for the same specs
    spec = _SPECS.get(cls)
    if spec is None:
        schema = cls.Input.model_json_schema()
        schema.pop("title", None)
        spec = _SPECS[cls] = ToolSpec(name=cls.name, description=cls.description, input_schema=schema)
    return spec


HOST_ARG = "host"
"""In a multi-host run any tool call may carry `host: NAME` (a tool whose own input has no `host` field): the call
runs on that host of the run (`ctx.host()`) and its evidence is labelled with it."""


def split_host_arg(tool: Tool, raw_args: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """The call's target host and the arguments the tool itself validates."""
    if HOST_ARG not in raw_args or HOST_ARG in tool.Input.model_fields:
        return None, raw_args
    target = raw_args[HOST_ARG]
    rest = {k: v for k, v in raw_args.items() if k != HOST_ARG}
    return (str(target) if target is not None else None), rest


TRUNCATION_MARKER = "\n[... {omitted} characters omitted by the output cap ...]\n"


def cap_text(text: str, limit: int) -> tuple[str, bool]:
    """Keep the head and tail of text within limit characters, with a visible marker between them."""
    if len(text) <= limit:
        return text, False
    marker = TRUNCATION_MARKER.format(omitted=len(text) - limit)
    keep = max(limit - len(marker), 0)
    head = keep * 2 // 3
    tail = keep - head
    return text[:head] + marker + (text[-tail:] if tail else ""), True


@dataclass
class ExecutedCall:
    """A finished tool call, before it is recorded."""

    output: ToolOutput
    truncated: bool
    duration_s: float


async def execute(tool: Tool | None, name: str, raw_args: dict[str, Any], ctx: ToolContext, *,
                  available: Iterable[str] = ()) -> ExecutedCall:
    """Validate, run under the timeout, cap the output; every failure becomes an error result.

    `available`: the calling agent's tool names, for the answer to a call of an unknown tool."""
    started = time.monotonic()
    settings = ctx.settings
    if tool is None:
        out = ToolOutput(text=f"unknown tool {name!r}; available: {', '.join(available)}", is_error=True)
        return ExecutedCall(out, False, 0.0)
    target, raw_args = split_host_arg(tool, raw_args)
    if target is not None:
        ctx = ctx.for_host(target)
    try:
        args = tool.Input.model_validate(raw_args)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "input"
        out = ToolOutput(text=f"invalid arguments for {name}: {where}: {first['msg']}", is_error=True)
        return ExecutedCall(out, False, time.monotonic() - started)
    timeout = tool.timeout_s if tool.timeout_s is not None else settings.tool_timeout_s
    try:
        with anyio.fail_after(timeout):
            out = await tool.run(args, ctx)
    except TimeoutError:
        out = ToolOutput(text=f"{name} timed out after {timeout:g} s", is_error=True)
    except ToolFailure as exc:
        out = ToolOutput(text=str(exc), is_error=True)
    except (anyio.get_cancelled_exc_class(), RunAbort):
        raise
    except Exception as exc:  # a tool bug or host failure must still answer the call
        out = ToolOutput(text=f"{name} failed: {type(exc).__name__}: {exc}", is_error=True)
    if target is not None and out.host is None:
        out.host = target  # an error on a named host is that host's evidence too
    # secrets in host output (env dumps, config files) reach neither the model nor the transcript
    text, truncated = cap_text(redact(out.text), settings.tool_output_chars)
    out.text = text
    return ExecutedCall(out, truncated, time.monotonic() - started)


@dataclass
class ToolRegistry:
    """Tools by name; an agent definition selects its tools from here."""

    tools: dict[str, Tool] = field(default_factory=dict)

    def add(self, tool: Tool) -> Tool:
        self.tools[tool.name] = tool
        return tool

    def get(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def select(self, names: list[str]) -> list[Tool]:
        missing = [n for n in names if n not in self.tools]
        if missing:
            raise KeyError(f"unknown tool(s) {', '.join(missing)}; registered: {', '.join(sorted(self.tools))}")
        return [self.tools[n] for n in names]

    def names(self) -> list[str]:
        return sorted(self.tools)
