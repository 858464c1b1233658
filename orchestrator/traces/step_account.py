"""Where each step's time went on one rank: busy by kernel class vs idle as interval unions, idle by cause, the
host ranges the GPU waited in, synchronizing calls, launch statistics, top kernels and recorded GEMM shapes.

Definitions follow HTA where it has one (hta/analyzers/breakdown_analysis.py, cuda_kernel_analysis.py;
https://github.com/facebookresearch/HolisticTraceAnalysis): communication or copies that overlap compute count as
compute; a gap before an activity whose launch call started after the GPU went idle is host-bound ("host wait");
runtime calls over 50 us and kernels shorter than their launch call are flagged.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Iterable
from statistics import median

from orchestrator.traces import intervals as iv
from orchestrator.traces.classes import COMM, COMPUTE, PRIORITY, classify
from orchestrator.traces.model import (Breakdown, ClassRow, GemmRow, IdleOwner, KernelRow, LaunchStats, RankAccount,
                                       StepRow, StreamRow, SyncRow)
from orchestrator.traces.steps import STEP_MARKERS, find_steps, launch_times
from orchestrator.traces.store import KIND_MEMCPY, KIND_MEMSET, RankColumns


@dataclass(frozen=True)
class AccountLimits:
    """The thresholds of the account, each with its origin."""

    short_gap_us: float = 5.0
    """A gap between back-to-back activities shorter than this is launch latency, not waiting (HTA's
    consecutive_kernel_delay plays this role; ~5 us is the floor of a kernel launch on current GPUs)."""
    runtime_cutoff_us: float = 50.0
    """HTA's runtime_cutoff: a launch call longer than this is slow (cuda_kernel_analysis.py)."""
    sync_idle_slack_us: float = 20.0
    """A GPU gap that starts within this long of a synchronizing call's return is the cost of that call."""
    top_kernels: int = 15
    idle_owners: int = 8


