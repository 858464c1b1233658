"""Pure parsers for nvidia-smi output: `-q -x` XML, `--query-gpu ... --format=csv`, and `topo -m`.

Formats are taken from real captures (tests/probes/data/h200, tests/probes/data/h200_capture): the XML follows
nvsmi_device_v13.dtd; the CSV has a header row with units in brackets; `topo -m` is a tab-separated matrix followed
by a legend.
"""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET

from orchestrator.probes.scripts import _smi
from orchestrator.probes.results import GpuInfo, GpuInventory, GpuLink, GpuTopology

QUERY_FIELDS = (
    "index,name,pci.bus_id,driver_version,compute_cap,memory.total,memory.used,power.draw,power.limit,"
    "clocks.sm,clocks.max.sm,utilization.gpu,temperature.gpu"
)
"""Fields the GPU probe asks `--query-gpu` for (a superset of the H200 fixture's, plus memory.used)."""

NO_GPU_MARKERS = ("No devices were found", "NVIDIA-SMI has failed", "couldn't communicate with the NVIDIA driver")


class NvidiaSmiParseError(ValueError):
    """The text is not the nvidia-smi output it was expected to be."""


# One reading of values and paths for every nvidia-smi parser: the node script's (scripts/_smi.py, sent to hosts).
number = _smi.smi_number
"""The leading number of a value like "143771 MiB" or "115.16 W"; None for N/A, [N/A], [Not Supported]."""
element_text = _smi.smi_text
first_number = _smi.smi_first
_strip_doctype = _smi.smi_strip_doctype


def parse_xml(xml_text: str) -> GpuInventory:
    """Parse `nvidia-smi -q -x` into a GpuInventory (topology left empty)."""
    try:
        root = ET.fromstring(_strip_doctype(xml_text))
    except ET.ParseError as exc:
        raise NvidiaSmiParseError(f"nvidia-smi -q -x output is not XML: {exc}") from None
    if root.tag != "nvidia_smi_log":
        raise NvidiaSmiParseError(f"nvidia-smi -q -x: unexpected root element <{root.tag}>")
    gpus: list[GpuInfo] = []
    for i, gpu in enumerate(root.findall("gpu")):
        reasons = []
        events = gpu.find("clocks_event_reasons")
        if events is None:  # drivers before 535 call it clocks_throttle_reasons
            events = gpu.find("clocks_throttle_reasons")
        if events is not None:
            for child in events:
                if (child.text or "").strip() == "Active":
                    reasons.append(re.sub(r"^clocks_(event|throttle)_reasons?_", "", child.tag))
        cc = None
        major, minor = element_text(gpu, "compute_capability/major"), element_text(gpu, "compute_capability/minor")
        if major and minor:
            cc = f"{major}.{minor}"
        numa = element_text(gpu, "numa_node") or element_text(gpu, "pci/numa_node")
        gpus.append(
            GpuInfo(
                # nvidia-smi lists GPUs in index order (the index --query-gpu and topo -m use). minor_number is
                # the /dev/nvidiaN number: in a container given host GPU 3 it is 3 while the index is 0.
                index=i,
                name=element_text(gpu, "product_name") or "unknown",
                architecture=element_text(gpu, "product_architecture"),
                compute_cap=cc,
                pci_bus_id=gpu.get("id") or element_text(gpu, "pci/pci_bus_id"),
                uuid=element_text(gpu, "uuid"),
                memory_total_mib=number(element_text(gpu, "fb_memory_usage/total")),
                memory_used_mib=number(element_text(gpu, "fb_memory_usage/used")),
                power_draw_w=first_number(
                    gpu,
                    "gpu_power_readings/instant_power_draw",
                    "gpu_power_readings/power_draw",
                    "gpu_power_readings/average_power_draw",
                    "power_readings/power_draw",
                ),
                power_limit_w=first_number(
                    gpu,
                    "gpu_power_readings/current_power_limit",
                    "gpu_power_readings/power_limit",
                    "power_readings/power_limit",
                ),
                sm_clock_mhz=number(element_text(gpu, "clocks/sm_clock")),
                sm_clock_max_mhz=number(element_text(gpu, "max_clocks/sm_clock")),
                mem_clock_mhz=number(element_text(gpu, "clocks/mem_clock")),
                utilization_pct=number(element_text(gpu, "utilization/gpu_util")),
                temperature_c=number(element_text(gpu, "temperature/gpu_temp")),
                clocks_throttle_reasons=reasons,
                numa_node=int(numa) if numa and numa.isdigit() else None,
            )
        )
    return GpuInventory(
        driver_version=element_text(root, "driver_version"),
        cuda_version=element_text(root, "cuda_version"),
        gpus=gpus,
    )


def parse_query_csv(csv_text: str) -> list[dict[str, str]]:
    """Rows of `--query-gpu=... --format=csv` keyed by field name (units stripped from the header)."""
    lines = [ln for ln in csv_text.splitlines() if ln.strip()]
    if not lines:
        return []
    reader = csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True)
    header = next(reader)
    keys = [re.sub(r"\s*\[.*?\]\s*$", "", h).strip() for h in header]
    if "index" not in keys and "name" not in keys:
        raise NvidiaSmiParseError("nvidia-smi --query-gpu output has no header row (was --format=csv,noheader used?)")
    return [dict(zip(keys, (c.strip() for c in row))) for row in reader if row]


