"""nvidia-smi parsers against real captures (H200, 1 and 2 GPUs)."""

from pathlib import Path

import pytest

from orchestrator.probes import nvidia_smi
from orchestrator.probes.gpu import inventory_from_outputs

DATA = Path(__file__).parent / "data"


def test_h200_xml_and_query_csv_give_name_arch_power_clocks_and_cc_from_csv():
    inv = inventory_from_outputs((DATA / "h200/nvidia-smi-q.xml").read_text(),
                                 (DATA / "h200/nvidia-smi-query.csv").read_text(), None)
    assert inv.available and inv.count == 1
    assert (inv.driver_version, inv.cuda_version) == ("580.159.04", "13.0")
    g = inv.gpus[0]
    assert (g.name, g.architecture) == ("NVIDIA H200", "Hopper")
    assert g.compute_cap == "9.0"  # the XML has none: it comes from the query CSV
    assert g.memory_total_mib == 143771 and g.power_limit_w == 700.0
    assert g.power_draw_w == 79.87  # instant draw from the XML
    assert (g.sm_clock_mhz, g.sm_clock_max_mhz) == (375, 1980)
    assert g.utilization_pct == 0 and g.clocks_throttle_reasons == ["gpu_idle"]


def test_query_csv_alone_makes_an_inventory():
    rows = nvidia_smi.parse_query_csv((DATA / "h200/nvidia-smi-query.csv").read_text())
    assert rows[0]["clocks.current.sm"] == "375 MHz"
    inv = nvidia_smi.inventory_from_query(rows)
    assert inv.gpus[0].sm_clock_mhz == 375 and inv.gpus[0].compute_cap == "9.0"


def test_two_h200_capture_with_nvlink_topology_and_ansi_header():
    cap = DATA / "h200_capture"
    inv = inventory_from_outputs((cap / "nvidia-smi-q.xml").read_text(),
                                 (cap / "nvidia-smi-query-probe.csv").read_text(),
                                 (cap / "nvidia-smi-topo.txt").read_text())
    assert [g.index for g in inv.gpus] == [0, 1]
    assert {g.compute_cap for g in inv.gpus} == {"9.0"}
    topo = inv.topology
    assert topo.nvlink and [(l.a, l.b, l.kind) for l in topo.links] == [(0, 1, "NV18")]
    assert topo.cpu_affinity == {0: "0-31", 1: "0-31"} and topo.numa_affinity == {0: "0", 1: "0"}


def test_pcie_only_topology_has_no_nvlink():
    text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tSYS\t0-47\t0\t\tN/A\nGPU1\tSYS\t X \t48-95\t1\t\tN/A\n"
    topo = nvidia_smi.parse_topo(text)
    assert not topo.nvlink and topo.links[0].kind == "SYS" and topo.numa_affinity == {0: "0", 1: "1"}


def test_garbage_is_a_parse_error_naming_the_command():
    with pytest.raises(nvidia_smi.NvidiaSmiParseError, match="-q -x"):
        nvidia_smi.parse_xml("not xml")
    with pytest.raises(nvidia_smi.NvidiaSmiParseError, match="topo"):
        nvidia_smi.parse_topo("nothing here")


def test_no_devices_message_is_recognized():
    assert nvidia_smi.no_gpu_reason("No devices were found\n", "") == "No devices were found"
    assert nvidia_smi.no_gpu_reason("ok", "") is None
