"""Record a run driven by model doubles, replay it exactly, and detect a tampered transcript."""

from __future__ import annotations

import json

import pytest

from orchestrator.api import replay
from orchestrator.models.doubles import DoublesBackend, ScriptedModel, call, respond
from support.core import core_registry, run_lead, write_agents


@pytest.fixture
async def recorded(tmp_path):
    agents = write_agents(tmp_path / "agents", {"a": {}, "b": {}, "c": {}})

    def sub(agent_id):
        return ScriptedModel([respond(call("sleep", seconds=0.01, label=agent_id), call("sleep", seconds=0, label="2")),
                              respond(call("submit_findings", summary=f"{agent_id} done",
                                           findings=[{"claim": "c", "evidence": ["ev-1.1"]}] if agent_id == "a-1" else []))])

    cause = {"title": "t", "explanation": "e", "confidence": 0.5, "evidence": ["ev-1.1", "ev-2.2"]}
    lead = ScriptedModel([respond(*[call("task", agent=n, brief=f"brief {n}") for n in "abc"]),
                          respond(call("submit_diagnosis", verdict="recorded verdict", causes=[cause]))])
    path = tmp_path / "run.jsonl"
    result = await run_lead(agents, DoublesBackend({"lead": lead}, default=sub), transcript=path)
    assert result.status == "ok"
    return path, result


async def test_exact_replay_yields_the_same_diagnosis(recorded):
    path, original = recorded
    again = await replay(path, registry=core_registry())
    assert again.status == "ok", again.error
    assert again.diagnosis.model_dump(exclude={"usage"}) == original.diagnosis.model_dump(exclude={"usage"})


def tamper(path, out, match, change):
    lines = []
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        if match(obj):
            change(obj)
        lines.append(json.dumps(obj))
    out.write_text("\n".join(lines) + "\n")
    return out


async def test_tampered_tool_result_gives_a_divergence_naming_agent_and_turn(recorded, tmp_path):
    path, _ = recorded
    bad = tamper(path, tmp_path / "bad.jsonl",
                 lambda o: o.get("type") == "tool_result" and o["agent_id"] == "b-2" and o["tool"] == "sleep",
                 lambda o: o.update(content="tampered"))
    result = await replay(bad, registry=core_registry())
    assert result.status == "error"
    assert result.error.startswith("replay diverged: agent b-2 turn 2: message 3 (user) differs")
    assert "tampered" in result.error


async def test_tampered_brief_diverges_at_the_subagent_that_receives_it(recorded, tmp_path):
    path, _ = recorded

    def change(o):
        for block in o["response"]["content"]:
            if block.get("name") == "task" and block["input"]["agent"] == "c":
                block["input"]["brief"] = "a different brief"

    bad = tamper(path, tmp_path / "bad.jsonl", lambda o: o.get("type") == "model_call" and o["agent_id"] == "lead"
                 and o["turn"] == 1, change)
    result = await replay(bad, registry=core_registry())
    assert result.status == "error"
    assert "agent c-3 turn 1" in result.error and "a different brief" in result.error
