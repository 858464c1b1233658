"""Benchmark `investigate show` on a 10,000-event transcript: the show path against just parsing the JSONL.

    python bench/show.py [--events 10000] [--agents 50] [--repeat 5]

Builds a realistic transcript on disk with the real `Recorder` (a lead fanning out to subagents; each turn a model
call carrying the previous tool result, a tool call and a tool result of ~1.5 KB), then times, best of N:

- parse: `json.loads` of every line (the floor: reading the file at all);
- read: `read_transcript` (parse + validate into event models, as `show` does);
- show: `read_transcript` + `build_timeline` + `render_timeline` onto a string console (the whole `show` path);
- show --json: `read_transcript` + `build_timeline` + `model_dump_json`.

Prints a table with absolute times and each path's ratio to the parse floor. Target: show under 1 s.

    python bench/show.py --big-gb 1

Memory on a big transcript (issue 15): repeats that transcript's events (call ids made unique per copy) into a file
of about 1 GB, runs `investigate show` and `show --json` on it as subprocesses, and reports each one's wall time and
peak RSS. Target: at most 300 MB whatever the transcript's size (show reads it one line at a time).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402

from orchestrator.events import (  # noqa: E402
    AgentFinished,
    AgentStarted,
    ModelCall,
    RunFinished,
    RunStarted,
    ToolCall,
    ToolResult,
)
from orchestrator.messages import (  # noqa: E402
    Message,
    ModelResponse,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    Usage,
)
from orchestrator.render.timeline import build_timeline, render_timeline  # noqa: E402
from orchestrator.transcript import Recorder, read_transcript  # noqa: E402

T0 = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)
OUTPUT = ("GPU 0: NVIDIA H200 (UUID: GPU-5c1e) | 312 W / 700 W | 134 GiB / 141 GiB | SM 98 % | "
          "FlashInfer autotune: [AutoTuner]: No tuned config covers op=fp8_gemm M=8 N=7168 K=2048 tactic=-1\n") * 8
TOOLS = [ToolSpec(name=n, description=f"{n} tool", input_schema={"type": "object", "properties": {}})
         for n in ("shell", "read_file", "find_files", "gpu_probe", "autotune_caches")]


def build(path: Path, n_events: int, n_agents: int) -> int:
    """Write a transcript of about n_events events with n_agents agents; returns the count written."""
    rec = Recorder("bench-run-0001", path)
    clock = [0.0]

    def at(dt: float = 0.05) -> datetime:
        clock[0] += dt
        return T0 + timedelta(seconds=clock[0])

    def emit(cls, **kw):
        rec.emit(cls(run_id="bench-run-0001", ts=at(), **kw))

    subs = n_agents - 1
    # per subagent: start + finish + 3 events per turn; the lead and run events take the rest
    turns = max(1, -(-(n_events - 6 - 2 * subs) // (3 * subs)))
    emit(RunStarted, question="why is FP8 slow at small batch?", backend="offline", host="h200-box")
    emit(AgentStarted, agent_id="lead", name="lead", model="offline", tools=["task"])
    lead_u = Usage(input_tokens=3000, output_tokens=600, cost_usd=0.03, calls=1)
    emit(ModelCall, agent_id="lead", turn=1, model="offline", fingerprint="fp-lead-1", system="You lead.",
         tools=TOOLS[:1], messages=[Message.user_text("why is FP8 slow at small batch?")],
         response=ModelResponse(content=[ToolUseBlock(id=f"t{i}", name="task", input={"agent": "kernel-research"})
                                         for i in range(subs)]), usage=lead_u)
    ids = [f"lead/{i + 1}-prong{i + 1}" for i in range(subs)]
    for i, aid in enumerate(ids):
        emit(AgentStarted, agent_id=aid, parent_id="lead", name=f"prong{i + 1}", model="offline", brief="look")
    # subagents run concurrently: their events interleave turn by turn
    usage = {aid: Usage() for aid in ids}
    for turn in range(1, turns + 1):
        for i, aid in enumerate(ids):
            u = Usage(input_tokens=1500 + 40 * turn, output_tokens=120, cost_usd=0.006, calls=1)
            usage[aid] = usage[aid] + u
            msgs = ([Message.user_text("brief: look at the autotune caches")] if turn == 1 else
                    [Message(role="user", content=[ToolResultBlock(tool_use_id=f"c{turn - 1}", content=OUTPUT)])])
            answer = [TextBlock(text="Looking."), ToolUseBlock(id=f"c{turn}", name="shell", input={"cmd": "nvidia-smi"})]
            emit(ModelCall, agent_id=aid, turn=turn, model="offline", fingerprint=f"fp-{aid}-{turn}",
                 system="You inspect autotune caches." if turn == 1 else "", tools=TOOLS if turn == 1 else [],
                 messages=msgs, usage=u, latency_s=0.8, response=ModelResponse(content=answer))
            emit(ToolCall, agent_id=aid, turn=turn, call_id=f"c{turn}", tool="shell", args={"cmd": "nvidia-smi"})
            emit(ToolResult, agent_id=aid, turn=turn, call_id=f"c{turn}", tool="shell",
                 evidence_id=f"ev-{i + 1}.{turn}", content=OUTPUT, host="h200-box", untrusted=True,
                 is_error=(turn % 17 == 0), duration_s=0.3)
    for aid in ids:
        emit(AgentFinished, agent_id=aid, status="ok", turns=turns, usage=usage[aid], duration_s=clock[0])
    total = lead_u
    for u in usage.values():
        total = total + u
    emit(AgentFinished, agent_id="lead", status="ok", turns=2, usage=lead_u, duration_s=clock[0])
    emit(RunFinished, status="ok", usage=total, duration_s=clock[0])
    rec.close()
    return len(rec.events)


def parse_only(path: Path) -> int:
    with path.open(encoding="utf-8") as fh:
        return sum(1 for line in fh if json.loads(line))


def read_only(path: Path) -> int:
    return len(read_transcript(path).events)


def show(path: Path) -> int:
    tl = build_timeline(read_transcript(path).events)
    buf = io.StringIO()
    render_timeline(tl, Console(file=buf, width=100, force_terminal=False, color_system=None))
    return len(buf.getvalue())


def show_json(path: Path) -> int:
    return len(build_timeline(read_transcript(path).events).model_dump_json())


def best_of(fn, path: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(path)
        times.append(time.perf_counter() - t)
    return min(times)


def build_big(small: Path, big: Path, target_bytes: int) -> int:
    """Repeat small's event lines (between its header and its run_finished) until big holds target_bytes."""
    lines = small.read_text(encoding="utf-8").splitlines(keepends=True)
    head, body, tail = lines[0], lines[1:-1], lines[-1]
    written, copies = 0, 0
    with big.open("w", encoding="utf-8") as fh:
        fh.write(head)
        while written < target_bytes:
            chunk = "".join(body).replace('"call_id":"c', f'"call_id":"k{copies}c')
            fh.write(chunk)
            written += len(chunk)
            copies += 1
        fh.write(tail)
    return copies * len(body) + 2


