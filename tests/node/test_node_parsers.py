"""The node-health parsers on REAL captures (tests/node/data: two H200 hosts, driver 580.159.04)."""

from __future__ import annotations

from pathlib import Path

from orchestrator.prongs.node_health.probe import health_from_output
from orchestrator.prongs.node_health.kernel_log import parse_xids, xid_table
from orchestrator.prongs.node_health.nccl import summarize_nccl
from orchestrator.prongs.node_health.models import NcclLine
from orchestrator.prongs.node_health.pci import same_pci
from orchestrator.prongs.node_health.smi import parse_health_xml, parse_lspci, parse_nvlink

DATA = Path(__file__).parent / "data"


def test_h200_under_load_reads_power_cap_at_the_default_limit_as_normal():
    driver, cuda, gpus = parse_health_xml((DATA / "h200" / "smi-qx-load.xml").read_text())
    assert (driver, cuda) == ("580.159.04", "13.0")
    g = gpus[0]
    assert g.bus_id == "00000000:00:06.0" and g.name == "NVIDIA H200"
    assert g.clocks_event["sw_power_cap"] is True and g.clocks_event["hw_slowdown"] is False
    assert g.clocks_event_us["sw_power_cap"] == 5948899
    assert (g.power_enforced_w, g.power_default_w, g.power_max_w, g.power_min_w) == (700, 700, 700, 200)
    assert g.power_draw_w == 689.85
    assert (g.sm_mhz, g.max_sm_mhz, g.app_sm_mhz) == (1455, 1980, 1980)
    assert (g.pcie_gen, g.pcie_gen_max, g.pcie_width, g.pcie_width_max) == (5, 5, 16, 16)
    assert g.ecc_mode == "enabled" and g.ecc_volatile_dbe == 0 and g.ecc_aggregate_dbe == 0
    assert g.remap_pending is False and g.remap_failure is False and g.remapped_uncorrectable == 0
    assert g.retired_pending is None  # N/A on Hopper: row remapping replaced page retirement
    assert g.persistence_mode is True and g.mig_mode == "disabled"
    assert [(p.pid, p.name, p.used_memory_mib) for p in g.processes] == [(456, "python3", 1002)]
    facts = health_from_output({"smi_xml": (DATA / "h200" / "smi-qx-load.xml").read_text()}).facts()
    assert facts["gpu.0.clocks_event.sw_power_cap"] is True
    assert facts["gpu.0.clocks_event.throttled"] is False  # running at the 700 W default is not a fault
    assert facts["gpu.0.power.enforced_vs_default"] == 1.0
    assert facts["gpu.0.pcie.gen_downtrained"] is False and facts["gpu.0.pcie.width_downtrained"] is False


def test_idle_gpu_link_at_low_gen_is_not_downtrained():
    xml = (DATA / "h200x2" / "smi-qx-idle.xml").read_text()
    node = health_from_output({"smi_xml": xml})
    for g in node.gpus:
        g.pcie_gen = 1  # the link idles at Gen1 by design
    facts = node.facts()
    assert facts["gpu.0.clocks_event.gpu_idle"] is True
    assert facts["gpu.0.pcie.gen_downtrained"] is False


def test_two_h200_on_nv18_nvlink_and_topology():
    d = DATA / "h200x2"
    node = health_from_output({
        "smi_xml": (d / "smi-qx-load.xml").read_text(), "nvlink_s": (d / "nvlink-s.txt").read_text(),
        "nvlink_e": (d / "nvlink-e.txt").read_text(), "topo": (d / "topo-m.txt").read_text(),
    })
    assert [g.bus_id for g in node.gpus] == ["00000000:00:06.0", "00000000:00:07.0"]
    assert all(len(g.nvlinks) == 18 and all(link.up and link.crc_errors == 0 for link in g.nvlinks) for g in node.gpus)
    assert node.gpus[0].nvlinks[0].speed_gbs == 26.562
    f = node.facts()
    assert f["gpu.1.nvlink.links_down"] == 0 and f["gpu.1.nvlink.crc_errors"] == 0
    assert f["host.nvlink"] is True and f["host.gpu_links"] == "NV18"
    assert f["gpu.0.numa.cpus"] == "0-31" and f["gpu.0.fabric.state"] == "Completed"
    assert f["gpu.1.clocks_event.gpu_idle"] is True and f["gpu.0.clocks_event.sw_power_cap"] is True


