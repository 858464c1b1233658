"""`nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT` text (a real capture) applied onto `nvidia-smi -q -x` XML.

The text and the XML are two renderings of one record (nvsmi_device_v13.dtd); the labels below are the text's, the
tags the XML's, both as driver 580 prints them (tests/analysis/data/realbox-h200/ecc.txt, tests/node/data/h200/).
A staged host can then answer `-q -x` with exactly what a real GPU reported in text form.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

SECTIONS = {
    ("ECC Errors", "Volatile"): "ecc_errors/volatile",
    ("ECC Errors", "Aggregate"): "ecc_errors/aggregate",
    ("ECC Errors", "Aggregate Uncorrectable SRAM Sources"): "ecc_errors/aggregate_uncorrectable_sram_sources",
    ("ECC Errors",): "ecc_errors",
    ("Retired Pages",): "retired_pages",
    ("Remapped Rows",): "remapped_rows",
}
LABELS = {
    "SRAM Correctable": "sram_correctable", "SRAM Uncorrectable Parity": "sram_uncorrectable_parity",
    "SRAM Uncorrectable SEC-DED": "sram_uncorrectable_secded", "DRAM Correctable": "dram_correctable",
    "DRAM Uncorrectable": "dram_uncorrectable", "SRAM Threshold Exceeded": "sram_threshold_exceeded",
    "SRAM L2": "sram_l2", "SRAM SM": "sram_sm", "SRAM Microcontroller": "sram_microcontroller",
    "SRAM PCIE": "sram_pcie", "SRAM Other": "sram_other",
    "Channel Repair Pending": "channel_repair_pending", "TPC Repair Pending": "tpc_repair_pending",
    "Unrepairable Memory": "unrepairable_memory",
    "Single Bit ECC": "multiple_single_bit_retirement/retired_count",
    "Double Bit ECC": "double_bit_retirement/retired_count", "Pending Page Blacklist": "pending_blacklist",
    "Correctable Error": "remapped_row_corr", "Inactive Correctable Error": "remapped_row_corr_inactive",
    "Uncorrectable Error": "remapped_row_unc", "Inactive Uncorrectable Error": "remapped_row_unc_inactive",
    "Pending": "remapped_row_pending", "Remapping Failure Occurred": "remapped_row_failure",
}
_LINE = re.compile(r"^( *)([^:]+?)\s*(?::\s*(.*))?$")


def smi_q_values(text: str) -> dict[str, str]:
    """XML path (relative to <gpu>) -> value, for every labelled line of the ECC/remapper/retirement sections."""
    out: dict[str, str] = {}
    stack: list[tuple[int, str]] = []
    for raw in text.splitlines():
        if not raw.strip() or raw.lstrip().startswith("$"):
            continue
        m = _LINE.match(raw)
        if m is None:
            continue
        indent, label, value = len(m.group(1)), m.group(2).strip(), m.group(3)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if value is None:  # a section heading
            stack.append((indent, label))
            continue
        path = tuple(s for _, s in stack)
        section = next((SECTIONS[path[i:]] for i in range(len(path)) if path[i:] in SECTIONS), None)
        if section is not None and label in LABELS:
            out[f"{section}/{LABELS[label]}"] = value.strip()
    return out


def apply_smi_q(gpu: ET.Element, text: str) -> None:
    """Set every value the text gives in the GPU's XML element (elements the XML lacks are left out)."""
    for path, value in smi_q_values(text).items():
        el = gpu.find(path)
        if el is not None:
            el.text = value
