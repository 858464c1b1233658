"""The `node_health` tool: GPU health, links, kernel-log Xids and the interconnect of the run's host, in one probe."""

from __future__ import annotations


from pydantic import BaseModel, Field

from orchestrator.probes.node import node_health
from orchestrator.probes.node_models import GpuHealth, NodeHealth
from orchestrator.tools.base import Tool, ToolContext, ToolOutput, ToolRegistry



def _n(v: float | int | None, unit: str = "") -> str:
    return "?" if v is None else f"{v:g}{unit}"


def _gpu_line(g: GpuHealth, node: NodeHealth) -> str:
    active = [r for r, s in g.clocks_event.items() if s]
    bits = [
        f"GPU{g.index} {g.name} ({g.bus_id or '?'}) {g.pstate or '?'} util {_n(g.utilization_pct, '%')}",
        f"power {_n(g.power_draw_w, ' W')} enforced {_n(g.power_enforced_w, ' W')} (default {_n(g.power_default_w, ' W')},"
        f" max {_n(g.power_max_w, ' W')})",
        f"SM {_n(g.sm_mhz, ' MHz')} of {_n(g.max_sm_mhz, ' MHz')} (app {_n(g.app_sm_mhz, ' MHz')})",
        f"clocks events: {', '.join(active) or 'none'}",
        f"PCIe Gen{_n(g.pcie_gen)} x{_n(g.pcie_width)} of Gen{_n(g.pcie_gen_max)} x{_n(g.pcie_width_max)}",
        f"ECC {g.ecc_mode or '?'} (volatile DBE {_n(g.ecc_volatile_dbe)}, aggregate DBE {_n(g.ecc_aggregate_dbe)})",
        f"remapped rows unc {_n(g.remapped_uncorrectable)} pending {g.remap_pending} failure {g.remap_failure}",
        f"persistence {'on' if g.persistence_mode else 'off' if g.persistence_mode is False else '?'}",
        f"MIG {g.mig_mode or '?'}",
        f"processes {len(g.processes)}",
    ]
    if g.nvlinks or g.nvlink_all_inactive:
        up = sum(1 for x in g.nvlinks if x.up)
        crc = sum(x.crc_errors or 0 for x in g.nvlinks)
        bits.append("NVLink all inactive" if g.nvlink_all_inactive else f"NVLink {up}/{len(g.nvlinks)} up, CRC {crc}")
    if g.fabric_state not in (None, "N/A"):
        bits.append(f"fabric {g.fabric_state}/{g.fabric_status}")
    xids = [x for x in node.xids if x.gpu_index == g.index]
    if xids:
        bits.append("Xid " + ",".join(sorted({str(x.code) for x in xids})))
    return "; ".join(bits)


def summarize_node(node: NodeHealth) -> str:
    if not node.available:
        return f"node_health unavailable on {node.host}: {node.reason}"
    lines = [f"{len(node.gpus)} GPU(s); driver {node.driver_version}, CUDA {node.cuda_version}"]
    lines += [_gpu_line(g, node) for g in node.gpus]
    if node.topology:
        kinds = sorted({link.kind for link in node.topology.links})
        lines.append(f"topology: {', '.join(kinds) or 'single GPU'}")
    lines.append(f"kernel log: {node.kernel_log_source or 'not readable'}; {len(node.xids)} Xid line(s)")
    for x in node.xids[-10:]:
        lines.append(f"  Xid {x.code} {x.mnemonic or ''} [{x.klass}] GPU {x.gpu_index if x.gpu_index is not None else '?'}:"
                     f" {x.line[:200]}")
    acs = [d for d in node.pci if d.acs_redirect]
    lines.append(f"IOMMU {node.iommu or 'unknown'}; ACS redirect on {len(acs)} bridge(s); "
                 f"RDMA devices {', '.join(d.name for d in node.rdma_devices) or 'none'}; "
                 f"libibverbs {'present' if node.libibverbs else 'absent'}")
    if node.fabricmanager or node.fabricmanager_running is not None:
        lines.append(f"fabric manager: systemctl {node.fabricmanager or '?'}, process "
                     f"{'running' if node.fabricmanager_running else 'not running'}")
    for p in node.processes:
        env = ", ".join(f"{k}={v}" for k, v in sorted(p.env.items())) or "no allowlisted variables"
        lines.append(f"process {p.pid} {p.comm or '?'} ({p.kind or 'not an engine'}), CPUs {p.cpus_allowed or '?'}:"
                     f" {env}")
    n = node.nccl
    if n.lines:
        tr = ", ".join(f"{k} {v}" for k, v in sorted(n.transports.items())) or "no channel lines"
        lines.append(f"NCCL {n.version or '?'}: {n.channels} channel connection(s): {tr}; network {n.network or '?'}; "
                     f"GDR {n.gdr}")
    for gap in node.gaps:
        lines.append(f"gap: {gap.what}: {gap.why}")
    return "\n".join(lines)


class NodeHealthInput(BaseModel):
    logs: list[str] = Field(default_factory=list,
                            description="Log files to read NCCL INFO lines from (default: the run's --log paths).")


class NodeHealthTool(Tool):
    name = "node_health"
    description = (
        "Node health of the investigated host in one read-only probe: per GPU clocks-event (throttle) reasons, power "
        "limit enforced vs default, SM clocks vs max and application clocks, ECC errors, retired pages and remapped "
        "rows, PCIe gen/width vs max, persistence, MIG, processes on the GPU, NVLink state and errors, fabric "
        "manager; Xid lines of the kernel log (classified); IOMMU/ACS, RDMA devices and libibverbs, NUMA affinity of "
        "the serving process, its NCCL_* environment (allowlisted), and NCCL transports in the logs. Parts the host "
        "refuses (dmesg restricted, no lspci) come back as gaps."
    )
    Input = NodeHealthInput
    timeout_s = 200.0

    async def run(self, args: NodeHealthInput, ctx: ToolContext) -> ToolOutput:
        host = ctx.host()
        node = await node_health(host, args.logs or list(ctx.inputs.logs))
        return ToolOutput(text=summarize_node(node), data=node.model_dump(mode="json"), untrusted=True,
                          host=host.name)


def register(registry: ToolRegistry) -> None:
    registry.add(NodeHealthTool())
