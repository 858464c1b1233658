"""Hostile traces (the red team's round 3, S2-S4, m4, m5, m8): every one ends in a result or one clean line, in
bounded memory and time; the analysis runs in a child process that a deadline or Ctrl-C really stops.

The attacks that, unbounded, take gigabytes or minutes run in a child under RLIMIT_AS (tests/fuzz/bounded.py): a
regression fails there instead of taking the shared machine down.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import sqlite3
import sys
import time
from pathlib import Path

import anyio
import pytest

from orchestrator.traces import steps as steps_mod
from orchestrator.traces.analyze import analyze
from orchestrator.traces.inputs import TraceInputError, expand
from orchestrator.traces.kineto import BAD_TIME, TraceFormatError, read_header, read_kineto
from orchestrator.traces.nsys import NsysFormatError, connect, read_nsys
from orchestrator.traces.store import RankColumns

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the fuzz helpers
from fuzz.bounded import json_out, run_bounded  # noqa: E402

DATA = Path(__file__).parent / "data"
SQLITE = DATA / "prefill_eager_collective.sqlite"


def _gz(path: Path, text: str) -> Path:
    path.write_bytes(gzip.compress(text.encode(), 9))
    return path


def _kernel(name: str = "nvjet_sm90_tst", ts: float = 10.0, **extra) -> dict:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": 5.0,
            "args": {"stream": 7, "device": 0, "correlation": 1}, **extra}


def _trace(events: list, head: str = '"schemaVersion": 1') -> str:
    return "{" + head + ', "traceEvents": [' + ", ".join(e if isinstance(e, str) else json.dumps(e) for e in events) + "]}"


# --- S2: nesting --------------------------------------------------------------------------------------------------

def test_nesting_60k_deep_in_the_header_is_one_line_and_exit_2_in_bounded_memory(tmp_path):
    """(a): the up-front --trace check. ijson's prefix paths took 3.9 GB for this (a traceback, MemoryError)."""
    bomb = _gz(tmp_path / "rank0.json.gz", '{"deviceProperties": ' + "[" * 60_000 + "]" * 60_000 + ', "traceEvents": []}')
    assert bomb.stat().st_size < 400
    code = ("import sys; from orchestrator.cli import main; "
            "sys.exit(main(['why slow?', '--trace', sys.argv[1], '--offline', '--no-progress', '--transcript', "
            "sys.argv[2]]))")
    res = run_bounded(code, mem_mb=1024, timeout_s=60, args=[str(bomb), str(tmp_path / "t.jsonl")])
    lines = [ln for ln in res.err.splitlines() if ln.strip()]
    assert res.rc == 2 and "Traceback" not in res.err and len(lines) == 1, res.err[-2000:]
    assert "nested more than 64 levels" in lines[0] and str(bomb) in lines[0], lines[0]
    assert res.peak_mb < 300, res.peak_mb


_READ_IN_CHILD = """
import json, sys, anyio
from orchestrator.traces.kineto import read_kineto, TraceFormatError
from orchestrator.prongs.trace.tool import analyze_in_child
from orchestrator.errors import ToolFailure
out = {}
try:
    read_kineto(__import__("pathlib").Path(sys.argv[1]))
except TraceFormatError as e:
    out["read"] = str(e)
try:
    anyio.run(analyze_in_child, [sys.argv[1]], None, False)
except ToolFailure as e:
    out["tool"] = str(e)
print(json.dumps(out))
"""


def test_nesting_60k_deep_inside_an_event_is_refused_by_the_reader_and_the_tool_in_bounded_memory(tmp_path):
    """(b): nesting inside an event passed the header check and took the investigating process's memory."""
    bomb = _gz(tmp_path / "rank0.json.gz", _trace([_kernel(), '{"ph": "X", "cat": "cpu_op", "args": {"x": '
                                                   + "[" * 60_000 + "]" * 60_000 + "}}"]))
    res = run_bounded(_READ_IN_CHILD, mem_mb=1024, timeout_s=60, args=[str(bomb)])
    got = json_out(res)
    for where in ("read", "tool"):
        assert "nested more than 64 levels" in got[where] and "\n" not in got[where], got
    assert res.peak_mb < 300, res.peak_mb


