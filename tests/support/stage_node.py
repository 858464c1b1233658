"""Node-health staging: a fake GPU host's nvidia-smi, kernel log, PCI links, RDMA, IOMMU, NUMA and GPU processes.

Everything starts from REAL captures (tests/node/data, two H200 hosts, driver 580.159.04; see the README there) and is
edited, never invented from scratch: `nvidia-smi -q -x` is the real XML with values changed in place (same elements,
same tabs), `nvidia-smi nvlink -s/-e` and `topo -m` print in the captured layout, kernel-log lines use the driver's
format (`NVRM: Xid (PCI:0000:18:00): 79, pid=…, name=…, GPU has fallen off the bus.`), a restricted dmesg prints
util-linux's `dmesg: read kernel buffer failed: Operation not permitted` and exits 1.

GPU processes are real processes (a sleeper whose command line reads like the engine, with the environment given),
so the probe reads their /proc/PID/environ and status like on a real host; their pids go into the XML.
Use `stage_node(staged, spec)` on a StagedHost (tests/support/staged_host.py); `staged.cleanup()` ends the processes.

spec keys (all optional):
  model: h200 | h100 | b200 | a100        base name/limits (the XML stays the H200 capture's layout)
  count: 8                               number of GPUs
  driver: "570.172.08"                   driver_version in the XML (and the GSP firmware version)
  load: true                             busy GPUs (the load capture) or idle (the idle capture)
  gpus: {<index>: {...}}                 per-GPU edits (below); `all: {...}` applies to every GPU first
  nvlink: {links: 18, speed: 26.562, gpus: {<index>: {down: [2, 5], crc: {3: 1200}, replay: {..}, recovery: {..},
           crc_rate: {3: 250}, replay_rate: {..}, recovery_rate: {..}, all_inactive: true}}}
                                         NVLink (also puts NV<links> in topo -m); omit for PCIe-only GPUs;
                                         `*_rate`: errors per second the counters grow by, read after read
  topo: {cpus: ["0", "1"], link: NODE}   per-NUMA-node CPU lists (GPUs split evenly; default: this machine's CPUs
                                         in two nodes), PCIe link kind between GPUs of one node (SYS across)
  kernel: {lines: [...], restricted: false, journal: true|false, kern_log: true|false, source: dmesg}
  lspci: {gpus: {<index>: {speed: 2.5, width: 16}}, acs: true, denied: false}  (absent key: lspci not installed)
  rdma: [{name: mlx5_0, state: "4: ACTIVE", rate: "400 Gb/sec (4X NDR)", link_layer: InfiniBand}]
  libibverbs: true
  cmdline: "BOOT_IMAGE=... intel_iommu=on"
  iommu_devices: ["dmar0", "dmar1"]
  numa_cpus: ["0-47", "48-95"]            /sys/devices/system/node/nodeN/cpulist
  fabricmanager: active | inactive | failed   (systemctl is-active; absent: systemctl not installed)
  processes: [{gpus: [0, 1], kind: vllm | sglang | other, name: python3, memory_mib: 70000, env: {...},
               cpus: [1], per_gpu: true, hidden: true}]
                                         real processes (an engine: one worker per GPU, named as the engine
                                         names them; other: one process); `cpus` pins them (sched_setaffinity);
                                         `per_gpu` one per GPU (`name` may say `{rank}`); `hidden`: PIDs of another
                                         PID namespace (a container's, as nvidia-smi lists them), nothing started
Per-GPU edits: name, power_limit_w, default_power_limit_w, max_power_limit_w, power_draw_w, clocks_event: [...],
  sm_clock_mhz, max_sm_clock_mhz, app_sm_clock_mhz, utilization_pct, temperature_c, pstate,
  ecc: {mode, volatile_dbe, aggregate_dbe, volatile_sbe, aggregate_sbe}, retired: {sbe, dbe, pending},
  remapped_rows: {correctable, uncorrectable, pending, failure}, pcie: {gen, width, gen_max, width_max},
  persistence: bool, mig: bool, fabric: {state, status}, recovery_action,
  smi_q: the text of a real `nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT` (support/smi_q.py), applied last.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import time
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from support.smi_q import apply_smi_q
from support.staged_host import LEGEND  # the `nvidia-smi topo -m` legend, one copy

NODE_DATA = Path(__file__).resolve().parent.parent / "node" / "data"

# Bus ids of an HGX 8-GPU baseboard (as nvidia-smi prints them), for staged multi-GPU hosts.
HGX_BUS = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]

MODELS = {
    # name, default / max power limit, max SM clock, PCIe gen
    "h200": ("NVIDIA H200", 700.0, 1980, 5),
    "h100": ("NVIDIA H100 80GB HBM3", 700.0, 1980, 5),
    "h100-pcie": ("NVIDIA H100 PCIe", 350.0, 1755, 5),
    "b200": ("NVIDIA B200", 1000.0, 1965, 6),
    "a100": ("NVIDIA A100-SXM4-80GB", 400.0, 1410, 4),
    "l40s": ("NVIDIA L40S", 350.0, 2520, 4),
    "rtx-pro-6000": ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 600.0, 2617, 5),
}
MEMORY_MIB = {"h200": 143771, "h100": 81559, "h100-pcie": 81559, "b200": 183359, "a100": 81920, "l40s": 46068,
              "rtx-pro-6000": 97887}
CC = {"h200": "9.0", "h100": "9.0", "h100-pcie": "9.0", "b200": "10.0", "a100": "8.0", "l40s": "8.9",
      "rtx-pro-6000": "12.0"}

LSPCI_NAMES = {"h200": "GH100 [H200 SXM 141GB]", "h100": "GH100 [H100 SXM5 80GB]", "b200": "GB100 [B200]",
               "a100": "GA100 [A100 SXM4 80GB]", "h100-pcie": "GH100 [H100 PCIe]", "l40s": "AD102GL [L40S]",
               "rtx-pro-6000": "GB202GL [RTX PRO 6000 Blackwell Workstation Edition]"}

REASONS = ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "hw_thermal_slowdown",
           "hw_power_brake_slowdown", "sync_boost", "sw_thermal_slowdown", "display_clocks_setting")
COUNTER_OF = {"sw_power_cap": "sw_power_cap", "sync_boost": "sync_boost", "sw_thermal_slowdown": "sw_therm_slowdown",
              "hw_thermal_slowdown": "hw_therm_slowdown", "hw_power_brake_slowdown": "hw_power_brake"}

SLEEPER = ("import os, time\np = os.getppid()\nwhile os.getppid() == p:\n    time.sleep(0.5)\n")
"""A process that lives as long as the test process that started it (it exits when reparented)."""

PROCTITLE = {"vllm": "VLLM::Worker_TP{rank}", "sglang": "sglang::scheduler_TP{rank}"}
"""The engines' GPU processes name themselves (setproctitle): vLLM's workers `VLLM::Worker_TP0`, SGLang's
schedulers `sglang::scheduler_TP0`; nvidia-smi lists those, not the API server. Staged the same way, they are also
invisible to the `discover` probe of concurrently running tests (it looks for server entry points only)."""
OTHER_ARGV = ["python3", "train.py", "--config", "finetune.yaml"]

DEFAULT_CMDLINE = "BOOT_IMAGE=/boot/vmlinuz-6.8.0-60-generic root=UUID=00000000-0000-0000-0000-000000000000 ro console=tty1 console=ttyS0"


def _nvlink(spec: dict[str, Any]) -> dict[str, Any] | None:
    """The spec's NVLink block: None for PCIe-only GPUs; `nvlink: {}` or `true` means 18 healthy links."""
    nv = spec.get("nvlink")
    if nv is None or nv is False:
        return None
    return {} if nv is True else dict(nv)


