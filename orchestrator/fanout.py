"""The parent's dispatch: the `task` tool starts one subagent per call, in its own cancel scope.

The loop runs all tool calls of one assistant message in one task group, so several `task` calls in one message
run their subagents concurrently and the parent blocks until each has a result. A subagent that raises, times out,
runs out of budget or is cancelled still yields an `AgentResult` with its status.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from orchestrator.context import AgentContext
from orchestrator.events import AgentFinished, AgentStarted, Notice
from orchestrator.findings import AgentResult
from orchestrator.tools.base import Tool, ToolFailure, ToolOutput


class TaskInput(BaseModel):
    agent: str = Field(description="Name of the subagent definition to start (one prong of the investigation).")
    brief: str = Field(
        description="The subagent's brief: objective, expected output, tools to use and scope (what not to do)."
    )


def child_id(name: str, ordinal: int) -> str:
    return f"{name}-{ordinal}"


class TaskTool(Tool):
    name = "task"
    description = (
        "Start a subagent on one prong of the investigation and wait for its findings. Call it several times in ONE "
        "message to run prongs in parallel. Returns the subagent's status, summary, findings and evidence ids."
    )
    Input = TaskInput
    timeout_s = 24 * 3600.0  # the subagent's own wall-time limit governs; this only bounds a runaway

    async def run(self, args: TaskInput, ctx: AgentContext) -> ToolOutput:
        from orchestrator.loop import AgentRunner

        run = ctx.run
        defn = run.agents.get(args.agent)
        if defn is None or defn.role == "lead":
            names = ", ".join(sorted(n for n, a in run.agents.items() if a.role != "lead"))
            raise ToolFailure(f"no subagent named {args.agent!r}; available: {names}")
        assert ctx.call is not None and ctx.call.child_ordinal is not None
        agent_id = child_id(defn.name, ctx.call.child_ordinal)
        reused = run.reuse.get(agent_id)
        if reused is not None and reused.status == "ok":
            result = self._reuse(ctx, agent_id, reused)
        else:
            # the runner's wall-time limit is the subagent's own cancel scope (move_on_after inside run());
            # it never raises for the subagent's failures, only for cancellation of the whole run
            runner = AgentRunner(run, defn, agent_id=agent_id, ordinal=ctx.call.child_ordinal,
                                 parent_id=ctx.agent_id, brief=args.brief, parent_deadline=ctx.deadline)
            result = await runner.run()
        return ToolOutput(text=result.for_parent(), data={"kind": "agent_result", **result.model_dump(mode="json")},
                          is_error=result.status != "ok")

    @staticmethod
    def _reuse(ctx: AgentContext, agent_id: str, reused: AgentResult) -> AgentResult:
        """Resume: re-record a finished subagent's events from the old transcript instead of running it again."""
        run = ctx.run
        run.recorder.emit(Notice(run_id=run.run_id, agent_id=agent_id,
                                 message=f"reusing finished subagent {agent_id} from the earlier transcript"))
        for ev in run.reuse_events.get(agent_id, []):
            copy = ev.model_copy(update={"run_id": run.run_id})
            if isinstance(copy, AgentStarted):
                copy = copy.model_copy(update={"parent_id": ctx.agent_id})
            run.recorder.emit(copy)
        run.results[agent_id] = reused
        run.add_usage(agent_id, reused.usage)
        if not any(isinstance(e, AgentFinished) for e in run.reuse_events.get(agent_id, [])):
            run.recorder.emit(AgentFinished(run_id=run.run_id, agent_id=agent_id, status=reused.status,
                                            result=reused.model_dump(mode="json"), turns=reused.turns,
                                            usage=reused.usage))
        return reused
