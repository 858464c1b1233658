"""Step boundaries of a trace: the engine's step markers where it wrote them, else the periodic structure of the
kernel sequence; then the steady-state steps (warm-up, CUDA-graph capture and a partial last step left out)."""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from itertools import accumulate
from statistics import median

from orchestrator.traces.store import KIND_KERNEL, RankColumns

STEP_MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ProfilerStep#N", re.compile(r"^ProfilerStep#\d+$")),
    ("execute_model", re.compile(r"execute_model")),
    ("gpu_model_runner: forward", re.compile(r"^gpu_model_runner: forward$")),
    ("model_forward", re.compile(r"^(forward_batch|run_batch|model_forward)")),
)
"""Host ranges that mark one step each: torch.profiler's `ProfilerStep#N` (torch/profiler/profiler.py, written when
a schedule is set), vLLM's `execute_model` and `gpu_model_runner: forward` record_function ranges
(vllm/v1/worker/gpu_model_runner.py), SGLang's scheduler batches (`run_batch`, python/sglang/srt/managers/scheduler.py)."""

CAPTURE_CALLS = frozenset({"cudaStreamBeginCapture", "cudaStreamEndCapture", "cudaGraphInstantiate",
                           "cudaGraphInstantiateWithFlags", "cudaStreamBeginCaptureToGraph", "cuStreamBeginCapture",
                           "cuStreamEndCapture", "cuGraphInstantiate", "cuGraphInstantiateWithFlags"})
WARMUP_FACTOR = 1.5
"""A leading step longer than this many times the median step is warm-up (first-call initialisation, autotuning)."""
OUTLIER_FACTOR = 3.0
OUTLIER_SHARE = 0.1
"""A step longer than OUTLIER_FACTOR x the median is left out when such steps are at most OUTLIER_SHARE of all."""
PARTIAL_FACTOR = 0.5
"""A last step shorter than this fraction of the median, or with fewer activities, is the profiler's partial step."""


@dataclass
class Step:
    label: str
    cpu_start: float
    cpu_end: float
    gpu_start: float
    gpu_end: float
    activities: int = 0
    steady: bool = True
    why: str = ""

    @property
    def dur(self) -> float:
        return self.gpu_end - self.gpu_start


@dataclass
class Steps:
    source: str
    steps: list[Step]

    @property
    def steady(self) -> list[Step]:
        return [s for s in self.steps if s.steady]


def launch_times(cols: RankColumns) -> tuple[array, array]:
    """For each GPU activity, the index of the runtime call that launched it (-1: none recorded) and that call's
    start (NaN: none). Correlation ids are looked up by bisection (runtime calls are in correlation order in
    Kineto and nsys output; sorted here when not)."""
    corr = cols.r_corr
    order: array | None = None
    keys: array = corr  # bisect works on the array itself: no copy when already in order
    if any(corr[i] > corr[i + 1] for i in range(len(corr) - 1)):
        order = array("q", sorted(range(len(corr)), key=corr.__getitem__))
        keys = array("q", (corr[i] for i in order))
    idx = array("q")
    ts = array("d")
    nan = float("nan")
    for c in cols.g_corr:
        j = bisect_right(keys, c) - 1
        if c >= 0 and j >= 0 and keys[j] == c:
            ri = order[j] if order is not None else j
            idx.append(ri)
            ts.append(cols.r_ts[ri])
        else:
            idx.append(-1)
            ts.append(nan)
    return idx, ts


def _marker_steps(cols: RankColumns, order: array, launch_ts: array) -> Steps | None:
    for label, pat in STEP_MARKERS:
        marks = sorted({(a.ts, a.end, a.name) for a in cols.annotations if pat.search(a.name)})
        if len(marks) < 2:
            continue
        starts = [m[0] for m in marks]
        steps = [Step(m[2], m[0], m[1], float("inf"), float("-inf")) for m in marks]
        for gi in order:
            t = launch_ts[gi]
            if t != t:  # no launch recorded (NaN)
                continue
            k = bisect_right(starts, t) - 1
            if k < 0 or t > marks[k][1]:
                continue
            s = steps[k]
            s.activities += 1
            s.gpu_start = min(s.gpu_start, cols.g_ts[gi])
            s.gpu_end = max(s.gpu_end, cols.g_end[gi])
        steps = [s for s in steps if s.activities]
        if len(steps) < 2:
            continue
        for a, b in zip(steps, steps[1:]):
            a.gpu_end = b.gpu_start  # idle before the next step's first activity belongs to this step
        return Steps(f"markers: {label}", steps)
    return None


