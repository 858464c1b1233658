"""A staged GPU host in a temp dir: fake `nvidia-smi` built from real captures, a HOME with caches in real formats,
a site-packages with dist-info metadata, and the environment to run probes under.

Formats come from tests/probes/data (real H200 captures; see the READMEs there). The fake nvidia-smi (a shell front
over answers rendered at staging, and a Python script for the rest) answers `-q -x`, `--query-gpu=...
--format=csv[,noheader][,nounits]`, `topo -m`, `nvlink -s/-e` and `-L` from a JSON spec written beside it. `StagedHost.wrap(host)` runs every command under the staged environment (`env K=V ... argv`),
which works the same for a local host and over SSH.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import time
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from orchestrator.hosts.base import CommandResult

DATA = Path(__file__).resolve().parent.parent / "probes" / "data"
H200 = DATA / "h200"
CAPTURE = DATA / "h200_capture"
CACHES = DATA / "caches"

RTX_PRO_6000 = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"
FLASHINFER_VERSION = "0.5.3"

# Header names nvidia-smi prints back for the query fields (from the real H200 captures).
HEADERS = {
    "memory.total": "memory.total [MiB]", "memory.used": "memory.used [MiB]", "power.draw": "power.draw [W]",
    "power.limit": "power.limit [W]", "clocks.sm": "clocks.current.sm [MHz]", "clocks.max.sm": "clocks.max.sm [MHz]",
    "utilization.gpu": "utilization.gpu [%]",
}

LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""

FAKE_NVIDIA_SMI = r'''#!/bin/sh
# Fake nvidia-smi (tests): `-q -x` is the staged XML file; another query the Python fake beside it answered before
# comes from its cache while that is newer than nvidia-smi.json; anything else (arguments with a slash, or none)
# goes to the Python fake.
{xml}case "$*" in
*/*|"") ;;
*) [ "${0%/*}/.nvidia-smi.cache/$*" -nt "${0%/*}/nvidia-smi.json" ] && exec cat "${0%/*}/.nvidia-smi.cache/$*" ;;
esac
exec {python} -IS "${0%/*}/.nvidia-smi.py" "$@"
'''
"""The fake `nvidia-smi` on a staged host's PATH: a shell front that serves a repeated query from
`.nvidia-smi.cache` (a Python start costs ~20 ms, `cat` ~2; a case asks the same few queries about 20 times) and
runs FAKE_NVIDIA_SMI_PY (`.nvidia-smi.py`) for anything else. Whatever writes `nvidia-smi.json` calls
`install_fake_nvidia_smi`; a test that edits the XML or the JSON afterwards is answered from the edit."""

FAKE_NVIDIA_SMI_PY = r'''"""Fake nvidia-smi for tests: answers from nvidia-smi.json beside it (formats copied from real captures); an
answer that exits 0 and does not move with time is kept in .nvidia-smi.cache for the shell front (FAKE_NVIDIA_SMI)."""
import io, json, os, sys


def answer(spec, args):
    """(exit code, stdout, stderr, whether the answer moves with time) for these arguments."""
    out, moving = io.StringIO(), False
    if spec.get("no_devices"):
        return 6, "No devices were found\n", "", False
    if args[:2] == ["-q", "-x"]:
        with open(spec["xml"]) as f:
            out.write(f.read())
    elif args[:2] == ["topo", "-m"]:
        out.write(spec["topo"])
    elif args[:1] == ["nvlink"] and args[1:2] in (["-s"], ["--status"]):
        out.write(spec.get("nvlink_s", ""))
    elif args[:1] == ["nvlink"] and args[1:2] in (["-e"], ["--errorcounters"]):
        text, growth = spec.get("nvlink_e", ""), spec.get("nvlink_e_growth")
        if growth:  # counters growing at a staged rate per second since staging, as a faulty link's do
            import re, time
            moving = True
            dt, gpu, lines = time.time() - spec["nvlink_e_t0"], None, []
            for line in text.split("\n"):
                m = re.match(r"GPU (\d+):", line)
                gpu = int(m.group(1)) if m else gpu
                m = re.match(r"(\s+Link (\d+): (\w+) Errors: )(\d+)$", line)
                rate = growth.get("%s:%s:%s" % (gpu, m.group(2), m.group(3))) if m else None
                lines.append(m.group(1) + str(int(m.group(4)) + int(rate * dt)) if rate else line)
            text = "\n".join(lines)
        out.write(text)
    elif args[:1] == ["-L"]:
        for i, g in enumerate(spec["gpus"]):
            out.write("GPU %d: %s (UUID: GPU-00000000-0000-0000-0000-00000000000%d)\n" % (i, g["name"], i))
    elif args and args[0].startswith("--query-gpu="):
        fields = args[0].split("=", 1)[1].split(",")
        fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), "csv").split(",")
        if "noheader" not in fmt:
            out.write(", ".join(spec["headers"].get(f, f) for f in fields) + "\n")
        for g in spec["gpus"]:
            vals = [str(g.get(f, "[N/A]")) for f in fields]
            if "nounits" in fmt:  # units go (`143771 MiB` -> `143771`), names stay whole (`NVIDIA H200`)
                vals = [v.split(" ")[0] if v[:1].isdigit() or v[:1] == "-" else v for v in vals]
            out.write(", ".join(vals) + "\n")
    elif args and args[0].startswith("--query-compute-apps="):
        # `nvidia-smi --query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv[,noheader][,nounits]`
        fields = args[0].split("=", 1)[1].split(",")
        fmt = next((a.split("=", 1)[1] for a in args if a.startswith("--format=")), "csv").split(",")
        if "noheader" not in fmt:
            out.write(", ".join({"used_memory": "used_gpu_memory [MiB]"}.get(f, f) for f in fields) + "\n")
        for app in spec.get("apps", []):
            vals = [str(app.get(f, "[N/A]")) for f in fields]
            if "nounits" in fmt:
                vals = [v.split(" ")[0] for v in vals]
            out.write(", ".join(vals) + "\n")
    else:
        return 2, "", "fake nvidia-smi: unsupported arguments %r\n" % (args,), False
    return 0, out.getvalue(), "", moving


def keep(here, args, text):
    """Keep an answer for the shell front: one file per argument string."""
    if not args or any("/" in a for a in args):
        return
    cache = os.path.join(here, ".nvidia-smi.cache")
    try:
        os.makedirs(cache, exist_ok=True)
        tmp = os.path.join(cache, ".tmp.%d" % os.getpid())
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(cache, " ".join(args)))
    except OSError:  # a name too long for the filesystem: no cache for it
        pass


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "nvidia-smi.json")) as f:
        spec = json.load(f)
    args = sys.argv[1:]
    rc, text, err, moving = answer(spec, args)
    sys.stdout.write(text)
    sys.stderr.write(err)
    if rc == 0 and not moving:
        keep(here, args, text)
    sys.exit(rc)
'''


@dataclass
class GpuSpec:
    """One variant: what the fake nvidia-smi reports."""

    name: str
    count: int
    compute_cap: str
    architecture: str
    power_w: float
    power_limit_w: float
    util_pct: float
    sm_clock: float
    sm_clock_max: float
    memory_mib: float
    nvlink: bool = False


VARIANTS: dict[str, GpuSpec | str | None] = {
    "h200": "capture-1",
    "h200x2": "capture-2",
    "rtx-pro-6000x8": GpuSpec(RTX_PRO_6000, 8, "12.0", "Blackwell", 330.0, 600.0, 98, 2280, 2617, 97887),
    "rtx-5090": GpuSpec("NVIDIA GeForce RTX 5090", 1, "12.0", "Blackwell", 410.0, 575.0, 95, 2400, 3090, 32607),
    "b200x8": GpuSpec("NVIDIA B200", 8, "10.0", "Blackwell", 850.0, 1000.0, 90, 1965, 1965, 183359, nvlink=True),
    "a100x4": GpuSpec("NVIDIA A100-SXM4-80GB", 4, "8.0", "Ampere", 250.0, 400.0, 80, 1410, 1410, 81920, nvlink=True),
    "no-nvidia-smi": None,
    "no-devices": "no-devices",
}


@dataclass
class StagedHost:
    root: Path
    home: Path
    bin: Path
    site: Path
    env: dict[str, str]
    variant: str
    python: str = sys.executable
    gpus: list[dict[str, str]] = field(default_factory=list)
    procs: list = field(default_factory=list)
    """Real processes staged as GPU / serving processes (tests/support/stage_node.py); `cleanup` ends them."""

    def cleanup(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
        self.procs.clear()

    def wrap(self, host) -> "EnvHost":
        """The given host with every command run under this staged environment."""
        return EnvHost(host, self.env)


class EnvHost:
    """Runs argv as `env K=V ... argv` on the wrapped host; reads and finds pass through."""

    def __init__(self, inner, env: dict[str, str]):
        self.inner = inner
        self.env = env
        self.name = inner.name

    async def run(self, argv, *, stdin=None, timeout_s=60.0, max_output=1_000_000) -> CommandResult:
        prefix = ["env"] + [f"{k}={v}" for k, v in sorted(self.env.items())]
        res = await self.inner.run(prefix + list(argv), stdin=stdin, timeout_s=timeout_s, max_output=max_output)
        res.argv = list(argv)
        return res

    async def read_file(self, path, *, max_bytes=1_000_000):
        return await self.inner.read_file(path, max_bytes=max_bytes)

    async def find(self, root, pattern="*", *, max_results=10_000):
        return await self.inner.find(root, pattern, max_results=max_results)

    async def aclose(self):
        await self.inner.aclose()


def _capture_gpus(csv_path: Path) -> list[dict[str, str]]:
    lines = [ln for ln in csv_path.read_text().splitlines() if ln.strip()]
    header = [h.strip() for h in lines[0].split(",")]
    inverse = {v: k for k, v in HEADERS.items()}
    keys = [inverse.get(h, h) for h in header]
    return [dict(zip(keys, (c.strip() for c in ln.split(",")))) for ln in lines[1:]]


def _topo(count: int, nvlink: bool, numa_split: bool = True) -> str:
    cols = [f"GPU{i}" for i in range(count)]
    out = ["\t" + "\t".join(cols + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
    half = max(count // 2, 1)
    for a in range(count):
        cells = []
        for b in range(count):
            if a == b:
                cells.append(" X ")
            elif nvlink:
                cells.append("NV18")
            else:
                cells.append("NODE" if (a < half) == (b < half) or not numa_split else "SYS")
        node = 0 if a < half or not numa_split else 1
        cpus = "0-47,96-143" if node == 0 else "48-95,144-191"
        out.append(f"GPU{a}\t" + "\t".join(cells) + f"\t{cpus}\t{node}\t\tN/A")
    return "\n".join(out) + "\n" + LEGEND


_SYNTH: dict[str, str] = {}
"""Synthesized XML by GpuSpec (many cases stage the same variant: built once per process)."""


def _synth_xml(spec: GpuSpec, dest: Path) -> None:
    key = repr(spec)
    if key not in _SYNTH:
        _SYNTH[key] = _synth_xml_text(spec)
    dest.write_text(_SYNTH[key])


def _synth_xml_text(spec: GpuSpec) -> str:
    # Start from the real H200 XML so every element nvidia-smi prints is present, then change what differs.
    text = "\n".join(ln for ln in (H200 / "nvidia-smi-q.xml").read_text().splitlines() if not ln.startswith("<!DOCTYPE"))
    root = ET.fromstring(text)
    template = root.find("gpu")
    root.remove(template)
    template_text = ET.tostring(template, encoding="unicode")
    root.find("attached_gpus").text = str(spec.count)
    for i in range(spec.count):
        gpu = ET.fromstring(template_text)  # a fresh copy (C parser; copy.deepcopy is ten times slower)
        bus = f"00000000:{0x17 + i * 0x10:02X}:00.0"
        gpu.set("id", bus)
        values = {
            "product_name": spec.name, "product_architecture": spec.architecture, "minor_number": str(i),
            "pci/pci_bus_id": bus, "fb_memory_usage/total": f"{spec.memory_mib:.0f} MiB",
            "fb_memory_usage/used": f"{spec.memory_mib * 0.9:.0f} MiB",
            "gpu_power_readings/instant_power_draw": f"{spec.power_w:.2f} W",
            "gpu_power_readings/average_power_draw": f"{spec.power_w:.2f} W",
            "gpu_power_readings/current_power_limit": f"{spec.power_limit_w:.2f} W",
            "gpu_power_readings/requested_power_limit": f"{spec.power_limit_w:.2f} W",
            "gpu_power_readings/default_power_limit": f"{spec.power_limit_w:.2f} W",
            "gpu_power_readings/max_power_limit": f"{spec.power_limit_w:.2f} W",
            "clocks/sm_clock": f"{spec.sm_clock:.0f} MHz", "clocks/graphics_clock": f"{spec.sm_clock:.0f} MHz",
            "max_clocks/sm_clock": f"{spec.sm_clock_max:.0f} MHz", "utilization/gpu_util": f"{spec.util_pct:.0f} %",
            "clocks_event_reasons/clocks_event_reason_gpu_idle": "Not Active",
        }
        for path, text in values.items():
            el = gpu.find(path)
            if el is not None:
                el.text = text
        procs = gpu.find("processes")
        if procs is not None:  # the capture's pids are no process of a staged host
            for child in list(procs):
                procs.remove(child)
        root.append(gpu)
    return "<?xml version='1.0' encoding='utf-8'?>\n" + ET.tostring(root, encoding="unicode")


def _gpu_rows(spec: GpuSpec) -> list[dict[str, str]]:
    return [
        {
            "index": str(i), "name": spec.name, "pci.bus_id": f"00000000:{0x17 + i * 0x10:02X}:00.0",
            "driver_version": "580.95.05", "compute_cap": spec.compute_cap,
            "memory.total": f"{spec.memory_mib:.0f} MiB", "memory.used": f"{spec.memory_mib * 0.9:.0f} MiB",
            "power.draw": f"{spec.power_w:.2f} W", "power.limit": f"{spec.power_limit_w:.2f} W",
            "clocks.sm": f"{spec.sm_clock:.0f} MHz", "clocks.max.sm": f"{spec.sm_clock_max:.0f} MHz",
            "utilization.gpu": f"{spec.util_pct:.0f} %", "temperature.gpu": "71",
        }
        for i in range(spec.count)
    ]


def _stage_nvidia_smi(variant: str, bindir: Path, datadir: Path) -> list[dict[str, str]]:
    spec = VARIANTS[variant]
    if spec is None:
        return []
    smi = {"headers": HEADERS, "gpus": [], "topo": "", "xml": ""}
    if spec == "no-devices":
        smi["no_devices"] = True
    elif spec == "capture-1":
        smi["xml"] = str(H200 / "nvidia-smi-q.xml")
        rows = _capture_gpus(H200 / "nvidia-smi-query.csv")
        for r in rows:
            r.setdefault("memory.used", "0 MiB")
        smi["gpus"] = rows
        smi["topo"] = "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-31\t0\t\tN/A\n" + LEGEND
    elif spec == "capture-2":
        smi["xml"] = str(CAPTURE / "nvidia-smi-q.xml")
        smi["gpus"] = _capture_gpus(CAPTURE / "nvidia-smi-query-probe.csv")
        smi["topo"] = (CAPTURE / "nvidia-smi-topo.txt").read_text()
    else:
        xml = datadir / "nvidia-smi-q.xml"
        _synth_xml(spec, xml)
        smi["xml"] = str(xml)
        smi["gpus"] = _gpu_rows(spec)
        smi["topo"] = _topo(spec.count, spec.nvlink)
    (bindir / "nvidia-smi.json").write_text(json.dumps(smi))
    install_fake_nvidia_smi(bindir)
    return smi["gpus"]


def _prerendered() -> list[list[str]]:
    """The queries the probes send, answered at staging so that even their first, concurrent calls are read from
    the cache (`-q -x` is the front's own `cat`): the GPU inventory's and the power sampler's from their own argv
    (orchestrator/probes/gpu.py, power.py), the ones the host-side scripts build (scripts/node.py, engine.py,
    _quiet.py; prongs/autotune/probe.py) as they write them. Any other query is answered by the Python fake and kept."""
    from orchestrator.probes import gpu, power

    return [gpu.TOPO_ARGV[1:], gpu.QUERY_ARGV[1:], ["--query-gpu=" + power.FIELDS, "--format=csv"],
            ["nvlink", "-s"], ["nvlink", "-e"], ["-L"], ["--query-gpu=name,compute_cap", "--format=csv,noheader"],
            ["--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
            ["--query-gpu=index,pci.bus_id,utilization.gpu,power.draw,memory.used", "--format=csv,noheader,nounits"]]


@functools.lru_cache(maxsize=1)
def _fake_module() -> dict:
    """FAKE_NVIDIA_SMI_PY's functions (`answer`, `keep`), for rendering at staging."""
    ns: dict = {"__name__": "fake_nvidia_smi"}
    exec(compile(FAKE_NVIDIA_SMI_PY, ".nvidia-smi.py", "exec"), ns)
    return ns


def install_fake_nvidia_smi(bindir: Path, name: str = "nvidia-smi") -> None:
    """Write the fake nvidia-smi (FAKE_NVIDIA_SMI as `name`, its Python part) into bindir and answer the probes'
    queries into its cache from nvidia-smi.json (read once more here): call it whenever nvidia-smi.json changes."""
    spec_file = bindir / "nvidia-smi.json"
    spec = json.loads(spec_file.read_text())
    xml = spec.get("xml")
    xml_line = "" if spec.get("no_devices") or not xml or "'" in xml else f"[ \"$*\" = \"-q -x\" ] && exec cat '{xml}'\n"
    (bindir / ".nvidia-smi.py").write_text(FAKE_NVIDIA_SMI_PY)
    exe = bindir / name
    exe.write_text(FAKE_NVIDIA_SMI.replace("{python}", sys.executable).replace("{xml}", xml_line))
    exe.chmod(0o755)
    shutil.rmtree(bindir / ".nvidia-smi.cache", ignore_errors=True)
    # the answers below must be newer than the spec (`-nt`), and file times tick in milliseconds: date the spec a
    # second back, so that only a later edit of it is newer than they are
    back = time.time() - 1.0
    os.utime(spec_file, (back, back))
    fake = _fake_module()
    for args in _prerendered():
        try:
            rc, text, _err, moving = fake["answer"](spec, args)
        except (OSError, KeyError, ValueError):  # the fake fails the same way when asked: leave it to say so
            continue
        if rc == 0 and not moving:
            fake["keep"](str(bindir), args, text)


def _dist(site: Path, name: str, version: str) -> None:
    d = site / f"{name.replace('-', '_')}-{version}.dist-info"
    d.mkdir(parents=True, exist_ok=True)
    # Metadata-Version 2.1 header lines as pip writes them (see tests/probes/data/h200_capture/meta/*.METADATA).
    (d / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: staged for tests\n"
        "Requires-Python: >=3.9\n\nlong description\n"
    )


SM120_HEURISTIC = """// Shaped after flashinfer csrc/nv_internal/tensorrt_llm/kernels/cutlass_kernels/cutlass_heuristic.cpp
std::vector<CutlassGemmConfig> get_candidate_configs_sm120(CutlassGemmConfig::CandidateConfigTypeParam const config)
{
    if (config & CutlassGemmConfig::GROUPED_GEMM)
    {
        return {CutlassGemmConfig{CutlassTileConfigSM120::CtaShape128x128x128B, MainloopScheduleType::AUTO,
                    EpilogueScheduleType::AUTO, ClusterShape::ClusterShape_1x1x1}};
    }
    return {CutlassGemmConfig{CutlassTileConfigSM120::CtaShape128x128x128B, MainloopScheduleType::AUTO,
                EpilogueScheduleType::AUTO, ClusterShape::ClusterShape_1x1x1},
        CutlassGemmConfig{CutlassTileConfigSM120::CtaShape128x128x256B, MainloopScheduleType::AUTO,
            EpilogueScheduleType::AUTO, ClusterShape::ClusterShape_1x1x1},
        CutlassGemmConfig{CutlassTileConfigSM120::CtaShape256x128x128B, MainloopScheduleType::AUTO,
            EpilogueScheduleType::AUTO, ClusterShape::ClusterShape_1x1x1}};
}

std::vector<CutlassGemmConfig> get_candidate_configs_sm100(CutlassGemmConfig::CandidateConfigTypeParam const config)
{
    return {CutlassGemmConfig{CutlassTileConfigSM100::CtaShape64x64x128B, MainloopScheduleType::AUTO,
        EpilogueScheduleType::AUTO, ClusterShape::ClusterShape_1x1x1}};
}
"""

GEMM_PY = '''"""Shaped after flashinfer/gemm/gemm_base.py backend capability decorators."""


@supported_compute_capability([100, 103, 110, 120, 121])
def _cutlass_gemm_fp4_requirement(a, b):
    return True


@supported_compute_capability([100, 103])
def _trtllm_gemm_fp4_requirement(a, b):
    return True
'''

TORCH_INIT = '''"""Staged torch: only what the pyenv probe asks (version and CUDA arch list), read from version.py."""
from .version import __version__, cuda as _cuda


class _Version:
    cuda = _cuda


class cuda:
    @staticmethod
    def get_arch_list():
        return ["sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]

    @staticmethod
    def is_available():
        return False


version = _Version
'''

DEFAULT_PACKAGES = {"torch": "2.9.0+cu128", "triton": "3.5.0", "flashinfer-python": FLASHINFER_VERSION,
                    "vllm": "0.11.2"}


def _stage_site(site: Path, packages: dict[str, str], torch_binary: bool = True) -> None:
    for name, version in packages.items():
        _dist(site, name, version)
    if "torch" in packages:
        (site / "torch").mkdir(parents=True, exist_ok=True)
        cuda = packages["torch"].split("+cu")[-1] if "+cu" in packages["torch"] else None
        cuda_s = f"'{cuda[:-1]}.{cuda[-1]}'" if cuda else "None"
        # torch/version.py as torch 2.11 writes it (tests/probes/data/h200_capture/meta/torch_version.py).
        (site / "torch" / "version.py").write_text(
            f"from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'xpu']\n"
            f"__version__ = '{packages['torch']}'\ndebug = False\ncuda: Optional[str] = {cuda_s}\n"
            f"git_version = '0000000000000000000000000000000000000000'\nhip: Optional[str] = None\n"
            f"xpu: Optional[str] = None\n"
        )
        (site / "torch" / "__init__.py").write_text(TORCH_INIT)
        if torch_binary:
            # torch's CUDA arch list sits in libtorch_python.so as one NUL-terminated string (CUDA_ARCH_FLAGS), which
            # the pyenv probe reads without importing torch, as on a real host; without the file it imports torch
            lib = site / "torch" / "lib"
            lib.mkdir(exist_ok=True)
            flags = " ".join(["sm_80", "sm_86", "sm_90", "sm_100", "sm_120"])  # TORCH_INIT's get_arch_list()
            (lib / "libtorch_python.so").write_bytes(b"\x7fELF-staged\x00" + flags.encode() + b"\x00tail")
    if "flashinfer-python" in packages:
        fi = site / "flashinfer"
        heur = fi / "data" / "csrc" / "nv_internal" / "tensorrt_llm" / "kernels" / "cutlass_kernels"
        heur.mkdir(parents=True, exist_ok=True)
        (heur / "cutlass_heuristic.cpp").write_text(SM120_HEURISTIC)
        (fi / "__init__.py").write_text("")
        (fi / "gemm").mkdir(exist_ok=True)
        (fi / "gemm" / "gemm_base.py").write_text(GEMM_PY)
    if "vllm" in packages:
        cfg = site / "vllm" / "model_executor" / "layers" / "fused_moe" / "configs"
        cfg.mkdir(parents=True, exist_ok=True)
        body = (CACHES / "E=256,N=256,device_name=NVIDIA_RTX_PRO_6000_Blackwell_Workstation_Edition,dtype=fp8_w8a8,"
                "block_shape=[128,128].json").read_text()
        # Names as shipped by vLLM (other devices and other shapes than the seed case's E=256, N=256).
        for name in ("E=128,N=384,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128].json",
                     "E=256,N=256,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128].json",
                     "E=128,N=768,device_name=NVIDIA_RTX_PRO_6000_Blackwell_Server_Edition.json",
                     "E=128,N=384,device_name=NVIDIA_RTX_PRO_6000_Blackwell_Workstation_Edition,dtype=fp8_w8a8.json"):
            (cfg / name).write_text(body)


ALL_CACHES = ("flashinfer_jit", "flashinfer_autotune", "trtllm", "vllm_tuned", "vllm_flashinfer", "triton",
              "inductor", "tunableop")


def _stage_caches(root: Path, home: Path, env: dict[str, str], caches: Iterable[str]) -> None:
    caches = set(caches)
    if "flashinfer_jit" in caches:
        ops = home / ".cache" / "flashinfer" / FLASHINFER_VERSION / "120a" / "cached_ops"
        for mod in ("fp4_gemm_cutlass_sm120", "norm", "sampling"):
            (ops / mod).mkdir(parents=True, exist_ok=True)
            (ops / mod / f"{mod}.so").write_bytes(b"\x7fELF staged")
    if "flashinfer_autotune" in caches:
        # flashinfer.autotune(cache=...) writes where the user says; under the JIT cache root is one such place.
        d = home / ".cache" / "flashinfer"
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(CACHES / "flashinfer_autotune.json", d / "autotune_fp4.json")
    if "trtllm" in caches:
        p = root / "trtllm" / "autotuner_cache.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CACHES / "trtllm_autotuner.json", p)
        env["TLLM_AUTOTUNER_CACHE_PATH"] = str(p)
    if "vllm_tuned" in caches:
        d = root / "tuned_moe"
        d.mkdir(parents=True, exist_ok=True)
        for f in CACHES.glob("E=*.json"):
            shutil.copy(f, d / f.name)
        env["VLLM_TUNED_CONFIG_FOLDER"] = str(d)
    if "vllm_flashinfer" in caches:
        d = home / ".cache" / "vllm" / "flashinfer_autotune_cache" / FLASHINFER_VERSION / "120a" / ("0" * 64)
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(CACHES / "flashinfer_autotune.json", d / "autotune_configs.json")
    if "triton" in caches:
        d = home / ".triton" / "cache" / "WP7THHW7AO4YBRMSLPS2KHMME5TLV6MDZZUW2P6D6PTUSKVQU2BQ"
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(H200 / "add.autotune.json", d / "add.autotune.json")
    if "inductor" in caches:
        src = next((CAPTURE / "files" / "inductor").rglob("*.best_config"))
        d = Path(env["TORCHINDUCTOR_CACHE_DIR"]) / src.parent.name
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, d / src.name)
    if "tunableop" in caches:
        d = root / "tunableop"
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(CAPTURE / "files" / "tunableop" / "tunableop_results0.csv", d / "tunableop_results0.csv")
        env["PYTORCH_TUNABLEOP_FILENAME"] = str(d / "tunableop_results%d.csv")


