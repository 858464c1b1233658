"""What the synthesis takes from the node-health prong: its partial gaps, the rank of node and interconnect
findings, the GPUs another workload holds (whose load is not the one asked about), and the one-line healthy verdict
when the node shows nothing wrong (the bound a high-severity node or
interconnect fault sets is the synthesis's own `_catalog_bound`).

The catalog turns the node facts into findings (orchestrator/knowledge/failure_modes/node.yaml, interconnect.yaml);
these helpers only say how such findings weigh against the others, so the synthesis stays one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orchestrator.prongs.node_health.models import GpuProcess, NodeHealth

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView
    from orchestrator.findings import Finding

NODE_AREAS = ("node", "interconnect")


def node_probes(view: "EvidenceView") -> list[tuple[str, NodeHealth]]:
    """(evidence id, model) of every available node-health probe result."""
    return [(ev.id, m) for ev, m in view.probes("node_health") if isinstance(m, NodeHealth)]


KERNEL_SOURCES = ("dmesg", "journalctl", "/var/log/kern.log")
MINOR = ("lspci -vv", "systemctl")
"""Tools whose absence is common and costs little (kept in the probe's record, not raised as diagnosis gaps)."""


def node_gaps(view: "EvidenceView") -> list[tuple[str, str]]:
    """(what, why) for each part of a node the probe could not read that limits the diagnosis: the kernel log when
    no source of it was readable (restricted dmesg, no journal, no kern.log), another user's process environment,
    nvidia-smi subcommands that failed, lspci refusing the capabilities."""
    out: list[tuple[str, str]] = []
    for ev_id, m in node_probes(view):
        kernel = [g for g in m.gaps if g.what.startswith(KERNEL_SOURCES)]
        if kernel and m.kernel_log_source is None:
            out.append((f"kernel log (Xid lines) on {m.host} ({ev_id})",
                        "; ".join(f"{g.what}: {g.why}" for g in kernel)))
        for g in m.gaps:
            if g.what.startswith(KERNEL_SOURCES) or (g.what.startswith(MINOR) and "not installed" in g.why):
                continue
            out.append((f"{g.what} on {m.host} ({ev_id})", g.why))
    return out


def is_node_fault(f: "Finding") -> bool:
    return f.category in NODE_AREAS and bool(f.entry) and not f.informational


def rank(f: "Finding") -> float | None:
    """Where a node or interconnect finding ranks among the causes (the synthesis's category ranks: observation 0,
    communication 1, roofline 2, kernel 3 ...): a high-severity node fault explains the symptom before any kernel
    does; None for other findings."""
    if not is_node_fault(f):
        return None
    return {"high": 0.5, "medium": 4.5}.get(f.severity or "", 7.5)


def healthy_line(view: "EvidenceView", findings: list["Finding"]) -> str | None:
    """One line saying the node is healthy and what was checked, when a node probe ran and no node or interconnect
    entry fired."""
    probes = node_probes(view)
    if not probes or any(f.category in NODE_AREAS and (f.entry or f.id.startswith("other-workload-")) for f in findings):
        return None
    _, m = probes[0]
    gpus = f"{len(m.gpus)} x {m.gpus[0].name}" if m.gpus else "the GPUs"
    what = "; ".join(m.checked) or "the GPUs"
    gaps = f" (not readable: {', '.join(g.what for g in m.gaps)})" if m.gaps else ""
    return f"Node healthy: nothing wrong on {m.host} ({gpus}); checked {what}{gaps}."


@dataclass
class OtherWorkload:
    """A GPU whose compute processes are all something other than a serving engine (issue 24: a `python3` matmul
    loop at 100 % and 690 W read as the user's workload), with what was seen of its load."""

    evidence: list[str]
    host: str | None
    """The evidence's host label (as the other probes' evidence carries it)."""
    gpu: int
    bus_id: str | None
    processes: list[GpuProcess]
    utilization_pct: float | None
    power_w: float | None
    power_limit_w: float | None

    def says(self) -> str:
        procs = ", ".join(f"{p.name or '?'} (pid {p.pid}, {p.used_memory_mib or 0:g} MiB)" for p in self.processes)
        load = []
        if self.utilization_pct is not None:
            load.append(f"{self.utilization_pct:g} % utilization")
        if self.power_w is not None:
            load.append(f"{self.power_w:g} W" + (f" of {self.power_limit_w:g} W" if self.power_limit_w else ""))
        return f"GPU {self.gpu}" + (f" ({self.bus_id})" if self.bus_id else "") + f" runs {procs}" + (
            f", at {' and '.join(load)} while sampled" if load else "")


def _not_engine(p: GpuProcess, node: NodeHealth) -> bool:
    if p.serving is not None:
        return not p.serving
    engines = [s for s in node.processes if s.kind]
    return not engines  # no engine anywhere on the host: whatever holds the GPU is another workload


def other_workloads(view: "EvidenceView") -> list[OtherWorkload]:
    """GPUs held only by processes that are not a serving engine, with their utilization and power (the power
    sampler's means where it ran, else the node probe's snapshot)."""
    sampled: dict[tuple[str | None, int], tuple[str, Any]] = {}
    for ev, ps in view.probes("power_sampling"):
        for s in getattr(ps, "summary", []):
            sampled[(ev.host, s.gpu)] = (ev.id, s)
    out = []
    for ev, m in view.probes("node_health"):
        if not isinstance(m, NodeHealth):
            continue
        ev_id, host = ev.id, ev.host
        for g in m.gpus:
            if not g.processes or not all(_not_engine(p, m) for p in g.processes):
                continue
            ids = [ev_id]
            util, power, limit = g.utilization_pct, g.power_draw_w, g.power_enforced_w
            got = sampled.get((host, g.index))
            if got is not None:
                sid, s = got
                ids.append(sid)
                util = s.mean_utilization_pct if s.mean_utilization_pct is not None else util
                power = s.mean_power_w if s.mean_power_w is not None else power
                limit = s.power_limit_w or limit
            out.append(OtherWorkload(ids, host, g.index, g.bus_id, list(g.processes),
                                     None if util is None else round(util, 1),
                                     None if power is None else round(power, 1), limit))
    return out