def run_measured(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, peak RSS in MB, exit code) of a child process."""
    import subprocess

    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - t, usage.ru_maxrss / 1024, proc.returncode


def main_big(gb: float) -> None:
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        small, big = Path(tmp) / "small.jsonl", Path(tmp) / "big.jsonl"
        build(small, 10_000, 50)
        n = build_big(small, big, int(gb * 1e9))
        size = big.stat().st_size
        print(f"transcript: {n} events, {size / 1e9:.2f} GB")
        print(f"{'command':<28} {'wall s':>8} {'peak RSS MB':>12} {'target':>10}")
        env_py = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(root)!r}); "
                  "from orchestrator.cli import main; sys.exit(main(sys.argv[1:]))"]
        for name, extra in (("show", []), ("show --json", ["--json"])):
            wall, rss, rc = run_measured([*env_py, "show", str(big), *extra])
            verdict = "met" if rss <= 300 and rc == 0 else f"MISSED (exit {rc})" if rc else "MISSED"
            print(f"{name:<28} {wall:>8.1f} {rss:>12.0f} {'<= 300 ' + verdict:>10}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--agents", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--big-gb", type=float, default=None, help="measure show's memory on a transcript this big")
    args = ap.parse_args()
    if args.big_gb:
        main_big(args.big_gb)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        n = build(path, args.events, args.agents)
        size = path.stat().st_size
        rows = [(name, best_of(fn, path, args.repeat)) for name, fn in
                [("parse (json.loads per line)", parse_only), ("read_transcript", read_only),
                 ("show (read + build + render)", show), ("show --json (read + build + dump)", show_json)]]
    floor = rows[0][1]
    print(f"transcript: {n} events, {args.agents} agents, {size / 1e6:.1f} MB; best of {args.repeat}")
    print(f"{'path':<36} {'time':>9} {'x parse':>8}")
    for name, t in rows:
        print(f"{name:<36} {t * 1000:>7.0f}ms {t / floor:>8.2f}")
    verdict = "under" if rows[2][1] < 1.0 else "OVER"
    print(f"show: {rows[2][1]:.3f} s, {verdict} the 1 s target")


if __name__ == "__main__":
    main()