def stage_host(
    tmp_path: Path,
    variant: str = "rtx-pro-6000x8",
    caches: Iterable[str] = ("flashinfer_jit",),
    packages: dict[str, str] | None = None,
    torch_binary: bool = True,
    root_name: str = "staged",
) -> StagedHost:
    """Build a staged GPU host under tmp_path. The default is the seed case: 8 x RTX PRO 6000 Blackwell Workstation
    Edition at 330 W of 600 W and 98 % utilization, FlashInfer installed with only a JIT cache and no persisted
    autotune results. `torch_binary=False` leaves out torch/lib/libtorch_python.so (the probe then imports torch).
    `root_name`: the folder under tmp_path that is the host's root (scripts/record_seed.py names it after the box)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; one of {', '.join(VARIANTS)}")
    root = Path(tmp_path) / root_name
    # a virtualenv (PEP 405): the probes run its python3 isolated (-I -S) and find its site-packages from pyvenv.cfg
    version = "%d.%d" % sys.version_info[:2]
    home, bindir, datadir = root / "home", root / "bin", root / "data"
    site = root / "lib" / f"python{version}" / "site-packages"
    for d in (home, bindir, site, datadir):
        d.mkdir(parents=True, exist_ok=True)
    (root / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\ninclude-system-site-packages = true\n"
                                     f"version = {'.'.join(map(str, sys.version_info[:3]))}\n")
    gpus = _stage_nvidia_smi(variant, bindir, datadir)
    py = bindir / "python3"
    py.symlink_to(sys.executable)
    path = [str(bindir)] + [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not
                            (Path(p) / "nvidia-smi").exists()]
    env = {
        "PATH": os.pathsep.join(path),
        "HOME": str(home),
        "PYTHONPATH": str(site),
        "PYTHONNOUSERSITE": "1",
        # Inductor's default is /tmp/torchinductor_<user>, shared by the whole machine: keep tests hermetic.
        "TORCHINDUCTOR_CACHE_DIR": str(root / "torchinductor"),
        # The engine and node probes on a staged host see only the processes staged for it (carrying this tag),
        # never another test's: tests on one machine run concurrently.
        "INVESTIGATE_STAGED_TAG": uuid.uuid4().hex,
    }
    _stage_site(site, DEFAULT_PACKAGES if packages is None else packages, torch_binary)
    _stage_caches(root, home, env, caches)
    staged = StagedHost(root=root, home=home, bin=bindir, site=site, env=env, variant=variant, python=str(py),
                        gpus=gpus)
    # the node probe's commands and files (dmesg, lspci, /proc/cmdline, /sys) are staged too: a test never reads
    # the machine it runs on (the real H200's boot lines in dmesg, no lspci, no systemctl, no RDMA, no IOMMU)
    from support.stage_node import stage_node_files

    stage_node_files(staged, {"count": len(gpus) or 1})
    return staged


class CountingHost:
    """Passes everything to the wrapped host and counts round trips (run, read_file, find)."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name
        self.calls: list[list[str]] = []

    async def run(self, argv, *, stdin=None, timeout_s=60.0, max_output=1_000_000) -> CommandResult:
        self.calls.append(list(argv))
        return await self.inner.run(argv, stdin=stdin, timeout_s=timeout_s, max_output=max_output)

    async def read_file(self, path, *, max_bytes=1_000_000):
        self.calls.append(["read_file", path])
        return await self.inner.read_file(path, max_bytes=max_bytes)

    async def find(self, root, pattern="*", *, max_results=10_000):
        self.calls.append(["find", root])
        return await self.inner.find(root, pattern, max_results=max_results)

    async def aclose(self):
        await self.inner.aclose()
