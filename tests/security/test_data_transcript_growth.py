"""Issue 23: a model-driven run's transcript grows linearly with what was exchanged (a 12-call run wrote 45 MB).

A lead driven through the real SDK against the fake Messages API (tests/support/fake_messages.py) reads a 100 KB log
on every turn. Each model call records only the messages added since the previous call (events.ModelCall), so a
tool result is in the transcript twice (the ToolResult event and the fenced copy the next model call carried), never
once per later turn: 12 calls of N KB write O(12 N) KB, not O(12^2 N). Planted: recording each call's whole
conversation (loop.py, `messages=s.messages`) makes the 12-call transcript 6x the 6-call one and fails both tests.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.fake_messages import FakeMessagesAPI, RecordedRequest, Reply, tool_calls

import orchestrator.api as api_mod
from orchestrator.models.anthropic import AnthropicBackend
from orchestrator.settings import Settings
from orchestrator.tools import shell as shell_mod
from orchestrator.tools import submit as submit_mod
from orchestrator.tools.base import ToolRegistry

KEY = "sk-ant-api03-TESTKEY-growth-0123456789abcdefghijklmnop"
RESULT_BYTES = 100_000
LINE = "2026-11-29 12:00:{s:02d} INFO step {i}: batch=48 tokens=6144 decode=11.3 ms kv=71.2%\n"


def _handler(log: Path, calls: int):
    def handler(req: RecordedRequest) -> Reply:
        turn = 1 + sum(1 for m in req.body["messages"] if m["role"] == "assistant")
        if turn < calls:
            return tool_calls([("read_file", {"path": str(log)})])
        ids = sorted(set(re.findall(r"ev-\d+\.\d+", json.dumps(req.body["messages"][-1]))))
        return tool_calls([("submit_diagnosis", {
            "verdict": "Decode steps are slow.", "bound": "memory", "bound_reasoning": "KV cache reads dominate.",
            "causes": [{"title": "Slow decode", "explanation": "11.3 ms a step.", "confidence": 0.6,
                        "evidence": ids[:1]}], "recommendations": []})])
    return handler


async def _run(tmp_path: Path, calls: int) -> Path:
    log = tmp_path / "engine.log"
    log.write_text("".join(LINE.format(s=i % 60, i=i) for i in range(RESULT_BYTES // len(LINE))))
    agents = tmp_path / "agents"
    agents.mkdir(exist_ok=True)
    (agents / "lead.md").write_text("---\nname: lead\ndescription: lead (test)\nrole: lead\nmodel: inherit\n"
                                    "tools: [read_file]\nmax_turns: 40\n---\nYou are the lead engineer (test).\n")
    reg = ToolRegistry()
    reg.add(submit_mod.SubmitDiagnosis())
    shell_mod.register(reg)
    settings = Settings(rate_gate_base_s=0.01, tool_output_chars=2 * RESULT_BYTES)
    path = tmp_path / f"run-{calls}.jsonl"
    with FakeMessagesAPI(handler=_handler(log, calls)) as api:
        backend = AnthropicBackend(settings, api_key=KEY, base_url=api.base_url)
        try:
            result = await api_mod.investigate("why is decode slow?", backend=backend, settings=settings,
                                               transcript=path, agents_dirs=[agents], registry=reg)
        finally:
            await backend.aclose()
        assert len(api.requests) == calls
    assert result.status == "ok", result.error
    return path


@pytest.fixture(scope="module")
def sizes(tmp_path_factory) -> dict[int, int]:
    import anyio

    out = {}
    for calls in (6, 12):
        path = anyio.run(_run, tmp_path_factory.mktemp(f"g{calls}"), calls)
        out[calls] = path.stat().st_size
    return out


def test_a_12_call_run_writes_each_result_a_bounded_number_of_times(sizes):
    results = 11  # every call but the last read the log
    # each result: the ToolResult event and the fenced copy in the next model call (JSON escapes its newlines)
    assert sizes[12] < 2.6 * results * RESULT_BYTES + 200_000, f"{sizes[12] / 1e6:.1f} MB"


def test_the_transcript_grows_linearly_with_the_calls(sizes):
    per_result = (sizes[12] - sizes[6]) / 6
    assert per_result < 2.6 * RESULT_BYTES, per_result
    # quadratic growth (each call re-recording the conversation) would make the 12-call file ~4x the 6-call one
    assert sizes[12] < 2.4 * sizes[6], sizes
