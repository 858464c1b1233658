"""Kernel research: which GEMM/MoE kernels and backends the installed libraries carry for this GPU's architecture
and dtype (per-arch tile lists in sources, archs compiled into the shared objects, FlashInfer JIT-cache dirs).
Its findings come from the core rules (`analysis/rules.py`: kernel_inventory, torch_arch, the catalog signals)."""

from orchestrator.prong import Prong

PRONG = Prong(
    name="kernel_research",
    agent="kernel-research",
    tools=("orchestrator.prongs.kernel_research.tool:KernelInventoryTool",),
)
