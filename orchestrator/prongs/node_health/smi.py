"""Pure parsers for the node-health probe's nvidia-smi and lspci outputs.

`nvidia-smi -q -x` is read on the host by the node script (scripts/_smi.py, which holds the format's notes); here
its fields become models, and XML recorded by earlier versions of the script is read by the same code. Formats from
real captures (tests/node/data: `nvidia-smi nvlink -s/-e` of two H200 on NV18, driver 580.159.04): `nvidia-smi
nvlink -s` prints `GPU i: <name> (UUID: …)` then one tab-indented `Link n: 26.562 GB/s` or `Link n: <inactive>` per
link; `-e` prints `Link n: Replay Errors: 0`, `Recovery Errors`, `CRC Errors` per link. `lspci -vv` lines are those
the probe kept: device headers and their LnkCap / LnkSta / ACSCtl lines.
"""

from __future__ import annotations

import re
from typing import Any

from orchestrator.prongs.node_health.models import GpuHealth, NvLink, PciLink

from orchestrator.probes.nvidia_smi import NvidiaSmiParseError
from orchestrator.probes.scripts import _smi

REASONS = ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "hw_thermal_slowdown",
           "hw_power_brake_slowdown", "sync_boost", "sw_thermal_slowdown", "display_clocks_setting")


def gpus_from_fields(fields: dict[str, Any]) -> tuple[str | None, str | None, list[GpuHealth]]:
    """(driver version, CUDA version, GPUs) of the health fields `_smi.smi_health` read (on the host, or here)."""
    return (fields.get("driver_version"), fields.get("cuda_version"),
            [GpuHealth.model_validate(g) for g in fields.get("gpus") or []])


def parse_health_xml(xml_text: str) -> tuple[str | None, str | None, list[GpuHealth]]:
    """(driver version, CUDA version, GPUs) of `nvidia-smi -q -x`: the same reading the node script does on the
    host (scripts/_smi.py), for XML recorded by earlier versions of the script and for tests."""
    try:
        fields = _smi.smi_health(xml_text)
    except _smi.SmiFormatError as exc:
        raise NvidiaSmiParseError(str(exc)) from None
    return gpus_from_fields(fields)


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


def nvlink_changes(gpus: list[GpuHealth], later: dict[int, tuple[list[NvLink], bool]], window_s: float) -> None:
    """Set each link's counter growth between the first read (already on `gpus`) and `later`, `window_s` apart. A
    counter that went down was reset in between (driver reload, GPU reset): its growth is the later value."""
    for g in gpus:
        after = {link.link: link for link in later.get(g.index, ([], False))[0]}
        seen = False
        for link in g.nvlinks:
            b = after.get(link.link)
            if b is None:
                continue
            for attr, delta in (("crc_errors", "crc_delta"), ("replay_errors", "replay_delta"),
                                ("recovery_errors", "recovery_delta")):
                x0, x1 = getattr(link, attr), getattr(b, attr)
                if x0 is not None and x1 is not None:
                    setattr(link, delta, x1 - x0 if x1 >= x0 else x1)
                    seen = True
        if seen:
            g.nvlink_window_s = window_s


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