def bus_id(i: int, count: int) -> str:
    return f"00000000:{HGX_BUS[i] if count <= 8 else f'{0x10 + i:02X}'}:00.0"


def _on(v: Any) -> bool:
    """A case's boolean, however spelled (true, "Enabled", "Yes", "on", 1)."""
    if isinstance(v, str):
        return v.strip().lower() in ("enabled", "true", "yes", "on", "1", "active")
    return bool(v)


def _set(el: ET.Element, path: str, text: str) -> None:
    found = el.find(path)
    if found is not None:
        found.text = text


def _w(v: float) -> str:
    return f"{v:.2f} W"


def _edit_gpu(gpu: ET.Element, e: dict[str, Any], model: str) -> None:
    name, default_w, max_sm, _gen = MODELS.get(model, MODELS["h200"])
    if "name" in e:
        _set(gpu, "product_name", e["name"])
    if "memory_mib" in e:
        total = float(e["memory_mib"])
        _set(gpu, "fb_memory_usage/total", f"{total:.0f} MiB")
        _set(gpu, "fb_memory_usage/free", f"{total - 1011 - 616:.0f} MiB")
    if "default_power_limit_w" in e:
        _set(gpu, "gpu_power_readings/default_power_limit", _w(e["default_power_limit_w"]))
    if "max_power_limit_w" in e:
        _set(gpu, "gpu_power_readings/max_power_limit", _w(e["max_power_limit_w"]))
    if "power_limit_w" in e:
        lim = float(e["power_limit_w"])
        _set(gpu, "gpu_power_readings/current_power_limit", _w(lim))
        _set(gpu, "gpu_power_readings/requested_power_limit", _w(lim))
        if "power_draw_w" not in e:
            e = {**e, "power_draw_w": lim - 1.5}
    if "power_draw_w" in e:
        _set(gpu, "gpu_power_readings/average_power_draw", _w(e["power_draw_w"]))
        _set(gpu, "gpu_power_readings/instant_power_draw", _w(e["power_draw_w"] + 3.1))
    if "clocks_event" in e:
        active = set(e["clocks_event"])
        for r in REASONS:
            _set(gpu, f"clocks_event_reasons/clocks_event_reason_{r}", "Active" if r in active else "Not Active")
        for r, counter in COUNTER_OF.items():
            if r in active:
                _set(gpu, f"clocks_event_reasons_counters/clocks_event_reasons_counters_{counter}", "48113602 us")
    if "sm_clock_mhz" in e:
        for p in ("clocks/sm_clock", "clocks/graphics_clock"):
            _set(gpu, p, f"{e['sm_clock_mhz']:.0f} MHz")
    if "max_sm_clock_mhz" in e:
        for p in ("max_clocks/sm_clock", "max_clocks/graphics_clock", "max_customer_boost_clocks/graphics_clock",
                  "default_applications_clocks/graphics_clock", "applications_clocks/graphics_clock"):
            _set(gpu, p, f"{e['max_sm_clock_mhz']:.0f} MHz")
    if "app_sm_clock_mhz" in e:
        _set(gpu, "applications_clocks/graphics_clock", f"{e['app_sm_clock_mhz']:.0f} MHz")
    if "utilization_pct" in e:
        _set(gpu, "utilization/gpu_util", f"{e['utilization_pct']:.0f} %")
    if "temperature_c" in e:
        _set(gpu, "temperature/gpu_temp", f"{e['temperature_c']:.0f} C")
    if "pstate" in e:
        _set(gpu, "performance_state", e["pstate"])
        _set(gpu, "gpu_power_readings/power_state", e["pstate"])
    ecc = e.get("ecc") or {}
    if "mode" in ecc:
        _set(gpu, "ecc_mode/current_ecc", ecc["mode"])
        _set(gpu, "ecc_mode/pending_ecc", ecc["mode"])
    for scope in ("volatile", "aggregate"):
        if f"{scope}_dbe" in ecc:
            _set(gpu, f"ecc_errors/{scope}/dram_uncorrectable", str(ecc[f"{scope}_dbe"]))
        if f"{scope}_sbe" in ecc:
            _set(gpu, f"ecc_errors/{scope}/dram_correctable", str(ecc[f"{scope}_sbe"]))
    rr = e.get("remapped_rows") or {}
    for key, tag in (("correctable", "remapped_row_corr"), ("uncorrectable", "remapped_row_unc")):
        if key in rr:
            _set(gpu, f"remapped_rows/{tag}", str(rr[key]))
    for key, tag in (("pending", "remapped_row_pending"), ("failure", "remapped_row_failure")):
        if key in rr:
            _set(gpu, f"remapped_rows/{tag}", "Yes" if _on(rr[key]) else "No")
    ret = e.get("retired") or {}
    if "sbe" in ret:
        _set(gpu, "retired_pages/multiple_single_bit_retirement/retired_count", str(ret["sbe"]))
    if "dbe" in ret:
        _set(gpu, "retired_pages/double_bit_retirement/retired_count", str(ret["dbe"]))
    if "pending" in ret:
        _set(gpu, "retired_pages/pending_retirement", "Yes" if _on(ret["pending"]) else "No")
    pcie = e.get("pcie") or {}
    base = "pci/pci_gpu_link_info"
    if "gen" in pcie:
        _set(gpu, f"{base}/pcie_gen/current_link_gen", str(pcie["gen"]))
        _set(gpu, f"{base}/pcie_gen/device_current_link_gen", str(pcie["gen"]))
    if "gen_max" in pcie:
        _set(gpu, f"{base}/pcie_gen/max_link_gen", str(pcie["gen_max"]))
        _set(gpu, f"{base}/pcie_gen/max_device_link_gen", str(pcie["gen_max"]))
    if "width" in pcie:
        _set(gpu, f"{base}/link_widths/current_link_width", f"{pcie['width']}x")
    if "width_max" in pcie:
        _set(gpu, f"{base}/link_widths/max_link_width", f"{pcie['width_max']}x")
    if "persistence" in e:
        _set(gpu, "persistence_mode", "Enabled" if _on(e["persistence"]) else "Disabled")
    if "mig" in e:
        _set(gpu, "mig_mode/current_mig", "Enabled" if _on(e["mig"]) else "Disabled")
        _set(gpu, "mig_mode/pending_mig", "Enabled" if _on(e["mig"]) else "Disabled")
    fab = e.get("fabric") or {}
    if "state" in fab:
        _set(gpu, "fabric/state", fab["state"])
    if "status" in fab:
        _set(gpu, "fabric/status", fab["status"])
    if "recovery_action" in e:
        _set(gpu, "gpu_recovery_action", e["recovery_action"])
    if "smi_q" in e:  # a real `nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT` capture, verbatim
        apply_smi_q(gpu, e["smi_q"])


