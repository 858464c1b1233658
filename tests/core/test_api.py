"""Library entry points: investigate_sync in scripts and inside a running event loop (as in Jupyter)."""

from __future__ import annotations

import asyncio

from orchestrator import investigate_sync
from orchestrator.diagnosis import Diagnosis
from orchestrator.models.doubles import DoublesBackend, ScriptedModel, call, respond
from support.core import core_registry, write_agents


def backend():
    cause = {"title": "t", "explanation": "e", "confidence": 0.5, "evidence": ["ev-1.1"]}
    lead = ScriptedModel([respond(call("task", agent="a", brief="go")),
                          respond(call("submit_diagnosis", verdict="sync works", causes=[cause]))])
    sub = ScriptedModel([respond(call("sleep", seconds=0)), respond(call("submit_findings", summary="ok"))])
    return DoublesBackend({"lead": lead, "a": sub})


def test_investigate_sync_in_a_plain_script(tmp_path):
    agents = write_agents(tmp_path / "agents", {"a": {}})
    result = investigate_sync("q", backend=backend(), agents_dirs=[agents], registry=core_registry(),
                              transcript=tmp_path / "t.jsonl")
    assert result.status == "ok" and result.diagnosis.verdict == "sync works"
    assert result.transcript_path.is_file()


def test_investigate_sync_inside_a_running_event_loop(tmp_path):
    agents = write_agents(tmp_path / "agents", {"a": {}})

    async def notebook_cell():
        # a running loop in this thread, as in Jupyter: no nest_asyncio, no "loop already running"
        asyncio.get_running_loop()
        return investigate_sync("q", backend=backend(), agents_dirs=[agents], registry=core_registry(),
                                transcript=tmp_path / "t.jsonl")

    result = asyncio.run(notebook_cell())
    assert result.status == "ok" and isinstance(result.diagnosis, Diagnosis)
    assert "sync works" in result._repr_markdown_()
