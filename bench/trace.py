"""Trace reading side by side with HTA (HolisticTraceAnalysis, installed in a separate venv, not a dependency):
the temporal breakdown on the same file (agreement), then wall time and peak RSS on a large Kineto trace made by
replicating a real trace's steps (ratios in one run).

    python bench/trace.py --trace REAL.json.gz --hta-python /tmp/htavenv/bin/python --size-mb 1000
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OURS = """
import json, resource, sys, time
from pathlib import Path
from orchestrator.traces.kineto import read_kineto
from orchestrator.traces.step_account import account_rank
from array import array
t = time.perf_counter()
cols = read_kineto(Path(sys.argv[1]))
if len(sys.argv) > 2:  # HTA's view: integer microseconds, the last profiler step dropped (hta/common/trace_parser.py)
    steps = sorted(a.ts for a in cols.annotations if a.name.startswith("ProfilerStep#"))
    cut = steps[-1] if steps else float("inf")
    keep = [i for i in range(cols.n_gpu) if cols.g_ts[i] < cut]
    for name in ("g_stream", "g_device", "g_name", "g_kind", "g_corr", "g_ext"):
        col = getattr(cols, name)
        setattr(cols, name, array(col.typecode, (col[i] for i in keep)))
    ts = [int(cols.g_ts[i]) for i in keep]
    ends = [int(cols.g_ts[i]) + int(cols.g_end[i] - cols.g_ts[i]) for i in keep]
    cols.g_ts, cols.g_end = array("d", ts), array("d", ends)
a = account_rank(cols, whole=True)
b = a.breakdown
compute = sum(v for c, v in b.by_class_us.items() if c not in ("communication", "memcpy", "memset"))
print(json.dumps({"wall_s": time.perf_counter() - t, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "idle": b.idle_us / b.step_us, "compute": compute / b.step_us,
                  "non_compute": (b.busy_us - compute) / b.step_us, "events": a.events_read}))
"""

HTA = """
import json, resource, sys, time, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
t = time.perf_counter()
ta = TraceAnalysis(trace_dir=sys.argv[1])
df = ta.get_temporal_breakdown(visualize=False)
r = df.iloc[0]
print(json.dumps({"wall_s": time.perf_counter() - t, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "idle": r["idle_time(us)"] / r["kernel_time(us)"], "compute": r["compute_time(us)"] / r["kernel_time(us)"],
                  "non_compute": r["non_compute_time(us)"] / r["kernel_time(us)"]}))
