"""GPU inventory: `nvidia-smi -q -x`, `--query-gpu` and `topo -m`, parsed into a GpuInventory."""

from __future__ import annotations

import anyio

from orchestrator.hosts.base import Host
from orchestrator.probes import nvidia_smi
from orchestrator.probes.results import GpuInventory
from orchestrator.probes.session import shared

QUERY_ARGV = ["nvidia-smi", f"--query-gpu={nvidia_smi.QUERY_FIELDS}", "--format=csv"]
XML_ARGV = ["nvidia-smi", "-q", "-x"]
TOPO_ARGV = ["nvidia-smi", "topo", "-m"]
INVENTORY_KEY = ("gpu_inventory",)
"""The host's inventory in its probe session (probes/session.py): the tools and the prefetch share it."""


def inventory_from_outputs(xml: str | None, query_csv: str | None, topo: str | None) -> GpuInventory:
    """Pure: the inventory the three raw outputs describe (any of them may be missing)."""
    rows = nvidia_smi.parse_query_csv(query_csv) if query_csv else []
    if xml:
        inv = nvidia_smi.merge_query(nvidia_smi.parse_xml(xml), rows)
    else:
        inv = nvidia_smi.inventory_from_query(rows)
    if topo and len(inv.gpus) > 0:
        try:
            inv.topology = nvidia_smi.parse_topo(topo)
        except nvidia_smi.NvidiaSmiParseError:
            inv.topology = None
    if not inv.gpus:
        inv.available = False
        inv.reason = "nvidia-smi listed no GPUs"
    return inv


async def collect_gpu_inventory(host: Host) -> GpuInventory:
    """Count, names, compute capability, driver/CUDA, memory, power, clocks, utilization and topology."""
    commands = [" ".join(XML_ARGV), " ".join(QUERY_ARGV), " ".join(TOPO_ARGV)]
    xml_res = await host.run(XML_ARGV, timeout_s=60)
    if xml_res.exit_code == 127:
        return GpuInventory(host=host.name, available=False, commands=commands[:1],
                            reason="nvidia-smi is not on PATH: no NVIDIA driver tools on this host")
    reason = nvidia_smi.no_gpu_reason(xml_res.stdout, xml_res.stderr)
    if reason:
        return GpuInventory(host=host.name, available=False, commands=commands[:1], reason=f"nvidia-smi: {reason}")
    got = {}

    async def run(argv: list[str]) -> None:
        got[argv[1]] = await host.run(argv, timeout_s=60)

    async with anyio.create_task_group() as tg:  # side by side: each is a round trip and an NVML start
        tg.start_soon(run, QUERY_ARGV)
        tg.start_soon(run, TOPO_ARGV)
    query_res, topo_res = got[QUERY_ARGV[1]], got[TOPO_ARGV[1]]
    xml = xml_res.stdout if xml_res.ok else None
    query = query_res.stdout if query_res.ok else None
    if xml is None and query is None:
        tail = (xml_res.stderr or xml_res.stdout).strip().splitlines()[-1:] or ["no output"]
        return GpuInventory(host=host.name, available=False, commands=commands,
                            reason=f"nvidia-smi failed (exit {xml_res.exit_code}): {tail[0][:200]}")
    try:
        inv = inventory_from_outputs(xml, query, topo_res.stdout if topo_res.ok else None)
    except nvidia_smi.NvidiaSmiParseError as exc:
        return GpuInventory(host=host.name, available=False, commands=commands, reason=str(exc))
    inv.host = host.name
    inv.commands = commands
    return inv


async def gpu_inventory(host: Host) -> GpuInventory:
    """The inventory as a reading of this moment, shared by every caller of the moment (the prongs and the GPU
    specs and roofline tools ask within a second of each other: one set of nvidia-smi runs serves them all)."""
    return await shared(host, INVENTORY_KEY, lambda: collect_gpu_inventory(host), once=True)
