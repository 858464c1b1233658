"""Pure parsers for the node-health probe's nvidia-smi and lspci outputs.

Formats from real captures (tests/node/data: `nvidia-smi -q -x` of an H200 under load, `nvidia-smi nvlink -s/-e` of
two H200 on NV18, driver 580.159.04): the XML follows nvsmi_device_v13.dtd, older drivers call the clocks-event
element `clocks_throttle_reasons` and the power element `power_readings`. `nvidia-smi nvlink -s` prints
`GPU i: <name> (UUID: …)` then one tab-indented `Link n: 26.562 GB/s` or `Link n: <inactive>` per link; `-e` prints
`Link n: Replay Errors: 0`, `Recovery Errors`, `CRC Errors` per link. `lspci -vv` lines are those the probe kept:
device headers and their LnkCap / LnkSta / ACSCtl lines.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from orchestrator.probes.node_models import GpuHealth, GpuProcess, NvLink, PciLink
from orchestrator.probes.nvidia_smi import NvidiaSmiParseError, _strip_doctype, number
from orchestrator.probes.nvidia_smi import first_number as _num, element_text as _t

REASONS = ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "hw_thermal_slowdown",
           "hw_power_brake_slowdown", "sync_boost", "sw_thermal_slowdown", "display_clocks_setting")


def _int(el: ET.Element, *paths: str) -> int | None:
    v = _num(el, *paths)
    return None if v is None else int(v)


def _yes(text: str | None) -> bool | None:
    if text is None:
        return None
    t = text.strip().lower()
    if t in ("yes", "enabled", "active", "true"):
        return True
    if t in ("no", "disabled", "not active", "false"):
        return False
    return None


def _lower(text: str | None) -> str | None:
    return None if text is None or text in ("N/A", "[N/A]") else text.strip().lower()


def _sum(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _ecc(gpu: ET.Element, scope: str) -> tuple[int | None, int | None]:
    """(uncorrectable, correctable) counts of volatile or aggregate ECC errors, in the driver's layout."""
    el = gpu.find(f"ecc_errors/{scope}")
    if el is None:
        return None, None
    if el.find("dram_uncorrectable") is not None or el.find("sram_uncorrectable") is not None:
        # Hopper-era drivers: sram/dram split, parity and SEC-DED uncorrectables apart
        dbe = _sum([_int(el, "dram_uncorrectable"), _int(el, "sram_uncorrectable"),
                    _int(el, "sram_uncorrectable_parity"), _int(el, "sram_uncorrectable_secded")])
        sbe = _sum([_int(el, "dram_correctable"), _int(el, "sram_correctable")])
        return dbe, sbe
    # older drivers: single_bit / double_bit totals
    return _int(el, "double_bit/total"), _int(el, "single_bit/total")


