"""Transcripts: round trip of every event type, redaction, damaged and future files, upgrades."""

from __future__ import annotations

import json

import pytest

from orchestrator.events import (
    EVENT_TYPES,
    AgentFinished,
    AgentStarted,
    DiagnosisSubmitted,
    ModelCall,
    ModelError,
    Notice,
    PolicyRefusal,
    RunFinished,
    RunStarted,
    ToolCall,
    ToolResult,
)
from orchestrator.messages import Message, ModelResponse, TextBlock, ToolUseBlock, Usage
from orchestrator.redact import redact
from orchestrator.transcript import Recorder, TranscriptError, read_transcript

RUN = "r" * 32


def one_of_each() -> list:
    resp = ModelResponse(content=[TextBlock(text="hi"), ToolUseBlock(id="t1", name="sleep", input={"seconds": 1})],
                         stop_reason="tool_use", usage=Usage(input_tokens=10, output_tokens=5, calls=1))
    return [
        RunStarted(run_id=RUN, question="why slow", backend="offline", inputs={"measure": False}),
        AgentStarted(run_id=RUN, agent_id="lead", name="lead", model="offline"),
        ModelCall(run_id=RUN, agent_id="lead", turn=1, model="m", fingerprint="sha256:x",
                  messages=[Message.user_text("q")], response=resp, usage=resp.usage),
        ModelError(run_id=RUN, agent_id="lead", turn=2, error="overloaded", attempts=[{"status": 529}]),
        ToolCall(run_id=RUN, agent_id="lead", turn=1, call_id="t1", tool="sleep", args={"seconds": 1}),
        ToolResult(run_id=RUN, agent_id="lead", turn=1, call_id="t1", tool="sleep", evidence_id="ev-0.1",
                   content="ok", data={"kind": "sleep"}, host="local", untrusted=True),
        PolicyRefusal(run_id=RUN, agent_id="lead", call_id="t2", tool="shell", subject="rm -rf /", reason="rm"),
        Notice(run_id=RUN, message="offline"),
        AgentFinished(run_id=RUN, agent_id="lead", status="ok", result={"summary": "s"}),
        DiagnosisSubmitted(run_id=RUN, diagnosis={"question": "q", "verdict": "v"}),
        RunFinished(run_id=RUN, status="ok", usage=Usage(input_tokens=10)),
    ]


def test_every_event_type_round_trips(tmp_path):
    events = one_of_each()
    assert {type(e) for e in events} == set(EVENT_TYPES)
    rec = Recorder(RUN, tmp_path / "t.jsonl")
    for e in events:
        rec.emit(e)
    rec.close()
    t = read_transcript(tmp_path / "t.jsonl")
    assert t.header.run_id == RUN and t.warnings == []
    assert [e.model_dump() for e in t.events] == [e.model_dump() for e in events]
    assert [e.seq for e in t.events] == list(range(1, len(events) + 1))


