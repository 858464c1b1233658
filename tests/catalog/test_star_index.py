"""The `*` bindings of catalog conditions: the per-host index answers as the regex over every fact key does."""

from __future__ import annotations

from orchestrator.analysis.facts import Fact, HostFacts, _pattern

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


def test_hosts_with_the_same_keys_share_one_index_and_others_do_not():
    """A fleet's hosts have the same fact keys (values differ): the index is built once for all of them."""
    a, b, c = HostFacts("a"), HostFacts("b"), HostFacts("c")
    for hf, limit in ((a, 600), (b, 450)):
        for k in KEYS:
            hf.facts[k] = Fact(limit, f"ev-{hf.host}")
    for k in KEYS[:3]:
        c.facts[k] = Fact(1, "ev-c")
    assert a.star_values("gpu.*.power.limit") == b.star_values("gpu.*.power.limit")
    assert a._star is b._star
    assert sorted(c.star_values("gpu.*.power.limit")) == ["0", "1", "10"]
    assert c._star is not a._star
    assert c.star_values("node.xid.*.count") == [] and a.star_values("node.xid.*.count") == ["79", "48"]
