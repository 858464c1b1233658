"""A transcript outlives the release that wrote it: prompts and tool definitions that changed since the recording
replay with the recorded answers and a notice; a conversation that changed is still a divergence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.api import replay
from orchestrator.events import Notice
from orchestrator.messages import Message, ToolSpec
from orchestrator.models.base import ReplayDivergence
from orchestrator.transcript import fingerprint

SEED = Path(__file__).resolve().parents[2] / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl"


def _rewrite(src: Path, dst: Path, change) -> None:
    lines = src.read_text().splitlines()
    out = [lines[0]] + [json.dumps(change(json.loads(line))) for line in lines[1:]]
    dst.write_text("\n".join(out) + "\n")


def _drop_tool_description(rec: dict) -> dict:
    """The recording as an older release would have written it: one tool described differently."""
    if rec.get("type") == "model_call" and rec.get("tools"):
        rec["tools"] = [{**t, "description": t["description"] + " (older wording)"} if t["name"] == "submit_findings"
                        else t for t in rec["tools"]]
    return rec


def _as_recorded_with(recs: list[dict]) -> list[dict]:
    """Fingerprints recomputed from each agent's recorded system prompt and tools, as the recording release would
    have computed them (what a transcript of an older release looks like to this one)."""
    history: dict[str, list[Message]] = {}
    asked: dict[str, tuple[str, list[ToolSpec]]] = {}
    for rec in recs:
        if rec.get("type") != "model_call":
            continue
        aid = rec["agent_id"]
        if rec.get("tools"):
            asked.setdefault(aid, (rec["system"], [ToolSpec.model_validate(t) for t in rec["tools"]]))
        msgs = history.setdefault(aid, [])
        msgs += [Message.model_validate(m) for m in rec["messages"]]
        rec["fingerprint"] = fingerprint(*asked[aid], list(msgs))
        msgs.append(Message(role="assistant", content=rec["response"]["content"]))
    return recs


async def test_a_tool_definition_changed_since_the_recording_replays_with_a_notice(tmp_path):
    old = tmp_path / "old.jsonl"
    _rewrite(SEED, old, _drop_tool_description)
    head, *recs = [json.loads(line) for line in old.read_text().splitlines()]
    old.write_text("\n".join(json.dumps(r) for r in [head, *_as_recorded_with(recs)]) + "\n")
    result = await replay(old)
    assert result.status == "ok" and result.diagnosis is not None
    notes = [e.message for e in result.events if isinstance(e, Notice)]
    assert any("the definition of tool 'submit_findings' differs since the recording" in n for n in notes), notes


async def test_a_conversation_that_changed_is_still_a_divergence(tmp_path):
    changed = tmp_path / "changed.jsonl"

    def alter(rec: dict) -> dict:
        if rec.get("type") == "tool_result" and rec.get("agent_id") != "lead" and rec.get("tool") == "gpu_inventory":
            rec["content"] = rec["content"] + "\n(one more line than was recorded)"
        return rec

    _rewrite(SEED, changed, alter)
    with pytest.raises(ReplayDivergence, match="message .* differs"):
        result = await replay(changed)
        if result.error:  # the run records the divergence and re-raises it as its error
            raise ReplayDivergence(result.error)
