"""The `resource_account` tool: where the time goes on the host over a short window, resource by resource."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from orchestrator.prongs.resource_account.probe import account_key, collect_account, resource_account
from orchestrator.prongs.resource_account.models import ResourceAccount
from orchestrator.probes.session import start
from orchestrator.tools.base import Tool, ToolContext, ToolOutput

if TYPE_CHECKING:
    from orchestrator.hosts.base import Host


class ResourceAccountInput(BaseModel):
    sample_s: float | None = Field(None, gt=0, le=60, description="Sampling window in seconds (default: the run's "
                                   "--sample-s, 3 s).")


def _pct(v: float | None) -> str:
    return "?" if v is None else f"{v:.0f}%"


def summarize_account(a: ResourceAccount) -> str:
    """The account as numbers, one resource per line (what the model-driven mode reads)."""
    if not a.available:
        return f"resource account unavailable on {a.host}: {a.reason}"
    lines = [f"resource account of {a.host} over {a.window_s:.2f} s"]
    for g in a.gpus:
        lines.append(f"gpu {g.index}: busy {_pct(g.busy_pct)} (min {_pct(g.busy_min_pct)}, max {_pct(g.busy_max_pct)}, "
                     f"{g.samples} samples), mem-bw {_pct(g.mem_bw_util_pct)}, memory {g.memory_used_mib}/"
                     f"{g.memory_total_mib} MiB, power {g.power_w} W, SM {g.sm_clock_mhz} MHz, series {g.series[:20]}")
    h = a.host_account
    lines.append(f"host: {h.cpus_online} CPUs busy {_pct(h.cpu_busy_pct)}, steal {_pct(h.steal_pct)}, iowait "
                 f"{_pct(h.iowait_pct)}, load {h.loadavg}, governor {h.governor}, MemAvailable {h.mem_available_kb} kB "
                 f"of {h.mem_total_kb}, swap in/out {h.pswpin_per_s}/{h.pswpout_per_s} pages/s")
    lines.append("psi (some, % of window): " + ", ".join(f"{r} {_pct(p.pct())}" for r, p in h.psi.items()))
    for n in h.nics:
        lines.append(f"nic {n.name}: rx {n.rx_bytes_per_s:.0f} B/s, tx {n.tx_bytes_per_s:.0f} B/s, "
                     f"speed {n.speed_mbit} Mb/s")
    for p in a.processes:
        lines.append(f"process {p.pid} {p.name} ({p.kind}): cpu {p.cpu_pct:.0f}% of a core, {p.threads_total} "
                     f"threads {p.states}, majflt {p.majflt_per_s}/s, read_bytes {p.read_bytes_per_s} B/s, rchar "
                     f"{p.rchar_per_s} B/s, gpus {p.gpus}")
        for t in p.threads[:8]:
            lines.append(f"  thread {t.tid} {t.comm} [{t.state}] cpu {t.cpu_pct:.0f}% ctxt vol/invol "
                         f"{t.voluntary_ctxt_per_s}/{t.involuntary_ctxt_per_s} per s, majflt {t.majflt_per_s}/s")
        c = p.cgroup
        if c:
            lines.append(f"  cgroup v{c.version} {c.path}: quota {c.cpu_quota_cores} cores, used {c.cpu_used_cores}, "
                         f"throttled {c.nr_throttled_delta}/{c.nr_periods_delta} periods "
                         f"({c.throttled_ms_per_s} ms/s), memory {c.memory_current_bytes}/{c.memory_max_bytes}, "
                         f"events {c.memory_events}, cpuset {c.cpuset}")
        for f in p.files:
            lines.append(f"  weights {f.path} on {f.mount_point} ({f.fstype} from {f.source})")
    for gap in a.gaps:
        lines.append(f"gap: {gap.what}: {gap.why}")
    return "\n".join(lines)


class ResourceAccountTool(Tool):
    name = "resource_account"
    on_host = True
    description = (
        "Where the time goes on the investigated host, sampled over a short window while the workload runs "
        "(read-only): each GPU's busy fraction over the window (not one snapshot), memory-bandwidth use, memory, "
        "power, SM clock; the serving processes' CPU per process and per thread (names, states, context switches, "
        "major faults, bytes read), their cgroup (CPU quota and throttling, memory limit and events, PSI); the "
        "host's CPUs (busy, steal, iowait), load, governor, memory available, swap in/out, pressure stall "
        "information, NIC rates; the filesystems behind the model files. Numbers per resource, gaps where the host "
        "would not tell."
    )
    Input = ResourceAccountInput
    timeout_s = 120.0

    async def run(self, args: ResourceAccountInput, ctx: ToolContext) -> ToolOutput:
        host = ctx.host()
        window = args.sample_s or ctx.settings.account_sample_s
        acct = await resource_account(host, window)
        return ToolOutput(text=summarize_account(acct), data=acct.model_dump(mode="json"), untrusted=True,
                          host=host.name)


def prefetch_call(host: "Host", sample_s: float) -> Any:
    """Start the default account of the run's host now (orchestrator.prefetch): its window then overlaps the rest."""
    return start(host, account_key(sample_s), lambda: collect_account(host, sample_s), once=True)