GPU_KEYS = ("name", "memory_mib", "default_power_limit_w", "max_power_limit_w", "power_limit_w", "power_draw_w",
            "clocks_event", "sm_clock_mhz", "max_sm_clock_mhz", "app_sm_clock_mhz", "utilization_pct", "temperature_c",
            "pstate", "ecc", "remapped_rows", "retired", "pcie", "persistence", "mig", "fabric", "recovery_action", "smi_q")
ALIASES = {"temperature": "temperature_c", "temp_c": "temperature_c", "sm_clock": "sm_clock_mhz",
           "clocks_sm_mhz": "sm_clock_mhz", "power_w": "power_draw_w", "power_draw": "power_draw_w",
           "power_limit": "power_limit_w", "enforced_power_limit_w": "power_limit_w", "persistence_mode": "persistence",
           "mig_mode": "mig", "throttle": "clocks_event", "throttle_reasons": "clocks_event",
           "clocks_event_reasons": "clocks_event", "util": "utilization_pct", "utilization": "utilization_pct",
           "app_clocks_mhz": "app_sm_clock_mhz", "application_clocks_mhz": "app_sm_clock_mhz",
           "remap": "remapped_rows", "row_remap": "remapped_rows", "retired_pages": "retired"}
REASON_ALIASES = {"idle": "gpu_idle", "applications_clocks": "applications_clocks_setting", "app_clocks":
                  "applications_clocks_setting", "power_cap": "sw_power_cap", "hw_thermal": "hw_thermal_slowdown",
                  "sw_thermal": "sw_thermal_slowdown", "hw_power_brake": "hw_power_brake_slowdown",
                  "power_brake": "hw_power_brake_slowdown", "display_clock_setting": "display_clocks_setting"}
NESTED = {"pcie_gen": ("pcie", "gen"), "pcie_width": ("pcie", "width"), "pcie_gen_max": ("pcie", "gen_max"),
          "pcie_width_max": ("pcie", "width_max"), "ecc_volatile_dbe": ("ecc", "volatile_dbe"),
          "ecc_aggregate_dbe": ("ecc", "aggregate_dbe"), "ecc_volatile_sbe": ("ecc", "volatile_sbe"),
          "ecc_aggregate_sbe": ("ecc", "aggregate_sbe"), "ecc_mode": ("ecc", "mode"),
          "remap_pending": ("remapped_rows", "pending"), "remap_failure": ("remapped_rows", "failure"),
          "remapped_rows_uncorrectable": ("remapped_rows", "uncorrectable"),
          "fabric_state": ("fabric", "state"), "fabric_status": ("fabric", "status")}