def test_nesting_past_64_levels_is_refused_and_up_to_64_is_read(tmp_path):
    def nest(n: int) -> str:
        return "[" * n + "]" * n

    ok = tmp_path / "ok.json"
    ok.write_text(_trace([_kernel(), '{"ph": "X", "cat": "cpu_op", "args": {"x": ' + nest(62) + "}}"],
                         head='"deviceProperties": [{"name": "NVIDIA H200", "x": ' + nest(61) + "}]"))
    cols = read_kineto(ok)
    assert cols.n_gpu == 1 and cols.gpu_name == "NVIDIA H200"
    for where in ("head", "event"):
        bad = tmp_path / f"bad-{where}.json"
        deep = nest(70 if where == "head" else 200)
        bad.write_text(_trace([_kernel(), '{"ph": "X", "args": {"x": ' + deep + "}}" if where == "event" else _kernel()],
                              head=f'"distributedInfo": {deep}' if where == "head" else '"schemaVersion": 1'))
        with pytest.raises(TraceFormatError, match="nested more than 64 levels"):
            read_kineto(bad)


def test_an_event_past_the_byte_cap_is_refused_and_errors_never_quote_the_file(tmp_path):
    big = tmp_path / "big.json"
    big.write_text(_trace([_kernel(), _kernel(name="k" * (1 << 20))]))
    with pytest.raises(TraceFormatError, match="longer than 1,048,576 characters"):
        read_kineto(big)
    broken = tmp_path / "broken.json"
    broken.write_text('{"traceEvents": [{"ph": "X", "breakglass": "CANARY-91xQ", // rotate\n}]}')
    with pytest.raises(TraceFormatError) as info:
        read_kineto(broken)
    assert "CANARY" not in str(info.value) and "rotate" not in str(info.value) and "character" in str(info.value)


def test_hostile_event_shapes_are_left_out_or_read_never_a_crash(tmp_path):
    p = tmp_path / "shapes.json"
    p.write_text(_trace([_kernel(), 7, '"x"', [1], None, {"ph": "X", "cat": "kernel", "ts": 1, "args": [1, 2]},
                         {"ph": "X", "cat": {"a": 1}, "ts": 1}, _kernel(name=12345, ts=20.0),
                         {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "args": {"Input Dims": "[[1, 2]]"}},
                         {"ph": "X", "cat": "cpu_op", "name": "aten::mm",
                          "args": {"Input Dims": [[10**40, 2], [2, 3]], "Input type": [{"a": 1}], "External id": 1e300}},
                         _kernel(ts=30.0, args={"stream": 1e300, "device": "x", "correlation": float("nan")})]))
    cols = read_kineto(p)
    assert cols.n_gpu == 4 and cols.skipped.get("not an object") == 4, cols.skipped
    assert cols.names[cols.g_name[2]] == "12345"
    analyze([str(p)])  # and the account of it does not raise


# --- m5: times ----------------------------------------------------------------------------------------------------

def test_non_finite_or_out_of_range_times_are_left_out_and_counted(tmp_path):
    """ts 1e308 / dur +-1.7e308 became Infinity in the findings (no diagnosis, a traceback in replay)."""
    doc = json.load(gzip.open(DATA / "prefill_eager.json.gz"))
    bad = [_kernel(ts=1e308), _kernel(dur=1.7e308), _kernel(dur=-1.7e308), _kernel(ts="abc"), _kernel(ts=None),
           {k: v for k, v in _kernel().items() if k != "ts"}, _kernel(ts=True)]
    head = json.dumps({k: v for k, v in doc.items() if k != "traceEvents"})[1:-1]
    text = _trace([*doc["traceEvents"], *bad, '{"ph": "X", "cat": "kernel", "name": "k", "ts": NaN, "dur": 1}',
                   '{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": Infinity}',
                   '{"ph": "X", "cat": "kernel", "name": "k", "ts": 1e999, "dur": 1}'], head=head)
    p = _gz(tmp_path / "rank0.json.gz", text)
    report = analyze([str(p)])
    assert report.ranks[0].skipped[BAD_TIME] == len(bad) + 3
    numbers = json.loads(report.model_dump_json())

    def finite(o):
        if isinstance(o, float):
            assert math.isfinite(o)
        elif isinstance(o, dict):
            any(finite(v) for v in o.values())
        elif isinstance(o, list):
            any(finite(v) for v in o)

    finite(numbers)
    assert report.ranks[0].steady_steps == analyze([str(DATA / "prefill_eager.json.gz")]).ranks[0].steady_steps


