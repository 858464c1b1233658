"""Limits that overshot, a parent's deadline that cut off its subagents' reports,
interrupts that left a transcript without its last event, and a bad setting that said nothing useful."""

from __future__ import annotations

import json

import anyio
import pytest

from orchestrator.events import AgentFinished, ModelCall, RunFinished, ToolCall, ToolResult
from orchestrator.messages import Usage
from orchestrator.models.doubles import DoublesBackend, ScriptedModel, call, respond
from orchestrator.settings import Settings, load_settings
from orchestrator.tools.base import Tool, ToolOutput
from orchestrator.transcript import read_transcript
from support.core import SleepInput, core_registry, run_lead, write_agents


def lead(names, cite="ev-1.1"):
    cause = {"title": "t", "explanation": "e", "confidence": 0.5, "evidence": [cite]}
    return ScriptedModel([respond(*[call("task", agent=n, brief="go") for n in names]),
                          respond(call("submit_diagnosis", verdict="v", causes=[cause]))])


async def run(tmp_path, agents, backend, settings=None, registry=None):
    return await run_lead(agents, backend, settings=settings, registry=registry, transcript=tmp_path / "t.jsonl")


def busy(usage_per_turn):
    def answer(req):
        u = Usage(input_tokens=usage_per_turn, calls=1)
        if req.final:
            return respond(call("submit_findings", summary="forced"), usage=u)
        return respond(call("sleep", seconds=0), usage=u)
    return lambda aid: ScriptedModel([answer] * 50)


async def test_per_agent_budget_is_not_overshot_by_the_final_report_turn(tmp_path):
    agents = write_agents(tmp_path / "agents", {"hungry": {"max_tokens_budget": 2500, "max_turns": 40}})
    result = await run(tmp_path, agents, DoublesBackend({"lead": lead(["hungry"]), "hungry": busy(1000)}))
    fin = [e for e in result.events if isinstance(e, AgentFinished) and e.agent_id == "hungry-1"][0]
    assert fin.status == "budget" and fin.result["summary"] == "forced"
    assert fin.usage.total_tokens <= 2500


async def test_run_wide_budget_is_not_overshot_by_the_final_report_turn(tmp_path):
    agents = write_agents(tmp_path / "agents", {"a": {"max_turns": 40}})
    settings = Settings(run_budget_tokens=3500)
    result = await run(tmp_path, agents, DoublesBackend({"lead": lead(["a"]), "a": busy(1000)}), settings)
    fin = [e for e in result.events if isinstance(e, AgentFinished) and e.agent_id == "a-1"][0]
    assert fin.status == "budget" and fin.result["summary"] == "forced"
    assert result.diagnosis.usage.total.total_tokens <= 3500


async def test_run_wide_cost_budget_is_not_overshot_by_the_final_report_turn(tmp_path):
    agents = write_agents(tmp_path / "agents", {"a": {"max_turns": 40}})

    def answer(req):
        u = Usage(input_tokens=10, cost_usd=1.0, calls=1)
        if req.final:
            return respond(call("submit_findings", summary="forced"), usage=u)
        return respond(call("sleep", seconds=0), usage=u)

    settings = Settings(run_budget_usd=3.5)
    backend = DoublesBackend({"lead": lead(["a"]), "a": lambda aid: ScriptedModel([answer] * 50)})
    result = await run(tmp_path, agents, backend, settings)
    fin = [e for e in result.events if isinstance(e, AgentFinished) and e.agent_id == "a-1"][0]
    assert fin.status == "budget" and fin.result["summary"] == "forced"
    assert result.diagnosis.usage.total.cost_usd <= 3.5


async def test_a_subagent_reports_before_its_parents_wall_time_runs_out(tmp_path):
    """The lead's deadline comes before the subagent's own: the subagent still gets its report turn."""
    (tmp_path / "agents").mkdir()
    agents = write_agents(tmp_path / "agents", {"slow": {"timeout_s": 60}})
    text = (agents / "lead.md").read_text().replace("role: lead\n", "role: lead\ntimeout_s: 2\n")
    (agents / "lead.md").write_text(text)
    settings = Settings(final_turn_reserve_s=0.3)
    slow = ScriptedModel([respond(call("sleep", seconds=30)), respond(call("submit_findings", summary="partial"))])
    lead_model = ScriptedModel([respond(call("task", agent="slow", brief="go")),
                                respond(call("submit_diagnosis", verdict="v", causes=[]))])
    result = await run(tmp_path, agents, DoublesBackend({"lead": lead_model, "slow": slow}), settings)
    fin = {e.agent_id: e for e in result.events if isinstance(e, AgentFinished)}
    assert fin["slow-1"].status == "timeout"
    assert fin["slow-1"].result["summary"] == "partial", "the subagent's report turn ran"
    task_result = [e for e in result.events if isinstance(e, ToolResult) and e.tool == "task"][0]
    assert "partial" in task_result.content, "the lead got the subagent's report, not a cancellation"