def gpu_edits(edits: dict[str, Any], where: str) -> dict[str, Any]:
    """Per-GPU edits with the spellings a case may use normalized; an unknown key raises ValueError naming it."""
    out: dict[str, Any] = {}
    for key, value in dict(edits or {}).items():
        if key in NESTED:
            outer, inner = NESTED[key]
            out.setdefault(outer, {})[inner] = value
            continue
        key = ALIASES.get(key, key)
        if key not in GPU_KEYS:
            raise ValueError(f"{where}: unknown GPU key {key!r}; known: {', '.join(GPU_KEYS + tuple(NESTED))}")
        if key == "clocks_event":
            if isinstance(value, str):
                value = [v.strip() for v in value.split(",") if v.strip()]
            value = [REASON_ALIASES.get(str(v).lower(), str(v).lower()) for v in value]
            bad = [v for v in value if v not in REASONS]
            if bad:
                raise ValueError(f"{where}: unknown clocks-event reason(s) {', '.join(bad)}; one of {', '.join(REASONS)}")
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key].update(value)
        else:
            out[key] = value
    return out


def _model_defaults(model: str, count: int, nvswitch: bool) -> dict[str, Any]:
    name, default_w, max_sm, gen = MODELS.get(model, MODELS["h200"])
    out: dict[str, Any] = {"name": name, "memory_mib": MEMORY_MIB.get(model, 143771),
                           "default_power_limit_w": default_w, "max_power_limit_w": default_w,
                           "power_limit_w": default_w, "max_sm_clock_mhz": max_sm,
                           "pcie": {"gen": gen, "gen_max": gen, "width": 16, "width_max": 16}}
    if nvswitch:  # HGX baseboards: NVSwitch fabric registered by the fabric manager
        out["fabric"] = {"state": "Completed", "status": "Success"}
    return out


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in (b or {}).items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@functools.lru_cache(maxsize=2)
def _capture_parts(load: bool) -> tuple[str, str, str, str]:
    """The H200 capture (under load or idle) as (text before the root, the root without its <gpu>, one <gpu>, one
    <process_info>), each as text: parsed once per process, copied by parsing the text again."""
    src = NODE_DATA / "h200" / ("smi-qx-load.xml" if load else "smi-qx-idle.xml")
    text = src.read_text()
    head = text[: text.index("<nvidia_smi_log>")]
    root = ET.fromstring(text[len(head):])
    template = root.find("gpu")
    assert template is not None
    proc = template.find("processes/process_info")
    if proc is None:  # the idle capture has none: take the load capture's
        proc = ET.fromstring(_capture_parts(True)[3])
    root.remove(template)
    return (head, ET.tostring(root, encoding="unicode"), ET.tostring(template, encoding="unicode"),
            ET.tostring(proc, encoding="unicode"))


def _capture(load: bool) -> tuple[str, ET.Element, str, str]:
    head, root_text, template_text, proc_text = _capture_parts(load)
    return head, ET.fromstring(root_text), template_text, proc_text


def node_xml(spec: dict[str, Any], pids: dict[int, list[tuple[int, str, float]]]) -> str:
    """`nvidia-smi -q -x` for the spec: the real H200 capture, one <gpu> per GPU, values edited in place."""
    head, root, template_text, proc_text = _capture(bool(spec.get("load", True)))
    model = spec.get("model", "h200")
    count = int(spec.get("count", 1))
    nvswitch = _nvlink(spec) is not None and count >= 4
    if "driver" in spec:
        _set(root, "driver_version", spec["driver"])
    if "cuda" in spec:
        _set(root, "cuda_version", spec["cuda"])
    _set(root, "attached_gpus", str(count))
    defaults = _model_defaults(model, count, nvswitch)
    per = {int(k): gpu_edits(v, f"gpus.{k}") for k, v in (spec.get("gpus") or {}).items()}
    every = gpu_edits(spec.get("all") or {}, "all")
    last_tail = None
    for i in range(count):
        gpu = ET.fromstring(template_text)  # a fresh copy (the C parser; copy.deepcopy was most of staging's time)
        bid = bus_id(i, count)
        gpu.set("id", bid)
        _set(gpu, "pci/pci_bus_id", bid)
        _set(gpu, "pci/pci_bus", bid.split(":")[1])
        _set(gpu, "pci/pci_device", "00")
        _set(gpu, "minor_number", str(i))
        _set(gpu, "platformInfo/module_id", str(i + 1))
        if "driver" in spec:
            _set(gpu, "gsp_firmware_version", spec["driver"])
        _edit_gpu(gpu, _merge(_merge(defaults, every), per.get(i) or {}), model)
        procs = gpu.find("processes")
        assert procs is not None
        for child in list(procs):
            procs.remove(child)
        mine = pids.get(i, [])
        procs.text = "\n\t\t\t" if mine else "\n\t\t"
        for j, (pid, pname, mem) in enumerate(mine):
            p = ET.fromstring(proc_text)
            _set(p, "pid", str(pid))
            _set(p, "process_name", pname)
            _set(p, "used_memory", f"{mem:.0f} MiB")
            p.tail = "\n\t\t\t" if j < len(mine) - 1 else "\n\t\t"
            procs.append(p)
        gpu.tail = "\n\t"
        root.append(gpu)
        last_tail = gpu
    if last_tail is not None:
        last_tail.tail = "\n\n"
    return head + ET.tostring(root, encoding="unicode") + "\n"


def nvlink_texts(spec: dict[str, Any], names: list[str]) -> tuple[str, str]:
    """(`nvidia-smi nvlink -s`, `nvidia-smi nvlink -e`) in the captured layout."""
    nv = _nvlink(spec)
    if nv is None:
        return "", ""
    links = int(nv.get("links", 18))
    speed = float(nv.get("speed", 26.562))
    per = {int(k): v for k, v in (nv.get("gpus") or {}).items()}
    s_lines, e_lines = [], []
    for i, name in enumerate(names):
        head = f"GPU {i}: {name} (UUID: GPU-00000000-0000-0000-0000-000000000000)"
        g = per.get(i) or {}
        s_lines.append(head)
        e_lines.append(head)
        if g.get("all_inactive"):
            s_lines.append("\t NVML: Unable to retrieve NVLink information as all links are inActive")
            continue
        down = set(g.get("down") or [])
        for n in range(links):
            s_lines.append(f"\t Link {n}: <inactive>" if n in down else f"\t Link {n}: {speed:.3f} GB/s")
            for kind, key in (("Replay", "replay"), ("Recovery", "recovery"), ("CRC", "crc")):
                value = {int(k): v for k, v in (g.get(key) or {}).items()}.get(n, 0)
                e_lines.append(f"\t Link {n}: {kind} Errors: {value}")
            e_lines.append("")
    return "\n".join(s_lines) + "\n", "\n".join(e_lines) + "\n"