# --- S4: names and steps ------------------------------------------------------------------------------------------

_ANALYZE_IN_CHILD = """
import json, sys, time
from orchestrator.traces.analyze import analyze
started = time.monotonic()
r = analyze([sys.argv[1]])
print(json.dumps({"s": time.monotonic() - started, "names": [k.name for k in r.ranks[0].top_kernels]}))
"""


def test_two_100kb_kernel_names_are_cut_and_classified_in_linear_time(tmp_path):
    """S4: `sm\\d+_.*(tn|nt|nn|tt)` searched anywhere in a 100 kB name: 87 s for 393 bytes of gzip."""
    p = _gz(tmp_path / "rank0.json.gz", _trace([_kernel(name="sm1_" * 25_000 + str(i), ts=10.0 * i) for i in range(2)]))
    assert p.stat().st_size < 600
    got = json_out(run_bounded(_ANALYZE_IN_CHILD, mem_mb=1024, timeout_s=60, args=[str(p)]))
    assert got["s"] < 5, got["s"]
    assert all(len(n) <= 1024 for n in got["names"]), [len(n) for n in got["names"]]


def test_distinct_names_are_kept_up_to_the_cap(tmp_path, monkeypatch):
    from orchestrator.traces import store

    monkeypatch.setattr(store, "TRACE_MAX_NAMES", 3)
    cols = RankColumns(source="x")
    ids = [cols.name_id(f"k{i}") for i in range(10)]
    assert ids[:3] == [0, 1, 2] and set(ids[3:]) == {3} and len(cols.names) == 4
    assert cols.names[3] == store.MORE_NAMES and cols.name_id("k1") == 1


def test_the_steady_step_check_is_linear_in_steps_and_capture_calls():
    """O(steps x capture calls) before: 10k x 10k took 2.9 s; 300k x 300k would take 45 min."""
    n = 20_000
    cols = RankColumns(source="x")
    for i in range(n):  # a capture call inside every other step's span, all of them before the last 10 steps
        cols.add_runtime("cudaStreamBeginCapture" if i % 2 == 0 else "cudaLaunchKernel", 10.0 * i + 1, 1.0,
                         i, 1)
    found = steps_mod.Steps("t", [steps_mod.Step(f"s{i}", 10.0 * i, 10.0 * i + 10, 10.0 * i, 10.0 * i + 9, 5)
                                  for i in range(n + 10)])
    started = time.monotonic()
    steps_mod._mark_steady(cols, found)
    assert time.monotonic() - started < 2
    marked = [s.why == "CUDA-graph capture" for s in found.steps]
    assert marked[:n] == [i % 2 == 0 for i in range(n)] and not any(marked[n:])


# --- S3, m8: nsys ---------------------------------------------------------------------------------------------------

def _export(path: Path, string_ids: str, rows: str = "") -> Path:
    db = sqlite3.connect(path)
    db.executescript(f"""
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
            correlationId INTEGER, demangledName INTEGER, shortName INTEGER);
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 5000, 0, 7, 1, 1, 1);
        {string_ids}
        {rows}
    """)
    db.commit()
    db.close()
    return path


