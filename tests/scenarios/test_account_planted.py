"""Every account case fails once its planted evidence is taken away: the saturated resource made ordinary (threads
back to a third of a core, the cgroup unthrottled and far from its memory limit, the weights on local disk, no swapping or stalls, GPUs working
together, no benchmark, no engine metrics or logs) while everything else of the case stays. A case that still passes then
was met by something other than the evidence it plants."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from planted import SSH, assert_fails_without, cases_of

pytestmark = SSH

CASES = cases_of("account")


def neutralized(case: dict[str, Any]) -> dict[str, Any]:
    """The case with its planted evidence made ordinary."""
    case = copy.deepcopy(case)
    stage = case["stage"]
    acct = stage.get("account") or {}
    for p in acct.get("processes") or []:
        for t in p.get("threads") or []:
            t.update(cpu=min(float(t.get("cpu", 0)), 0.3), state="S", majflt=0)
        p["read_mbit"] = 0
        p.pop("rss_gib", None)  # no host memory held beyond the runtime's own
        p["mounts"] = [[mp, "tmpfs", "shm", "rw,nosuid,nodev,size=67108864k"] if mp == "/dev/shm" else
                       [mp, "ext4", "/dev/nvme1n1"] for mp, *_ in p.get("mounts") or []]  # /dev/shm: 64 GiB
    if acct.get("cgroup"):
        acct["cgroup"].update(throttled=0, pressure={}, memory_events={}, memory_gib=1)
    acct.pop("swap", None)
    acct.pop("pressure", None)
    acct["cpu"] = {"busy": 0.05}
    gpus = acct.get("gpus") or []
    for g in gpus:  # working together: every GPU busy at its own mean, all the time
        series = g.get("busy") if isinstance(g.get("busy"), list) else [g.get("busy", 0)]
        g["busy"] = [round(sum(series) / len(series))]
    stage.pop("engines", None)
    stage.pop("logs", None)  # the engine's own lines (its KV cache, its weights' memory, its queue) go with it
    if case.get("observations"):
        case["observations"].pop("bench", None)
        if not case["observations"]:
            case.pop("observations")
    return case


def flipped(case: dict[str, Any]) -> dict[str, Any]:
    """A case whose only planted evidence is the GPUs' busy share (nothing saturated; the busy twin): flipped."""
    case = copy.deepcopy(case)
    for g in case["stage"]["account"]["gpus"]:
        series = g["busy"] if isinstance(g["busy"], list) else [g["busy"]]
        g["busy"] = [30] if sum(series) / len(series) >= 80 else [95]
    return case


BUSY_SHARE_PLANTED = {"busy-gpu-thread-busy-twin", "gpu-idle-nothing-saturated"}
"""Cases whose planted evidence is the GPUs' busy share itself (the twin's busy GPU; idle GPUs with nothing
saturated): taking it away flips the share."""


def crowded(case: dict[str, Any]) -> dict[str, Any]:
    """A twin whose planted evidence is a load its KV cache holds: four times the concurrency offered."""
    case = copy.deepcopy(case)
    for b in case["observations"]["bench"]:
        b["max_concurrency"] *= 4
    return case


KV_ROOM_PLANTED = {"vllm-kv-cache-room-twin"}
"""Twins whose planted evidence is that the offered load fits the KV cache: taking it away offers more."""


def without_planted(case: dict[str, Any]) -> dict[str, Any]:
    if case["id"] in KV_ROOM_PLANTED:
        return crowded(case)
    return flipped(case) if case["id"] in BUSY_SHARE_PLANTED else neutralized(case)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.parent.name)
async def test_account_case_fails_without_its_planted_evidence(path: Path, tmp_path):
    await assert_fails_without(path, tmp_path, without_planted)
