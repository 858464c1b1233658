"""Power and clock sampling over a few seconds: the "330 W of 600 W at 98 % utilization" observation."""

from __future__ import annotations

from statistics import mean

from orchestrator.hosts.base import Host
from orchestrator.probes import nvidia_smi
from orchestrator.probes.results import GpuPowerSummary, PowerSample, PowerSampling
from orchestrator.probes.runner import ProbeUnavailable, run_script

FIELDS = "index,power.draw,power.limit,clocks.sm,clocks.max.sm,utilization.gpu"


def sampling_from_output(data: dict, duration_s: float, interval_s: float) -> PowerSampling:
    """Pure: samples and per-GPU means from the sampler script's output."""
    samples: list[PowerSample] = []
    limits: dict[int, float | None] = {}
    max_clock: dict[int, float | None] = {}
    for s in data.get("samples") or []:
        for row in nvidia_smi.parse_query_csv(s.get("csv", "")):
            idx = int(row.get("index", "0"))
            samples.append(
                PowerSample(
                    t_s=float(s.get("t_s", 0.0)),
                    gpu=idx,
                    power_w=nvidia_smi.number(row.get("power.draw")),
                    sm_clock_mhz=nvidia_smi.number(row.get("clocks.sm") or row.get("clocks.current.sm")),
                    utilization_pct=nvidia_smi.number(row.get("utilization.gpu")),
                )
            )
            limits[idx] = nvidia_smi.number(row.get("power.limit"))
            max_clock[idx] = nvidia_smi.number(row.get("clocks.max.sm"))
    summary = []
    for gpu in sorted({s.gpu for s in samples}):
        mine = [s for s in samples if s.gpu == gpu]
        power = [s.power_w for s in mine if s.power_w is not None]
        clocks = [s.sm_clock_mhz for s in mine if s.sm_clock_mhz is not None]
        util = [s.utilization_pct for s in mine if s.utilization_pct is not None]
        summary.append(
            GpuPowerSummary(
                gpu=gpu,
                samples=len(mine),
                mean_power_w=round(mean(power), 2) if power else None,
                max_power_w=max(power) if power else None,
                power_limit_w=limits.get(gpu),
                mean_sm_clock_mhz=round(mean(clocks), 1) if clocks else None,
                max_sm_clock_mhz=max_clock.get(gpu),
                mean_utilization_pct=round(mean(util), 1) if util else None,
            )
        )
    out = PowerSampling(duration_s=duration_s, interval_s=interval_s, samples=samples, summary=summary)
    if not samples:
        out.available = False
        errors = data.get("errors") or ["no samples"]
        out.reason = f"nvidia-smi gave no samples: {errors[0][:200]}"
    return out


async def sample_power(host: Host, duration_s: float = 3.0, interval_s: float = 0.5) -> PowerSampling:
    """Watch power draw, SM clocks and utilization of every GPU for duration_s (one round trip)."""
    params = {"duration_s": duration_s, "interval_s": interval_s, "fields": FIELDS}
    command = f"nvidia-smi --query-gpu={FIELDS} --format=csv every {interval_s:g} s for {duration_s:g} s"
    try:
        data = await run_script(host, "python3", "sampler", params, timeout_s=duration_s + 30, isolated=True)
    except ProbeUnavailable as exc:
        return PowerSampling(host=host.name, available=False, reason=str(exc), commands=[command],
                             duration_s=duration_s, interval_s=interval_s)
    out = sampling_from_output(data, duration_s, interval_s)
    out.host = host.name
    out.commands = [command]
    if not out.available and any("No devices were found" in e or "No such file" in e or "FileNotFoundError" in e
                                 for e in data.get("errors") or []):
        out.reason = "no NVIDIA GPU to sample: " + (data.get("errors") or [""])[0][:200]
    return out