def test_a_generated_column_bomb_is_refused_up_front_and_by_the_reader_in_bounded_memory(tmp_path):
    """S3: 200 rows of `v0 || hex(zeroblob(50000000))`: 12 kB of file, MemoryError at 4 GB."""
    bomb = _export(tmp_path / "bomb.sqlite", "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, v0 TEXT);",
                   "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200) "
                   "INSERT INTO StringIds (id, v0) SELECT x, 'k' FROM c; "  # added after the rows: not computed now
                   "ALTER TABLE StringIds ADD COLUMN value TEXT GENERATED ALWAYS AS (v0 || hex(zeroblob(50000000))) "
                   "VIRTUAL;")
    assert bomb.stat().st_size < 20_000
    code = """
import json, sys
from pathlib import Path
from orchestrator.traces.inputs import TraceInputError, expand
from orchestrator.traces.nsys import NsysFormatError, read_nsys
out = {}
try:
    expand([sys.argv[1]])
except TraceInputError as e:
    out["check"] = str(e)
try:
    read_nsys(Path(sys.argv[1]))
except NsysFormatError as e:
    out["read"] = str(e)
print(json.dumps(out))
"""
    res = run_bounded(code, mem_mb=1024, timeout_s=60, args=[str(bomb)])
    got = json_out(res)
    for where in ("check", "read"):
        assert "generated or hidden column (value)" in got[where], got
    assert res.peak_mb < 300, res.peak_mb


def test_virtual_read_tables_stored_values_past_the_cap_and_too_many_strings_are_refused(tmp_path, monkeypatch):
    virt = _export(tmp_path / "virt.sqlite", "CREATE VIRTUAL TABLE StringIds USING fts5(id, value);")
    with pytest.raises(NsysFormatError, match="virtual table"):
        read_nsys(virt)
    with pytest.raises(TraceInputError, match="virtual table"):
        expand([str(virt)])
    big = _export(tmp_path / "big.sqlite", "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);",
                  "INSERT INTO StringIds VALUES (1, 'k' || hex(zeroblob(1500000)));")
    with pytest.raises(NsysFormatError, match="too big"):
        read_nsys(big)
    many = _export(tmp_path / "many.sqlite", "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);",
                   "INSERT INTO StringIds VALUES (1, 'k'), (2, 'l'), (3, 'm');")
    from orchestrator.traces import nsys

    monkeypatch.setattr(nsys, "NSYS_STRINGS_MAX_ROWS", 2)
    with pytest.raises(NsysFormatError, match="more than 2 strings"):
        read_nsys(many)
    monkeypatch.undo()
    assert read_nsys(many).names == ["k"]


def test_reading_an_export_stops_at_its_deadline():
    db = connect(SQLITE, timeout_s=0.2)
    started = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="interrupt"):
        db.execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 30000000) "
                   "SELECT count(*) FROM c").fetchone()
    assert time.monotonic() - started < 3
    db.close()


def test_an_export_file_name_is_never_read_as_uri_syntax(tmp_path):
    """m8: `file:{path}?mode=ro` unquoted read `%2e%2e%2fv%2fother.sqlite` as ../v/other.sqlite, and a name with
    `?mode=rwc&` made the read-only check create a file."""
    d = tmp_path / "profiles"
    d.mkdir()
    odd = d / "%2e%2e%2fv%2fother.sqlite"
    odd.write_bytes(SQLITE.read_bytes())
    assert [f.name for f, _ in expand([str(odd)])] == [odd.name]
    assert read_nsys(odd).n_gpu == read_nsys(SQLITE).n_gpu
    sneaky = d / "x?mode=rwc&y=.sqlite"
    sneaky.write_bytes(SQLITE.read_bytes())
    expand([str(sneaky)])
    read_nsys(sneaky)
    assert sorted(p.name for p in d.iterdir()) == sorted([odd.name, sneaky.name])  # no `x` created


# --- m4: a FIFO ---------------------------------------------------------------------------------------------------

def test_a_fifo_named_as_a_trace_is_one_line_and_exit_2_at_once(tmp_path):
    fifo = tmp_path / "rank0.json"
    os.mkfifo(fifo)
    code = ("import sys; from orchestrator.cli import main; "
            "sys.exit(main(['why slow?', '--trace', sys.argv[1], '--offline', '--no-progress', '--transcript', "
            "sys.argv[2]]))")
    res = run_bounded(code, mem_mb=1024, timeout_s=30, args=[str(fifo), str(tmp_path / "t.jsonl")])
    lines = [ln for ln in res.err.splitlines() if ln.strip()]
    assert not res.timed_out and res.rc == 2 and len(lines) == 1, (res.timed_out, res.err[-2000:])
    assert "FIFO" in lines[0] and str(fifo) in lines[0]