def nvlink_growth(spec: dict[str, Any]) -> dict[str, float]:
    """`{"<gpu>:<link>:<Kind>": errors per second}` from the spec's `crc_rate` / `replay_rate` / `recovery_rate`
    (per GPU, by link): the fake nvidia-smi adds rate x seconds since staging to those counters on every read."""
    nv = _nvlink(spec) or {}
    out: dict[str, float] = {}
    for gi, g in (nv.get("gpus") or {}).items():
        for kind, key in (("Replay", "replay_rate"), ("Recovery", "recovery_rate"), ("CRC", "crc_rate")):
            for link, rate in ((g or {}).get(key) or {}).items():
                out[f"{int(gi)}:{int(link)}:{kind}"] = float(rate)
    return out


def machine_numa(count: int) -> list[str]:
    """CPU lists of staged NUMA nodes made of this machine's CPUs (an unpinned process may use all of them, as on a
    real host): two nodes when there are GPUs and CPUs to split, else one."""
    cpus = sorted(os.sched_getaffinity(0))
    if count < 2 or len(cpus) < 2:
        return [_cpulist(cpus)]
    half = len(cpus) // 2
    return [_cpulist(cpus[:half]), _cpulist(cpus[half:])]


def _cpulist(cpus: list[int]) -> str:
    out, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            out.append(str(start) if start == c else f"{start}-{c}")
            start = None
    return ",".join(out)


def numa_cpus(spec: dict[str, Any]) -> list[str]:
    return (spec.get("topo") or {}).get("cpus") or spec.get("numa_cpus") or machine_numa(int(spec.get("count", 1)))


