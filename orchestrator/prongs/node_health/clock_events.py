"""The answer to "is my GPU throttling?": which clocks-event reasons the node probe read, which were active and what
each means, the SM clock against its maximum (and over the power sampler's window where it ran), or why the reasons
could not be read.

The reasons come from `nvidia-smi -q -x` (<clocks_event_reasons>, <clocks_throttle_reasons> before driver 535), read
once by the node-health probe; their meanings are data (knowledge/clock_events.yaml, NVML's nvmlClocksEventReasons).
Pure: evidence in, one sentence out.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from orchestrator.knowledge import clock_event_reasons
from orchestrator.prongs.node_health.models import GpuHealth, NodeHealth

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView

ASKS = re.compile(r"\bthrottl|\bclocks?\b|\bthermal|\boverheat|\bpower[- ]cap", re.IGNORECASE)
"""A question about the GPU's clocks: throttling, thermal or power capping."""

COUNTERS = {"sw_power_cap": "SW power capping", "sync_boost": "sync boost", "sw_therm_slowdown": "SW thermal slowdown",
            "hw_therm_slowdown": "HW thermal slowdown", "hw_power_brake": "HW power braking"}
"""nvidia-smi's <clocks_event_reasons_counters> children (cumulative microseconds since the driver loaded)."""


def asks_about_clocks(question: str) -> bool:
    return bool(ASKS.search(question or ""))


def _mhz(x: float) -> str:
    return f"{x:,.0f}"


def _clocks(gpus: list[GpuHealth]) -> str:
    """'SM clock 1,980 MHz of 1,980 MHz' (one value or the range over the GPUs), or '' when none was read."""
    cur = [g.sm_mhz for g in gpus if g.sm_mhz is not None]
    top = [g.max_sm_mhz for g in gpus if g.max_sm_mhz]
    if not cur:
        return ""
    now = _mhz(cur[0]) if min(cur) == max(cur) else f"{_mhz(min(cur))}-{_mhz(max(cur))}"
    return f"SM clock {now} MHz" + (f" of {_mhz(max(top))} MHz" if top else "")


def _gpu_list(gpus: list[GpuHealth]) -> str:
    idx = [str(g.index) for g in gpus]
    return f"GPU {idx[0]}" if len(idx) == 1 else f"GPUs {', '.join(idx)}"


def _history(gpus: list[GpuHealth]) -> str:
    """Time the counters say the GPUs spent held down since the driver loaded, per counter (nonzero only)."""
    parts = []
    for key, name in COUNTERS.items():
        held = [(g, g.clocks_event_us[key]) for g in gpus if g.clocks_event_us.get(key)]
        if held:
            top = max(us for _, us in held)
            parts.append(f"{name} up to {top / 1e6:,.1f} s on {_gpu_list([g for g, _ in held])}")
    return ("; since the driver loaded, the counters show " + "; ".join(parts)) if parts else ""


def _window(view: "EvidenceView", host: str | None) -> str:
    """The SM clock over the power sampler's window on the same host, where it ran."""
    for ev, ps in view.probes("power_sampling"):
        if ev.host != host:
            continue
        means = [s.mean_sm_clock_mhz for s in getattr(ps, "summary", []) if s.mean_sm_clock_mhz is not None]
        if means:
            span = _mhz(min(means)) if min(means) == max(means) else f"{_mhz(min(means))}-{_mhz(max(means))}"
            return f"; over the {ps.duration_s:g} s the power sampler ran ({ev.id}) the mean SM clock was {span} MHz"
    return ""


def _answer(view: "EvidenceView", ev_id: str, host: str | None, m: NodeHealth) -> str:
    known = clock_event_reasons()
    read = [g for g in m.gpus if g.clocks_event]
    if not read:
        smi = next((g.why for g in m.gaps if g.what.startswith("nvidia-smi -q -x")), None)
        why = smi or ("nvidia-smi -q -x on this driver has no <clocks_event_reasons> (or <clocks_throttle_reasons>) "
                      "element")
        return f"Throttling: the clocks-event reasons could not be read on {m.host} ({ev_id}): {why}."
    n = max(len(g.clocks_event) for g in read)
    source = known["gpu_idle"].source

    def label(r: str) -> str:
        return known[r].label if r in known else r.replace("_", " ")

    groups: dict[tuple[str, ...], list[GpuHealth]] = {}
    for g in read:  # GPUs with the same active slowdown reasons are said together
        active = tuple(r for r, on in g.clocks_event.items() if on and (r not in known or known[r].slowdown))
        groups.setdefault(active, []).append(g)
    quiet = groups.pop((), [])
    idle = [g for g in quiet if g.clocks_event.get("gpu_idle")]
    where = f"{len(read)} GPU{'s' if len(read) != 1 else ''} of {m.host} ({ev_id}, one nvidia-smi -q -x read)"
    tail = _window(view, host) + _history(read) + f" [{source}]."
    if not groups:
        if idle:
            return (f"Throttling: no slowdown: of the {n} clocks-event reasons read on the {where} only Idle was "
                    f"active on {_gpu_list(idle)} ({known['gpu_idle'].meaning}), {_clocks(read)}; ask again while "
                    "the workload runs" + tail)
        return f"Throttling: no: none of the {n} clocks-event reasons read were active on the {where}, {_clocks(read)}" + tail
    said: list[str] = []
    meant: list[str] = []
    for rs, gs in groups.items():
        temps = [g.temperature_c for g in gs if g.temperature_c is not None]
        temp = "" if not temps else f" at {temps[0]:g} C" if len(temps) == 1 else f" at up to {max(temps):g} C"
        ids = ", ".join(str(g.index) + (f" ({g.bus_id})" if g.bus_id and len(gs) == 1 else "") for g in gs)
        said.append(f"{'GPU' if len(gs) == 1 else 'GPUs'} {ids} {'has' if len(gs) == 1 else 'have'} "
                    f"{', '.join(map(label, rs))} active, {_clocks(gs)}{temp}")
        meant += [f"{label(r)}: {known[r].meaning}" for r in rs if r in known and f"{label(r)}: {known[r].meaning}" not in meant]
    rest = f"; on {_gpu_list(quiet)} none of the {n} reasons read were active" if quiet else ""
    return f"Throttling: yes, on the {where}: " + "; ".join(said) + " (" + "; ".join(meant) + ")" + rest + tail


def clock_events_answer(view: "EvidenceView", question: str) -> str | None:
    """One sentence answering a question about throttling or clocks from the node probe's reading, or None when the
    question is not about clocks."""
    if not asks_about_clocks(question):
        return None
    for ev, m in view.probes("node_health"):
        if isinstance(m, NodeHealth):
            return _answer(view, ev.id, ev.host, m)
    for ev, u in view.unavailable():
        if u.kind in ("node_health", "gpu_inventory"):
            return (f"Throttling: the clocks-event reasons could not be read: {u.kind} on {u.host} ({ev.id}) "
                    f"failed: {u.reason or 'unavailable'}.")
    return "Throttling: no node-health probe ran, so no clocks-event reasons were read."