# --- the analysis stops with its caller -----------------------------------------------------------------------------

def _slow_trace(path: Path) -> Path:
    """~3 s of analysis here: 400k kernels in 3 MB of gzip."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=1) as g:
        g.write(b'{"traceEvents": [')
        chunk = b"".join(b'{"ph":"X","cat":"kernel","name":"k%d","ts":%d,"dur":1,"args":{"stream":7,"correlation":%d}},'
                         % (i % 50, i * 3, i) for i in range(10_000))
        for _ in range(40):
            g.write(chunk)
        g.write(b'{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":1}]}')
    path.write_bytes(buf.getvalue())
    return path


def _workers() -> list[int]:
    """Our children running the trace worker."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and b"orchestrator.traces.worker" in cmd:
            out.append(int(pid))
    return out


async def test_a_cancelled_analysis_stops_its_child_at_once(tmp_path):
    """A deadline or Ctrl-C cancels the tool: the analysis ran in an abandoned thread for up to 3,600 s."""
    from orchestrator.prongs.trace.tool import analyze_in_child

    p = _slow_trace(tmp_path / "rank0.json.gz")
    seen: list[list[int]] = []

    async def watch() -> None:
        await anyio.sleep(0.8)
        seen.append(_workers())

    started = time.monotonic()
    with anyio.move_on_after(1.2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            await analyze_in_child([str(p)], None, False)
    assert time.monotonic() - started < 3
    assert seen and seen[0], "the worker was not running"
    assert _workers() == [] and all(not Path(f"/proc/{pid}").exists() for pid in seen[0])


async def test_a_child_past_its_memory_bound_is_one_line(tmp_path, monkeypatch):
    from orchestrator import limits
    from orchestrator.errors import ToolFailure
    from orchestrator.prongs.trace.tool import analyze_in_child

    p = tmp_path / "rank0.json.gz"  # 80k distinct names of 1,000 characters: 80 MB once read, 250 kB of gzip
    with gzip.open(p, "wb", compresslevel=1) as g:
        g.write(b'{"traceEvents": [')
        g.write(b",".join(b'{"ph":"X","cat":"kernel","name":"%s%d","ts":%d,"dur":1}' % (b"k" * 994, i, i)
                          for i in range(80_000)))
        g.write(b"]}")
    monkeypatch.setattr(limits, "TRACE_ANALYSIS_MEMORY_BYTES", 64 << 20)
    with pytest.raises(ToolFailure, match="needed more than its 0.0625 GiB of memory") as info:
        await analyze_in_child([str(p)], None, False)
    assert "\n" not in str(info.value)


def test_read_header_reads_only_the_keys_before_trace_events(tmp_path):
    p = tmp_path / "t.json"
    p.write_text('{"distributedInfo": {"rank": 3}, "traceEvents": [' + "[" * 100_000 + "]" * 100_000 + "]}")
    assert read_header(p) == {"distributedInfo": {"rank": 3}}


def test_an_offline_run_on_a_trace_with_out_of_range_times_gives_a_finite_diagnosis_and_replays(tmp_path, capsys):
    """m5 end to end: ts 1e308 / dur +-1.7e308 became Infinity in the findings; the offline run ended with no
    diagnosis (exit 1) and `replay --offline` with a traceback."""
    from orchestrator.cli import main

    doc = json.load(gzip.open(DATA / "prefill_eager.json.gz"))
    head = json.dumps({k: v for k, v in doc.items() if k != "traceEvents"})[1:-1]
    p = tmp_path / "rank0.json"
    p.write_text(_trace([*doc["traceEvents"], _kernel(ts=1e308), _kernel(dur=1.7e308), _kernel(dur=-1.7e308)],
                        head=head))
    t = tmp_path / "t.jsonl"
    assert main(["why is prefill slow?", "--trace", str(p), "--offline", "--no-progress", "--transcript", str(t),
                 "--json"]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err and json.loads(out.out)["verdict"]
    text = t.read_text()
    assert "Infinity" not in text and "NaN" not in text and "3 events left out" in text
    assert main(["replay", str(t), "--offline", "--json"]) == 0
    assert "Traceback" not in capsys.readouterr().err
