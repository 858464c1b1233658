"""The `node_health` tool: GPU health, links, kernel-log Xids and the interconnect of the run's host, in one probe."""

from __future__ import annotations


from pydantic import BaseModel, Field

from orchestrator.prongs.node_health.probe import node_health
from orchestrator.render.summaries import summarize_node
from orchestrator.tools.base import Tool, ToolContext, ToolOutput


class NodeHealthInput(BaseModel):
    logs: list[str] = Field(default_factory=list,
                            description="Log files to read NCCL INFO lines from (default: the run's --log paths).")


class NodeHealthTool(Tool):
    name = "node_health"
    on_host = True
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
