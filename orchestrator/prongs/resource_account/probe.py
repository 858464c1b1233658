"""The resource-account probe: one round trip of scripts/account.py, parsed into a ResourceAccount.

The script samples for a window (Settings.account_sample_s, default 2 s) while the workload runs; the run starts it
with the other read-only probes as soon as the host is connected (orchestrator/prefetch.py), so the window overlaps
the rest of the investigation instead of adding to it. What the host would not give is a gap of the model; the model
is unavailable only when the script could not run at all.
"""

from __future__ import annotations

from typing import Any

from orchestrator.hosts.base import Host
from orchestrator.prongs.resource_account.models import AccountGap, GpuBusy, HostAccount, ProcessAccount, ResourceAccount
from orchestrator.probes.runner import ProbeUnavailable, run_script
from orchestrator.probes.session import shared

SAMPLE_S = 3.0
"""The default window (Settings.account_sample_s)."""
INTERVAL_MS = 200
"""nvidia-smi's -lms interval: 15 samples in the default window (a shorter window samples faster, 8 at least)."""


def account_params(sample_s: float) -> dict[str, Any]:
    interval = max(50, min(INTERVAL_MS, int(sample_s * 1000 / 8)))
    return {"sample_s": float(sample_s), "interval_ms": interval, "max_threads": 24}


def account_key(sample_s: float) -> tuple[Any, ...]:
    """The probe session's key of an account over this window (the prefetch fills it)."""
    return ("resource_account", float(sample_s))


def account_from_output(host_name: str, data: dict[str, Any]) -> ResourceAccount:
    """Pure: the ResourceAccount the account script's JSON describes."""
    return ResourceAccount(
        host=host_name, window_s=float(data.get("window_s") or 0.0), clk_tck=int(data.get("clk_tck") or 100),
        gpus=[GpuBusy.model_validate(g) for g in data.get("gpus") or []],
        host_account=HostAccount.model_validate(data.get("host") or {}),
        processes=[ProcessAccount.model_validate(p) for p in data.get("processes") or []],
        gaps=[AccountGap.model_validate(g) for g in data.get("gaps") or []],
        commands=list(data.get("commands") or []) + ["python3 -I -S - (account probe)"])


async def collect_account(host: Host, sample_s: float = SAMPLE_S) -> ResourceAccount:
    """Sample the host's resources for `sample_s` seconds in one round trip."""
    try:
        data = await run_script(host, "python3", "account", account_params(sample_s), timeout_s=sample_s + 60.0,
                                isolated=True)
    except ProbeUnavailable as exc:
        return ResourceAccount(host=host.name, available=False, reason=str(exc),
                               commands=["python3 -I -S - (account probe)"])
    return account_from_output(host.name, data)


async def resource_account(host: Host, sample_s: float = SAMPLE_S) -> ResourceAccount:
    """collect_account, or the one the prefetch already started for this window (a reading: one caller each)."""
    return await shared(host, account_key(sample_s), lambda: collect_account(host, sample_s), once=True)
