# --- nvidia-smi -q -x health fields (orchestrator/probes/scripts/_smi.py): sent after the prelude with the node
# script, which reads the XML on the host and sends only these fields (a fleet's hosts each have ~100 KB of XML
# per 8 GPUs; the investigating process would parse every one under one lock). The same code parses XML in the
# investigating process (prongs/node_health/smi.py), so there is one reading of the format. stdlib only, Python >= 3.8.
#
# Formats from real captures (tests/node/data: `nvidia-smi -q -x` of H200s idle and under load, driver 580): the
# XML follows nvsmi_device_v13.dtd; older drivers call the clocks-event element `clocks_throttle_reasons` and the
# power element `power_readings`; Hopper-era drivers split ECC counts into sram/dram, older ones have
# single_bit/double_bit totals.
import re
import xml.etree.ElementTree as ET

SMI_NUM = re.compile(r"-?\d+(?:\.\d+)?")


class SmiFormatError(ValueError):
    """The text is not `nvidia-smi -q -x` output."""


def smi_number(text):
    """The leading number of a value like "143771 MiB" or "115.16 W"; None for N/A, [N/A], [Not Supported]."""
    if text is None:
        return None
    m = SMI_NUM.search(text)
    if not m or "N/A" in text or "Not Supported" in text or "Unknown" in text:
        return None
    return float(m.group())


def smi_text(el, path):
    if el is None:
        return None
    found = el.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return value or None


def smi_first(el, *paths):
    for path in paths:
        value = smi_number(smi_text(el, path))
        if value is not None:
            return value
    return None


def smi_int(el, *paths):
    v = smi_first(el, *paths)
    return None if v is None else int(v)


def smi_yes(text):
    if text is None:
        return None
    t = text.strip().lower()
    if t in ("yes", "enabled", "active", "true"):
        return True
    if t in ("no", "disabled", "not active", "false"):
        return False
    return None


def smi_lower(text):
    return None if text is None or text in ("N/A", "[N/A]") else text.strip().lower()


def smi_sum(values):
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def smi_ecc(gpu, scope):
    """(uncorrectable, correctable) counts of volatile or aggregate ECC errors, in the driver's layout."""
    el = gpu.find("ecc_errors/" + scope)
    if el is None:
        return None, None
    if el.find("dram_uncorrectable") is not None or el.find("sram_uncorrectable") is not None:
        # Hopper-era drivers: sram/dram split, parity and SEC-DED uncorrectables apart
        dbe = smi_sum([smi_int(el, "dram_uncorrectable"), smi_int(el, "sram_uncorrectable"),
                       smi_int(el, "sram_uncorrectable_parity"), smi_int(el, "sram_uncorrectable_secded")])
        sbe = smi_sum([smi_int(el, "dram_correctable"), smi_int(el, "sram_correctable")])
        return dbe, sbe
    # older drivers: single_bit / double_bit totals
    return smi_int(el, "double_bit/total"), smi_int(el, "single_bit/total")


def smi_ecc_split(gpu, scope):
    """(DRAM uncorrectable, SRAM uncorrectable) of volatile or aggregate ECC counts on Hopper-era drivers (None where
    the driver does not split them): a DRAM error is HBM (row remapping's domain), an SRAM one on-chip (L2, SM...)."""
    el = gpu.find("ecc_errors/" + scope)
    if el is None or (el.find("dram_uncorrectable") is None and el.find("sram_uncorrectable") is None):
        return None, None
    return (smi_int(el, "dram_uncorrectable"),
            smi_sum([smi_int(el, "sram_uncorrectable"), smi_int(el, "sram_uncorrectable_parity"),
                     smi_int(el, "sram_uncorrectable_secded")]))


def smi_sram_sources(gpu):
    """Units with aggregate uncorrectable SRAM errors (`aggregate_uncorrectable_sram_sources`: l2, sm,
    microcontroller, pcie, other) -> count, nonzero only."""
    el = gpu.find("ecc_errors/aggregate_uncorrectable_sram_sources")
    out = {}
    for child in el if el is not None else []:
        n = smi_number(child.text)
        if n:
            out[re.sub(r"^sram_", "", child.tag)] = int(n)
    return out


def smi_strip_doctype(xml_text):
    # ElementTree cannot resolve the external DTD nvidia-smi names; the DTD adds nothing read here.
    if "<!DOCTYPE" not in xml_text:
        return xml_text
    head, after = xml_text.split("<!DOCTYPE", 1)
    return head + (after.split(">", 1)[1] if ">" in after else "")


