"""Fan-out: concurrent subagents, failures that still answer, cancellation that still records."""

from __future__ import annotations

import json
import time

import anyio

from orchestrator.events import AgentFinished, RunFinished, ToolCall, ToolResult
from orchestrator.models.doubles import DoublesBackend, ScriptedModel, call, respond
from orchestrator.settings import Settings
from orchestrator.transcript import read_transcript
from support.core import run_lead, write_agents


def lead_dispatching(names, cite="ev-1.1"):
    """A lead that starts every named subagent in one message, then submits a diagnosis citing `cite`."""

    def submit(req):
        cause = {"title": "t", "explanation": "e", "confidence": 0.5, "evidence": [cite]}
        return respond(call("submit_diagnosis", verdict="done", causes=[cause]))

    return ScriptedModel([respond(*[call("task", agent=n, brief=f"do {n}") for n in names]), submit])


def sleeper(seconds):
    def make(agent_id):
        return ScriptedModel([respond(call("sleep", seconds=seconds, label=agent_id)),
                              respond(call("submit_findings", summary=f"{agent_id} done"))])
    return make


async def run(tmp_path, agents, backend, settings=None):
    return await run_lead(agents, backend, settings=settings, transcript=tmp_path / "t.jsonl",
                          question="why is it slow")


async def test_three_subagents_run_concurrently_taking_about_the_slowest(tmp_path):
    agents = write_agents(tmp_path / "agents", {"fast": {}, "mid": {}, "slow": {}})
    backend = DoublesBackend({"lead": lead_dispatching(["fast", "mid", "slow"]),
                              "fast": sleeper(0.1), "mid": sleeper(0.3), "slow": sleeper(0.6)})
    started = time.monotonic()
    result = await run(tmp_path, agents, backend)
    took = time.monotonic() - started
    assert result.status == "ok"
    assert 0.6 <= took < 0.9, f"run took {took:.2f}s; sequential would be 1.0s, concurrent about 0.6s"
    finished = {e.agent_id: e for e in result.events if isinstance(e, AgentFinished)}
    assert {finished[a].status for a in ("fast-1", "mid-2", "slow-3")} == {"ok"}


async def test_failed_and_timed_out_subagents_still_answer_and_become_gaps(tmp_path):
    agents = write_agents(tmp_path / "agents", {"good": {}, "raiser": {}, "sloth": {"timeout_s": 0.5}})
    settings = Settings(final_turn_reserve_s=0.1)
    backend = DoublesBackend({
        "lead": lead_dispatching(["good", "raiser", "sloth"]),
        "good": sleeper(0.05),
        "raiser": lambda aid: ScriptedModel([RuntimeError("model exploded")]),
        # the sloth's tool call outlives its wall time; its final turn then reports
        "sloth": lambda aid: ScriptedModel([respond(call("sleep", seconds=30)),
                                            respond(call("submit_findings", summary="partial"))]),
    })
    result = await run(tmp_path, agents, backend, settings)
    assert result.status == "ok" and result.diagnosis is not None
    gaps = {g.what: g.why for g in result.diagnosis.gaps}
    assert gaps.keys() == {"raiser-2", "sloth-3"}
    assert gaps["raiser-2"].startswith("error") and "model exploded" in gaps["raiser-2"]
    assert gaps["sloth-3"].startswith("timeout")
    t = read_transcript(tmp_path / "t.jsonl")
    calls = {(e.agent_id, e.call_id) for e in t.of_type(ToolCall)}
    results = {(e.agent_id, e.call_id) for e in t.of_type(ToolResult)}
    assert calls == results, "every tool call has exactly one recorded result"
    sloth = [e for e in t.of_type(AgentFinished) if e.agent_id == "sloth-3"][0]
    assert sloth.result["summary"] == "partial", "the timed-out agent reported what it had"


async def test_cancelling_the_run_stops_every_subagent_and_writes_a_cancelled_final_event(tmp_path):
    agents = write_agents(tmp_path / "agents", {"a": {}, "b": {}, "c": {}})
    backend = DoublesBackend({"lead": lead_dispatching(["a", "b", "c"]), "a": sleeper(30), "b": sleeper(30),
                              "c": sleeper(30)})
    started = time.monotonic()
    with anyio.move_on_after(0.5):
        await run(tmp_path, agents, backend)
    assert time.monotonic() - started < 2.0
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    assert last["type"] == "run_finished" and last["status"] == "cancelled"
    t = read_transcript(tmp_path / "t.jsonl")  # every line valid
    statuses = {e.agent_id: e.status for e in t.of_type(AgentFinished)}
    assert statuses == {"a-1": "cancelled", "b-2": "cancelled", "c-3": "cancelled", "lead": "cancelled"}
    assert {(e.agent_id, e.call_id) for e in t.of_type(ToolCall)} == {(e.agent_id, e.call_id) for e in t.of_type(ToolResult)}
    assert isinstance(t.events[-1], RunFinished)


async def test_unknown_subagent_is_an_error_result_not_a_crash(tmp_path):
    agents = write_agents(tmp_path / "agents", {"real": {}})
    backend = DoublesBackend({"lead": lead_dispatching(["real", "imaginary"]), "real": sleeper(0)})
    result = await run(tmp_path, agents, backend)
    assert result.status == "ok"
    errors = [e for e in result.events if isinstance(e, ToolResult) and e.is_error]
    assert len(errors) == 1 and "no subagent named 'imaginary'" in errors[0].content


async def test_diagnosis_citing_unknown_evidence_is_refused_then_fixed(tmp_path):
    agents = write_agents(tmp_path / "agents", {"a": {}})
    bad = {"title": "t", "explanation": "e", "confidence": 0.5, "evidence": ["ev-9.9"]}
    good = {"title": "t", "explanation": "e", "confidence": 0.5, "evidence": ["ev-1.1"]}
    lead = ScriptedModel([respond(call("task", agent="a", brief="go")),
                          respond(call("submit_diagnosis", verdict="v", causes=[bad])),
                          respond(call("submit_diagnosis", verdict="v", causes=[good]))])
    result = await run(tmp_path, agents, DoublesBackend({"lead": lead, "a": sleeper(0)}))
    assert result.status == "ok"
    assert result.diagnosis.causes[0].evidence == ["ev-1.1"]
    refused = [e for e in result.events if isinstance(e, ToolResult) and e.tool == "submit_diagnosis" and e.is_error]
    assert "ev-9.9" in refused[0].content
    assert set(result.diagnosis.evidence) == {"ev-1.1"}


async def test_the_task_tool_names_the_loaded_subagents_and_refuses_others(tmp_path):
    from orchestrator.events import ModelCall

    agents = write_agents(tmp_path / "agents", {"alpha": {}, "beta": {}})
    backend = DoublesBackend({"lead": lead_dispatching(["alpha", "nobody"], cite="ev-0.1"),
                              "alpha": sleeper(0.0)})
    result = await run(tmp_path, agents, backend)
    lead_call = next(e for e in result.events if isinstance(e, ModelCall) and e.agent_id == "lead")
    task = next(t for t in lead_call.tools if t.name == "task")
    enum = task.input_schema["properties"]["agent"]["enum"]
    assert {"alpha", "beta"} <= set(enum) and "lead" not in enum and enum == sorted(enum)  # the lead is no subagent
    refused = next(e for e in result.events if isinstance(e, ToolResult) and e.tool == "task" and e.is_error)
    assert "no subagent named 'nobody'; available: alpha, " in refused.content