def test_nvlink_inactive_and_errors():
    status = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
              "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-2)\n\t NVML: Unable to retrieve NVLink information as all links are inActive\n")
    errors = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\n\t Link 0: Replay Errors: 3\n\t Link 0: Recovery Errors: 1\n\t Link 0: CRC Errors: 1500\n\n"
    links = parse_nvlink(status, errors)
    assert [(x.link, x.up) for x in links[0][0]] == [(0, True), (1, False)]
    assert links[0][0][0].crc_errors == 1500 and links[0][0][0].replay_errors == 3
    assert links[1] == ([], True)


def test_real_boot_dmesg_has_no_xid_and_driver_lines_parse():
    lines = [(i, ln) for i, ln in enumerate((DATA / "h200" / "dmesg-nvidia.txt").read_text().splitlines(), 1)]
    assert parse_xids(lines, []) == []


def test_xid_lines_in_the_drivers_formats_map_to_gpus():
    xml = (DATA / "h200x2" / "smi-qx-load.xml").read_text()
    _, _, gpus = parse_health_xml(xml)
    lines = [
        (1, "[ 3605.1] NVRM: Xid (PCI:0000:00:07): 79, pid=2811, name=python3, GPU has fallen off the bus."),
        (2, "[ 3605.2] NVRM: Xid (PCI:0000:00:06): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception"),
        (3, "Nov 30 18:10:00 n1 kernel: NVRM: Xid (PCI:0000:9b:00): 94, pid=1234, name=python3, Contained ECC error"),
        (4, "[ 1843.3] NVRM: The NVIDIA GPU 0000:b3:00.0"),
        (5, "               NVRM: (PCI ID: 10de:26b5) installed in this system has"),
        (6, "               NVRM: fallen off the bus and is not responding to commands."),
    ]
    ev = parse_xids(lines, gpus)
    assert [(e.code, e.gpu_index, e.klass) for e in ev] == [(79, 1, "fatal"), (13, 0, "app"), (94, None, "memory"),
                                                            (79, None, "fatal")]
    assert "power-cycle" in (ev[0].action or "")


def test_xid_table_covers_the_issue_codes():
    table = xid_table()
    for code in (13, 31, 32, 43, 45, 48, 61, 62, 63, 64, 68, 74, 79, 92, 94, 95, 109, 119, 120, 154):
        info = table[code]
        assert info.source.startswith("https://") and info.meaning and info.action
    assert table[79].klass == "fatal" and table[13].klass == "app" and table[45].klass == "sympathetic"


def test_codes_xids_yaml_does_not_curate_take_nvidias_table_and_unknown_codes_stay_unknown():
    """Audit #35: NVSentinel's table says 46/110/136/143 are FATAL (RESET_GPU) and 152/153/157/161 IGNORE, 159
    CHECK_UVM (NONFATAL); a code in no table states no cause (the old rule made >= 144 fatal and the rest app)."""
    lines = [(i, f"NVRM: Xid (PCI:0000:18:00): {c}, pid=1, name=python3, x")
             for i, c in enumerate((46, 110, 136, 143, 152, 153, 157, 159, 161, 160, 480))]
    got = {e.code: e.klass for e in parse_xids(lines, [])}
    assert got == {46: "fatal", 110: "fatal", 136: "fatal", 143: "fatal", 152: "info", 153: "info", 157: "info",
                   159: "app", 161: "info", 160: "fatal", 480: "unknown"}
    ev = {e.code: e for e in parse_xids(lines, [])}
    assert ev[480].meaning is None and ev[480].action is None
    assert ev[46].mnemonic == "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR" and (ev[46].action or "").startswith("RESET_GPU")


