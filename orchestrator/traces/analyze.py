"""Read the named traces (one per rank), account for each, and compare ranks and a baseline: the `TraceReport`."""

from __future__ import annotations

from pathlib import Path

from orchestrator.traces.step_account import AccountLimits, account_rank
from orchestrator.traces.compare import collectives_per_step, diff, stragglers
from orchestrator.traces.inputs import expand
from orchestrator.traces.kineto import read_kineto
from orchestrator.traces.model import RankAccount, TraceReport
from orchestrator.traces.nsys import read_nsys
from orchestrator.traces.store import RankColumns

DIFF_KERNELS = 400
"""Kernels per rank kept while diffing two traces (a kernel outside the top of one side is not 'gone')."""


def read_trace(path: Path, fmt: str, include_host: bool = False, timeout_s: float | None = None) -> RankColumns:
    if fmt == "nsys":
        return read_nsys(path, timeout_s) if timeout_s else read_nsys(path)
    return read_kineto(path, include_host=include_host)


def _accounts(paths: list[str], limits: AccountLimits, include_host: bool, with_comms: bool,
              timeout_s: float | None = None) -> tuple[list[RankAccount], list[list[list[tuple[float, float]]]]]:
    accounts: list[RankAccount] = []
    comms = []
    for i, (path, fmt) in enumerate(expand(paths)):
        cols = read_trace(path, fmt, include_host, timeout_s)
        if cols.rank is None:
            cols.rank = i
        acc = account_rank(cols, limits)
        accounts.append(acc)
        if with_comms:
            comms.append(collectives_per_step(cols, acc))
        del cols  # one rank's columns in memory at a time
    order = sorted(range(len(accounts)), key=lambda i: (accounts[i].rank or 0, accounts[i].source))
    return [accounts[i] for i in order], [comms[i] for i in order] if comms else []


def analyze(paths: list[str], baseline: list[str] | None = None, include_host: bool = False,
            limits: AccountLimits | None = None, timeout_s: float | None = None) -> TraceReport:
    """The account of every rank's trace, the straggler among them, and the diff against a baseline trace.
    `timeout_s`: the deadline of each nsys export's queries (a Kineto trace is bounded by its caller: the trace
    tool runs this in a child process it kills, orchestrator/traces/worker.py)."""
    lim = limits or AccountLimits()
    wide = AccountLimits(**{**lim.__dict__, "top_kernels": DIFF_KERNELS}) if baseline else lim
    ranks, comms = _accounts(paths, wide, include_host, with_comms=True, timeout_s=timeout_s)
    report = TraceReport(files=[r.source for r in ranks], ranks=ranks)
    if len(ranks) > 1:
        report.straggler = stragglers(ranks, comms)
    if baseline:
        base, _ = _accounts(baseline, wide, include_host, with_comms=False, timeout_s=timeout_s)
        report.diff = diff(base[0], ranks[0], top=lim.top_kernels)
        if len(base) > 1 or len(ranks) > 1:
            report.notes.append("the diff compares the first rank of each trace set")
        for b in base:
            b.top_kernels = b.top_kernels[:lim.top_kernels]
            b.steps = []
        report.baseline = base
    for r in ranks:
        r.top_kernels = r.top_kernels[:lim.top_kernels]
    return report
