"""Item 8 of issue 15: `show` reads a transcript one line at a time (bounded memory; bench/show.py --big-gb 1)."""

from __future__ import annotations

from pathlib import Path

import orchestrator.transcript as tr
from orchestrator.transcript import iter_transcript, read_transcript

SEED = Path(__file__).resolve().parents[2] / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl"


def test_streamed_events_equal_the_full_reader():
    warnings: list[str] = []
    header, events = iter_transcript(SEED, warnings)
    assert not isinstance(events, list)  # lazy
    full = read_transcript(SEED)
    assert header == full.header and list(events) == full.events and warnings == []


def test_damaged_cut_off_and_overlong_lines_are_named_and_skipped(tmp_path, monkeypatch):
    lines = SEED.read_text().splitlines()
    limit = max(len(line.encode()) for line in lines) + 2
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([lines[0], lines[1], "{not json", "x" * (3 * limit), *lines[2:]]) + "\n" + lines[3][:50])
    monkeypatch.setattr(tr, "MAX_LINE_BYTES", limit)
    warnings: list[str] = []
    _, events = iter_transcript(path, warnings)
    got = list(events)
    assert len(got) == len(lines) - 1
    assert any("line 3" in w and "not valid JSON" in w for w in warnings)
    assert any("line 4" in w and "longer than" in w for w in warnings)
    assert any("cut off" in w for w in warnings)


def test_tool_calls_past_the_cap_are_counted_not_kept(monkeypatch):
    import orchestrator.render.timeline as timeline

    events = read_transcript(SEED).events
    full = timeline.build_timeline(events)
    monkeypatch.setattr(timeline, "MAX_TOOL_SPANS", 1)
    capped = timeline.build_timeline(events)
    assert capped.tool_calls == full.tool_calls and capped.tool_errors == full.tool_errors
    assert all(len(a.tool_calls) <= 1 for a in capped.agents)
    assert any(a.omitted_calls for a in capped.agents)
