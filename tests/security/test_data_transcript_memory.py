"""Issue 23: reading a big transcript costs memory in proportion to what is shown, not 6x the file.

`read_transcript` held the file as bytes, as text and split into lines (3x) on top of the parsed events; `report`
then kept every event whole plus a scrubbed copy of each (6x). Now the reader goes one line at a time and `report`
keeps of each event only what its renderers read (render/slim.py), with the same bytes out. Measured at scale by
bench/transcript_memory.py (10/50/200 MB).
"""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path

import pytest

from orchestrator.cli import main
from orchestrator.events import ToolResult
from orchestrator.redact import scrub_model, scrub_text
from orchestrator.render.diagnosis import to_markdown
from orchestrator.render.html import diagnosis_from_events, render_html
from orchestrator.render.slim import collapsed_prefix, report_view
from orchestrator.transcript import read_transcript

SEED = Path(__file__).resolve().parents[2] / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl"
LINE = "2026-11-29 12:00:{s:02d} INFO step {i}: batch=48 tokens=6144 decode=11.3 ms kv=71.2% — gpu_util=97%\n"


def _padded(path: Path, per_result: int) -> Path:
    """The seed with every subagent's tool result (and the model call that carried it) grown by a log of
    per_result bytes."""
    rows = [json.loads(line) for line in SEED.read_text(encoding="utf-8").splitlines()]
    pad: dict[str, str] = {}
    for r in rows:
        if r["type"] == "tool_result" and r["agent_id"] != "lead":
            log = "".join(LINE.format(s=i % 60, i=i + 10 * len(pad)) for i in range(per_result // len(LINE)))
            pad[r["call_id"]] = "\n" + log
            r["content"] += pad[r["call_id"]]
    for r in rows:
        for m in r.get("messages", []):
            for b in m["content"]:
                if b.get("type") == "tool_result" and b.get("tool_use_id") in pad:
                    b["content"] += pad[b["tool_use_id"]]
    path.write_text("".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    return _padded(tmp_path_factory.mktemp("mem") / "big.jsonl", 40_000)  # ~1.6 MB


def _traced(fn):
    tracemalloc.start()
    try:
        out = fn()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, current, peak


def test_the_reader_holds_no_copy_of_the_file_while_parsing(big):
    size = big.stat().st_size
    t, held, peak = _traced(lambda: read_transcript(big))
    assert len(t.events) > 50
    print(f"read: {peak / size:.2f}x peak, {held / size:.2f}x held")
    # before: bytes + text + lines of the whole file on top of the events (peak - held = 4.3x the file)
    assert peak - held < 0.3 * size, f"{(peak - held) / size:.2f}x the file over what the events hold"


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_report_keeps_what_it_shows_and_writes_the_same_bytes(big, tmp_path, fmt):
    size = big.stat().st_size
    out = tmp_path / f"r.{fmt}"
    main(["report", str(SEED), "-o", str(out)])  # imports and first-use caches, outside the measure
    rc, _, peak = _traced(lambda: main(["report", str(big), "-o", str(out)]))
    assert rc in (0, None)
    print(f"report {fmt}: traced peak {peak / size:.2f}x the file")
    assert peak < 1.5 * size, f"report peaked at {peak / size:.2f}x the file"  # before: 6x

    # the same bytes as rendering every whole event, scrubbed (what report did before)
    events = [scrub_model(e) for e in read_transcript(big).events]
    d = scrub_model(diagnosis_from_events(events))
    want = render_html(d, events) if fmt == "html" else to_markdown(d, events)
    assert out.read_text(encoding="utf-8") == want


def test_the_excerpt_basis_is_exact():
    rng = random.Random(23)
    for _ in range(5000):
        n = rng.choice([1, 7, 401])
        alphabet = rng.choice(["ab \n", "abcdefgh ", "x" * 30 + " ", "a    \t\t\n\n", "\u00a0a\u2028b "])
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3000)))
        assert collapsed_prefix(text, n) == " ".join(text.split())[:n], (text, n)