async def test_an_agent_that_already_submitted_gets_no_second_report_turn_on_timeout(tmp_path):
    agents = write_agents(tmp_path / "agents", {"quick": {"timeout_s": 0.6}})
    settings = Settings(final_turn_reserve_s=0.1)
    model = ScriptedModel([respond(call("submit_findings", summary="early"), call("sleep", seconds=30))])
    result = await run(tmp_path, agents, DoublesBackend({"lead": lead(["quick"]), "quick": model}), settings)
    fin = [e for e in result.events if isinstance(e, AgentFinished) and e.agent_id == "quick-1"][0]
    assert fin.result["summary"] == "early" and fin.status == "timeout"
    assert len(model.requests) == 1
    assert not [e for e in result.events if isinstance(e, ModelCall) and e.agent_id == "quick-1" and e.final]


class InterruptTool(Tool):
    name = "boom"
    description = "Raises KeyboardInterrupt (a second Ctrl-C inside a tool)."
    Input = SleepInput

    async def run(self, args, ctx) -> ToolOutput:
        await anyio.sleep(0.05)
        raise KeyboardInterrupt


def test_keyboard_interrupt_inside_a_subagents_tool_still_ends_the_transcript_with_run_finished(tmp_path):
    agents = write_agents(tmp_path / "agents", {"a": {}, "b": {}})
    reg = core_registry()
    reg.add(InterruptTool())
    backend = DoublesBackend({"lead": lead(["a", "b"]), "a": lambda aid: ScriptedModel([respond(call("boom"))]),
                              "b": lambda aid: ScriptedModel([respond(call("sleep", seconds=30))])})

    async def main():
        await run(tmp_path, agents, backend, registry=reg)

    with pytest.raises(KeyboardInterrupt):
        anyio.run(main)
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    assert last["type"] == "run_finished" and last["status"] == "cancelled"
    t = read_transcript(tmp_path / "t.jsonl")
    assert isinstance(t.events[-1], RunFinished)
    assert {e.agent_id for e in t.of_type(AgentFinished)} == {"lead", "a-1", "b-2"}
    calls = [(e.agent_id, e.call_id) for e in t.of_type(ToolCall)]
    results = [(e.agent_id, e.call_id) for e in t.of_type(ToolResult)]
    assert sorted(calls) == sorted(results), "every call has exactly one result"


@pytest.mark.parametrize("source", ["file", "env"])
def test_a_bad_setting_is_one_line_naming_the_setting(tmp_path, monkeypatch, source):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.delenv("INVESTIGATE_MAX_TURNS", raising=False)
    if source == "file":
        (tmp_path / "investigate").mkdir()
        (tmp_path / "investigate" / "config.toml").write_text('max_turns = "many"\n')
    else:
        monkeypatch.setenv("INVESTIGATE_MAX_TURNS", "many")
    with pytest.raises(ValueError) as info:
        load_settings()
    msg = str(info.value)
    assert "\n" not in msg and "max_turns" in msg and "INVESTIGATE_MAX_TURNS" in msg and "config.toml" in msg


def test_unknown_key_in_the_config_file_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "investigate").mkdir()
    (tmp_path / "investigate" / "config.toml").write_text("max_turnz = 3\n")
    with pytest.raises(ValueError, match="max_turnz"):
        load_settings()


def test_settings_precedence_file_then_env_then_flags(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    (tmp_path / "investigate").mkdir()
    (tmp_path / "investigate" / "config.toml").write_text("max_turns = 3\nmax_tokens = 100\n")
    monkeypatch.setenv("INVESTIGATE_MAX_TURNS", "5")
    s = load_settings()
    assert (s.max_turns, s.max_tokens) == (5, 100)
    assert load_settings(max_turns=9).max_turns == 9
