"""The node-health probe: one round trip of scripts/node.py, parsed into a NodeHealth.

Every part the host would not give (no nvidia-smi, no lspci, dmesg restricted, another user's /proc/PID/environ)
is a recorded gap of the model, never an error; the model is unavailable only when the script could not run at all
or nvidia-smi showed no GPU.
"""

from __future__ import annotations

from typing import Any

from orchestrator.hosts.base import Host
from orchestrator.probes import nvidia_smi
from orchestrator.prongs.node_health.kernel_log import parse_xids
from orchestrator.prongs.node_health.models import (
    NcclLine, NodeGap, NodeHealth, RdmaDevice, ServingProcess,
)
from orchestrator.prongs.node_health.nccl import summarize_nccl
from orchestrator.prongs.node_health.smi import gpus_from_fields, nvlink_changes, parse_health_xml, parse_lspci, parse_nvlink
from orchestrator.probes.runner import ProbeUnavailable, run_script
from orchestrator.probes.session import shared


def _iommu(data: dict[str, Any]) -> str | None:
    words = [w.lower() for w in data.get("cmdline_iommu") or []]
    if any(w in ("iommu=pt", "iommu.passthrough=1", "iommu.passthrough=on") for w in words):
        return "pt"
    if any(w in ("intel_iommu=off", "amd_iommu=off", "iommu=off") for w in words):
        return "off"
    if any(w in ("intel_iommu=on", "amd_iommu=on", "iommu=on", "iommu=force", "iommu.passthrough=0") for w in words):
        return "on"
    devices = data.get("iommu_devices")
    if devices:  # an IOMMU is registered (AMD enables it by default) with no passthrough on the command line
        return "on"
    if devices == [] and data.get("iommu_groups") in (0, None) and "cmdline_iommu" in data:
        return "off"
    return None


def health_from_output(data: dict[str, Any]) -> NodeHealth:
    """Pure: the NodeHealth the node script's JSON describes."""
    node = NodeHealth(gaps=[NodeGap.model_validate(g) for g in data.get("gaps") or []],
                      commands=list(data.get("commands") or []))
    xml = data.get("smi_xml")  # what earlier versions of the script sent (recorded outputs, tests)
    if data.get("smi"):
        node.driver_version, node.cuda_version, node.gpus = gpus_from_fields(data["smi"])
    elif xml:
        try:
            node.driver_version, node.cuda_version, node.gpus = parse_health_xml(xml)
        except nvidia_smi.NvidiaSmiParseError as exc:
            node.gaps.append(NodeGap(what="nvidia-smi -q -x", why=str(exc)))
    links = parse_nvlink(data.get("nvlink_s"), data.get("nvlink_e"))
    for g in node.gpus:
        if g.index in links:
            g.nvlinks, g.nvlink_all_inactive = links[g.index]
    if data.get("nvlink_e2") and data.get("nvlink_window_s"):
        nvlink_changes(node.gpus, parse_nvlink(None, data["nvlink_e2"]), float(data["nvlink_window_s"]))
    if data.get("topo") and node.gpus:
        try:
            node.topology = nvidia_smi.parse_topo(data["topo"])
        except nvidia_smi.NvidiaSmiParseError:
            node.gaps.append(NodeGap(what="nvidia-smi topo -m", why="output has no GPU matrix"))
    node.pci = parse_lspci(data.get("lspci"))
    klog = data.get("kernel_log")
    if klog:
        node.kernel_log_source = klog.get("source")
        kept = [(int(no), str(line)) for no, line in klog.get("lines") or []]
        node.kernel_lines = [NcclLine(path=node.kernel_log_source or "kernel", line_no=no, line=line)
                             for no, line in kept]
        node.xids = parse_xids(kept, node.gpus)
    node.processes = [ServingProcess.model_validate(p) for p in data.get("processes") or []]
    serving = {p.pid: p for p in node.processes}
    for g in node.gpus:
        for proc in g.processes:
            sp = serving.get(proc.pid)
            if sp is not None and sp.visible:
                proc.serving = sp.kind is not None
    node.rdma_devices = [RdmaDevice.model_validate(d) for d in data.get("rdma_devices") or []]
    node.libibverbs = data.get("libibverbs")
    node.iommu = _iommu(data)
    node.iommu_cmdline = list(data.get("cmdline_iommu") or [])
    node.numa_nodes = dict(data.get("numa_nodes") or {})
    node.fabricmanager = data.get("fabricmanager")
    node.fabricmanager_running = data.get("fabricmanager_process")
    node.nccl = summarize_nccl([NcclLine(path=str(p), line_no=int(n), line=str(t))
                                for p, n, t in data.get("nccl_lines") or []])
    node.checked = checked(node)
    if not node.gpus:
        node.available = False
        why = next((g.why for g in node.gaps if g.what.startswith("nvidia-smi")), "nvidia-smi listed no GPUs")
        node.reason = f"no GPU to check: {why}"
    return node


