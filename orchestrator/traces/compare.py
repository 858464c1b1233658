"""Across ranks (stragglers, the collective wait they cause) and across two traces (what changed per step)."""

from __future__ import annotations

from statistics import median

from orchestrator.traces.classes import COMM, classify
from orchestrator.traces.model import DiffRow, RankAccount, Straggler, TraceDiff
from orchestrator.traces.store import KIND_KERNEL, RankColumns

STRAGGLER_LATE_SHARE = 0.02
"""A rank whose collectives start this share of a step (median) after the earliest rank's is named a straggler."""
STEP_OUTLIER = 1.1
"""Without collectives, a rank whose median step is this many times the others' median is named a straggler."""


def collectives_per_step(cols: RankColumns, account: RankAccount) -> list[list[tuple[float, float]]]:
    """(start, end) of each communication kernel, per steady step, in start order."""
    out: list[list[tuple[float, float]]] = []
    comm = sorted((cols.g_ts[i], cols.g_end[i]) for i in range(cols.n_gpu)
                  if cols.g_kind[i] == KIND_KERNEL and classify(cols.names[cols.g_name[i]]) == COMM)
    for s in account.steps:
        if s.steady:
            out.append([c for c in comm if s.start_us <= c[0] < s.start_us + s.dur_us])
    return out


def stragglers(accounts: list[RankAccount], comms: list[list[list[tuple[float, float]]]]) -> Straggler | None:
    """The rank the others wait for: its collectives start last (ranks of one host share a clock), and the others'
    collective kernels run long by that much; without collectives, the rank whose steps are slowest."""
    if len(accounts) < 2:
        return None
    label = [str(a.rank if a.rank is not None else i) for i, a in enumerate(accounts)]
    step_us = {label[i]: a.breakdown.step_p50_us for i, a in enumerate(accounts)}
    nsteps = min(len(c) for c in comms)
    late: list[list[float]] = [[] for _ in accounts]
    wait = [0.0 for _ in accounts]
    for si in range(nsteps):
        ncoll = min(len(c[si]) for c in comms)
        for ci in range(ncoll):
            starts = [c[si][ci][0] for c in comms]
            durs = [c[si][ci][1] - c[si][ci][0] for c in comms]
            first, fastest = min(starts), min(durs)
            for r in range(len(accounts)):
                late[r].append(starts[r] - first)
                wait[r] += durs[r] - fastest
    for r, a in enumerate(accounts):
        if nsteps:
            a.collective_wait_us_per_step = round(wait[r] / nsteps, 3)
            a.collective_wait_share = round(wait[r] / nsteps / a.breakdown.step_us, 5) if a.breakdown.step_us else 0.0
    if any(late):
        med_late = [median(x) if x else 0.0 for x in late]
        r = max(range(len(accounts)), key=lambda i: med_late[i])
        per_step_late = med_late[r] * (len(late[r]) / nsteps if nsteps else 0)
        step = median(step_us.values())
        if step and med_late[r] >= STRAGGLER_LATE_SHARE * step:
            others = [accounts[i].collective_wait_share or 0.0 for i in range(len(accounts)) if i != r]
            return Straggler(rank=accounts[r].rank, source=accounts[r].source,
                             reason=(f"its collectives start {med_late[r]:.0f} us (median) after the earliest rank's; "
                                     "the other ranks' collective kernels wait for it"),
                             step_us=step_us, late_us_per_step=round(per_step_late, 3),
                             wait_caused_share=round(sum(others) / len(others), 5))
        return None
    r = max(range(len(accounts)), key=lambda i: accounts[i].breakdown.step_p50_us)
    rest = [a.breakdown.step_p50_us for i, a in enumerate(accounts) if i != r]
    if rest and accounts[r].breakdown.step_p50_us > STEP_OUTLIER * median(rest):
        return Straggler(rank=accounts[r].rank, source=accounts[r].source,
                         reason=f"its median step is {accounts[r].breakdown.step_p50_us / median(rest):.2f}x the "
                                "other ranks'", step_us=step_us,
                         late_us_per_step=round(accounts[r].breakdown.step_p50_us - median(rest), 3),
                         wait_caused_share=0.0)
    return None


def _share(a: RankAccount) -> float | None:
    b = a.breakdown
    return round(b.comm_overlapped_us / b.comm_us, 4) if b.comm_us else None


def diff(base: RankAccount, cur: RankAccount, top: int = 15) -> TraceDiff:
    """What changed per step from the baseline to the current trace: by class, by kernel (new, gone, changed),
    idle by cause, and the overlap of communication with compute."""
    classes = sorted(set(base.breakdown.by_class_us) | set(cur.breakdown.by_class_us))
    by_class = []
    for c in classes:
        b, k = base.breakdown.by_class_us.get(c, 0.0), cur.breakdown.by_class_us.get(c, 0.0)
        by_class.append(DiffRow(name=c, cls=c, base_us_per_step=b, cur_us_per_step=k, delta_us_per_step=round(k - b, 3),
                                status="new" if not b else "gone" if not k else "changed"))
    bk = {r.name: r for r in base.top_kernels}
    ck = {r.name: r for r in cur.top_kernels}
    rows = []
    for name in set(bk) | set(ck):
        b_us = bk[name].us_per_step if name in bk else 0.0
        c_us = ck[name].us_per_step if name in ck else 0.0
        cls = (ck.get(name) or bk[name]).cls
        rows.append(DiffRow(name=name, cls=cls, base_us_per_step=b_us, cur_us_per_step=c_us,
                            delta_us_per_step=round(c_us - b_us, 3),
                            status="new" if name not in bk else "gone" if name not in ck else "changed"))
    rows.sort(key=lambda r: -abs(r.delta_us_per_step))
    causes = set(base.breakdown.idle_by_cause_us) | set(cur.breakdown.idle_by_cause_us)
    return TraceDiff(baseline=base.source, current=cur.source, base_step_us=base.breakdown.step_us,
                     cur_step_us=cur.breakdown.step_us, by_class=sorted(by_class, key=lambda r: -abs(r.delta_us_per_step)),
                     kernels=rows[:top], base_comm_overlapped_share=_share(base), cur_comm_overlapped_share=_share(cur),
                     idle_delta_us_per_step={c: round(cur.breakdown.idle_by_cause_us.get(c, 0.0)
                                                      - base.breakdown.idle_by_cause_us.get(c, 0.0), 3)
                                             for c in sorted(causes)})