"""


def run(python: str, code: str, *args: str, timeout: float | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    try:
        out = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, env=env, check=False,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"wall_s": float("inf"), "rss_mb": float("nan"), "idle": float("nan"), "compute": float("nan"),
                "non_compute": float("nan"), "timed_out": True}
    if out.returncode:
        raise SystemExit(f"{python} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def replicate(src: Path, dst: Path, size_mb: float) -> int:
    """Write a Kineto trace of about size_mb by repeating src's complete events shifted in time (ids offset):
    each copy is the serialized events with their times and ids rewritten, streamed out."""
    doc = json.load(gzip.open(src) if src.suffix == ".gz" else open(src))
    events = doc.pop("traceEvents")
    xs = [e for e in events if e.get("ph") == "X"]
    base = min(e["ts"] for e in xs)
    span = max(e["ts"] + e.get("dur", 0) for e in xs) - base + 1000.0
    for e in xs:
        e["ts"] = round(e["ts"] - base, 3)  # relative times: each copy adds its own offset
    meta = ",\n".join(json.dumps(e) for e in events if e.get("ph") != "X")
    body = ",\n".join(json.dumps(e) for e in xs)
    copies = max(1, int(size_mb * 1e6 / len(body)))
    # split once: text pieces between the numbers a copy rewrites (times, correlation / External ids)
    pieces = re.split(r'(?<="ts": )(-?[0-9.]+)|(?<="correlation": )([0-9]+)|(?<="External id": )([0-9]+)', body)
    texts = pieces[0::4]
    nums = [(float(t), True) if t is not None else (int(a or b), False)
            for t, a, b in zip(pieces[1::4], pieces[2::4], pieces[3::4])]
    with open(dst, "w") as f:
        f.write(json.dumps(doc)[:-1] + ', "traceEvents": [\n' + meta)
        for c in range(copies):
            off, idoff = base + c * span, c * 10_000_000
            out = [texts[0]]
            for (v, is_ts), t in zip(nums, texts[1:]):
                out.append(f"{v + off:.3f}" if is_ts else str(v + idoff))
                out.append(t)
            f.write(",\n" + "".join(out))
        f.write("\n]}\n")
    return copies


def profile(src: Path) -> None:
    """Where the time goes in reading and accounting one trace, by function (cProfile, internal time)."""
    import cProfile
    import pstats

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from orchestrator.traces.step_account import account_rank
    from orchestrator.traces.kineto import read_kineto

    prof = cProfile.Profile()
    prof.enable()
    account_rank(read_kineto(src))
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(10)


def profile_memory(src: Path) -> None:
    """Where the memory goes: the columns the reader keeps (bytes per structure), then the account's traced peak
    (tracemalloc, started after reading: tracing the reader's millions of short-lived dicts takes hours)."""
    import resource
    import tracemalloc

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from orchestrator.traces.step_account import account_rank
    from orchestrator.traces.kineto import read_kineto

    t = time.perf_counter()
    cols = read_kineto(src)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"read: {time.perf_counter() - t:.0f} s, peak RSS {rss:.0f} MB; {cols.n_gpu} GPU activities, "
          f"{cols.n_runtime} runtime calls, {len(cols.annotations)} host ranges, {cols.n_shapes} GEMM shapes")
    total = 0
    for k, v in vars(cols).items():
        size = sys.getsizeof(v) + (sum(sys.getsizeof(x) for x in v) if isinstance(v, list) else 0)
        total += size
        if size > 1e5:
            print(f"  {k:14}{size / 1e6:8.1f} MB")
    print(f"  {'columns':14}{total / 1e6:8.1f} MB ({total / max(1, cols.n_gpu + cols.n_runtime):.0f} B per activity "
          "or runtime call)")
    tracemalloc.start(1)
    for whole in (True, False):
        tracemalloc.reset_peak()
        t = time.perf_counter()
        account_rank(cols, whole=whole)
        _, peak = tracemalloc.get_traced_memory()
        print(f"account ({'whole trace' if whole else 'steps'}): {time.perf_counter() - t:.0f} s, traced peak "
              f"{peak / 1e6:.1f} MB ({peak / max(1, cols.n_gpu):.0f} B per GPU activity)")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", required=True)
    ap.add_argument("--hta-python", default="/tmp/htavenv/bin/python")
    ap.add_argument("--size-mb", type=float, default=1000.0)
    ap.add_argument("--skip-hta-big", action="store_true", help="large trace: our reader only (e.g. a 5 GB trace)")
    ap.add_argument("--hta-timeout", type=float, default=3600.0, help="give HTA this long on the large trace")
    ap.add_argument("--profile", action="store_true", help="only: where the reader's time goes (cProfile)")
    ap.add_argument("--profile-memory", action="store_true", help="only: where the memory goes (columns, tracemalloc)")
    a = ap.parse_args()
    if a.profile:
        profile(Path(a.trace))
        return
    if a.profile_memory:
        profile_memory(Path(a.trace))
        return
    tmp = Path(tempfile.mkdtemp(prefix="tracebench-"))
    real = tmp / "real"
    real.mkdir()
    raw = real / "rank0.json"
    src = Path(a.trace)
    raw.write_bytes(gzip.open(src).read() if src.suffix == ".gz" else src.read_bytes())
    ours, hta = run(sys.executable, OURS, str(raw)), run(a.hta_python, HTA, str(real))
    same = run(sys.executable, OURS, str(raw), "hta-view")
    print(f"temporal breakdown of {src.name} (whole trace, fractions of the GPU span)")
    print(f"{'':14}{'ours':>10}{'ours, HTA view':>16}{'HTA':>10}{'diff':>10}")
    for k in ("idle", "compute", "non_compute"):
        print(f"{k:14}{ours[k]:10.4f}{same[k]:16.4f}{hta[k]:10.4f}{same[k] - hta[k]:+10.4f}")
    big_dir = tmp / "big"
    big_dir.mkdir()
    big = big_dir / "rank0.json"
    t = time.perf_counter()
    copies = replicate(src, big, a.size_mb)
    size = big.stat().st_size / 1e6
    print(f"\nlarge trace: {size:.0f} MB ({copies} copies of {src.name}), written in {time.perf_counter() - t:.0f} s")
    ob = run(sys.executable, OURS, str(big))
    print(f"ours: {ob['wall_s']:.1f} s, peak RSS {ob['rss_mb']:.0f} MB", flush=True)
    hb = None if a.skip_hta_big else run(a.hta_python, HTA, str(big_dir), timeout=a.hta_timeout)
    if hb and hb.get("timed_out"):
        print(f"HTA did not finish within {a.hta_timeout:.0f} s")
    print(f"{'':14}{'ours':>10}{'HTA':>10}{'ratio':>10}")
    for k, _unit in (("wall_s", "s"), ("rss_mb", "MB")):
        hv = hb[k] if hb else float("nan")
        print(f"{k:14}{ob[k]:10.1f}{hv:10.1f}{ob[k] / hv if hb else float('nan'):10.2f}")
    if hb:
        for k in ("idle", "compute", "non_compute"):
            print(f"{k:14}{ob[k]:10.4f}{hb[k]:10.4f}{ob[k] - hb[k]:+10.4f}")
    print(f"events read: {ob['events']}")
    big.unlink()


if __name__ == "__main__":
    main()