# --query-gpu names for the same value vary between the request and the header nvidia-smi prints back.
_ALIASES = {"clocks.sm": ("clocks.sm", "clocks.current.sm")}


def _get(row: dict[str, str], key: str) -> str | None:
    for k in _ALIASES.get(key, (key,)):
        if k in row:
            return row[k]
    return None


def inventory_from_query(rows: list[dict[str, str]]) -> GpuInventory:
    """A GpuInventory from query CSV rows alone (when `-q -x` is unavailable)."""
    gpus = []
    for i, row in enumerate(rows):
        idx = row.get("index", str(i))
        gpus.append(
            GpuInfo(
                index=int(idx) if idx.isdigit() else i,
                name=row.get("name") or "unknown",
                compute_cap=_cc(row.get("compute_cap")),
                pci_bus_id=row.get("pci.bus_id"),
                memory_total_mib=number(row.get("memory.total")),
                memory_used_mib=number(row.get("memory.used")),
                power_draw_w=number(row.get("power.draw")),
                power_limit_w=number(row.get("power.limit")),
                sm_clock_mhz=number(_get(row, "clocks.sm")),
                sm_clock_max_mhz=number(_get(row, "clocks.max.sm")),
                utilization_pct=number(row.get("utilization.gpu")),
                temperature_c=number(row.get("temperature.gpu")),
            )
        )
    driver = rows[0].get("driver_version") if rows else None
    return GpuInventory(driver_version=driver, gpus=gpus)


def _cc(value: str | None) -> str | None:
    if not value or number(value) is None:
        return None
    return value.strip()


def merge_query(inv: GpuInventory, rows: list[dict[str, str]]) -> GpuInventory:
    """Fill fields the XML lacks (compute capability on most drivers) from query CSV rows, matched by index."""
    by_index: dict[int, dict[str, str]] = {}
    for i, query_row in enumerate(rows):
        idx = query_row.get("index", str(i))
        by_index[int(idx) if idx.isdigit() else i] = query_row
    for gpu in inv.gpus:
        row = by_index.get(gpu.index)
        if row is None:
            continue
        gpu.compute_cap = gpu.compute_cap or _cc(row.get("compute_cap"))
        for attr, key in (
            ("memory_total_mib", "memory.total"),
            ("memory_used_mib", "memory.used"),
            ("power_draw_w", "power.draw"),
            ("power_limit_w", "power.limit"),
            ("sm_clock_mhz", "clocks.sm"),
            ("sm_clock_max_mhz", "clocks.max.sm"),
            ("utilization_pct", "utilization.gpu"),
            ("temperature_c", "temperature.gpu"),
        ):
            if getattr(gpu, attr) is None:
                setattr(gpu, attr, number(_get(row, key)))
    if inv.driver_version is None and rows:
        inv.driver_version = rows[0].get("driver_version")
    return inv


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def parse_topo(text: str) -> GpuTopology:
    """Parse `nvidia-smi topo -m`: link kind per GPU pair, CPU and NUMA affinity per GPU."""
    clean = _ANSI.sub("", text)
    lines = clean.splitlines()
    header: list[str] | None = None
    links: list[GpuLink] = []
    cpu: dict[int, str] = {}
    numa: dict[int, str] = {}
    for line in lines:
        if not line.strip():
            if header is not None and links:
                break  # the legend follows the matrix
            continue
        cells = [c.strip() for c in line.split("\t")]
        if header is None:
            if line.startswith(("\t", " ")) and any(re.fullmatch(r"GPU\d+", c) for c in cells):
                header = [c for c in cells if c]
            continue
        row_name, values = cells[0], [c for c in cells[1:] if c]
        m = re.fullmatch(r"GPU(\d+)", row_name)
        if not m:
            continue
        a = int(m.group(1))
        for col, value in zip(header, values):
            cm = re.fullmatch(r"GPU(\d+)", col)
            if cm:
                b = int(cm.group(1))
                if a < b:
                    links.append(GpuLink(a=a, b=b, kind=value))
            elif col == "CPU Affinity":
                cpu[a] = value
            elif col == "NUMA Affinity":
                numa[a] = value
    if header is None:
        raise NvidiaSmiParseError("nvidia-smi topo -m output has no GPU header row")
    return GpuTopology(
        links=links,
        nvlink=any(link.kind.startswith("NV") for link in links),
        cpu_affinity=cpu,
        numa_affinity=numa,
        raw=text[:4000],
    )


def no_gpu_reason(stdout: str, stderr: str) -> str | None:
    """The one-line reason nvidia-smi gave for finding no usable GPU, if it gave one."""
    for text in (stdout, stderr):
        for marker in NO_GPU_MARKERS:
            if marker in text:
                line = next(ln for ln in text.splitlines() if marker in ln)
                return line.strip()
    return None
