"""Issue 23: `show` of a transcript with thousands of concurrent agents stays bounded (it peaked at 24x the file).

Every agent overlapping every other is n^2 pairs; the timeline lists at most MAX_OVERLAPS per agent and counts the
rest exactly, and names the agents at the peak without rebuilding that list at every new maximum.
"""

from __future__ import annotations

import tracemalloc
from datetime import datetime, timedelta, timezone

from orchestrator.events import AgentFinished, AgentStarted, RunFinished
from orchestrator.messages import Usage
from orchestrator.render import timeline
from orchestrator.render.timeline import build_timeline

MAX_OVERLAPS = getattr(timeline, "MAX_OVERLAPS", 16)  # (getattr: the test also runs against the old module)

T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=timezone.utc)


def _events(n: int):
    """A lead and n subagents that all run at the same time (started in order, finished in order)."""
    yield AgentStarted(run_id="r", ts=T0, agent_id="lead", name="lead", model="m")
    for i in range(n):
        yield AgentStarted(run_id="r", ts=T0 + timedelta(microseconds=i + 1), agent_id=f"w-{i}", name="w",
                           parent_id="lead", model="m")
    for i in range(n):
        yield AgentFinished(run_id="r", ts=T0 + timedelta(seconds=10, microseconds=i), agent_id=f"w-{i}", status="ok",
                            turns=1, usage=Usage())
    yield AgentFinished(run_id="r", ts=T0 + timedelta(seconds=20), agent_id="lead", status="ok", turns=1, usage=Usage())
    yield RunFinished(run_id="r", ts=T0 + timedelta(seconds=20), status="ok", usage=Usage())


def test_thousands_of_concurrent_agents_are_laid_out_in_bounded_memory():
    n = 4000
    tracemalloc.start()
    tl = build_timeline(_events(n))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 60_000_000, f"{peak / 1e6:.0f} MB for {n} agents"
    assert tl.max_concurrency == n + 1
    w = tl.agent("w-7")
    assert len(w.overlaps) == MAX_OVERLAPS and len(w.overlaps) + getattr(w, "overlaps_omitted", 0) == n  # the lead and n-1 others
    assert w.overlaps[0] == "lead" and "w-0" in w.overlaps
    assert len(tl.peak_agents) == MAX_OVERLAPS and tl.peak_agents[0] == "lead"


def test_small_runs_keep_every_overlap():
    tl = build_timeline(_events(5))
    assert set(tl.agent("w-2").overlaps) == {"lead", "w-0", "w-1", "w-3", "w-4"}
    assert getattr(tl.agent("w-2"), "overlaps_omitted", 0) == 0 and set(tl.peak_agents) == {"lead", *(f"w-{i}" for i in range(5))}
