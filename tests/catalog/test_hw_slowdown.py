"""gpu-hw-slowdown claims a hardware slowdown only with the SM clock it cuts (audit #36): NVML says the bit "may be
also reported during PState or clock change", so one reading of the bit alone is a weak signal."""

from __future__ import annotations

from orchestrator.analysis.signals import Fact, HostFacts, evaluate_entry
from orchestrator.knowledge.catalog import catalog


def _conf(facts: dict) -> float | None:
    hf = HostFacts("h")
    for k, v in facts.items():
        hf.facts[k] = Fact(v, "ev-f")
    e = catalog().get("gpu-hw-slowdown")
    assert e is not None
    hits = evaluate_entry(e, hf)
    if not hits:
        return None
    return max(h.signal.confidence if h.signal.confidence is not None else e.confidence for h in hits)


BASE = {"gpu.0.index": 0, "gpu.0.bus_id": "00000000:18:00.0", "gpu.0.clocks.max_sm_mhz": 1980}


def test_the_bit_with_a_clock_cut_by_half_is_a_slowdown():
    f = BASE | {"gpu.0.clocks_event.hw_slowdown": True, "gpu.0.clocks_event.throttled": True,
                "gpu.0.clocks.sm_mhz": 945, "gpu.0.clocks.sm_vs_max": 0.477}
    assert _conf(f) == 0.85


def test_the_bit_at_full_clock_is_weak():
    f = BASE | {"gpu.0.clocks_event.hw_slowdown": True, "gpu.0.clocks_event.throttled": True,
                "gpu.0.clocks.sm_mhz": 1980, "gpu.0.clocks.sm_vs_max": 1.0}
    assert _conf(f) == 0.4


def test_no_bit_no_finding():
    assert _conf(BASE | {"gpu.0.clocks_event.hw_slowdown": False, "gpu.0.clocks_event.throttled": False,
                         "gpu.0.clocks.sm_vs_max": 0.4}) is None
