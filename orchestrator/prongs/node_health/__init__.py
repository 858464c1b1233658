"""Node health: is the node itself healthy and well connected (clocks-event reasons, power limits, ECC and remapped
rows, Xid lines, PCIe and NVLink, NCCL transports, IOMMU/ACS, NUMA). Its failure modes are catalog entries matched
on its facts (`facts.py`); `view.py` ranks and words them for the synthesis."""

from orchestrator.prong import Prong

PRONG = Prong(
    name="node_health",
    agent="node-health",
    tools=("orchestrator.prongs.node_health.tool:NodeHealthTool",),
    probe_models=("orchestrator.prongs.node_health.models:NODE_MODELS",),
)