SYNC_CALLS = frozenset({"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
                        "cudaMemcpy2D", "cudaMemset", "cuCtxSynchronize", "cuStreamSynchronize",
                        "cuEventSynchronize", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2"})
"""Host calls that block until the device is done (nsys expert rule cuda_api_sync and cuda_memcpy_sync:
https://docs.nvidia.com/nsight-systems/UserGuide/index.html#expert-system-rules)."""
ASYNC_COPY_CALLS = frozenset({"cudaMemcpyAsync", "cuMemcpyAsync", "cuMemcpyDtoHAsync_v2", "cuMemcpyHtoDAsync_v2"})
"""Async copies that block the host anyway when one side is pageable memory (CUDA runtime API, API sync behavior:
https://docs.nvidia.com/cuda/cuda-runtime-api/api-sync-behavior.html)."""


def _pct(sorted_vals: list[float] | array, q: float) -> float:
    if not sorted_vals:
        return 0.0
    k = min(len(sorted_vals) - 1, max(0, math.ceil(q * len(sorted_vals)) - 1))
    return sorted_vals[k]


def _dtype(type_name: str) -> str:
    t = type_name.lower()
    if "bfloat16" in t:
        return "bf16"
    if "half" in t:
        return "fp16"
    if "float8" in t:
        return "fp8"
    if t in ("float", "c10::float"):
        return "fp32"
    return t or "unknown"


MAX_DIM = 1 << 40
"""A GEMM dimension (or batch) beyond this is not a shape a profiler recorded: the op is left off the roofline."""


def _dim(x: Any) -> int:
    """One recorded size: a positive int within MAX_DIM (ValueError otherwise)."""
    if isinstance(x, bool) or not isinstance(x, int) or not 0 < x <= MAX_DIM:
        raise ValueError(x)
    return x


def gemm_shape(op: str, dims: list, types: list[str]) -> tuple[int, int, int, int, str] | None:
    """(m, n, k, batch, dtype) of a GEMM-like op from its recorded Input Dims; None when they do not fit."""
    try:
        mats = [d for d in dims if isinstance(d, list) and len(d) >= 2]
        tidx = next((i for i, d in enumerate(dims) if isinstance(d, list) and len(d) >= 2), 0)
        dt = _dtype(types[tidx]) if tidx < len(types) else "unknown"
        if op == "aten::linear":
            x, w = dims[0], dims[1]
            shape = (math.prod(map(_dim, x[:-1])), _dim(w[0]), _dim(x[-1]), 1)
        else:
            a, b = mats[0], mats[1]
            if len(a) == 3 and len(b) == 3:
                shape = (_dim(a[1]), _dim(b[2]), _dim(a[2]), _dim(a[0]))
            elif len(b) == 2:
                shape = (math.prod(map(_dim, a[:-1])), _dim(b[1]), _dim(a[-1]), 1)
            else:
                shape = (_dim(a[-2]), _dim(b[-1]), _dim(a[-1]), math.prod(map(_dim, b[:-2])))
        m, n, k, batch = (_dim(v) for v in shape)  # products within MAX_DIM too
        return m, n, k, batch, dt
    except (IndexError, TypeError, ValueError, StopIteration, OverflowError):
        return None


_HOST, _SHORT, _OTHER = 0, 1, 2
_CAUSES = ("host_bound", "short_gap", "other")


class _StreamStep:
    """One stream's share of one steady step, fed its activities in start order: the union of its busy time and
    its gaps by cause (HTA's idle breakdown is per stream), added to the stream's totals when the step closes."""

    __slots__ = ("tot", "busy", "count", "prev_end")

    def __init__(self, tot: list[float]) -> None:
        self.tot = tot  # [busy, activities, idle host-bound, idle short gaps, idle other]
        self.busy = iv.Merger()
        self.count = 0
        self.prev_end = float("nan")

    def add(self, ts: float, end: float, ws: float, we: float, launch_ts: float, short_gap_us: float) -> None:
        self.busy.add(ts if ts > ws else ws, end if end < we else we)
        self.count += 1
        prev = self.prev_end
        if prev == prev:
            if ts > prev:
                gap = ts - prev
                if launch_ts == launch_ts and launch_ts > prev:
                    self.tot[2] += gap
                elif gap <= short_gap_us:
                    self.tot[3] += gap
                else:
                    self.tot[4] += gap
            if end > prev:
                self.prev_end = end
        else:
            self.prev_end = end

    def close(self) -> None:
        self.tot[0] += iv.measure_flat(self.busy.done())
        self.tot[1] += self.count


def _cls_of(cols: RankColumns, gi: int, cache: dict[int, str]) -> str:
    kind = cols.g_kind[gi]
    if kind == KIND_MEMCPY:
        return "memcpy"
    if kind == KIND_MEMSET:
        return "memset"
    nid = cols.g_name[gi]
    c = cache.get(nid)
    if c is None:
        c = cache[nid] = classify(cols.names[nid])
    return c


def account_rank(cols: RankColumns, limits: AccountLimits | None = None, whole: bool = False) -> RankAccount:
    """The account of one rank over its steady steps (`whole`: one window from the first GPU activity to the last,
    HTA's temporal-breakdown window)."""
    lim = limits or AccountLimits()
    n = cols.n_gpu
    g_ts, g_end = cols.g_ts, cols.g_end
    # activities in start order, as one compact column (sorted only when the trace is not already in order)
    if any(g_ts[i] > g_ts[i + 1] for i in range(n - 1)):
        order = array("q", sorted(range(n), key=g_ts.__getitem__))
    else:
        order = array("q", range(n))
    starts = array("d", (g_ts[gi] for gi in order))
    launch_idx, launch_ts = launch_times(cols)
    found = find_steps(cols, order, launch_ts, whole=whole)
    cache: dict[int, str] = {}
    max_dur = max((g_end[i] - g_ts[i] for i in range(n)), default=0.0)
    tid_counts = Counter(cols.r_tid[ri] for ri in launch_idx if ri >= 0)
    main_tid = tid_counts.most_common(1)[0][0] if tid_counts else None
    markers = [p for _, p in STEP_MARKERS]
    owners = sorted((a for a in cols.annotations
                     if (main_tid is None or a.tid == main_tid) and not any(p.search(a.name) for p in markers)),
                    key=lambda a: a.ts)
    owner_starts = [a.ts for a in owners]
    max_owner = max((a.end - a.ts for a in owners), default=0.0)
    sync_idx = [i for i in range(cols.n_runtime) if cols.names[cols.r_name[i]] in SYNC_CALLS]
    pageable_ri = {launch_idx[gi] for gi in range(n)
                   if cols.g_kind[gi] == KIND_MEMCPY and "pageable" in cols.names[cols.g_name[gi]].lower()
                   and launch_idx[gi] >= 0 and cols.names[cols.r_name[launch_idx[gi]]] in ASYNC_COPY_CALLS}
    sync_idx = sorted({*sync_idx, *pageable_ri}, key=cols.r_ts.__getitem__)
    sync_starts = [cols.r_ts[i] for i in sync_idx]

    step_rows: list[StepRow] = []
    tot_class: dict[str, float] = defaultdict(float)
    tot_idle: dict[str, float] = defaultdict(float)
    tot: dict[str, float] = defaultdict(float)
    owner_us: dict[str, float] = defaultdict(float)
    owner_gaps: Counter[str] = Counter()
    sync_stats: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    kernel_durs: dict[int, array] = defaultdict(lambda: array("d"))
    stream_stats: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0, 0, 0.0, 0.0, 0.0])
    launch_delays = array("d")
    slow_runtime = bytearray(cols.n_runtime)  # flags by runtime-call index: no set of millions of ints
    launch_calls = bytearray(cols.n_runtime)
    short_kernels = 0
    launched = 0
    gemm_time = array("d", bytes(8 * cols.n_shapes))  # per recorded GEMM op (slot of its External id)
    gemm_seen = bytearray(cols.n_shapes)
    gemm_order = array("q")  # slots in the order their kernels were first met
    step_durs: list[float] = []

    for s in found.steps:
        ws, we = s.gpu_start, s.gpu_end
        lo = bisect_left(starts, ws - max_dur)
        hi = bisect_left(starts, we)
        members = array("q", (gi for gi in order[lo:hi] if g_end[gi] > ws))
        # unions built as the activities come in start order: per class, and per stream on steady steps
        per_class: dict[str, iv.Merger] = {}
        per_stream: dict[tuple[int, int], _StreamStep] = {}
        for gi in members:
            c = _cls_of(cols, gi, cache)
            m = per_class.get(c)
            if m is None:
                m = per_class[c] = iv.Merger()
            a0, a1 = g_ts[gi], g_end[gi]
            m.add(a0 if a0 > ws else ws, a1 if a1 < we else we)
            if s.steady:
                key = (cols.g_device[gi], cols.g_stream[gi])
                sst = per_stream.get(key)
                if sst is None:
                    sst = per_stream[key] = _StreamStep(stream_stats[key])
                sst.add(a0, a1, ws, we, launch_ts[gi], lim.short_gap_us)
        merged = {c: m.done() for c, m in per_class.items()}
        del per_class
        busy_by: dict[str, float] = {}
        acc = iv.new()
        for c in PRIORITY:
            if c in merged:
                busy_by[c] = iv.measure_flat(iv.subtract_flat(merged[c], acc))
                acc = iv.union_flat(acc, merged[c])
        compute = iv.new()
        for c in sorted(COMPUTE):
            if c in merged:
                compute = iv.union_flat(compute, merged[c])
        comm = merged.get(COMM, iv.new())
        comm_over = iv.measure_flat(iv.intersect_flat(comm, compute))
        del merged
        idle_by = {"host_bound": 0.0, "short_gap": 0.0, "other": 0.0}
        gap_list = iv.gaps_flat(acc, ws, we)
        del acc
        cause_of = bytearray()
        for g0, g1 in iv.pairs(gap_list):
            k = bisect_left(starts, g1 - 1e-6)
            lt = launch_ts[order[k]] if k < n else float("nan")
            if lt == lt and lt > g0:
                cause = _HOST
            elif g1 - g0 <= lim.short_gap_us:
                cause = _SHORT
            else:
                cause = _OTHER
            idle_by[_CAUSES[cause]] += g1 - g0
            cause_of.append(cause)
        row = StepRow(index=len(step_rows), label=s.label, start_us=ws, dur_us=we - ws,
                      busy_us={c: round(v, 3) for c, v in busy_by.items()},
                      idle_us={c: round(v, 3) for c, v in idle_by.items()}, steady=s.steady, excluded_because=s.why)
        step_rows.append(row)
        if not s.steady:
            continue
        step_durs.append(we - ws)
        for c, v in busy_by.items():
            tot_class[c] += v
        for c, v in idle_by.items():
            tot_idle[c] += v
        tot["comm"] += iv.measure_flat(comm)
        tot["comm_over"] += comm_over
        tot["compute"] += iv.measure_flat(compute)
        tot["copy"] += busy_by.get("memcpy", 0.0) + busy_by.get("memset", 0.0)
        del comm, compute
        # idle inside host ranges of the launching thread (innermost range wins)
        for (g0, g1), cause in zip(iv.pairs(gap_list), cause_of):
            if cause == _SHORT or not owners:
                continue
            j = bisect_left(owner_starts, g1)
            best: tuple[float, float, int] | None = None
            for oi in range(j - 1, -1, -1):
                a = owners[oi]
                if a.ts < g0 - max_owner:
                    break
                ov = min(a.end, g1) - max(a.ts, g0)
                if ov > 0 and (best is None or (ov, -(a.end - a.ts)) > (best[0], best[1])):
                    best = (ov, -(a.end - a.ts), oi)
            if best is None:
                continue
            a = owners[best[2]]
            amount = best[0]
            k0 = bisect_left(sync_starts, a.ts)
            if a.end < g1 and k0 < len(sync_starts) and sync_starts[k0] < a.end:
                # the range blocked on the GPU (a synchronizing call inside it): the queue was empty when it
                # returned, so the GPU's wait until the host's next launch is its cost too
                amount += g1 - a.end
            owner_us[a.name] += amount
            owner_gaps[a.name] += 1
        # synchronizing calls whose start falls in the step, and the gaps that start while they run
        gap_starts = gap_list[0::2]
        j0, j1 = bisect_left(sync_starts, ws), bisect_left(sync_starts, we)
        for ri in sync_idx[j0:j1]:
            st = sync_stats[cols.names[cols.r_name[ri]] + (" (pageable)" if ri in pageable_ri else "")]
            st[0] += 1
            st[1] += cols.r_end[ri] - cols.r_ts[ri]
            for x in range(bisect_left(gap_starts, cols.r_ts[ri]),
                           bisect_right(gap_starts, cols.r_end[ri] + lim.sync_idle_slack_us)):
                st[2] += gap_list[2 * x + 1] - gap_list[2 * x]
        del gap_list, gap_starts, cause_of
        for sst in per_stream.values():
            sst.close()
        for gi in members:
            if g_ts[gi] < ws:
                continue
            d = g_end[gi] - g_ts[gi]
            kernel_durs[cols.g_name[gi]].append(d)
            ri = launch_idx[gi]
            if ri >= 0:
                launched += 1
                launch_calls[ri] = 1
                rdur = cols.r_end[ri] - cols.r_ts[ri]
                launch_delays.append(g_ts[gi] - cols.r_end[ri])
                if rdur > lim.runtime_cutoff_us:
                    slow_runtime[ri] = 1
                if d < rdur:
                    short_kernels += 1
            if _cls_of(cols, gi, cache) == "gemm":
                slot = cols.shape_slot(cols.g_ext[gi])
                if slot >= 0:
                    if not gemm_seen[slot]:
                        gemm_seen[slot] = 1
                        gemm_order.append(slot)
                    gemm_time[slot] += d
        del members

    ns = max(1, len(step_durs))
    step_us = sum(step_durs) / ns
    busy = sum(tot_class.values()) / ns
    idle = sum(tot_idle.values()) / ns

    def share(x: float) -> float:
        return round(x / step_us, 5) if step_us > 0 else 0.0

    sd = sorted(step_durs)
    breakdown = Breakdown(step_us=round(step_us, 3), step_p50_us=round(median(sd), 3) if sd else 0.0,
                          step_p99_us=round(_pct(sd, 0.99), 3), busy_us=round(busy, 3), idle_us=round(idle, 3),
                          busy_share=share(busy), idle_share=share(idle),
                          by_class_us={c: round(v / ns, 3) for c, v in tot_class.items()},
                          idle_by_cause_us={c: round(v / ns, 3) for c, v in tot_idle.items()},
                          compute_us=round(tot["compute"] / ns, 3), comm_us=round(tot["comm"] / ns, 3),
                          comm_overlapped_us=round(tot["comm_over"] / ns, 3),
                          comm_exposed_us=round((tot["comm"] - tot["comm_over"]) / ns, 3),
                          copy_us=round(tot["copy"] / ns, 3))
    classes = sorted((ClassRow(cls=c, us_per_step=round(v / ns, 3), share_of_step=share(v / ns))
                      for c, v in tot_class.items()), key=lambda r: -r.us_per_step)
    kernels = []
    for nid, durs in kernel_durs.items():
        durs = array("d", sorted(durs))
        total = sum(durs)
        name = cols.names[nid]
        kernels.append(KernelRow(name=name[:300], cls=classify(name) if not name.startswith("Mem") else
                                 ("memcpy" if name.startswith("Memcpy") else "memset"),
                                 count_per_step=round(len(durs) / ns, 3), us_per_step=round(total / ns, 3),
                                 share_of_step=share(total / ns), mean_us=round(total / len(durs), 3),
                                 p50_us=round(_pct(durs, 0.5), 3), p99_us=round(_pct(durs, 0.99), 3)))
    kernels.sort(key=lambda r: -r.us_per_step)
    idle_owners = sorted((IdleOwner(name=k[:200], us_per_step=round(v / ns, 3), share_of_step=share(v / ns),
                                    gaps=owner_gaps[k]) for k, v in owner_us.items()),
                         key=lambda r: -r.us_per_step)[:lim.idle_owners]
    syncs = sorted((SyncRow(name=k, count_per_step=round(v[0] / ns, 3), host_us_per_step=round(v[1] / ns, 3),
                            share_of_step=share(v[1] / ns), idle_after_us_per_step=round(v[2] / ns, 3))
                    for k, v in sync_stats.items()), key=lambda r: -r.host_us_per_step)
    ld = sorted(launch_delays)
    launch_host = sum(cols.r_end[ri] - cols.r_ts[ri] for ri in range(cols.n_runtime) if launch_calls[ri])
    n_slow = slow_runtime.count(1)
    launch = LaunchStats(launches=launch_calls.count(1), launch_delay_p50_us=round(_pct(ld, 0.5), 3),
                         launch_delay_p99_us=round(_pct(ld, 0.99), 3), runtime_over_50us=n_slow,
                         runtime_over_50us_per_step=round(n_slow / ns, 3),
                         kernels_shorter_than_launch=short_kernels,
                         kernels_shorter_than_launch_share=round(short_kernels / launched, 4) if launched else 0.0,
                         launch_overhead_us_per_step=round(launch_host / ns, 3))
    gemms = _gemm_rows(cols, ((slot, gemm_time[slot]) for slot in gemm_order), ns)
    streams = sorted((StreamRow(stream=k[1], device=k[0], busy_us_per_step=round(v[0] / ns, 3),
                                kernels_per_step=round(v[1] / ns, 3),
                                idle_host_bound_us_per_step=round(v[2] / ns, 3),
                                idle_short_gap_us_per_step=round(v[3] / ns, 3),
                                idle_other_us_per_step=round(v[4] / ns, 3))
                      for k, v in stream_stats.items()), key=lambda r: -r.busy_us_per_step)
    steady_steps = [s for s in found.steps if s.steady]
    excluded = [f"{s.label}: {s.why}" for s in found.steps if not s.steady]
    return RankAccount(
        source=cols.source, rank=cols.rank, fmt="nsys" if cols.fmt == "nsys" else "kineto", gpu_name=cols.gpu_name,
        events_read=cols.events_read, gpu_activities=n, runtime_calls=cols.n_runtime, skipped=dict(cols.skipped),
        step_source=found.source, steps_total=len(found.steps), steady_steps=len(steady_steps), excluded=excluded,
        window_start_us=min((s.gpu_start for s in steady_steps), default=0.0),
        window_end_us=max((s.gpu_end for s in steady_steps), default=0.0),
        breakdown=breakdown, steps=step_rows, classes=classes, top_kernels=kernels[:lim.top_kernels],
        idle_owners=idle_owners, sync_calls=syncs, launch=launch, gemms=gemms, streams=streams)


def _gemm_rows(cols: RankColumns, gemm_time: Iterable[tuple[int, float]], ns: int) -> list[GemmRow]:
    groups: dict[tuple, list[float]] = defaultdict(list)
    for slot, us in gemm_time:
        op, dims, types = cols.shape_at(slot)
        shape = gemm_shape(op, dims, types)
        if shape is None or us <= 0:
            continue
        groups[(op, *shape)].append(us)
    rows = []
    for (op, m, n_, k, b, dt), times in groups.items():
        mean = sum(times) / len(times)
        flops = 2.0 * m * n_ * k * b
        elem = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}.get(dt, 2)
        nbytes = (m * k + k * n_ + m * n_) * b * elem
        rows.append(GemmRow(op=op, m=m, n=n_, k=k, batch=b, dtype=dt, count=len(times), mean_us=round(mean, 3),
                            achieved_tflops=round(flops / (mean * 1e-6) / 1e12, 3),
                            achieved_gbs=round(nbytes / (mean * 1e-6) / 1e9, 2),
                            us_per_step=round(sum(times) / ns, 3)))
    rows.sort(key=lambda r: -r.us_per_step)
    return rows[:20]