def test_the_whole_nvidia_xid_table_is_loaded():
    from orchestrator import knowledge

    table = knowledge.xid_table()
    assert sorted(table) == list(range(1, 163))
    assert (table[136].action, table[136].fatal) == ("RESET_GPU", True)
    assert (table[159].action, table[159].fatal) == ("CHECK_UVM", False)


def test_lspci_downgraded_link_and_acs():
    text = ("15:01.0 PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)\n"
            "\t\tLnkCap:\tPort #1, Speed 32GT/s, Width x16, ASPM not supported\n"
            "\t\tLnkSta:\tSpeed 32GT/s, Width x16\n"
            "\t\tACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-\n"
            "18:00.0 3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)\n"
            "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n"
            "\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16 (ok)\n")
    bridge, gpu = parse_lspci(text)
    assert bridge.acs_redirect is True and gpu.acs_redirect is None
    assert (gpu.cap_speed_gts, gpu.sta_speed_gts, gpu.sta_width, gpu.downgraded) == (32, 2.5, 16, True)
    assert same_pci(gpu.address, "00000000:18:00.0") and same_pci("0000:18:00", "00000000:18:00.0")
    assert not same_pci("0000:19:00", "00000000:18:00.0")


def test_nccl_transports_per_channel():
    raw = [
        "node1:2048:2048 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
        "node1:2048:2048 [0] NCCL INFO NCCL_P2P_DISABLE set by environment to 1",
        "node1:2048:2301 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct",
        "node1:2048:2301 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via SHM/direct/direct",
        "node1:2048:2301 [0] NCCL INFO Channel 00/0 : 1[1] -> 0[0] [send] via NET/Socket/0",
        "node1:2048:2301 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
        "node1:2048:2301 [0] NCCL INFO Channel 03/0 : 0[0] -> 1[1] [receive] via NET/IB/0/GDRDMA",
        "node1:2048:2048 [0] NCCL INFO Using network Socket",
        "node1:2048:2048 [0] NCCL INFO NET/IB : No device found.",
    ]
    s = summarize_nccl([NcclLine(path="vllm.log", line_no=i, line=ln) for i, ln in enumerate(raw, 1)])
    assert s.version == "2.21.5+cuda12.4" and s.network == "Socket" and s.ib_no_device
    assert s.transports == {"shm": 2, "net_socket": 1, "p2p": 1, "net_ib": 1} and s.gdr is True
    assert s.env_from_log == {"NCCL_P2P_DISABLE": "1"}


def test_real_h200_probe_output_idle_and_under_load():
    """The node probe's own JSON from a real H200 (tests/node/data/h200/README.md)."""
    import json

    idle = health_from_output(json.loads((DATA / "h200" / "node-probe-idle.json").read_text()))
    assert idle.available and idle.kernel_log_source == "dmesg" and idle.xids == []
    assert [g.what for g in idle.gaps] == ["lspci -vv"]
    f = idle.facts()
    assert f["gpu.0.clocks_event.gpu_idle"] is True and f["host.libibverbs"] is True and f["host.iommu"] == "off"
    load = health_from_output(json.loads((DATA / "h200" / "node-probe-load.json").read_text()))
    f = load.facts()
    assert f["gpu.0.clocks_event.sw_power_cap"] is True and f["gpu.0.clocks_event.throttled"] is False
    assert f["gpu.0.processes.count"] == 1 and f["gpu.0.processes.other_count"] == 0
    assert f["env.NCCL_P2P_DISABLE"] == "1" and f["gpu.0.numa.process_pinned"] is False
    raw = (DATA / "h200" / "node-probe-load.json").read_text()
    assert "hf_DeviceRun" not in raw and "acct-planted" not in raw and load.processes[0].env_dropped == 84


def test_node_script_is_python38_syntax():
    import ast

    from orchestrator.probes import scripts

    ast.parse(scripts.load("node"), feature_version=(3, 8))
