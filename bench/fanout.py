"""Fan-out overhead: N subagents x 5 turns against a model double that sleeps 50 ms per turn.

Each turn calls one cheap tool; everything is recorded to a real transcript on disk. Prints, per N, the run's wall
time over the slowest subagent's own time (targets: <= 1.05 at N=3, <= 1.2 at N=50) and the orchestration overhead
per turn in ms (a subagent's time beyond its model's sleeps, per turn).

    python bench/fanout.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from pydantic import BaseModel

from orchestrator.agentdefs import load_agents
from orchestrator.inputs import RunInputs
from orchestrator.events import AgentFinished
from orchestrator.tools.task import TaskTool
from orchestrator.models.doubles import DoublesBackend, ScriptedModel, call, respond
from orchestrator.run import Run
from orchestrator.settings import Settings
from orchestrator.tools.base import Tool, ToolOutput, ToolRegistry
from orchestrator.tools.submit import SubmitDiagnosis, SubmitFindings

TURNS = 5
MODEL_SLEEP_S = 0.05


class EchoInput(BaseModel):
    text: str = ""


class Echo(Tool):
    name = "echo"
    description = "Echo the input."
    Input = EchoInput

    async def run(self, args: EchoInput, ctx) -> ToolOutput:
        return ToolOutput(text=args.text, data={"kind": "echo"})


def registry() -> ToolRegistry:
    reg = ToolRegistry()
    for t in (TaskTool(), SubmitFindings(), SubmitDiagnosis(), Echo()):
        reg.add(t)
    return reg


def write_agents(d: Path, n: int) -> None:
    (d / "lead.md").write_text("---\nname: lead\ndescription: lead\nrole: lead\ntools: [task]\n---\nlead\n")
    for i in range(n):
        (d / f"w{i}.md").write_text(f"---\nname: w{i}\ndescription: worker\ntools: [echo]\nmax_turns: 20\n---\nw\n")


def worker(agent_id: str) -> ScriptedModel:
    turns = [respond(call("echo", text=f"{agent_id} turn {t}")) for t in range(1, TURNS)]
    turns.append(respond(call("submit_findings", summary="done")))
    return ScriptedModel(turns, delay_s=MODEL_SLEEP_S)


async def one(n: int, tmp: Path) -> dict:
    d = tmp / f"agents{n}"
    d.mkdir()
    write_agents(d, n)
    cause = {"title": "t", "explanation": "e", "confidence": 0.5, "evidence": ["ev-1.1"]}
    lead = ScriptedModel([respond(*[call("task", agent=f"w{i}", brief="go") for i in range(n)]),
                          respond(call("submit_diagnosis", verdict="v", causes=[cause]))])
    backend = DoublesBackend({"lead": lead}, default=worker)
    agents, reg, settings = load_agents([d]), registry(), Settings()
    started = time.perf_counter()
    async with Run(inputs=RunInputs(question="bench"), settings=settings, backend=backend, agents=agents,
                   registry=reg, transcript=tmp / f"run{n}.jsonl") as run:
        await run.investigate()
    result = run.result
    wall = time.perf_counter() - started
    subs = [e for e in result.events if isinstance(e, AgentFinished) and e.agent_id != "lead"]
    assert result.status == "ok" and len(subs) == n and all(e.status == "ok" for e in subs)
    slowest = max(e.duration_s for e in subs)
    overhead_ms = statistics.mean((e.duration_s - e.turns * MODEL_SLEEP_S) / e.turns for e in subs) * 1000
    lines = sum(1 for _ in open(tmp / f"run{n}.jsonl"))
    return {"n": n, "wall": wall, "slowest": slowest, "ratio": wall / slowest, "overhead_ms": overhead_ms,
            "events": lines - 1}


async def main() -> int:
    targets = {3: 1.05, 50: 1.2}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 3, 10, 50):
            rows.append(await one(n, Path(tmp)))
    print(f"{'N':>4} {'events':>7} {'wall s':>8} {'slowest s':>10} {'wall/slowest':>13} {'overhead ms/turn':>17}  target")
    ok = True
    for r in rows:
        target = targets.get(r["n"])
        verdict = "" if target is None else (f"<= {target}  " + ("met" if r["ratio"] <= target else "MISSED"))
        ok &= target is None or r["ratio"] <= target
        print(f"{r['n']:>4} {r['events']:>7} {r['wall']:>8.3f} {r['slowest']:>10.3f} {r['ratio']:>13.3f} "
              f"{r['overhead_ms']:>17.2f}  {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main))
