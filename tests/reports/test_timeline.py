"""The timeline of synthetic transcripts: per-agent spans, statuses, overlap, usage totals, rendering."""

from __future__ import annotations

import json
import io

from rich.console import Console

from orchestrator.render.timeline import UNFINISHED, Timeline, build_timeline, gantt_bar, render_timeline
from reports.synth import fanout_run, read_jsonl, write_jsonl


def render(tl: Timeline, width: int = 100) -> str:
    buf = io.StringIO()
    render_timeline(tl, Console(file=buf, width=width, force_terminal=False, color_system=None))
    return buf.getvalue()


def test_concurrent_subagents_overlap_each_other_and_the_lead():
    tl = build_timeline(fanout_run(n_sub=3))
    assert [a.agent_id for a in tl.agents] == ["lead", "sub1-1", "sub2-2", "sub3-3"]
    assert tl.max_concurrency == 4
    assert set(tl.peak_agents) == {"lead", "sub1-1", "sub2-2", "sub3-3"}
    assert set(tl.agent("sub2-2").overlaps) == {"lead", "sub1-1", "sub3-3"}


def test_sequential_subagents_do_not_overlap_each_other():
    tl = build_timeline(fanout_run(n_sub=3, sequential=True))
    assert tl.max_concurrency == 2  # the lead and one subagent at a time
    assert tl.agent("sub1-1").overlaps == ["lead"]
    assert tl.agent("sub2-2").overlaps == ["lead"]


def test_agent_spans_carry_parent_depth_turns_tools_and_times():
    tl = build_timeline(fanout_run(n_sub=2, tools=3))
    sub = tl.agent("sub1-1")
    assert (sub.parent_id, sub.depth, sub.name, sub.status) == ("lead", 1, "sub1", "ok")
    assert sub.start_s == 1.0 and sub.end_s == 10.0 and sub.duration_s == 9.0
    assert sub.turns == 4 and sub.model_calls == 4
    assert [t.tool for t in sub.tool_calls] == ["shell"] * 3
    assert all(t.finished and t.duration_s > 0 and t.evidence_id.startswith("ev-2.") for t in sub.tool_calls)
    assert tl.agent("lead").depth == 0


def test_failed_statuses_and_tool_errors_are_reported_per_agent():
    events = fanout_run(n_sub=2, statuses={0: "timeout"})
    # make one tool result an error
    for ev in events:
        if ev.type == "tool_result" and ev.agent_id == "sub2-2" and ev.call_id == "c1":
            ev.is_error = True
    tl = build_timeline(events)
    assert tl.agent("sub1-1").status == "timeout"
    assert "timeout" in tl.agent("sub1-1").error
    assert tl.agent("sub2-2").tool_errors == 1
    assert tl.tool_errors == 1 and tl.tool_calls == 4


def test_usage_totals_add_up_per_agent_and_for_the_run():
    tl = build_timeline(fanout_run(n_sub=3, tools=2))
    sub = tl.agent("sub1-1")
    assert (sub.usage.input_tokens, sub.usage.output_tokens, sub.usage.calls) == (2500, 250, 3)
    assert abs(sub.usage.cost_usd - 0.025) < 1e-9
    lead = tl.agent("lead")
    assert (lead.usage.input_tokens, lead.usage.calls) == (5000, 2)
    assert tl.usage.input_tokens == 5000 + 3 * 2500
    assert tl.usage.calls == 2 + 3 * 3
    assert tl.model_calls == 11
    assert tl.status == "ok"


def test_interrupted_run_marks_agents_unfinished_and_sums_usage_from_model_calls():
    tl = build_timeline(fanout_run(n_sub=2, tools=2, interrupted=True))
    assert tl.status == UNFINISHED
    assert {a.status for a in tl.agents} == {UNFINISHED}
    sub = tl.agent("sub1-1")
    assert sub.usage.input_tokens == 2500 and sub.usage.calls == 3
    # an unfinished agent runs until the last recorded event
    assert sub.end_s == tl.duration_s


