"""NVLink error counters judged as DCGM judges them: the change over a window, CRC errors per second."""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.analysis.signals import Fact, HostFacts, evaluate_entry
from orchestrator.knowledge.catalog import entry
from orchestrator.prongs.node_health.probe import health_from_output

DATA = Path(__file__).parent.parent / "node" / "data" / "h200x2"  # a real 2x H200 capture


def _bump(text: str, gpu: int, link: int, kind: str, to: int) -> str:
    """The capture with one counter of one GPU's link set to `to`."""
    out, cur = [], None
    for line in text.split("\n"):
        m = re.match(r"GPU (\d+):", line)
        cur = int(m.group(1)) if m else cur
        if cur == gpu and re.match(rf"\s+Link {link}: {kind} Errors: \d+$", line):
            line = re.sub(r"\d+$", str(to), line)
        out.append(line)
    return "\n".join(out)


def _node(first: str, second: str | None, window_s: float = 2.0):
    data = {"smi_xml": (DATA / "smi-qx-load.xml").read_text(), "nvlink_s": (DATA / "nvlink-s.txt").read_text(),
            "nvlink_e": first}
    if second is not None:
        data |= {"nvlink_e2": second, "nvlink_window_s": window_s}
    return health_from_output(data)


def _fires(facts: dict) -> bool:
    hf = HostFacts(host="h", facts={k: Fact(v, "ev-1") for k, v in facts.items()})
    return bool(evaluate_entry(entry("nvlink-errors"), hf))


def test_crc_errors_per_second_over_the_window_fire_and_a_count_since_boot_does_not():
    base = (DATA / "nvlink-e.txt").read_text()
    history = _bump(base, 1, 3, "CRC", 5400)  # a large count since the driver loaded
    f = _node(history, history).facts()
    assert f["gpu.1.nvlink.crc_errors"] == 5400 and f["gpu.1.nvlink.crc_per_s"] == 0 and f["gpu.1.nvlink.window_s"] == 2.0
    assert not _fires(f)
    growing = _node(history, _bump(base, 1, 3, "CRC", 5900)).facts()  # +500 in 2 s
    assert growing["gpu.1.nvlink.crc_delta"] == 500 and growing["gpu.1.nvlink.crc_per_s"] == 250.0
    assert _fires(growing)


def test_one_new_recovery_error_fails_as_in_dcgm_and_one_read_judges_nothing():
    base = (DATA / "nvlink-e.txt").read_text()
    f = _node(base, _bump(base, 0, 2, "Recovery", 1)).facts()
    assert f["gpu.0.nvlink.recovery_delta"] == 1 and _fires(f)
    once = _node(_bump(base, 0, 2, "Recovery", 37), None).facts()
    assert "gpu.0.nvlink.window_s" not in once and not _fires(once)


def test_a_counter_reset_between_reads_counts_from_zero():
    base = (DATA / "nvlink-e.txt").read_text()
    f = _node(_bump(base, 1, 0, "CRC", 9000), _bump(base, 1, 0, "CRC", 40)).facts()
    assert f["gpu.1.nvlink.crc_delta"] == 40
