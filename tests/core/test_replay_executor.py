"""Replay is an executor handed to `Run`; a backend makes model turns and nothing else, and a model receives the run
through a narrow read-only view. The loop knows no tool by name beyond the submit tools it ends a turn with."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import orchestrator.loop as loop_module
from orchestrator.context import RunView
from orchestrator.models.doubles import DoublesBackend, ScriptedModel, call, respond
from orchestrator.models.offline import OfflineBackend
from orchestrator.models.replay import ORCHESTRATION, ReplayBackend, ReplayExecutor
from orchestrator.resume import agents_from, inputs_from, settings_from
from orchestrator.run import Run
from orchestrator.settings import Settings
from orchestrator.tools.registry import default_registry
from orchestrator.transcript import read_transcript
from support.core import core_registry, run_lead, write_agents


@pytest.fixture
async def recorded(tmp_path):
    agents = write_agents(tmp_path / "agents", {"a": {}, "b": {}})

    def sub(agent_id):
        return ScriptedModel([respond(call("sleep", seconds=0, label=agent_id), call("sleep", seconds=0, label="2")),
                              respond(call("submit_findings", summary=f"{agent_id} done", findings=[]))])

    cause = {"title": "t", "explanation": "e", "confidence": 0.5, "evidence": ["ev-1.1"]}
    lead = ScriptedModel([respond(*[call("task", agent=n, brief=f"brief {n}") for n in "ab"]),
                          respond(call("submit_diagnosis", verdict="recorded verdict", causes=[cause]))])
    path = tmp_path / "run.jsonl"
    result = await run_lead(agents, DoublesBackend({"lead": lead}, default=sub), transcript=path)
    assert result.status == "ok"
    return path, result


class CountingExecutor(ReplayExecutor):
    def __init__(self, transcript):
        super().__init__(transcript)
        self.recorded: list[str] = []
        self.live: list[str] = []

    async def answer(self, agent_id, use, live):
        (self.live if use.name in ORCHESTRATION else self.recorded).append(f"{agent_id}:{use.name}")
        return await super().answer(agent_id, use, live)


async def _replay(path: Path, executor) -> tuple:
    old = read_transcript(path)
    async with Run(inputs=inputs_from(old), settings=settings_from(old, Settings()), backend=ReplayBackend(old),
                   agents=agents_from(old), registry=core_registry(), transcript=False,
                   executor=executor) as run:
        await run.investigate()
    return run.result


async def test_an_exact_replay_answers_every_tool_call_through_the_executor_handed_to_run(recorded):
    path, original = recorded
    executor = CountingExecutor(read_transcript(path))
    again = await _replay(path, executor)
    assert again.status == "ok", again.error
    assert again.diagnosis.model_dump(exclude={"usage"}) == original.diagnosis.model_dump(exclude={"usage"})
    # the four sleeps came from the recording; the tasks and the submits ran
    assert sorted(executor.recorded) == ["a-1:sleep", "a-1:sleep", "b-2:sleep", "b-2:sleep"]
    assert sorted(executor.live) == ["a-1:submit_findings", "b-2:submit_findings", "lead:submit_diagnosis",
                                     "lead:task", "lead:task"]


async def test_a_recorded_result_the_executor_changes_is_what_the_replayed_agent_sees(recorded):
    """The executor, not the backend, answers: a result it hands back differently reaches the model's conversation
    (and the replay names the divergence)."""
    path, _ = recorded
    executor = ReplayExecutor(read_transcript(path))
    key = next(k for k, r in executor.results.items() if r.tool == "sleep" and k[0] == "b-2")
    executor.results[key] = executor.results[key].model_copy(update={"content": "answered by the executor"})
    again = await _replay(path, executor)
    assert again.status == "error"
    assert again.error.startswith("replay diverged: agent b-2") and "answered by the executor" in again.error


async def test_a_replay_backend_makes_model_turns_only(recorded):
    path, _ = recorded
    backend = ReplayBackend(read_transcript(path))
    assert not hasattr(backend, "tool_replay")
    # without the replay executor the run has nothing to answer recorded tool calls from: a replay that does not
    # act refuses the host-reaching ones instead of inventing them
    assert {n for n in vars(backend) if not n.startswith("_")} <= {"transcript", "records", "drift"}


async def test_a_model_receives_a_read_only_view_of_the_run_not_the_run(tmp_path):
    seen: list = []

    class Capturing(OfflineBackend):
        def model_for(self, defn, agent_id, run):
            seen.append(run)
            return super().model_for(defn, agent_id, run)

    agents = write_agents(tmp_path / "agents", {}, lead_tools=("sleep",))
    result = await run_lead(agents, Capturing(), transcript=False)
    assert result.status == "ok", result.error
    assert seen and all(isinstance(v, RunView) for v in seen)
    view = seen[0]
    for reach in ("settings", "recorder", "registry", "hosts", "host", "backend", "results_by_id", "reuse"):
        assert not hasattr(view, reach), reach
    assert view.question == "q" and view.inputs.question == "q"
    assert [r.agent_id for r in view.results()] == ["lead"]
    with pytest.raises(AttributeError):
        view.settings = Settings()  # type: ignore[attr-defined]


def test_the_loop_names_no_tool_but_the_submit_tools():
    """Which tools run in a replay is the replay executor's knowledge (models/replay.py), not the loop's."""
    tree = ast.parse(Path(loop_module.__file__).read_text())
    literals = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    tools = set(default_registry().names())
    assert "task" in tools and "sleep" not in literals
    assert literals & tools <= {"submit_findings", "submit_diagnosis"}