def test_timeline_json_round_trips():
    tl = build_timeline(fanout_run(n_sub=2))
    doc = json.loads(tl.model_dump_json())
    assert doc["max_concurrency"] == 3
    assert [a["agent_id"] for a in doc["agents"]] == ["lead", "sub1-1", "sub2-2"]
    assert Timeline.model_validate_json(tl.model_dump_json()) == tl


def test_timeline_built_from_a_transcript_file(tmp_path):
    path = write_jsonl(tmp_path / "run.jsonl", fanout_run(n_sub=2))
    tl = build_timeline(read_jsonl(path))
    assert tl.run_id == "run-synth-0001" and len(tl.agents) == 3


def test_render_fits_100_columns_with_one_gantt_row_per_agent():
    tl = build_timeline(fanout_run(n_sub=3, statuses={2: "error"}))
    out = render(tl, 100)
    lines = out.splitlines()
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    assert "\x1b[" not in out  # plain when not a terminal
    rows = [line for line in lines if "█" in line]
    assert len(rows) == 4
    assert any("sub3" in r and "error" in r for r in rows)
    assert "peak 4 concurrent" in out
    assert "why is FP8 slow at small batch?" in out


def test_gantt_bar_places_the_span_within_the_width():
    assert gantt_bar(0, 10, 10, 10) == "█" * 10
    assert gantt_bar(5, 10, 10, 10) == "·" * 5 + "█" * 5
    assert gantt_bar(0, 0, 10, 10) == "█" + "·" * 9  # a zero-length span still shows
    assert len(gantt_bar(3, 4, 7, 23)) == 23


def test_gantt_bar_of_a_hostile_span_stays_within_the_width():
    """A recorded event long before the run's start (a hostile transcript's timestamp) gave a span from a huge negative
    cell: `"█" * (b - a)` asked for terabytes (MemoryError from a 25 kB transcript); NaN raised in int()."""
    for start, end, total in ((-1e12, 5.0, 10.0), (float("nan"), 5.0, 10.0), (0.0, float("inf"), 10.0),
                              (2.0, 3.0, float("nan")), (5.0, -1e300, 10.0)):
        bar = gantt_bar(start, end, total, 20)
        assert len(bar) == 20 and "█" in bar, (start, end, total, bar)


def test_empty_transcript_gives_an_empty_timeline_that_still_renders():
    tl = build_timeline([])
    assert tl.agents == [] and tl.max_concurrency == 0 and tl.status == UNFINISHED
    assert "0 agents" in render(tl)


def test_agents_whose_start_was_not_recorded_still_appear_with_their_tools():
    events = [e for e in fanout_run(n_sub=2) if not (e.type == "agent_started" and e.agent_id == "sub2-2")]
    events = [e for e in events if not (e.type == "tool_call" and e.agent_id == "sub2-2" and e.call_id == "c0")]
    tl = build_timeline(events)
    sub = tl.agent("sub2-2")
    assert sub is not None and sub.status == "ok" and len(sub.tool_calls) == 2
    assert sub.depth == 0  # its parent is unknown without the start event
    assert all(t.finished for t in sub.tool_calls)


def test_nested_subagents_are_listed_under_their_parent():
    from orchestrator.events import AgentStarted
    from reports.synth import Clock, agent_run

    c = Clock()
    c.add(AgentStarted, 0.0, agent_id="lead", name="lead", model="m")
    agent_run(c, "a-1", "lead", "a", 1.0, 9.0)
    agent_run(c, "b-3", "a-1", "b", 2.0, 5.0, ordinal=3)
    agent_run(c, "c-4", "lead", "c", 1.5, 4.0, ordinal=4)
    tl = build_timeline(sorted(c.events, key=lambda e: e.ts))
    assert [(a.agent_id, a.depth) for a in tl.agents] == [
        ("lead", 0), ("a-1", 1), ("b-3", 2), ("c-4", 1)]
    assert "\n    b-3 " in render(tl)