def checked(node: NodeHealth) -> list[str]:
    """What the probe looked at, in words (the healthy verdict says it in one line)."""
    out = []
    if node.gpus:
        out.append(f"{len(node.gpus)} GPU{'' if len(node.gpus) == 1 else 's'}: clocks-event reasons, power limits, clocks, ECC, retired pages, "
                   "remapped rows, PCIe link, persistence, MIG, processes")
    if any(g.nvlinks or g.nvlink_all_inactive for g in node.gpus):
        out.append("NVLink state and error counters")
    if any(g.fabric_state not in (None, "N/A", "Not Supported") for g in node.gpus):
        out.append("fabric manager")
    if node.kernel_log_source:
        out.append(f"Xid lines in {node.kernel_log_source}")
    if node.pci:
        out.append("lspci link status and ACS")
    if node.processes:
        out.append(f"NCCL env of {len(node.processes)} GPU/serving process(es)")
    if node.nccl.lines:
        out.append("NCCL transports in the logs")
    out.append("RDMA devices, libibverbs, IOMMU, NUMA affinity")
    return out


TIMEOUT_S = 150.0
NVLINK_WINDOW_S = 1.0
"""Least time between the node script's two reads of the NVLink error counters (their change over it is the rate)."""


def node_params(logs: list[str] | None) -> dict[str, Any]:
    """The node script's parameters for these logs (the same whether it runs alone or in the host survey)."""
    return {"logs": list(logs or []), "max_kernel_lines": 400, "max_nccl_lines": 2000,
            "nvlink_window_s": NVLINK_WINDOW_S}


def node_key(logs: list[str] | None) -> tuple[Any, ...]:
    """The probe session's key of a node probe (probes.session; the host survey fills it)."""
    return ("node_health", tuple(logs or []))


def node_from(host_name: str, data: dict[str, Any] | ProbeUnavailable) -> NodeHealth:
    """The NodeHealth of one host from the script's JSON, or unavailable with the reason it has none."""
    if isinstance(data, ProbeUnavailable):
        return NodeHealth(host=host_name, available=False, reason=str(data), commands=["python3 - (node probe)"])
    node = health_from_output(data)
    node.host = host_name
    return node


async def collect_node_health(host: Host, logs: list[str] | None = None, *, timeout_s: float = TIMEOUT_S) -> NodeHealth:
    """GPU health, links, kernel-log Xids, the interconnect and the serving processes' NCCL env, in one round trip."""
    try:
        data: dict[str, Any] | ProbeUnavailable = await run_script(host, "python3", "node", node_params(logs),
                                                                   timeout_s=timeout_s, isolated=True)
    except ProbeUnavailable as exc:
        data = exc
    return node_from(host.name, data)


async def node_health(host: Host, logs: list[str] | None = None) -> NodeHealth:
    """collect_node_health, or what the host survey already read for the same logs (a snapshot for one caller)."""
    return await shared(host, node_key(logs), lambda: collect_node_health(host, logs), once=True)
