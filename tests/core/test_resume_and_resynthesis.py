"""Resume an interrupted run re-using finished subagents; re-synthesize a recorded run with another backend."""

from __future__ import annotations

from datetime import datetime, timezone

import anyio

from orchestrator.api import replay, resume
from orchestrator.events import AgentFinished, AgentStarted, ModelCall, Notice, RunFinished
from orchestrator.models.doubles import DoublesBackend, ScriptedModel, call, respond
from orchestrator.transcript import read_transcript
from support.core import core_registry, run_lead, write_agents

CAUSE = {"title": "t", "explanation": "e", "confidence": 0.5, "evidence": ["ev-1.1"]}


def lead():
    return ScriptedModel([respond(*[call("task", agent=n, brief=f"do {n}") for n in ("quick", "slow")]),
                          respond(call("submit_diagnosis", verdict="resumed verdict", causes=[CAUSE]))])


def worker(seconds):
    return lambda aid: ScriptedModel([respond(call("sleep", seconds=seconds, label=aid)),
                                      respond(call("submit_findings", summary=f"{aid} done"))])


def refuse(aid):
    raise AssertionError(f"{aid} finished before the interruption and must not run again")


async def interrupted_run(tmp_path):
    agents = write_agents(tmp_path / "agents", {"quick": {}, "slow": {}})
    path = tmp_path / "interrupted.jsonl"
    with anyio.move_on_after(1.0):
        await run_lead(agents, DoublesBackend({"lead": lead(), "quick": worker(0.05), "slow": worker(60)}),
                       transcript=path)
    return path


async def test_resume_reuses_finished_subagents_and_reruns_only_the_rest(tmp_path):
    path = await interrupted_run(tmp_path)
    old = read_transcript(path)
    assert old.of_type(RunFinished)[0].status == "cancelled"
    assert {e.agent_id: e.status for e in old.of_type(AgentFinished)}["quick-1"] == "ok"
    resumed_at = datetime.now(timezone.utc)

    result = await resume(path, question="q", agents_dirs=[tmp_path / "agents"],
                          backend=DoublesBackend({"lead": lead(), "quick": refuse, "slow": worker(0.01)}),
                          registry=core_registry(), transcript=tmp_path / "resumed.jsonl")
    assert result.status == "ok" and result.diagnosis.verdict == "resumed verdict"
    new = read_transcript(tmp_path / "resumed.jsonl")
    assert any(isinstance(e, Notice) and "reusing finished subagent quick-1" in e.message for e in new.events)
    quick_calls = [e for e in new.of_type(ModelCall) if e.agent_id == "quick-1"]
    assert quick_calls and all(e.ts < resumed_at for e in quick_calls), "quick-1's model calls are the recorded ones"
    slow_calls = [e for e in new.of_type(ModelCall) if e.agent_id == "slow-2"]
    assert slow_calls and all(e.ts >= resumed_at for e in slow_calls), "slow-2 ran again"
    assert {e.agent_id: e.status for e in new.of_type(AgentFinished)} == {"quick-1": "ok", "slow-2": "ok", "lead": "ok"}
    # the resumed transcript is self-contained: it replays exactly
    again = await replay(tmp_path / "resumed.jsonl", registry=core_registry())
    assert again.status == "ok" and again.diagnosis.verdict == "resumed verdict"


async def test_replay_with_another_backend_keeps_subagents_and_resynthesizes(tmp_path):
    agents = write_agents(tmp_path / "agents", {"quick": {}, "slow": {}})
    path = tmp_path / "full.jsonl"
    first = await run_lead(agents, DoublesBackend({"lead": lead(), "quick": worker(0), "slow": worker(0)}),
                           transcript=path)
    assert first.status == "ok"
    other = {"title": "other", "explanation": "re-synthesized", "confidence": 0.9, "evidence": ["ev-2.1"]}
    new_lead = ScriptedModel([respond(*[call("task", agent=n, brief=f"do {n}") for n in ("quick", "slow")]),
                              respond(call("submit_diagnosis", verdict="a new synthesis", causes=[other]))])
    result = await replay(path, backend=DoublesBackend({"lead": new_lead, "quick": refuse, "slow": refuse}),
                          registry=core_registry(), transcript=tmp_path / "resynth.jsonl")
    assert result.status == "ok" and result.diagnosis.verdict == "a new synthesis"
    assert result.diagnosis.evidence["ev-2.1"].agent == "slow-2"
    new = read_transcript(tmp_path / "resynth.jsonl")
    starts = [e.agent_id for e in new.of_type(AgentStarted)]
    assert starts.count("quick-1") == 1 and starts.count("slow-2") == 1
