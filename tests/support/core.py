"""Helpers for core tests: a registry with cheap real tools and agent definitions written to a tmp dir."""

from __future__ import annotations

from pathlib import Path

import anyio
from pydantic import BaseModel, Field

from orchestrator.agentdefs import load_agents
from orchestrator.models.base import Backend
from orchestrator.inputs import RunInputs
from orchestrator.run import InvestigationResult, Run
from orchestrator.settings import Settings
from orchestrator.tools.task import TaskTool
from orchestrator.tools.base import Tool, ToolOutput, ToolRegistry
from orchestrator.tools.submit import SubmitDiagnosis, SubmitFindings


class SleepInput(BaseModel):
    seconds: float = Field(0.0, ge=0)
    label: str = "x"


class SleepTool(Tool):
    """A cheap real tool: sleeps, then echoes its label."""

    name = "sleep"
    description = "Sleep for a while and echo a label."
    Input = SleepInput

    async def run(self, args: SleepInput, ctx) -> ToolOutput:
        await anyio.sleep(args.seconds)
        return ToolOutput(text=f"slept {args.seconds:g}s: {args.label}", data={"kind": "sleep", "label": args.label})


class BoomTool(Tool):
    name = "boom"
    description = "Always fails."
    Input = SleepInput

    async def run(self, args, ctx) -> ToolOutput:
        raise RuntimeError("kaboom")


def core_registry() -> ToolRegistry:
    reg = ToolRegistry()
    for t in (TaskTool(), SubmitFindings(), SubmitDiagnosis(), SleepTool(), BoomTool()):
        reg.add(t)
    return reg


def write_agents(d: Path, subagents: dict[str, dict] | None = None, lead_tools=("task", "sleep")) -> Path:
    """Write a lead and subagents (name -> front-matter overrides) as Markdown definitions into d."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "lead.md").write_text(
        "---\nname: lead\ndescription: test lead\nrole: lead\ntools: [" + ", ".join(lead_tools) + "]\n---\nYou lead.\n"
    )
    for name, extra in (subagents or {}).items():
        lines = [f"name: {name}", f"description: test agent {name}", "tools: [sleep, boom]"]
        lines += [f"{k}: {v}" for k, v in extra.items()]
        (d / f"{name}.md").write_text("---\n" + "\n".join(lines) + "\n---\nYou are " + name + ".\n")
    return d


async def run_lead(agents: Path, backend: Backend, *, transcript: Path | None | bool, settings: Settings | None = None,
                   registry: ToolRegistry | None = None, question: str = "q") -> InvestigationResult:
    """One hostless run of the lead defined in `agents` (see write_agents) on `backend`, through `Run`."""
    async with Run(inputs=RunInputs(question=question), settings=settings or Settings(), backend=backend,
                   agents=load_agents([agents]), registry=registry or core_registry(), transcript=transcript) as run:
        await run.investigate()
    return run.result


def chase_first_sleep(view) -> list:
    """A prong's second round (`Prong.follow_up`) for tests: once a `sleep` labelled `first` was recorded, start the
    `chaser` agent; nothing otherwise."""
    from orchestrator.agentdefs import PlanStep

    if any(e.data and e.data.get("label") == "first" for e in view.of_kind("sleep")):
        return [PlanStep(tool="task", args={"agent": "chaser", "brief": "chase what the first round found"})]
    return []