def topo_text(spec: dict[str, Any], count: int) -> str:
    """`nvidia-smi topo -m` as the capture prints it (ANSI underline on the header row)."""
    topo = spec.get("topo") or {}
    cpus = numa_cpus(spec)
    nv = _nvlink(spec)
    per_node = max(count // len(cpus), 1)
    cols = [f"GPU{i}" for i in range(count)]
    out = ["\t\x1b[4m" + "\t".join(cols + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]) + "\x1b[0m"]
    for a in range(count):
        node_a = min(a // per_node, len(cpus) - 1)
        cells = []
        for b in range(count):
            node_b = min(b // per_node, len(cpus) - 1)
            if a == b:
                cells.append(" X ")
            elif nv is not None:
                cells.append(f"NV{int(nv.get('links', 18))}")
            else:
                cells.append(topo.get("link", "NODE") if node_a == node_b else "SYS")
        out.append(f"GPU{a}\t" + "\t".join(cells) + f"\t{cpus[node_a]}\t{node_a}\t\tN/A")
    return "\n".join(out) + "\n" + LEGEND


def lspci_text(spec: dict[str, Any], count: int) -> str:
    """`lspci -vv` for the GPUs and their switch ports, in lspci's layout (only the lines the probe reads, plus
    neighbours)."""
    cfg = spec.get("lspci") or {}
    model = spec.get("model", "h200")
    gen = MODELS.get(model, MODELS["h200"])[3]
    cap_speed = {1: "2.5", 2: "5", 3: "8", 4: "16", 5: "32", 6: "64"}[gen]
    per = {int(k): v for k, v in (cfg.get("gpus") or {}).items()}
    out = []
    acs = "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-" if cfg.get("acs") else \
        "SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-"
    denied = cfg.get("denied")
    for i in range(count):
        bus = bus_id(i, count).split(":")[1].lower()
        bridge = f"{int(bus, 16) - 2:02x}:01.0"
        out.append(f"{bridge} PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0) (prog-if 00 [Normal decode])")
        out.append("\tControl: I/O+ Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR+ FastB2B- DisINTx+")
        if denied:
            out.append("\tCapabilities: <access denied>")
        else:
            out.append(f"\t\tLnkCap:\tPort #1, Speed {cap_speed}GT/s, Width x16, ASPM not supported")
            out.append(f"\t\tLnkSta:\tSpeed {cap_speed}GT/s, Width x16")
            out.append("\tCapabilities: [220 v1] Access Control Services")
            out.append("\t\tACSCap:\tSrcValid+ TransBlk+ ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl+ DirectTrans+")
            out.append(f"\t\tACSCtl:\t{acs}")
        out.append("")
        g = per.get(i) or {}
        speed = g.get("speed", float(cap_speed))
        width = g.get("width", 16)
        out.append(f"{bus}:00.0 3D controller: NVIDIA Corporation {LSPCI_NAMES.get(model, LSPCI_NAMES['h200'])} (rev a1)")
        out.append("\tSubsystem: NVIDIA Corporation Device 18bf")
        if denied:
            out.append("\tCapabilities: <access denied>")
        else:
            out.append("\tCapabilities: [68] Express (v2) Endpoint, MSI 00")
            out.append(f"\t\tLnkCap:\tPort #0, Speed {cap_speed}GT/s, Width x16, ASPM not supported")
            sp = f"{speed:g}GT/s" + (" (downgraded)" if speed < float(cap_speed) else " (ok)")
            wd = f"x{width}" + (" (downgraded)" if width < 16 else " (ok)")
            out.append(f"\t\tLnkSta:\tSpeed {sp}, Width {wd}")
            out.append("\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-")
        out.append("\tKernel driver in use: nvidia")
        out.append("")
    return "\n".join(out) + "\n"


def kernel_texts(spec: dict[str, Any]) -> list[str]:
    """Kernel-log lines: the real H200 boot lines (dmesg layout), then the staged ones."""
    k = spec.get("kernel") or {}
    lines = (NODE_DATA / "h200" / "dmesg-nvidia.txt").read_text().splitlines()
    t = 3605.118204
    for line in k.get("lines") or []:
        if line.startswith("["):
            lines.append(line)
        else:
            lines.append(f"[{t:12.6f}] {line}")
            t += 0.000913
    return lines


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def stage_node_files(staged, spec: dict[str, Any]) -> None:
    """Fake dmesg / journalctl / lspci / systemctl and the host files under the staged node root."""
    bindir: Path = staged.bin
    # the staged root itself, so what a case stages with `files:` (/proc/cmdline, /sys/class/infiniband/...,
    # /var/log/kern.log) is what the probe reads
    root: Path = staged.root
    data = staged.root / "nodedata"
    data.mkdir(parents=True, exist_ok=True)
    count = int(spec.get("count", 1))
    k = spec.get("kernel") or {}
    lines = kernel_texts(spec)
    (data / "dmesg.txt").write_text("\n".join(lines) + "\n")
    if k.get("restricted"):
        _script(bindir / "dmesg", 'echo "dmesg: read kernel buffer failed: Operation not permitted" >&2\nexit 1\n')
    else:
        _script(bindir / "dmesg", f'cat "{data / "dmesg.txt"}"\n')
    if k.get("journal"):
        # journalctl -k: "Mon DD HH:MM:SS host kernel: <message>"
        jl = [f"Nov 30 18:{10 + i // 60:02d}:{i % 60:02d} gpu-node-07 kernel: " + ln.split("] ", 1)[-1]
              for i, ln in enumerate(lines)]
        (data / "journal.txt").write_text("\n".join(jl) + "\n")
        _script(bindir / "journalctl", f'cat "{data / "journal.txt"}"\n')
    else:  # a container: no journal
        _script(bindir / "journalctl", 'echo "No journal files were found." >&2\nexit 1\n')
    if "lspci" in spec:
        (data / "lspci.txt").write_text(lspci_text(spec, count))
        _script(bindir / "lspci", f'cat "{data / "lspci.txt"}"\n')
    else:
        _script(bindir / "lspci", 'echo "sh: 1: lspci: not found" >&2\nexit 127\n')
    fm = spec.get("fabricmanager")
    if fm:
        rc = 0 if fm == "active" else 3
        _script(bindir / "systemctl", f'echo "{fm}"\nexit {rc}\n')
    else:
        _script(bindir / "systemctl", 'echo "sh: 1: systemctl: not found" >&2\nexit 127\n')
    # host files
    (root / "proc" / "sys" / "kernel").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "cmdline").write_text(spec.get("cmdline", DEFAULT_CMDLINE) + "\n")
    (root / "proc" / "sys" / "kernel" / "dmesg_restrict").write_text("1\n" if k.get("restricted") else "0\n")
    for i, cpus in enumerate(spec.get("numa_cpus") or numa_cpus(spec)):
        d = root / "sys" / "devices" / "system" / "node" / f"node{i}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "cpulist").write_text(cpus + "\n")
    (root / "sys" / "class" / "iommu").mkdir(parents=True, exist_ok=True)
    for dev in spec.get("iommu_devices") or []:
        (root / "sys" / "class" / "iommu" / dev).mkdir(exist_ok=True)
    groups = root / "sys" / "kernel" / "iommu_groups"
    groups.mkdir(parents=True, exist_ok=True)
    for g in range(len(spec.get("iommu_devices") or []) * 8):
        (groups / str(g)).mkdir(exist_ok=True)
    for dev in spec.get("rdma") or []:
        port = root / "sys" / "class" / "infiniband" / dev["name"] / "ports" / "1"
        port.mkdir(parents=True, exist_ok=True)
        (port / "state").write_text(dev.get("state", "4: ACTIVE") + "\n")
        (port / "rate").write_text(dev.get("rate", "400 Gb/sec (4X NDR)") + "\n")
        (port / "link_layer").write_text(dev.get("link_layer", "InfiniBand") + "\n")
    if spec.get("libibverbs"):
        lib = root / "usr" / "lib" / "x86_64-linux-gnu"
        lib.mkdir(parents=True, exist_ok=True)
        (lib / "libibverbs.so.1").write_bytes(b"\x7fELF staged")
    if k.get("kern_log"):
        (root / "var" / "log").mkdir(parents=True, exist_ok=True)
        jl = [f"Nov 30 18:{10 + i // 60:02d}:{i % 60:02d} gpu-node-07 kernel: " + ln for i, ln in enumerate(lines)]
        (root / "var" / "log" / "kern.log").write_text("\n".join(jl) + "\n")
    staged.env["INVESTIGATE_NODE_ROOT"] = str(root)


def spawn_process(staged, kind: str, env: dict[str, str] | None = None, cpus: list[int] | None = None,
                  rank: int = 0) -> int:
    """A real process named like `kind`'s GPU worker (vllm, sglang; else `python3 train.py`) with environment `env`."""
    title = PROCTITLE.get(kind)
    if title:
        argv = [title.format(rank=rank), "-c", SLEEPER]
    else:
        argv = [OTHER_ARGV[0], "-c", SLEEPER, *OTHER_ARGV[1:]]
    full_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", **(env or {})}
    preexec = (lambda: os.sched_setaffinity(0, set(cpus))) if cpus else None
    proc = subprocess.Popen(argv, executable=sys.executable, env=full_env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=preexec)
    staged.procs.append(proc)
    return proc.pid


def hidden_pid(n: int) -> int:
    """The n-th PID of a process in another PID namespace: above this host's pid_max, so no process here has it (a
    container's ps cannot see the host PIDs nvidia-smi lists)."""
    try:
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        pid_max = 4194304
    return pid_max + 1000 + n


def spawn_processes(staged, procs: list[dict[str, Any]]) -> dict[int, list[tuple[int, str, float]]]:
    """Start the spec's GPU processes; GPU index -> [(pid, nvidia-smi process name, MiB)].

    `hidden: true`: the processes run in another PID namespace: nvidia-smi lists PIDs no process of this host has and
    nothing is started. `per_gpu`: one process per GPU (the default for an engine kind; a `name` may say `{rank}`)."""
    available = os.sched_getaffinity(0)
    pids: dict[int, list[tuple[int, str, float]]] = {}
    hidden = 0
    for p in procs or []:
        cpus = [c for c in (p.get("cpus") or []) if c in available] or None
        kind = p.get("kind", "vllm")
        # an engine runs one worker per GPU; another tenant is one process
        per_gpu = p.get("per_gpu", kind in PROCTITLE)
        groups = [[g] for g in p.get("gpus", [0])] if per_gpu else [list(p.get("gpus", [0]))]
        for rank, gpus in enumerate(groups):
            if p.get("hidden"):
                pid = hidden_pid(hidden)
                hidden += 1
            else:
                pid = spawn_process(staged, kind, p.get("env"), cpus, rank)
            name = str(p.get("name") or (PROCTITLE[kind] if kind in PROCTITLE else "python3")).format(rank=rank)
            for g in gpus:
                pids.setdefault(int(g), []).append((pid, name, float(p.get("memory_mib", 70000))))
    return pids


def stage_node(staged, spec: dict[str, Any] | None = None,
               pids: dict[int, list[tuple[int, str, float]]] | None = None) -> dict[int, list[tuple[int, str, float]]]:
    """Stage the node on a StagedHost: nvidia-smi (-q -x, nvlink, topo), kernel log, lspci, host files, processes
    (spawned unless `pids` of processes started before are given). Returns the GPU processes."""
    spec = dict(spec or {})
    count = int(spec.setdefault("count", 1))
    if pids is None:
        pids = spawn_processes(staged, spec.get("processes") or [])
    xml = node_xml(spec, pids)
    datadir = staged.root / "nodedata"
    datadir.mkdir(parents=True, exist_ok=True)
    (datadir / "nvidia-smi-q.xml").write_text(xml)
    names = [g.findtext("product_name") or "NVIDIA H200" for g in ET.fromstring(xml.split("\n", 2)[2]).findall("gpu")]
    nv_s, nv_e = nvlink_texts(spec, names)
    smi_json = staged.bin / "nvidia-smi.json"
    smi = json.loads(smi_json.read_text()) if smi_json.exists() else {"headers": {}, "gpus": []}
    smi.pop("no_devices", None)
    smi["xml"] = str(datadir / "nvidia-smi-q.xml")
    smi["topo"] = topo_text(spec, count)
    smi["nvlink_s"] = nv_s
    smi["nvlink_e"] = nv_e
    smi["nvlink_e_growth"] = nvlink_growth(spec)
    smi["nvlink_e_t0"] = time.time()
    smi["gpus"] = _query_rows(xml)
    smi["apps"] = [{"gpu_bus_id": bus_id(i, count), "pid": pid, "process_name": name, "used_memory": f"{mib:g} MiB"}
                   for i, procs in sorted(pids.items()) for pid, name, mib in procs]
    smi_json.write_text(json.dumps(smi))
    from support.staged_host import install_fake_nvidia_smi

    # behind the account's wrapper (tests/support/stage_account.py) the fake is nvidia-smi.base
    install_fake_nvidia_smi(staged.bin, "nvidia-smi.base" if (staged.bin / "nvidia-smi.base").exists() else "nvidia-smi")
    stage_node_files(staged, spec)
    return pids


def _query_rows(xml: str) -> list[dict[str, str]]:
    """`--query-gpu` rows consistent with the staged XML (the GPU inventory probe reads both)."""
    from orchestrator.prongs.node_health.smi import parse_health_xml

    driver, _cuda, gpus = parse_health_xml(xml)
    root = ET.fromstring(xml.split("\n", 2)[2])
    totals = [g.findtext("fb_memory_usage/total") or "143771 MiB" for g in root.findall("gpu")]
    rows = []
    for g in gpus:
        cc = CC.get(_model_of(g.name), "9.0")
        rows.append({
            "index": str(g.index), "name": g.name, "pci.bus_id": g.bus_id or "", "driver_version": driver or "",
            "compute_cap": cc, "memory.total": totals[g.index], "memory.used": "1011 MiB",
            "power.draw": f"{g.power_draw_w or 0:.2f} W", "power.limit": f"{g.power_enforced_w or 0:.2f} W",
            "clocks.sm": f"{g.sm_mhz or 0:.0f} MHz", "clocks.max.sm": f"{g.max_sm_mhz or 0:.0f} MHz",
            "utilization.gpu": f"{g.utilization_pct or 0:.0f} %", "temperature.gpu": f"{g.temperature_c or 0:.0f}",
        })
    return rows


# --- scenario stagers (tests/support/stagers.py registry) ---------------------------------------------------------
# Each merges its argument into one node spec kept on the StageContext and re-stages the node from it, so a case
# can give them in any order; processes are started once.

try:
    from support.stagers import StageContext, StageError, stager
except ImportError:  # the registry is not in this tree yet
    stager = None  # type: ignore[assignment]


def _model_of(name: str) -> str:
    low = name.lower()
    for key, (full, *_rest) in MODELS.items():
        if full.lower() == low:
            return key
    for key in ("b200", "h200", "a100", "l40s"):
        if key in low:
            return key
    if "rtx pro 6000" in low:
        return "rtx-pro-6000"
    return "h100-pcie" if "h100" in low and "pcie" in low else "h100" if "h100" in low else "h200"


def _restage(ctx, key: str | None, arg: Any = None) -> None:
    if ctx.staged is None:
        raise StageError(f"{key}: the host is not built yet")
    spec = ctx.extra.setdefault("node_spec", {})
    if key == "nvidia_smi":
        spec.update(arg)
    elif key == "gpu_processes":
        spec["processes"] = list(arg)
    elif key is not None:
        spec[key] = arg
    if "count" not in spec:
        spec["count"] = len(ctx.staged.gpus) or 1
    if "model" not in spec and ctx.staged.gpus:
        spec["model"] = _model_of(str(ctx.staged.gpus[0].get("name", "")))
        if spec["model"] in ("h200", "h100", "b200", "a100") and "nvlink" not in spec and spec["count"] >= 2 \
                and "NV" in json.loads((ctx.staged.bin / "nvidia-smi.json").read_text()).get("topo", ""):
            spec["nvlink"] = {}
    if "node_pids" not in ctx.extra or key == "gpu_processes":
        ctx.extra["node_pids"] = spawn_processes(ctx.staged, spec.get("processes") or [])
        if ctx.staged.cleanup not in ctx.cleanups:
            ctx.cleanups.append(ctx.staged.cleanup)
    stage_node(ctx.staged, spec, ctx.extra["node_pids"])


def _mapping(key: str, arg: Any) -> dict[str, Any]:
    if not isinstance(arg, dict):
        raise StageError(f"{key}: expected a mapping (see tests/support/stage_node.py)")
    return dict(arg)


if stager is not None:

    @stager("nvidia_smi")
    def stage_nvidia_smi(ctx: StageContext, arg: Any) -> None:
        """`nvidia_smi: {model: h200, count: 8, driver: .., load: true, all: {..}, gpus: {3: {power_limit_w: 450,
        clocks_event: [sw_power_cap]}}, nvlink: {gpus: {5: {down: [2]}}}, topo: {cpus: [..]}}`: the real H200
        `nvidia-smi -q -x` edited in place (per-GPU keys in tests/support/stage_node.py)."""
        arg = _mapping("nvidia_smi", arg)
        bad = [k for k in arg if k not in ("model", "count", "driver", "cuda", "load", "all", "gpus", "nvlink", "topo")]
        if bad:
            raise StageError(f"nvidia_smi: unknown key(s) {', '.join(bad)}")
        if "model" in arg and arg["model"] not in MODELS:
            raise StageError(f"nvidia_smi: model {arg['model']!r} unknown; one of {', '.join(MODELS)}")
        try:
            for k, v in (arg.get("gpus") or {}).items():
                gpu_edits(v, f"nvidia_smi.gpus.{k}")
            gpu_edits(arg.get("all") or {}, "nvidia_smi.all")
        except ValueError as e:
            raise StageError(str(e)) from None
        _restage(ctx, "nvidia_smi", arg)

    @stager("kernel_log")
    def stage_kernel_log(ctx: StageContext, arg: Any) -> None:
        """`kernel_log: {lines: [NVRM lines or a file of the case dir], restricted: true, journal: true,
        kern_log: true}`: dmesg (restricted: util-linux's "Operation not permitted", exit 1), journalctl -k,
        /var/log/kern.log. `kernel_log: restricted` is a restricted dmesg without any other source."""
        if arg in ("restricted", "denied", "not permitted"):
            arg = {"restricted": True}
        if isinstance(arg, (str, list)):
            arg = {"lines": arg}
        arg = _mapping("kernel_log", arg)
        lines = arg.get("lines") or []
        if isinstance(lines, str):
            lines = ctx.text(lines).splitlines()
        arg["lines"] = [str(x) for x in lines if str(x).strip()]
        _restage(ctx, "kernel", arg)

    @stager("lspci")
    def stage_lspci(ctx: StageContext, arg: Any) -> None:
        """`lspci: {gpus: {4: {speed: 2.5, width: 8}}, acs: true, denied: false}` (without it lspci is not installed)."""
        _restage(ctx, "lspci", _mapping("lspci", arg or {}))

    @stager("gpu_processes")
    def stage_gpu_processes(ctx: StageContext, arg: Any) -> None:
        """`gpu_processes: [{gpus: [0..7], kind: vllm|sglang|other, env: {NCCL_P2P_DISABLE: "1"}, cpus: [1],
        memory_mib: 70000, name: python3, per_gpu: true, hidden: true}]`: real processes (an engine: one worker per
        GPU; `name` may say `{rank}`) in nvidia-smi's list; `hidden`: PIDs in another PID namespace (no process)."""
        if not isinstance(arg, list):
            raise StageError("gpu_processes: expected a list of processes")
        _restage(ctx, "gpu_processes", arg)

    @stager("host_node")
    def stage_host_node(ctx: StageContext, arg: Any) -> None:
        """`host_node: {rdma: [{name: mlx5_0, state: "4: ACTIVE", link_layer: InfiniBand}], libibverbs: true,
        cmdline: "... intel_iommu=on", iommu_devices: [dmar0], numa_cpus: ["0", "1"],
        fabricmanager: active|inactive|failed}`."""
        arg = _mapping("host_node", arg)
        bad = [k for k in arg if k not in ("rdma", "libibverbs", "cmdline", "iommu_devices", "numa_cpus", "fabricmanager")]
        if bad:
            raise StageError(f"host_node: unknown key(s) {', '.join(bad)}")
        if ctx.staged is None:
            raise StageError("host_node: the host is not built yet")
        spec = ctx.extra.setdefault("node_spec", {})
        for k, v in arg.items():
            spec[k] = v
        _restage(ctx, None)

    # the names PLAN.md's examples use (unless another module registered them first)
    from support.stagers import STAGERS

    if "dmesg" not in STAGERS:
        stager("dmesg")(lambda ctx, arg: stage_kernel_log(ctx, arg))
    if "processes" not in STAGERS:
        stager("processes")(lambda ctx, arg: stage_gpu_processes(ctx, arg))