def test_a_secret_across_the_excerpt_cut_is_redacted_whole():
    key = "sk-ant-api03-" + "Q7" * 40
    ev = ToolResult(run_id="r", agent_id="a", turn=1, call_id="c", tool="shell", evidence_id="ev-1.1",
                    content="x " * 185 + key + " tail " * 100)
    view = report_view(ev, scrub_text)
    assert len(view.content) == 401 and "Q7Q7" not in view.content and "REDACTED" in view.content
    assert "Q7Q7" in report_view(ev).content  # planted: cut first, then redacted, the key's head stays in clear


# REDTEAM round 3, big_transcript_memory: a transcript of many small events (many agents, short outputs) defeated
# the slim renderers (report 2.5x, replay --offline 3.5x a 151 MB one): each event's own overhead is the memory
# there, not its text. Measured at scale by bench/transcript_memory.py --copies.


def _many_small_events(path: Path, agents: int) -> Path:
    """A run whose subagents each make one model call that carries the previous tool result, one tool call and its
    result: thousands of events of a few hundred bytes."""
    from datetime import datetime, timedelta, timezone

    from orchestrator.events import AgentFinished, AgentStarted, ModelCall, ToolCall
    from orchestrator.messages import Message, ModelResponse, ToolResultBlock, Usage
    from orchestrator.transcript import SCHEMA_VERSION

    t0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=timezone.utc)
    lines = [json.dumps({"type": "header", "schema_version": SCHEMA_VERSION, "tool_version": "0",
                         "created": t0.isoformat(), "run_id": "r" * 32})]
    for i in range(agents):
        a, ts, out = f"lead/{i + 1}-prong{i + 1}", t0 + timedelta(milliseconds=i), f"GPU {i % 8} util 97 % " * 8
        u = Usage(input_tokens=1500 + i, output_tokens=120, cost_usd=0.006, calls=1)
        for ev in (
            AgentStarted(run_id="r" * 32, ts=ts, agent_id=a, name=f"prong{i + 1}", parent_id="lead", model="m"),
            ToolCall(run_id="r" * 32, ts=ts, agent_id=a, turn=1, call_id="c1", tool="shell", args={"cmd": "x"}),
            ToolResult(run_id="r" * 32, ts=ts, agent_id=a, turn=1, call_id="c1", tool="shell",
                       evidence_id=f"ev-{i + 1}.1", content=out, host="h200-box", duration_s=0.3),
            ModelCall(run_id="r" * 32, ts=ts, agent_id=a, turn=2, model="m", fingerprint=f"{i:064x}",
                      messages=[Message(role="user", content=[ToolResultBlock(tool_use_id="c1", content=out)])],
                      response=ModelResponse(content=[]), usage=u),
            AgentFinished(run_id="r" * 32, ts=ts, agent_id=a, status="ok", turns=2, usage=u, duration_s=1.0),
        ):
            lines.append(ev.model_dump_json())
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_report_holds_each_of_many_small_events_in_about_a_kilobyte(tmp_path):
    """Each event read kept its own set of field names and its own copies of the run id, agent id, tool and host
    names: 2.6 kB an event of this shape in `report`; shared and interned, 1.3 kB."""
    import gc

    from orchestrator.transcript import iter_transcript

    path = _many_small_events(tmp_path / "t.jsonl", 800)
    gc.collect()
    tracemalloc.start()
    events = [scrub_model(report_view(e, scrub_text)) for e in iter_transcript(path, [], strict=True)[1]]
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(events) == 4000
    assert held / len(events) < 1_600, f"{held / len(events):.0f} bytes an event"


def test_the_full_reader_holds_a_text_once_and_reads_the_same_values(tmp_path):
    """A tool result's text and the model call that carried it are two copies in the file, one in memory; every
    value is what validating each line gives."""
    from orchestrator.events import EVENT_ADAPTER

    path = _many_small_events(tmp_path / "t.jsonl", 200)
    events = read_transcript(path).events
    results = [e for e in events if isinstance(e, ToolResult)]
    carried = [e.messages[0].content[0].content for e in events if type(e).__name__ == "ModelCall"]
    assert len(results) == len(carried) == 200
    assert all(r.content is c for r, c in zip(results, carried))
    assert all(e.run_id is events[0].run_id for e in events)
    assert events == [EVENT_ADAPTER.validate_json(line) for line in path.read_text().splitlines()[1:]]
    assert read_transcript(SEED).events == [EVENT_ADAPTER.validate_json(line)
                                            for line in SEED.read_text().splitlines()[1:] if line.strip()]
