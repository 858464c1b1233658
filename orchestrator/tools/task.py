"""The `task` tool: start a subagent on one prong and wait for its findings (through the context's `spawn`)."""

from __future__ import annotations

from typing import Iterable

from pydantic import BaseModel, Field

from orchestrator.messages import ToolSpec
from orchestrator.tools.base import RunShape, Tool, ToolContext, ToolOutput


class TaskInput(BaseModel):
    agent: str = Field(description="Name of the subagent definition to start (one prong of the investigation).")
    brief: str = Field(
        description="The subagent's brief: objective, expected output, tools to use and scope (what not to do)."
    )


class TaskTool(Tool):
    name = "task"
    acts = False  # spawn decides: a replay reuses recorded subagents and starts none
    spawns = True
    description = (
        "Start a subagent on one prong of the investigation and wait for its findings. Call it several times in ONE "
        "message to run prongs in parallel. Returns the subagent's status, summary, findings and evidence ids."
    )
    Input = TaskInput
    timeout_s = 24 * 3600.0  # the subagent's own wall-time limit governs; this only bounds a runaway

    def prepare(self, spec: ToolSpec, run: RunShape) -> ToolSpec:
        """`agent` names the loaded subagents as an enum: a model need not guess names. A prong that joins on an
        input the run was not given (its definition's `joins: run.FIELD`) is not offered."""
        return with_agent_names(spec, [n for n, a in run.agents.items() if a.role != "lead"
                                       and (not a.joins or getattr(run.inputs, a.joins.removeprefix("run."), None))])

    async def run(self, args: TaskInput, ctx: ToolContext) -> ToolOutput:
        result = await ctx.spawn(args.agent, args.brief)
        return ToolOutput(text=result.for_parent(), data={"kind": "agent_result", **result.model_dump(mode="json")},
                          is_error=result.status != "ok")


def with_agent_names(spec: ToolSpec, agents: Iterable[str]) -> ToolSpec:
    """The `task` spec with `agent` naming the loaded subagents as an enum: a model need not guess names."""
    names = sorted(agents)
    if not names:
        return spec
    schema = dict(spec.input_schema)
    props = dict(schema.get("properties") or {})
    props["agent"] = {**props.get("agent", {}), "enum": names}
    schema["properties"] = props
    return spec.model_copy(update={"input_schema": schema})
