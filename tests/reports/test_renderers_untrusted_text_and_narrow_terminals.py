"""Renderers: untrusted text must not restyle or break the terminal/Markdown output,
zero-length agents must not inflate concurrency, narrow terminals must keep the numbers readable."""

from __future__ import annotations

import io
import re

from rich.console import Console

from orchestrator.diagnosis import Number
from orchestrator.render.diagnosis import number_line, render_terminal, to_markdown
from orchestrator.events import AgentFinished, AgentStarted, RunFinished, RunStarted
from orchestrator.render.timeline import build_timeline, render_timeline
from reports.sample import sample_diagnosis
from reports.synth import Clock, _ordered, fanout_run


def _terminal(d, width=100) -> str:
    buf = io.StringIO()
    render_terminal(d, Console(file=buf, width=width, force_terminal=False, color_system=None))
    return buf.getvalue()


def test_asterisks_and_angle_brackets_in_text_survive_the_terminal_rendering():
    # the seed transcript's "B*k/E = 512*8/256" printed as "Bk/E = 5128/256": Markdown ate the asterisks
    d = sample_diagnosis()
    d.causes[0].explanation = "Decode puts ~16 tokens on each expert (B*k/E = 512*8/256); kernel gemm<float, 128>"
    out = " ".join(_terminal(d).split())
    assert "B*k/E = 512*8/256" in out
    assert "gemm<float, 128>" in out


def test_newlines_and_markdown_in_untrusted_text_do_not_make_headings_or_break_lists():
    d = sample_diagnosis()
    d.verdict = "first line\n# not a heading\n- not a list"
    d.gaps[0].why = "ssh said:\n## pwned"
    d.recommendations[0].action = "run `x` [click](http://evil.example) __init__"
    md = to_markdown(d)
    heads = re.findall(r"^#+ (.+)$", md, re.M)
    assert heads == ["Diagnosis: why is FP8 slow at small batch?", "Causes (ranked)", "Numbers", "Recommendations",
                     "Gaps", "Evidence", "Usage"]
    out = " ".join(_terminal(d).split())
    assert "first line # not a heading - not a list" in out
    assert "ssh said: ## pwned" in out
    assert "run `x` [click](http://evil.example) __init__" in out


def test_usage_table_escapes_pipes_in_every_cell():
    d = sample_diagnosis()
    d.usage.agents[0].status = "o|k"
    md = to_markdown(d)
    row = next(line for line in md.splitlines() if line.startswith("| lead"))
    assert len(re.findall(r"(?<!\\)\|", row)) == 7, row


def test_no_percent_of_a_zero_or_negative_peak():
    assert "%" not in number_line(Number(name="p", value=5, unit="W", peak=0, source="x"))
    assert "%" not in number_line(Number(name="p", value=5, unit="W", peak=-10, source="x"))


def test_a_zero_length_agent_does_not_count_as_running_afterwards():
    c = Clock()
    c.add(RunStarted, 0.0, question="q", backend="offline", host="h")
    c.add(AgentStarted, 0.0, agent_id="lead", name="lead", model="m")
    c.add(AgentStarted, 1.0, agent_id="a", parent_id="lead", name="a", model="m")
    c.add(AgentFinished, 1.0, agent_id="a", status="error", turns=0, error="boom")
    c.add(AgentStarted, 5.0, agent_id="b", parent_id="lead", name="b", model="m")
    c.add(AgentFinished, 6.0, agent_id="b", status="ok", turns=1)
    c.add(AgentFinished, 7.0, agent_id="lead", status="ok", turns=1)
    c.add(RunFinished, 7.0, status="ok", duration_s=7.0)
    tl = build_timeline(_ordered(c.events))
    assert tl.max_concurrency == 2
    assert tl.agent("a").overlaps == ["lead"] and tl.agent("b").overlaps == ["lead"]


def _show(tl, width) -> str:
    buf = io.StringIO()
    render_timeline(tl, Console(file=buf, width=width, force_terminal=False, color_system=None))
    return buf.getvalue()


def test_agent_ids_with_rich_markup_are_printed_literally():
    events = fanout_run(n_sub=2)
    for ev in events:
        if getattr(ev, "agent_id", None) == "sub1-1":
            ev.agent_id = "sub[red]x [bold]y-1"
        if getattr(ev, "parent_id", None) == "sub1-1":
            ev.parent_id = "sub[red]x [bold]y-1"
    out = _show(build_timeline(events), 120)
    row = next(line for line in out.splitlines() if "█" in line and "-1" in line)
    assert "sub[red]x [bold]y-1" in row, out


def test_show_at_80_columns_keeps_every_number_whole():
    tl = build_timeline(fanout_run(n_sub=3))
    tl.agents[1].agent_id = "autotune-inspection-12"  # a real-length label
    out = _show(tl, 80)
    assert "…" not in out, out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "$0.025" in out and "9.00s" in out and "status" in out and "█" in out


def test_html_numbers_show_no_percent_or_bar_of_a_negative_peak():
    from orchestrator.render.html import render_html

    d = sample_diagnosis()
    d.numbers = [Number(name="odd", value=5, unit="W", peak=-10, source="x")]
    html = render_html(d)
    assert "-50.0 %" not in html and 'class="numbar"' not in html