SECRETS = {
    "anthropic": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "github classic": "ghp_1234567890abcdefghijABCDEFGHIJ123456",
    "github fine-grained": "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "slack bot": "xoxb-123456789012-1234567890123-AbCdEfGhIjKl",
    "slack user": "xoxp-123456789012-1234567890123-AbCdEfGhIjKl",
    "bearer": "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig",
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234\nabcd\n-----END RSA PRIVATE KEY-----",
    "url credentials": "https://deploy:s3cretPassw0rd@registry.example.com/v2/",
    "key assignment": "HF_API_KEY=hf_abcdefghijklmnop",
    "token assignment": "GITLAB_TOKEN=glpat-abcdefghijklmnop",
    "password assignment": "password=hunter2hunter2",
}
SECRET_VALUES = {
    "anthropic": "AbCdEfGhIjKlMnOpQrStUvWxYz", "aws": "IOSFODNN7EXAMPLE", "github classic": "1234567890abcdefghij",
    "github fine-grained": "11ABCDEFG0123456789", "slack bot": "1234567890123-AbCdEfGhIjKl",
    "slack user": "1234567890123-AbCdEfGhIjKl", "bearer": "eyJhbGciOiJIUzI1NiJ9", "pem": "MIIEpAIBAAKCAQEA1234",
    "url credentials": "s3cretPassw0rd", "key assignment": "hf_abcdefghijklmnop",
    "token assignment": "glpat-abcdefghijklmnop", "password assignment": "hunter2hunter2",
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_secret_pattern_is_redacted_before_writing(tmp_path, name):
    rec = Recorder(RUN, tmp_path / "t.jsonl")
    rec.emit(ToolResult(run_id=RUN, agent_id="a", turn=1, call_id="c", tool="shell", evidence_id="ev-1.1",
                        content=f"output: {SECRETS[name]} end"))
    rec.close()
    raw = (tmp_path / "t.jsonl").read_text()
    assert SECRET_VALUES[name] not in raw
    assert "[REDACTED]" in raw
    assert "output:" in raw and "end" in raw


def test_redaction_leaves_ordinary_text_alone():
    text = "input_tokens: 5, max_tokens=8192, ghp is a word, bearer of news, http://example.com/a@b"
    assert redact(text) == text


def test_reader_keeps_complete_lines_of_a_file_cut_off_mid_line(tmp_path):
    rec = Recorder(RUN, tmp_path / "t.jsonl")
    for e in one_of_each()[:5]:
        rec.emit(e)
    rec.close()
    raw = (tmp_path / "t.jsonl").read_bytes()
    cut = raw[: raw.rindex(b"\n", 0, len(raw) - 1) + 40]  # the last line, cut 40 bytes in
    (tmp_path / "cut.jsonl").write_bytes(cut)
    t = read_transcript(tmp_path / "cut.jsonl")
    assert len(t.events) == 4
    assert "line 6 is cut off mid-line" in t.warnings[0]


def test_malformed_line_error_names_the_line(tmp_path):
    rec = Recorder(RUN, tmp_path / "t.jsonl")
    for e in one_of_each()[:4]:
        rec.emit(e)
    rec.close()
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    lines[2] = lines[2][:-20]  # damaged in the middle of the file, complete lines after it
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(TranscriptError, match=r"bad.jsonl: line 3 is not valid JSON"):
        read_transcript(tmp_path / "bad.jsonl")
    obj = json.loads(lines[3])
    obj["turn"] = "first"
    lines[2] = json.dumps(json.loads((tmp_path / "t.jsonl").read_text().splitlines()[2]))
    lines[3] = json.dumps(obj)
    (tmp_path / "bad2.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(TranscriptError, match=r"line 4: invalid model_call event \(model_call.turn"):
        read_transcript(tmp_path / "bad2.jsonl")


def test_future_schema_version_is_refused_with_a_clear_message(tmp_path):
    rec = Recorder(RUN, tmp_path / "t.jsonl")
    rec.close()
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    head = json.loads(lines[0])
    head["schema_version"] = 99
    (tmp_path / "future.jsonl").write_text(json.dumps(head) + "\n")
    with pytest.raises(TranscriptError, match="schema_version 99 is newer than this investigate understands"):
        read_transcript(tmp_path / "future.jsonl")


def test_version_1_transcript_is_upgraded_by_named_steps(tmp_path):
    head = {"type": "header", "schema_version": 1, "tool_version": "0.0.9", "created": "2026-01-01T00:00:00Z",
            "run_id": RUN}
    call = {"run_id": RUN, "seq": 1, "ts": "2026-01-01T00:00:01Z", "type": "model_call", "agent_id": "lead",
            "turn": 1, "model": "m", "fingerprint": "sha256:x",
            "response": {"content": [], "usage": {"input_tokens": 3, "cache_read_input_tokens": 7}},
            "usage": {"input_tokens": 3, "cache_read_input_tokens": 7, "cache_creation_input_tokens": 2}}
    result = {"run_id": RUN, "seq": 2, "ts": "2026-01-01T00:00:02Z", "type": "tool_result", "agent_id": "lead",
              "turn": 1, "call_id": "c", "tool": "gpu_inventory", "evidence_id": "ev-0.1", "host": "gpu-box"}
    (tmp_path / "v1.jsonl").write_text("\n".join(json.dumps(x) for x in (head, call, result)) + "\n")
    t = read_transcript(tmp_path / "v1.jsonl")
    assert t.upgraded_from == 1 and t.header.schema_version == 2
    mc, tr = t.events
    assert mc.usage.cache_read_tokens == 7 and mc.usage.cache_write_tokens == 2
    assert mc.response.usage.cache_read_tokens == 7
    assert tr.untrusted is True


def test_missing_transcript_is_a_clear_error(tmp_path):
    with pytest.raises(TranscriptError, match="not found"):
        read_transcript(tmp_path / "nope.jsonl")


def test_paths_named_like_secrets_are_not_taken_for_assignments():
    assert redact("refused: file:///etc/passwd: scheme file: is not allowed") == \
        "refused: file:///etc/passwd: scheme file: is not allowed"


def test_lenient_reader_names_a_damaged_line_and_reads_the_rest(tmp_path):
    rec = Recorder(RUN, tmp_path / "t.jsonl")
    for e in one_of_each():
        rec.emit(e)
    rec.close()
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    lines[3] = lines[3][:-20]  # damaged in the middle
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")
    t = read_transcript(tmp_path / "bad.jsonl", strict=False)
    assert len(t.events) == len(one_of_each()) - 1
    assert len(t.warnings) == 1 and "line 4 is not valid JSON" in t.warnings[0] and "skipped" in t.warnings[0]
    with pytest.raises(TranscriptError, match="line 4"):
        read_transcript(tmp_path / "bad.jsonl")


@pytest.mark.parametrize("text,secret", [
    ("vllm serve --api-key=abcdef123456", "abcdef123456"),
    ("{'api_key': 'abc123xyz'}", "abc123xyz"),
    ("HF token hf_abcdefghijklmnopqrstuvwxyz1234", "abcdefghijklmnopqrstuvwxyz1234"),
    ("key sk-proj-abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvwx"),
])
def test_more_secret_shapes_are_redacted(text, secret):
    assert secret not in redact(text) and "[REDACTED]" in redact(text)
