"""Agent limits: the turn cap and token budgets end an agent after one "report what you have" turn."""

from __future__ import annotations

from orchestrator.events import AgentFinished, ModelCall
from orchestrator.messages import Usage
from orchestrator.models.doubles import DoublesBackend, ScriptedModel, call, respond
from orchestrator.settings import Settings
from support.core import run_lead, write_agents


def busy_then_report(usage_per_turn: int = 0):
    """A subagent that keeps calling tools until forced, then reports; records every request it got."""
    models = {}

    def answer(req):
        u = Usage(input_tokens=usage_per_turn, calls=1)
        if req.final:
            return respond(call("submit_findings", summary=f"forced after {req.turn - 1} turns"), usage=u)
        return respond(call("sleep", seconds=0, label=str(req.turn)), usage=u)

    def make(agent_id):
        models[agent_id] = ScriptedModel([answer] * 50)
        return models[agent_id]

    return make, models


def lead(names):
    cause = {"title": "t", "explanation": "e", "confidence": 0.5, "evidence": ["ev-1.1"]}
    return ScriptedModel([respond(*[call("task", agent=n, brief="go") for n in names]),
                          respond(call("submit_diagnosis", verdict="v", causes=[cause]))])


async def run(tmp_path, agents, backend, settings=None):
    return await run_lead(agents, backend, settings=settings, transcript=tmp_path / "t.jsonl")


async def test_turn_cap_ends_agent_with_turn_limit_after_a_final_report_turn(tmp_path):
    agents = write_agents(tmp_path / "agents", {"chatty": {"max_turns": 4}})
    make, models = busy_then_report()
    result = await run(tmp_path, agents, DoublesBackend({"lead": lead(["chatty"]), "chatty": make}))
    fin = [e for e in result.events if isinstance(e, AgentFinished) and e.agent_id == "chatty-1"][0]
    assert fin.status == "turn_limit"
    assert "turn cap of 4" in fin.error
    assert fin.result["summary"] == "forced after 3 turns"
    reqs = models["chatty-1"].requests
    assert len(reqs) == 4 and reqs[-1].final and reqs[-1].tool_choice == "submit_findings"
    assert "LIMIT: turn cap of 4 reached" in reqs[-1].messages[-1].content[-1].text
    final_calls = [e for e in result.events if isinstance(e, ModelCall) and e.agent_id == "chatty-1" and e.final]
    assert len(final_calls) == 1


async def test_token_budget_ends_agent_with_budget_status_after_a_final_report_turn(tmp_path):
    agents = write_agents(tmp_path / "agents", {"hungry": {"max_tokens_budget": 3500, "max_turns": 40}})
    make, models = busy_then_report(usage_per_turn=1000)
    result = await run(tmp_path, agents, DoublesBackend({"lead": lead(["hungry"]), "hungry": make}))
    fin = [e for e in result.events if isinstance(e, AgentFinished) and e.agent_id == "hungry-1"][0]
    assert fin.status == "budget"
    assert "token budget of 3500" in fin.error
    # two turns used 2000 tokens; a third and the report turn after it would exceed 3500, so the third is the report
    assert len(models["hungry-1"].requests) == 3 and models["hungry-1"].requests[-1].final
    assert fin.usage.input_tokens == 3000 <= 3500, "the report turn fits inside the budget"
    assert result.diagnosis.usage.total.input_tokens == 3000


async def test_run_wide_token_budget_stops_every_agent(tmp_path):
    agents = write_agents(tmp_path / "agents", {"a": {"max_turns": 40}, "b": {"max_turns": 40}})
    make, models = busy_then_report(usage_per_turn=1000)
    settings = Settings(run_budget_tokens=5000)
    result = await run(tmp_path, agents, DoublesBackend({"lead": lead(["a", "b"]), "a": make, "b": make}), settings)
    statuses = {e.agent_id: e.status for e in result.events if isinstance(e, AgentFinished)}
    assert statuses["a-1"] == "budget" and statuses["b-2"] == "budget"
    assert "run token budget of 5000" in [e for e in result.events if isinstance(e, AgentFinished)][0].error
    assert sum(len(m.requests) for m in models.values()) < 12


async def test_agent_ending_with_text_returns_it_as_summary(tmp_path):
    agents = write_agents(tmp_path / "agents", {"terse": {}})
    backend = DoublesBackend({"lead": lead(["terse"]), "terse": lambda aid: ScriptedModel(["nothing to see"])})
    result = await run(tmp_path, agents, backend)
    fin = [e for e in result.events if isinstance(e, AgentFinished) and e.agent_id == "terse-1"][0]
    assert fin.status == "ok" and fin.result["summary"] == "nothing to see"


async def test_a_paused_turn_is_sent_back_to_continue_not_taken_as_the_answer(tmp_path):
    agents = write_agents(tmp_path / "agents", {"searcher": {}})
    paused = respond(stop_reason="pause_turn")
    paused.content = []
    model = ScriptedModel([paused, respond(call("submit_findings", summary="after the pause"))])
    result = await run(tmp_path, agents, DoublesBackend({"lead": lead(["searcher"]), "searcher": model}))
    fin = [e for e in result.events if isinstance(e, AgentFinished) and e.agent_id == "searcher-1"][0]
    assert fin.status == "ok" and fin.result["summary"] == "after the pause"
    assert len(model.requests) == 2 and model.requests[1].messages[-1].role == "assistant"
