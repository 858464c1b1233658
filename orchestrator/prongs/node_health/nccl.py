"""NCCL's own INFO/WARN lines (NCCL_DEBUG=INFO) in the serving logs: which transport each channel uses.

Formats (NVIDIA/nccl src/transport/{p2p,shm,net}.cc, graph/paths.cc):
`Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read`, `… via P2P/IPC`, `… via P2P/direct pointer`,
`Channel 00 : 0[0] -> 1[1] via SHM/direct/direct`, `Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0`,
`… via NET/IB/0/GDRDMA`; `Using network IB|Socket`; `NET/IB : No device found.`;
`NCCL_P2P_DISABLE set by environment to 1`; WARN `P2P is disabled between NVLINK connected GPUs …`;
`NCCL version 2.21.5+cuda12.4`.
"""

from __future__ import annotations

import re

from orchestrator.prongs.node_health.models import NcclLine, NcclSummary

CHANNEL = re.compile(r"Channel \d+(?:/\d+)?\s*:\s*\d+\[[^\]]*\]\s*->\s*\d+\[[^\]]*\]\s*(?:\[\w+\]\s*)?via (\S+(?: pointer)?)")
VERSION = re.compile(r"NCCL version ([0-9][\w.+\-]*)")
NETWORK = re.compile(r"Using network (\S+)")
SET_BY_ENV = re.compile(r"\b(NCCL_[A-Z0-9_]+) set by environment to (\S+)")


def transport_of(via: str) -> str:
    v = via.lower()
    if v.startswith("p2p"):
        return "p2p"
    if v.startswith("shm"):
        return "shm"
    if v.startswith("net/socket"):
        return "net_socket"
    if v.startswith("net/ib"):
        return "net_ib"
    if v.startswith("net/"):
        return "net_other"
    return "other"


def summarize_nccl(lines: list[NcclLine]) -> NcclSummary:
    s = NcclSummary(lines=lines)
    gdr_seen = False
    for item in lines:
        line = item.line
        m = CHANNEL.search(line)
        if m:
            via = m.group(1)
            kind = transport_of(via)
            s.channels += 1
            s.transports[kind] = s.transports.get(kind, 0) + 1
            if kind.startswith("net"):
                gdr_seen = True
                if "/GDRDMA" in via:
                    s.gdr = True
                elif s.gdr is None:
                    s.gdr = False
            continue
        if s.version is None and (m := VERSION.search(line)):
            s.version = m.group(1)
        if (m := NETWORK.search(line)):
            s.network = m.group(1)
        if "NET/IB : No device found" in line:
            s.ib_no_device = True
        if "P2P is disabled between NVLINK connected GPUs" in line:
            s.p2p_disabled_warning = True
        if (m := SET_BY_ENV.search(line)):
            s.env_from_log.setdefault(m.group(1), m.group(2).rstrip(".,"))
        if re.search(r"GDR\s+1\b", line):
            s.gdr = True
    if not gdr_seen and s.gdr is False:
        s.gdr = None
    return s
