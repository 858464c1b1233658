"""The parent's dispatch: `spawn` runs one subagent in its own cancel scope (what the `task` tool calls).

The loop runs all tool calls of one assistant message in one task group, so several `task` calls in one message
run their subagents concurrently and the parent blocks until each has a result. A subagent that raises, times out,
runs out of budget or is cancelled still yields an `AgentResult` with its status.
"""

from __future__ import annotations

from orchestrator.context import AgentContext
from orchestrator.events import AgentFinished, AgentStarted, Notice
from orchestrator.findings import AgentResult
from orchestrator.errors import ToolFailure
from orchestrator.loop import AgentRunner


def child_id(name: str, ordinal: int) -> str:
    return f"{name}-{ordinal}"


async def spawn(ctx: AgentContext, agent: str, brief: str) -> AgentResult:
    """Run subagent `agent` for the calling agent's current `task` call (or reuse its earlier result on resume).
    The run hands this to its context (`RunContext.spawner`); a subagent's wall time ends before its parent's because
    its loop reads the parent agent's cancel scope (`loop._AGENT_SCOPE`) and ends with it."""
    run = ctx.run
    defn = run.agents.get(agent)
    if defn is None or defn.role == "lead":
        names = ", ".join(sorted(n for n, a in run.agents.items() if a.role != "lead"))
        raise ToolFailure(f"no subagent named {agent!r}; available: {names}")
    if ctx.call is None or ctx.call.child_ordinal is None:
        raise ToolFailure("task: no ordinal reserved for this call (spawn runs only inside an agent's tool call)")
    agent_id = child_id(defn.name, ctx.call.child_ordinal)
    reused = run.reuse.get(agent_id)
    if reused is not None and reused.status == "ok":
        return _reuse(ctx, agent_id, reused)
    if run.executor.mode == "resynth":
        # a re-synthesis works from what was recorded: it starts no subagent that would need a live model and tools
        # (an exact replay does start them: their answers and tool results come from the recording)
        raise ToolFailure(f"not run: subagent {agent_id} has no finished result in the transcript, and a replay never "
                          "acts")
    # the runner's wall-time limit is the subagent's own cancel scope (move_on_after inside run());
    # it never raises for the subagent's failures, only for cancellation of the whole run
    runner = AgentRunner(run, defn, agent_id=agent_id, ordinal=ctx.call.child_ordinal,
                         parent_id=ctx.agent_id, brief=brief)
    return await runner.run()


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
