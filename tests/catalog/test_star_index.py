"""The `*` bindings of catalog conditions: the per-host index answers as the regex over every fact key does."""

from __future__ import annotations

from orchestrator.analysis.signals import Fact, HostFacts, _pattern

KEYS = ["gpu.0.power.limit", "gpu.1.power.limit", "gpu.10.power.limit", "gpu.1.clocks.sm", "node.xid.79.count",
        "node.xid.48.count", "engine.0.flag.tp", "a..b", "x.y", "gpu.0.nvlink.3.state", "gpu.2.nvlink.0.state"]
PATTERNS = ["gpu.*.power.limit", "gpu.*.clocks.sm", "node.xid.*.count", "engine.*.flag.tp", "*.y",
            "gpu.0.nvlink.*.state", "gpu.*.nvlink.*.state", "gpu*.power.limit", "nope.*", "gpu.*", "a.*.b"]


def _regex(hf: HostFacts, key: str) -> list[str]:
    rx = _pattern(key)
    return sorted({m.group(1) for fk in hf.facts if (m := rx.match(fk))})


def test_the_index_gives_what_the_regex_gives():
    hf = HostFacts("h")
    for k in KEYS:
        hf.facts[k] = Fact(1, "ev-1")
    for p in PATTERNS:
        assert sorted(hf.star_values(p)) == _regex(hf, p), p
    assert sorted(hf.star_values("gpu.*.power.limit")) == ["0", "1", "10"]


def test_facts_added_later_are_seen():
    hf = HostFacts("h")
    hf.facts["gpu.0.power.limit"] = Fact(1, "ev-1")
    assert hf.star_values("gpu.*.power.limit") == ["0"]
    hf.facts["gpu.5.power.limit"] = Fact(1, "ev-2")
    assert sorted(hf.star_values("gpu.*.power.limit")) == ["0", "5"]
