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

from orchestrator.knowledge.workloads import engine_of
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
    return out + namespace_gaps(view)


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
    """A GPU whose compute processes are all another workload's, with the evidence that there are two workloads and
    what was seen of its load."""

    evidence: list[str]
    host: str | None
    """The evidence's host label (as the other probes' evidence carries it)."""
    gpu: int
    bus_id: str | None
    processes: list[GpuProcess]
    utilization_pct: float | None
    power_w: float | None
    power_limit_w: float | None
    why: str = ""
    """The evidence of a second workload, in words: the user's engine beside it, or the tool's own measurement."""

    def says(self) -> str:
        procs = ", ".join(f"{p.name or '?'} (pid {p.pid}, {p.used_memory_mib or 0:g} MiB)" for p in self.processes)
        load = []
        if self.utilization_pct is not None:
            load.append(f"{self.utilization_pct:g} % utilization")
        if self.power_w is not None:
            load.append(f"{self.power_w:g} W" + (f" of {self.power_limit_w:g} W" if self.power_limit_w else ""))
        return f"GPU {self.gpu}" + (f" ({self.bus_id})" if self.bus_id else "") + f" runs {procs}" + (
            f", at {' and '.join(load)} while sampled" if load else "")


Owner = str
"""Whose a GPU process is: "engine" (named or found as a serving engine's or framework's process), "namespace" (a
PID this host cannot see: another PID namespace, a container's), "unknown" (a visible process nothing names)."""


def owner(p: GpuProcess, node: NodeHealth) -> tuple[Owner, str]:
    """Whose GPU process `p` is on `node`, and the engine's name when it is one's: its title (nvidia-smi's name, the
    comm) or the kind the probe found for it or an ancestor (knowledge/workloads.yaml); a PID with no visible process
    is in another PID namespace (nvidia-smi lists host PIDs; a container's ps cannot see them)."""
    sp = next((x for x in node.processes if x.pid == p.pid), None)
    title = engine_of(p.name, sp.comm if sp else None)
    if title is not None:
        return "engine", title.engine
    if p.serving or (sp is not None and sp.kind):
        return "engine", (sp.kind if sp is not None and sp.kind else "the serving engine")
    if sp is None or not sp.visible:
        return "namespace", ""
    return "unknown", ""


def deployment(node: NodeHealth) -> tuple[list[str], set[int]]:
    """The user's serving deployment on a node as its processes show it: the engines named (by title or found as
    servers) and the GPUs their processes hold."""
    names: list[str] = []
    gpus: set[int] = set()
    for g in node.gpus:
        for p in g.processes:
            who, name = owner(p, node)
            if who == "engine":
                names.append(name)
                gpus.add(g.index)
    names += [p.kind for p in node.processes if p.kind and p.visible]
    once: dict[str, str] = {}
    for n in names:  # "vLLM" by its title and "vllm" as the probe's kind are one engine
        once.setdefault(n.casefold().replace("_", "-"), n)
    return list(once.values()), gpus


def hidden_processes(node: NodeHealth) -> list[tuple[int, GpuProcess]]:
    """(GPU index, process) of every GPU process in another PID namespace (its PID not visible on this host), named
    or not."""
    seen = {sp.pid: sp.visible for sp in node.processes}
    return [(g.index, p) for g in node.gpus for p in g.processes if not seen.get(p.pid, False)]


def _measured_beside(view: "EvidenceView", host: str | None, pid: int) -> str | None:
    """The evidence id of a measurement of the tool's own (GEMM or all-reduce sweep) that ran while `pid` was on
    its GPU, if one did."""
    for ev, sw in view.models():  # a sweep that could not run still read what held the GPU first
        if sw.kind in ("gemm_sweep", "comm_sweep"):
            act = getattr(sw, "gpu_activity", None)
            if ev.host == host and getattr(sw, "shared_gpu", None) and act is not None and any(
                    o.get("pid") == pid for o in act.others):
                return ev.id
    return None


def other_workloads(view: "EvidenceView") -> list[OtherWorkload]:
    """GPUs held only by another workload than the user's, with their utilization and power (the power sampler's
    means where it ran, else the node probe's snapshot). A GPU's process is the user's unless the evidence shows two
    workloads: the user's engine identified on the host beside a process that is not part of it, or the tool's own
    measurement sharing the GPU with it. A process named as an engine's or a framework's, or in another PID namespace,
    is the user's; so is one nothing names when nothing says there is a second workload."""
    sampled: dict[tuple[str | None, int], tuple[str, Any]] = {}
    for ev, ps in view.probes("power_sampling"):
        for s in getattr(ps, "summary", []):
            sampled[(ev.host, s.gpu)] = (ev.id, s)
    out = []
    for ev, m in view.probes("node_health"):
        if not isinstance(m, NodeHealth):
            continue
        ev_id, host = ev.id, ev.host
        engines, engine_gpus = deployment(m)
        for g in m.gpus:
            if not g.processes or any(owner(p, m)[0] != "unknown" for p in g.processes):
                continue
            ids = [ev_id]
            if engines:
                where = f" on GPU{'s' if len(engine_gpus) != 1 else ''} {_gpu_list(engine_gpus)}" if engine_gpus else ""
                why = (f"the serving deployment ({', '.join(engines)}{where}) runs on this host and none of these "
                       f"processes is part of it")
            else:
                measured = [x for x in (_measured_beside(view, host, p.pid) for p in g.processes) if x]
                if not measured:
                    continue  # nothing says there is a second workload: it is the user's
                ids += measured[:1]
                why = f"it held the GPU while this tool's own measurement ran ({measured[0]})"
            util, power, limit = g.utilization_pct, g.power_draw_w, g.power_enforced_w
            got = sampled.get((host, g.index))
            if got is not None:
                sid, s = got
                ids.append(sid)
                util = s.mean_utilization_pct if s.mean_utilization_pct is not None else util
                power = s.mean_power_w if s.mean_power_w is not None else power
                limit = s.power_limit_w or limit
            out.append(OtherWorkload(list(dict.fromkeys(ids)), host, g.index, g.bus_id, list(g.processes),
                                     None if util is None else round(util, 1),
                                     None if power is None else round(power, 1), limit, why))
    return out


def _gpu_list(gpus: set[int]) -> str:
    xs = sorted(gpus)
    if len(xs) > 2 and xs == list(range(xs[0], xs[-1] + 1)):
        return f"{xs[0]}-{xs[-1]}"
    return ", ".join(str(x) for x in xs)


def namespace_gaps(view: "EvidenceView") -> list[tuple[str, str]]:
    """(what, why) for GPU processes in another PID namespace: taken as the deployment's own, but their command
    lines, environment (NCCL settings) and CPU affinity could not be read from this host."""
    out = []
    for ev_id, m in node_probes(view):
        hidden = hidden_processes(m)
        if not hidden:
            continue
        gpus = {i for i, _ in hidden}
        names = sorted({p.name for _, p in hidden if p.name})
        pids = ", ".join(str(p.pid) for _, p in hidden[:8]) + (" ..." if len(hidden) > 8 else "")
        out.append((f"GPU processes on {m.host} ({ev_id}): pids {pids} on GPU{'s' if len(gpus) != 1 else ''} "
                    f"{_gpu_list(gpus)}" + (f" ({', '.join(names[:4])})" if names else ""),
                    "in another PID namespace (a container): this host's ps cannot see them, so they are taken as "
                    "the deployment's own, and their command lines, environment (NCCL settings) and CPU affinity "
                    "were not read"))
    return out