def parse_health_xml(xml_text: str) -> tuple[str | None, str | None, list[GpuHealth]]:
    """(driver version, CUDA version, GPUs) of `nvidia-smi -q -x`."""
    try:
        root = ET.fromstring(_strip_doctype(xml_text))
    except ET.ParseError as exc:
        raise NvidiaSmiParseError(f"nvidia-smi -q -x output is not XML: {exc}") from None
    if root.tag != "nvidia_smi_log":
        raise NvidiaSmiParseError(f"nvidia-smi -q -x: unexpected root element <{root.tag}>")
    gpus = []
    for i, g in enumerate(root.findall("gpu")):
        events: dict[str, bool] = {}
        el = g.find("clocks_event_reasons")
        if el is None:
            el = g.find("clocks_throttle_reasons")
        for child in el if el is not None else []:
            name = re.sub(r"^clocks_(event|throttle)_reasons?_", "", child.tag)
            name = {"display_clock_setting": "display_clocks_setting"}.get(name, name)
            state = _yes(child.text)
            if state is not None:
                events[name] = state
        counters: dict[str, float] = {}
        el = g.find("clocks_event_reasons_counters")
        for child in el if el is not None else []:
            v = number(child.text)
            if v is not None:
                counters[re.sub(r"^clocks_event_reasons_counters_", "", child.tag)] = v
        power = "gpu_power_readings" if g.find("gpu_power_readings") is not None else "power_readings"
        ecc_v, ecc_v_sbe = _ecc(g, "volatile")
        ecc_a, ecc_a_sbe = _ecc(g, "aggregate")
        procs = []
        for p in g.findall("processes/process_info"):
            pid = _int(p, "pid")
            if pid is None:
                continue
            procs.append(GpuProcess(pid=pid, name=_t(p, "process_name"), type=_t(p, "type"),
                                    used_memory_mib=number(_t(p, "used_memory"))))
        pend = _t(g, "retired_pages/pending_retirement") or _t(g, "retired_pages/pending_blacklist")
        gpus.append(GpuHealth(
            index=i,
            name=_t(g, "product_name") or "unknown",
            bus_id=g.get("id") or _t(g, "pci/pci_bus_id"),
            uuid=_t(g, "uuid"),
            pstate=_t(g, "performance_state"),
            temperature_c=_num(g, "temperature/gpu_temp"),
            utilization_pct=_num(g, "utilization/gpu_util"),
            power_draw_w=_num(g, f"{power}/average_power_draw", f"{power}/power_draw", f"{power}/instant_power_draw"),
            power_limit_w=_num(g, f"{power}/requested_power_limit", f"{power}/power_limit"),
            power_enforced_w=_num(g, f"{power}/current_power_limit", f"{power}/enforced_power_limit"),
            power_default_w=_num(g, f"{power}/default_power_limit"),
            power_min_w=_num(g, f"{power}/min_power_limit"),
            power_max_w=_num(g, f"{power}/max_power_limit"),
            sm_mhz=_num(g, "clocks/sm_clock"),
            max_sm_mhz=_num(g, "max_clocks/sm_clock"),
            mem_mhz=_num(g, "clocks/mem_clock"),
            max_mem_mhz=_num(g, "max_clocks/mem_clock"),
            app_sm_mhz=_num(g, "applications_clocks/graphics_clock"),
            default_app_sm_mhz=_num(g, "default_applications_clocks/graphics_clock"),
            app_mem_mhz=_num(g, "applications_clocks/mem_clock"),
            clocks_event=events,
            clocks_event_us=counters,
            ecc_mode=_lower(_t(g, "ecc_mode/current_ecc")),
            ecc_pending_mode=_lower(_t(g, "ecc_mode/pending_ecc")),
            ecc_volatile_dbe=ecc_v, ecc_volatile_sbe=ecc_v_sbe, ecc_aggregate_dbe=ecc_a, ecc_aggregate_sbe=ecc_a_sbe,
            sram_threshold_exceeded=_yes(_t(g, "ecc_errors/aggregate/sram_threshold_exceeded")),
            retired_sbe=_int(g, "retired_pages/multiple_single_bit_retirement/retired_count"),
            retired_dbe=_int(g, "retired_pages/double_bit_retirement/retired_count"),
            retired_pending=_yes(pend),
            remapped_correctable=_int(g, "remapped_rows/remapped_row_corr"),
            remapped_uncorrectable=_int(g, "remapped_rows/remapped_row_unc"),
            remap_pending=_yes(_t(g, "remapped_rows/remapped_row_pending")),
            remap_failure=_yes(_t(g, "remapped_rows/remapped_row_failure")),
            pcie_gen=_int(g, "pci/pci_gpu_link_info/pcie_gen/current_link_gen"),
            pcie_gen_max=_int(g, "pci/pci_gpu_link_info/pcie_gen/max_link_gen"),
            pcie_gen_device_max=_int(g, "pci/pci_gpu_link_info/pcie_gen/max_device_link_gen"),
            pcie_width=_int(g, "pci/pci_gpu_link_info/link_widths/current_link_width"),
            pcie_width_max=_int(g, "pci/pci_gpu_link_info/link_widths/max_link_width"),
            pcie_replays=_int(g, "pci/replay_counter"),
            persistence_mode=_yes(_t(g, "persistence_mode")),
            mig_mode=_lower(_t(g, "mig_mode/current_mig")),
            mig_pending=_lower(_t(g, "mig_mode/pending_mig")),
            fabric_state=_t(g, "fabric/state"),
            fabric_status=_t(g, "fabric/status"),
            recovery_action=_t(g, "gpu_recovery_action"),
            processes=procs,
        ))
    return _t(root, "driver_version"), _t(root, "cuda_version"), gpus


