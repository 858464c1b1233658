"""Kernel-log Xid lines: `NVRM: Xid (PCI:0000:18:00): 79, pid=…, name=…, GPU has fallen off the bus.`, classified
from knowledge/xids.yaml (curated rows), else from NVIDIA's whole machine-readable Xid table (knowledge/xid_table.yaml,
NVSentinel's xiderrorsmapping.csv: FATAL/NONFATAL and the immediate action); a code in neither is `unknown` and
states no cause. The driver's format: the PCI address, the code, then free text; recent drivers add `pid=`/`name=`,
older ones print the text right after the code."""

from __future__ import annotations

import functools
import re

from pydantic import BaseModel

from orchestrator.prongs.node_health.models import GpuHealth, XidEvent
from orchestrator.prongs.node_health.pci import same_pci

XID_LINE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f:.]+)(?: GPU-I:\d+)?(?: GPU-CI:\d+)?\): (\d+)\b")
"""With MIG the driver adds the GPU / compute instance inside the parenthesis (kernel_rc.c XID_PRINT_WITH_ATTR)."""
FALLEN_OFF = re.compile(r"NVRM: The NVIDIA GPU ([0-9A-Fa-f:.]+)")
"""Newer drivers print Xid 79 across several lines: `NVRM: The NVIDIA GPU 0000:b3:00.0` … `fallen off the bus`."""

CLASS_RANK = {"fatal": 5, "memory": 4, "nvlink": 4, "hardware": 4, "app": 2, "unknown": 1, "sympathetic": 1,
              "info": 0}

ACTION_WORDS = {
    "RESET_GPU": "RESET_GPU: drain the GPU and reset it (nvidia-smi -r -i <index>), or reboot the node",
    "RESTART_BM": "RESTART_BM: drain the node and power-cycle it",
    "RESTART_VM": "RESTART_VM: restart the virtual machine",
    "RESTART_APP": "RESTART_APP: restart the application",
    "CHECK_UVM": "CHECK_UVM (NVIDIA's action code: see the Xid catalog's row for this code)",
    "CHECK_MECHANICALS": "CHECK_MECHANICALS (NVIDIA's action code: see the Xid catalog's row for this code)",
    "UPDATE_SWFW": "UPDATE_SWFW: update the driver / firmware",
    "IGNORE": "IGNORE: no action on its own",
    "UNEXPECTED_ERR_REPORT_ISSUE": ("UNEXPECTED_ERR_REPORT_ISSUE: not expected on current GPUs; collect "
                                    "nvidia-bug-report.sh and report it to NVIDIA"),
}
"""NVIDIA's immediate-action codes in words (the Xid catalog's "Resolution Bucket (Immediate Action)")."""


class XidInfo(BaseModel):
    code: int
    mnemonic: str
    name: str
    meaning: str
    action: str
    klass: str
    fatal: bool
    source: str


@functools.lru_cache(maxsize=1)
def xid_table() -> dict[int, XidInfo]:
    """Every code NVIDIA's table or knowledge/xids.yaml knows, by code: the curated row where there is one."""
    from orchestrator import knowledge

    out = {}
    for code, row in knowledge.xid_table().items():
        sev = "FATAL" if row.fatal else "NONFATAL"
        out[code] = XidInfo(code=code, mnemonic=row.mnemonic or f"XID_{code}", name=row.mnemonic or f"Xid {code}",
                            meaning=f"NVIDIA's Xid table lists {row.mnemonic or 'this code'} as {sev}, immediate "
                                    f"action {row.action}.",
                            action=ACTION_WORDS.get(row.action.upper(), row.action),
                            klass=knowledge.xid_table_class(row), fatal=row.fatal,
                            source=knowledge.XID_TABLE_SOURCE)
    for item in knowledge.xid_rows():
        item = dict(item)
        item["klass"] = item.pop("class")
        info = XidInfo.model_validate(item)
        out[info.code] = info
    return out


def classify(code: int) -> XidInfo | None:
    return xid_table().get(code)


def parse_xids(lines: list[tuple[int, str]], gpus: list[GpuHealth]) -> list[XidEvent]:
    """Xid events of the kept kernel-log lines, each tied to the GPU whose bus id it names (None when none does)."""
    events: list[XidEvent] = []
    for i, (no, line) in enumerate(lines):
        m = XID_LINE.search(line)
        code: int | None = None
        pci = ""
        if m:
            pci, code = m.group(1), int(m.group(2))
        else:
            f = FALLEN_OFF.search(line)
            follow = " ".join(t for _, t in lines[i:i + 3])
            if f and "fallen off the bus" in follow:
                pci, code = f.group(1), 79
        if code is None:
            continue
        info = classify(code)
        gpu = next((g.index for g in gpus if same_pci(g.bus_id, pci)), None)
        klass = info.klass if info else "unknown"
        events.append(XidEvent(line_no=no, line=line[:400], code=code, pci=pci, gpu_index=gpu,
                               mnemonic=info.mnemonic if info else None, meaning=info.meaning if info else None,
                               action=info.action if info else None, klass=klass,
                               rank=CLASS_RANK.get(klass, 2)))
    return events
