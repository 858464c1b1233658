"""Peak memory of reading a big transcript: `show`, `report` (Markdown and HTML) and `replay --offline` (issue 23).

    python bench/transcript_memory.py [--sizes 10,50,200] [--copies 20] [--profile report-html]

Builds transcripts of about 10, 50 and 200 MB from the shipped seed transcript (a real offline run with a diagnosis):
every tool result grows to a large log (the model call that carried it grows the same way, as a run records it),
and the subagents are repeated `--copies` times under new agent and call ids (many agents). Then runs each command
as a subprocess on each file and reports its peak RSS, the same command's peak on the small seed (the interpreter
and its imports), and (peak - that base) / file size. Target: at most 2x the file; `show` bounded whatever the size.

`--profile CMD` runs one command in-process under tracemalloc on the middle size and prints the 15 largest
allocation sites at its peak (where the memory goes).

`--sizes 150 --copies 400` makes the other shape: many agents with short results (each padded to the 1 kB floor,
25,688 events in 239 MB), where each event's own overhead, not its text, is the memory (REDTEAM round 3: replay
--offline 3.5x a 151 MB one). 2026-12-05, this machine: replay --offline 682 -> 483 MB peak (2.68x -> 1.81x over its
base) once events share their field-name sets, intern short strings and hold a text carried twice once.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl"
LOG_LINE = ("2026-11-29 12:00:{s:02d}.{ms:03d} INFO  [engine.py:312] step {i}: batch=48 tokens=6144 "
            "prefill=0.8 ms decode=11.3 ms kv=71.2% gpu_util=97%\n")

COMMANDS: dict[str, list[str]] = {
    "show": ["show", "{t}"],
    "show --json": ["show", "{t}", "--json"],
    "report md": ["report", "{t}", "-o", "{out}.md"],
    "report html": ["report", "{t}", "-o", "{out}.html"],
    "replay --offline": ["replay", "{t}", "--offline", "--json"],
}


def _log(n_bytes: int, seed: int) -> str:
    lines, size, i = [], 0, 0
    while size < n_bytes:
        line = LOG_LINE.format(s=(seed + i) % 60, ms=i % 1000, i=seed + i)
        lines.append(line)
        size += len(line)
        i += 1
    return "".join(lines)


def build(path: Path, target_bytes: int, copies: int) -> None:
    """The seed, each tool result padded so that the file is about target_bytes, subagents repeated `copies` times."""
    rows = [json.loads(line) for line in SEED.read_text(encoding="utf-8").splitlines()]
    n_results = sum(1 for r in rows if r["type"] == "tool_result" and r["agent_id"] != "lead")
    per_result = max(1024, int(target_bytes / max(1, n_results * (copies + 1)) / 2.1))  # result + the model call
    pad: dict[str, str] = {}
    for r in rows:
        if r["type"] == "tool_result" and r["agent_id"] != "lead":
            extra = "\n--- log ---\n" + _log(per_result, len(pad) * 7)
            pad[r["call_id"]] = extra
            r["content"] += extra
    for r in rows:
        if r["type"] == "model_call":
            for m in r["messages"]:
                for b in m["content"]:
                    if b.get("type") == "tool_result" and b.get("tool_use_id") in pad:
                        b["content"] += pad[b["tool_use_id"]]
    head, body = rows[0], rows[1:]
    sub = [r for r in body if r.get("agent_id") not in (None, "lead") and r["type"] != "diagnosis_submitted"]
    cut = next(i for i, r in enumerate(body) if r["type"] == "diagnosis_submitted")
    cut = max(i for i, r in enumerate(body[:cut]) if r.get("agent_id") == "lead" and r["type"] == "model_call")
    seq = 0
    with path.open("w", encoding="utf-8") as fh:
        def write(r: dict) -> None:
            nonlocal seq
            if "seq" in r:
                seq += 1
                r = {**r, "seq": seq}
            fh.write(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n")

        write(head)
        for r in body[:cut]:
            write(r)
        for k in range(copies):
            for r in sub:
                text = json.dumps(r, ensure_ascii=False, separators=(",", ":"))
                aid = r["agent_id"]
                text = text.replace(f'"{aid}"', f'"{aid}-c{k}"').replace('"call_id":"', f'"call_id":"k{k}-') \
                    .replace('"tool_use_id":"', f'"tool_use_id":"k{k}-').replace('"id":"', f'"id":"k{k}-')
                write(json.loads(text))
        for r in body[cut:]:
            write(r)


def run_measured(argv: list[str]) -> tuple[float, float, int, str]:
    """(wall seconds, peak RSS in MB, exit code, stderr tail) of a child process."""
    t = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - t, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status), err[-300:]


def _argv(cmd: str, t: Path, out: Path) -> list[str]:
    py = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(ROOT)!r}); "
          "from orchestrator.cli import main; sys.exit(main(sys.argv[1:]))"]
    return [*py, *(a.format(t=t, out=out) for a in COMMANDS[cmd])]


def profile(cmd: str, t: Path, out: Path) -> None:
    import tracemalloc

    sys.path.insert(0, str(ROOT))
    from orchestrator.cli import main

    tracemalloc.start(12)
    try:
        main([a.format(t=t, out=out) for a in COMMANDS[cmd]])
    except SystemExit:
        pass
    peak = tracemalloc.get_traced_memory()[1]
    snap = tracemalloc.take_snapshot()
    tracemalloc.stop()
    print(f"{cmd}: traced peak {peak / 1e6:.0f} MB on a {t.stat().st_size / 1e6:.0f} MB file; held at the end:")
    for stat in snap.statistics("traceback")[:15]:
        frames = [f for f in stat.traceback if "orchestrator" in f.filename][-2:] or list(stat.traceback)[-1:]
        where = " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames))
        print(f"  {stat.size / 1e6:8.1f} MB  {where}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,50,200", help="transcript sizes in MB, comma-separated")
    ap.add_argument("--copies", type=int, default=20, help="times the subagents are repeated (many agents)")
    ap.add_argument("--commands", default=",".join(COMMANDS), help="which of: " + ", ".join(COMMANDS))
    ap.add_argument("--profile", default=None, metavar="CMD", help="tracemalloc one command on the middle size")
    args = ap.parse_args()
    sizes = [float(s) for s in args.sizes.split(",")]
    commands = [c.strip() for c in args.commands.split(",")]
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        out = Path(tmp) / "report"
        if args.profile:
            t = Path(tmp) / "t.jsonl"
            build(t, int(sizes[len(sizes) // 2] * 1e6), args.copies)
            profile(args.profile, t, out)
            return
        base = {c: run_measured(_argv(c, SEED, out))[1] for c in commands}
        print(f"{'transcript':>10} {'command':<18} {'wall s':>7} {'peak MB':>8} {'base MB':>8} {'x file':>7}  target")
        for mb in sizes:
            t = Path(tmp) / f"t{mb:g}.jsonl"
            build(t, int(mb * 1e6), args.copies)
            size = t.stat().st_size
            for c in commands:
                wall, rss, rc, err = run_measured(_argv(c, t, out))
                ratio = (rss - base[c]) * 2**20 / size
                ok = "met" if rc == 0 and ratio <= 2 else f"MISSED (exit {rc}: {err.strip()[-120:]})" if rc else "MISSED"
                print(f"{size / 1e6:>8.0f}MB {c:<18} {wall:>7.1f} {rss:>8.0f} {base[c]:>8.0f} {ratio:>7.2f}  <= 2 {ok}")
            t.unlink()


if __name__ == "__main__":
    main()