_GPU_HEAD = re.compile(r"^GPU (\d+): (.*?)(?: \(UUID: ([^)]*)\))?\s*$")
_LINK_SPEED = re.compile(r"^\s*Link (\d+): (?:([\d.]+) GB/s|<inactive>)\s*$")
_LINK_ERR = re.compile(r"^\s*Link (\d+): (Replay|Recovery|CRC) Errors: (\d+)")


def parse_nvlink(status: str | None, errors: str | None) -> dict[int, tuple[list[NvLink], bool]]:
    """GPU index -> (links, all links inactive) from `nvidia-smi nvlink -s` and `-e`."""
    links: dict[int, dict[int, NvLink]] = {}
    all_inactive: dict[int, bool] = {}
    gpu = None
    for line in (status or "").splitlines():
        m = _GPU_HEAD.match(line)
        if m:
            gpu = int(m.group(1))
            links.setdefault(gpu, {})
            all_inactive.setdefault(gpu, False)
            continue
        if gpu is None:
            continue
        if "all links are inactive" in line.lower():
            all_inactive[gpu] = True
            continue
        m = _LINK_SPEED.match(line)
        if m:
            n = int(m.group(1))
            links[gpu][n] = NvLink(link=n, up=m.group(2) is not None,
                                   speed_gbs=float(m.group(2)) if m.group(2) else None)
    gpu = None
    for line in (errors or "").splitlines():
        m = _GPU_HEAD.match(line)
        if m:
            gpu = int(m.group(1))
            links.setdefault(gpu, {})
            continue
        m = _LINK_ERR.match(line)
        if gpu is None or not m:
            continue
        n = int(m.group(1))
        link = links[gpu].setdefault(n, NvLink(link=n, up=True))
        setattr(link, {"Replay": "replay_errors", "Recovery": "recovery_errors", "CRC": "crc_errors"}[m.group(2)],
                int(m.group(3)))
    return {g: (sorted(ls.values(), key=lambda x: x.link), all_inactive.get(g, False)) for g, ls in links.items()}


_SPEED = re.compile(r"Speed ([\d.]+)GT/s")
_WIDTH = re.compile(r"Width x(\d+)")


def parse_lspci(text: str | None) -> list[PciLink]:
    """Devices of the probe's filtered `lspci -vv`: link capability vs status, ACS control."""
    out: list[PciLink] = []
    cur: PciLink | None = None
    for line in (text or "").splitlines():
        if line and not line[0].isspace():
            addr, _, desc = line.partition(" ")
            cur = PciLink(address=addr.strip(), description=desc.strip())
            out.append(cur)
            continue
        if cur is None:
            continue
        s = line.strip()
        if s.startswith("LnkCap:"):
            m, w = _SPEED.search(s), _WIDTH.search(s)
            cur.cap_speed_gts = float(m.group(1)) if m else None
            cur.cap_width = int(w.group(1)) if w else None
        elif s.startswith("LnkSta:"):
            m, w = _SPEED.search(s), _WIDTH.search(s)
            cur.sta_speed_gts = float(m.group(1)) if m else None
            cur.sta_width = int(w.group(1)) if w else None
            if "downgraded" in s:
                cur.downgraded = True
            elif cur.cap_speed_gts and cur.sta_speed_gts is not None:
                cur.downgraded = (cur.sta_speed_gts < cur.cap_speed_gts
                                  or (cur.cap_width is not None and cur.sta_width is not None
                                      and cur.sta_width < cur.cap_width))
        elif s.startswith("ACSCtl:"):
            cur.acs_ctl = s.split(":", 1)[1].strip()
            cur.acs_redirect = bool(re.search(r"\b(SrcValid|ReqRedir|CmpltRedir)\+", cur.acs_ctl))
    return out


GEN_OF_SPEED = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


def same_pci(a: str | None, b: str | None) -> bool:
    """Whether two PCI addresses name the same device ("00000000:18:00.0", "0000:18:00", "18:00.0")."""
    if not a or not b:
        return False

    def key(x: str) -> tuple[str, str, str]:
        x = x.strip().lower().removeprefix("pci:")
        parts = x.split(":")
        if len(parts) == 3:
            dom, bus, rest = parts
        elif len(parts) == 2:
            dom, (bus, rest) = "0", parts
        else:
            return ("?", x, "")
        dev = rest.split(".")[0]
        return (dom.lstrip("0") or "0", bus.lstrip("0") or "0", dev.lstrip("0") or "0")

    return key(a) == key(b)