def smi_gpu(i, g):
    """The health fields of one <gpu> element (the keys of probes/node_models.GpuHealth)."""
    events = {}
    el = g.find("clocks_event_reasons")
    if el is None:
        el = g.find("clocks_throttle_reasons")
    for child in el if el is not None else []:
        name = re.sub(r"^clocks_(event|throttle)_reasons?_", "", child.tag)
        name = {"display_clock_setting": "display_clocks_setting"}.get(name, name)
        state = smi_yes(child.text)
        if state is not None:
            events[name] = state
    counters = {}
    el = g.find("clocks_event_reasons_counters")
    for child in el if el is not None else []:
        v = smi_number(child.text)
        if v is not None:
            counters[re.sub(r"^clocks_event_reasons_counters_", "", child.tag)] = v
    power = "gpu_power_readings" if g.find("gpu_power_readings") is not None else "power_readings"
    ecc_v, ecc_v_sbe = smi_ecc(g, "volatile")
    ecc_a, ecc_a_sbe = smi_ecc(g, "aggregate")
    dram_v, sram_v = smi_ecc_split(g, "volatile")
    dram_a, sram_a = smi_ecc_split(g, "aggregate")
    procs = []
    for p in g.findall("processes/process_info"):
        pid = smi_int(p, "pid")
        if pid is None:
            continue
        procs.append({"pid": pid, "name": smi_text(p, "process_name"), "type": smi_text(p, "type"),
                      "used_memory_mib": smi_number(smi_text(p, "used_memory"))})
    pend = smi_text(g, "retired_pages/pending_retirement") or smi_text(g, "retired_pages/pending_blacklist")
    link = "pci/pci_gpu_link_info/"
    return {
        "index": i,
        "name": smi_text(g, "product_name") or "unknown",
        "bus_id": g.get("id") or smi_text(g, "pci/pci_bus_id"),
        "uuid": smi_text(g, "uuid"),
        "pstate": smi_text(g, "performance_state"),
        "temperature_c": smi_first(g, "temperature/gpu_temp"),
        "utilization_pct": smi_first(g, "utilization/gpu_util"),
        "power_draw_w": smi_first(g, power + "/average_power_draw", power + "/power_draw",
                                  power + "/instant_power_draw"),
        "power_limit_w": smi_first(g, power + "/requested_power_limit", power + "/power_limit"),
        "power_enforced_w": smi_first(g, power + "/current_power_limit", power + "/enforced_power_limit"),
        "power_default_w": smi_first(g, power + "/default_power_limit"),
        "power_min_w": smi_first(g, power + "/min_power_limit"),
        "power_max_w": smi_first(g, power + "/max_power_limit"),
        "sm_mhz": smi_first(g, "clocks/sm_clock"),
        "max_sm_mhz": smi_first(g, "max_clocks/sm_clock"),
        "mem_mhz": smi_first(g, "clocks/mem_clock"),
        "max_mem_mhz": smi_first(g, "max_clocks/mem_clock"),
        "app_sm_mhz": smi_first(g, "applications_clocks/graphics_clock"),
        "default_app_sm_mhz": smi_first(g, "default_applications_clocks/graphics_clock"),
        "app_mem_mhz": smi_first(g, "applications_clocks/mem_clock"),
        "clocks_event": events,
        "clocks_event_us": counters,
        "ecc_mode": smi_lower(smi_text(g, "ecc_mode/current_ecc")),
        "ecc_pending_mode": smi_lower(smi_text(g, "ecc_mode/pending_ecc")),
        "ecc_volatile_dbe": ecc_v, "ecc_volatile_sbe": ecc_v_sbe, "ecc_aggregate_dbe": ecc_a,
        "ecc_aggregate_sbe": ecc_a_sbe,
        "sram_threshold_exceeded": smi_yes(smi_text(g, "ecc_errors/aggregate/sram_threshold_exceeded")),
        "ecc_volatile_dram_dbe": dram_v, "ecc_volatile_sram_dbe": sram_v,
        "ecc_aggregate_dram_dbe": dram_a, "ecc_aggregate_sram_dbe": sram_a,
        "sram_sources": smi_sram_sources(g),
        "unrepairable_memory": smi_yes(smi_text(g, "ecc_errors/unrepairable_memory")),
        "channel_repair_pending": smi_yes(smi_text(g, "ecc_errors/channel_repair_pending")),
        "retired_sbe": smi_int(g, "retired_pages/multiple_single_bit_retirement/retired_count"),
        "retired_dbe": smi_int(g, "retired_pages/double_bit_retirement/retired_count"),
        "retired_pending": smi_yes(pend),
        "remapped_correctable": smi_int(g, "remapped_rows/remapped_row_corr"),
        "remapped_uncorrectable": smi_int(g, "remapped_rows/remapped_row_unc"),
        "remap_pending": smi_yes(smi_text(g, "remapped_rows/remapped_row_pending")),
        "remap_failure": smi_yes(smi_text(g, "remapped_rows/remapped_row_failure")),
        "pcie_gen": smi_int(g, link + "pcie_gen/current_link_gen"),
        "pcie_gen_max": smi_int(g, link + "pcie_gen/max_link_gen"),
        "pcie_gen_device_max": smi_int(g, link + "pcie_gen/max_device_link_gen"),
        "pcie_width": smi_int(g, link + "link_widths/current_link_width"),
        "pcie_width_max": smi_int(g, link + "link_widths/max_link_width"),
        "pcie_replays": smi_int(g, "pci/replay_counter"),
        "persistence_mode": smi_yes(smi_text(g, "persistence_mode")),
        "mig_mode": smi_lower(smi_text(g, "mig_mode/current_mig")),
        "mig_pending": smi_lower(smi_text(g, "mig_mode/pending_mig")),
        "fabric_state": smi_text(g, "fabric/state"),
        "fabric_status": smi_text(g, "fabric/status"),
        "recovery_action": smi_text(g, "gpu_recovery_action"),
        "processes": procs,
    }


def smi_health(xml_text):
    """{"driver_version", "cuda_version", "gpus": [health fields per GPU]} of `nvidia-smi -q -x`; raises
    SmiFormatError with one line when the text is not that."""
    try:
        root = ET.fromstring(smi_strip_doctype(xml_text))
    except ET.ParseError as exc:
        raise SmiFormatError("nvidia-smi -q -x output is not XML: %s" % exc) from None
    if root.tag != "nvidia_smi_log":
        raise SmiFormatError("nvidia-smi -q -x: unexpected root element <%s>" % root.tag)
    return {"driver_version": smi_text(root, "driver_version"), "cuda_version": smi_text(root, "cuda_version"),
            "gpus": [smi_gpu(i, g) for i, g in enumerate(root.findall("gpu"))]}


# --- end of nvidia-smi health fields ------------------------------------------------------------------------------