def _periodic_steps(cols: RankColumns, order: array) -> Steps | None:
    """Steps from the kernel sequence: the kernel that runs once per step at a regular spacing (the lowest count
    of kernels whose occurrences are evenly spaced in the sequence), preferring the one the GPU waits for longest
    before (steps begin after the host has scheduled them)."""
    seq = array("q", (gi for gi in order if cols.g_kind[gi] == KIND_KERNEL))
    if len(seq) < 6:
        return None
    where: dict[int, array] = {}
    for at, gi in enumerate(seq):
        pos = where.get(cols.g_name[gi])
        if pos is None:
            pos = where[cols.g_name[gi]] = array("q")
        pos.append(at)
    best: tuple[int, float, int] | None = None
    for name, pos in where.items():
        if len(pos) < 3:
            continue
        spacing = array("q", (b - a for a, b in zip(pos, pos[1:])))
        med = median(spacing)
        if med < 2:
            continue
        regular = sum(1 for s in spacing if abs(s - med) <= 0.1 * med) / len(spacing)
        if regular < 0.8:
            continue
        gap = sum(max(0.0, cols.g_ts[seq[p]] - cols.g_end[seq[p - 1]]) for p in pos if p > 0) / len(pos)
        key = (len(pos), -gap, name)
        if best is None or key < best:
            best = key
    if best is None:
        return None
    anchor = best[2]
    positions = where[anchor]
    steps: list[Step] = []
    for i, p in enumerate(positions):
        q = positions[i + 1] if i + 1 < len(positions) else len(seq)
        start = cols.g_ts[seq[p]]
        end = cols.g_ts[seq[q]] if q < len(seq) else max(cols.g_end[seq[x]] for x in range(p, q))
        steps.append(Step(f"step {i}", start, end, start, end, activities=q - p))
    return Steps(f"periodic: anchor kernel {cols.names[anchor][:120]}", steps)


def find_steps(cols: RankColumns, order: array, launch_ts: array, whole: bool = False) -> Steps:
    found = None if whole else (_marker_steps(cols, order, launch_ts) or _periodic_steps(cols, order))
    if found is None:
        start = min(cols.g_ts) if cols.n_gpu else 0.0
        end = max(cols.g_end) if cols.n_gpu else 0.0
        found = Steps("whole trace", [Step("whole trace", start, end, start, end, cols.n_gpu)])
    _mark_steady(cols, found)
    return found


def _mark_steady(cols: RankColumns, found: Steps) -> None:
    steps = found.steps
    if len(steps) < 3:
        return
    capture = sorted((cols.r_ts[i], cols.r_end[i]) for i in range(cols.n_runtime)
                     if cols.names[cols.r_name[i]] in CAPTURE_CALLS)
    starts = [a for a, _ in capture]
    latest_end = list(accumulate((b for _, b in capture), max))  # the latest end among the captures begun so far
    for s in steps:
        lo, hi = min(s.cpu_start, s.gpu_start), max(s.cpu_end, s.gpu_end)
        k = bisect_left(starts, hi)  # captures that begin before the step ends: does one end after it begins?
        if k and latest_end[k - 1] > lo:
            s.steady, s.why = False, "CUDA-graph capture"
    med = median(s.dur for s in steps)
    med_acts = median(s.activities for s in steps)
    for s in steps:
        if not s.steady:
            continue
        if s.dur > WARMUP_FACTOR * med:
            s.steady, s.why = False, f"warm-up ({s.dur / med:.1f}x the median step)"
        else:
            break
    outliers = [s for s in steps if s.steady and s.dur > OUTLIER_FACTOR * med]
    if len(outliers) <= OUTLIER_SHARE * len(steps):  # rare hiccups; a recurring slow step stays in the account
        for s in outliers:
            s.steady, s.why = False, f"outlier ({s.dur / med:.1f}x the median step)"
    last = steps[-1]
    if last.steady:  # no next step starts after it: its idle tail is unknown, and the profiler often cut it short
        last.steady = False
        last.why = ("partial last step" if last.dur < PARTIAL_FACTOR * med or last.activities < PARTIAL_FACTOR * med_acts
                    else "last step (no next step bounds its idle tail)")
    if not found.steady:
        for s in steps:
            s.steady, s.why = True, ""
