"""The trace account as compact text for a model (numbers per steady step; the full account is the evidence data)."""

from __future__ import annotations

from orchestrator.traces.classes import LABELS
from orchestrator.traces.kineto import BAD_TIME
from orchestrator.traces.model import RankAccount, TraceReport


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _rank_text(a: RankAccount) -> list[str]:
    b = a.breakdown
    step = b.step_us or 1.0
    lines = [f"rank {a.rank} ({a.source}, {a.fmt}, GPU {a.gpu_name or 'unknown'}): {a.steady_steps} steady of "
             f"{a.steps_total} steps ({a.step_source}); window {a.window_start_us:.0f}-{a.window_end_us:.0f} us"]
    if a.excluded:
        lines.append("  left out: " + "; ".join(a.excluded[:6]))
    if a.skipped.get(BAD_TIME):
        lines.append(f"  {a.skipped[BAD_TIME]:,} events left out: their ts or dur is not a finite time in range")
    lines.append(f"  step {b.step_us / 1e3:.3f} ms (p50 {b.step_p50_us / 1e3:.3f}, p99 {b.step_p99_us / 1e3:.3f}): "
                 f"GPU busy {_pct(b.busy_share)}, idle {_pct(b.idle_share)}")
    lines.append("  busy by class: " + ", ".join(f"{LABELS.get(c.cls, c.cls)} {_pct(c.share_of_step)}"
                                                 for c in a.classes))
    lines.append("  idle by cause: " + ", ".join(f"{k} {_pct(v / step)}" for k, v in b.idle_by_cause_us.items()))
    if b.comm_us:
        lines.append(f"  communication {_pct(b.comm_us / step)} of the step: overlapped with compute "
                     f"{_pct(b.comm_overlapped_us / step)}, exposed {_pct(b.comm_exposed_us / step)}")
    if a.collective_wait_share is not None:
        lines.append(f"  collective wait for other ranks: {_pct(a.collective_wait_share)} of the step")
    for o in a.idle_owners[:4]:
        lines.append(f"  GPU idle inside host range '{o.name}': {_pct(o.share_of_step)} of the step ({o.gaps} gaps)")
    for s in a.sync_calls[:4]:
        lines.append(f"  sync call {s.name}: {s.count_per_step:g}/step, host blocked {_pct(s.share_of_step)}, "
                     f"GPU idle after it {_pct(s.idle_after_us_per_step / step)}")
    ln = a.launch
    lines.append(f"  launches: delay p50 {ln.launch_delay_p50_us:.1f} us p99 {ln.launch_delay_p99_us:.1f} us; "
                 f"{ln.runtime_over_50us_per_step:g} calls > 50 us per step; kernels shorter than their launch "
                 f"{_pct(ln.kernels_shorter_than_launch_share)}")
    for k in a.top_kernels[:8]:
        lines.append(f"  kernel [{LABELS.get(k.cls, k.cls)}] {_pct(k.share_of_step)} {k.count_per_step:g}x/step "
                     f"mean {k.mean_us:.1f} us p99 {k.p99_us:.1f} us: {k.name[:100]}")
    for g in a.gemms[:5]:
        frac = f", {_pct(g.fraction_of_attainable)} of attainable ({g.bound}-bound)" if g.fraction_of_attainable else ""
        lines.append(f"  GEMM {g.op} M={g.m} N={g.n} K={g.k} {g.dtype}: {g.achieved_tflops:.1f} TFLOP/s "
                     f"{g.achieved_gbs:.0f} GB/s{frac}")
    return lines


def report_text(r: TraceReport) -> str:
    lines: list[str] = []
    for a in r.ranks:
        lines += _rank_text(a)
    if r.straggler:
        s = r.straggler
        lines.append(f"straggler: rank {s.rank}: {s.reason}; the others wait {_pct(s.wait_caused_share)} of a step")
    if r.diff:
        d = r.diff
        lines.append(f"diff vs {d.baseline}: step {d.base_step_us / 1e3:.3f} -> {d.cur_step_us / 1e3:.3f} ms")
        lines.append("  by class: " + ", ".join(f"{x.name} {x.delta_us_per_step:+.0f} us" for x in d.by_class))
        lines.append("  idle: " + ", ".join(f"{k} {v:+.0f} us" for k, v in d.idle_delta_us_per_step.items()))
        for k in d.kernels[:6]:
            lines.append(f"  {k.status} {k.delta_us_per_step:+.1f} us/step: {k.name[:100]}")
    lines += [f"note: {n}" for n in r.notes]
    return "\n".join(lines)
