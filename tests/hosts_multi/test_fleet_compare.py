"""prongs/fleet/rules.py on evidence built in memory: majority, ties, roles, measured tolerance, volatile facts."""

from __future__ import annotations

from orchestrator.prongs.fleet.rules import (
    compare,
    fleet_findings,
    fleet_tables,
    slurm_findings,
)
from orchestrator.evidence import Evidence


def inv(eid, host, limit=600.0, driver="580.95.05", draw=330.0, name="NVIDIA H200", gpus=2):
    return Evidence(id=eid, agent_id="fleet-5", tool="gpu_inventory", host=host, args={"host": host}, data={
        "kind": "gpu_inventory", "host": host, "driver_version": driver, "cuda_version": "13.0",
        "gpus": [{"index": i, "name": name, "power_limit_w": limit, "power_draw_w": draw + i * 7,
                  "sm_clock_mhz": 1500 + 10 * i, "clocks_throttle_reasons": []} for i in range(gpus)]})


def test_majority_names_the_odd_host_and_ignores_what_varies():
    ev = [inv("ev-5.1", "a", draw=300), inv("ev-5.2", "b", draw=310), inv("ev-5.3", "c", limit=450, draw=200),
          inv("ev-5.4", "d", driver="570.86.15")]
    t = fleet_tables(ev)[0]
    assert [o.host for o in t.outliers] == ["c", "d"]  # two power limits (weight 3) outrank one driver (weight 2)
    facts = {r.fact for r in t.rows}
    assert not any("draw" in f or "sm_mhz" in f for f in facts)  # power draw and clocks vary by load
    power = next(r for r in t.rows if "power" in r.fact)
    assert power.label == "GPUs 0-1 power limit (W)" and power.odd == ["c"] and power.majority == "600"
    assert set(power.evidence) == {"ev-5.3", "ev-5.1"}  # the odd host's and one majority host's evidence
    f = {x.data["host"]: x for x in fleet_findings(ev)}
    assert set(f) == {"c", "d"}
    assert "450 where the others have 600" in f["c"].claim
    assert "driver version is 570.86.15 where the others have 580.95.05" in f["d"].claim


def test_two_hosts_that_differ_blame_no_one():
    t = fleet_tables([inv("ev-5.1", "a"), inv("ev-5.2", "b", limit=450)])[0]
    assert t.outliers == [] and t.rows and t.rows[0].majority is None
    assert fleet_findings([inv("ev-5.1", "a"), inv("ev-5.2", "b", limit=450)]) == []


def test_roles_are_compared_apart():
    hosts = [{"name": "p1", "role": "prefill"}, {"name": "p2", "role": "prefill"}, {"name": "d1", "role": "decode"},
             {"name": "d2", "role": "decode"}, {"name": "d3", "role": "decode"}, {"name": "gone", "error": "refused"}]
    ev = [inv("ev-5.1", "p1", name="NVIDIA B200"), inv("ev-5.2", "p2", name="NVIDIA B200"), inv("ev-5.3", "d1"),
          inv("ev-5.4", "d2"), inv("ev-5.5", "d3", driver="570.86.15")]
    tables = {t.group: t for t in fleet_tables(ev, hosts)}
    assert set(tables) == {"prefill", "decode"}
    assert tables["prefill"].outliers == []  # B200 prefill vs H200 decode is the design, not a fault
    assert [o.host for o in tables["decode"].outliers] == ["d3"]


def test_measured_numbers_compare_within_a_tolerance():
    def gemm(eid, host, tf):
        return Evidence(id=eid, agent_id="fleet-5", tool="gemm_benchmark", host=host, data={
            "kind": "gemm_sweep", "points": [{"shape": "qkv", "dtype": "bf16", "m": 64, "n": 1, "k": 1, "ms": 1,
                                              "flops": 1, "bytes": 1, "tflops": tf, "gbps": 1}]})
    facts = {}
    from orchestrator.prongs.fleet.rules import host_facts

    facts = host_facts([gemm("ev-5.1", "a", 500), gemm("ev-5.2", "b", 520), gemm("ev-5.3", "c", 480),
                        gemm("ev-5.4", "d", 300)])
    t = compare(facts)
    assert [o.host for o in t.outliers] == ["d"] and t.rows[0].majority == "~490"


def test_drained_slurm_node_reason_is_a_finding():
    ev = Evidence(id="ev-5.2", agent_id="fleet-5", tool="slurm_nodes", host="slurm", data={
        "kind": "slurm_nodes", "nodes": [
            {"name": "gpu1", "state": "IDLE", "reason": None},
            {"name": "gpu2", "state": "IDLE+DRAIN", "reason": "GPU 3 Xid 79", "reason_time": "by root at 2026-11-30",
             "gres": "gpu:h200:8"}]})
    (f,) = slurm_findings([ev])
    assert f.title == "Slurm node gpu2 is drained: GPU 3 Xid 79"
    assert "gres gpu:h200:8".lower() in f.claim.lower() and "State=RESUME" in f.recommendations[0]


def test_reports_render_the_fleet_table():
    from orchestrator.diagnosis import Diagnosis
    from orchestrator.render.diagnosis import to_markdown
    from orchestrator.render.html import render_html

    ev = [inv("ev-5.1", "a"), inv("ev-5.2", "b"), inv("ev-5.3", "c", limit=450)]
    d = Diagnosis(question="q", verdict="v", fleet=fleet_tables(ev))
    md = to_markdown(d)
    assert "## Fleet comparison" in md and "| GPUs 0-1 power limit (W) | 600 | c: 450 |" in md
    html = render_html(d, [])
    assert 'id="fleet"' in html and "<strong>c</strong>" in html and "c: 450" in html
    assert "fleet" not in Diagnosis(question="q", verdict="v").model_dump()  # one-host diagnoses keep their shape


def test_a_hosts_merged_facts_are_shared_by_views_with_the_same_evidence_for_it():
    """Every agent's view of a fleet asks for the comparison: each host's facts are merged once per evidence set."""
    from orchestrator.prongs.fleet.rules import host_facts
    a1, b1 = inv("ev-5.1", "a"), inv("ev-5.2", "b")
    first = host_facts([a1, b1])
    b2 = inv("ev-5.3", "b", driver="570.86.15")
    second = host_facts([b2, a1, b1])
    assert second["a"] is first["a"]  # a's evidence is the same
    assert second["b"] is not first["b"]
    assert second["b"]["host.driver_version"] == ("580.95.05", "ev-5.2")  # the lowest id wins, as before


def test_rows_with_one_value_everywhere_are_counted_identical_and_mixed_types_are_not():
    ev = [inv("ev-5.1", "a"), inv("ev-5.2", "b"), inv("ev-5.3", "c")]
    t = fleet_tables(ev)[0]
    assert t.rows == [] and t.identical > 5
    # True and 1 are equal in Python but not the same value to show ("yes" and "1"): the row is compared
    facts = {h: {"host.driver_version": (v, f"ev-{i}")} for i, (h, v) in enumerate((("a", True), ("b", 1),
                                                                                      ("c", True)))}
    table = compare(facts)
    assert table is not None and [r.odd for r in table.rows] == [["b"]] and table.identical == 0


def test_each_fact_gets_the_first_comparison_rule_that_matches_it():
    """The rules are matched as one regex: the first pattern in COMPARED that matches decides, as in a loop."""
    import fnmatch

    from orchestrator.prongs.fleet.rules import COMPARED, _rule_for
    names = {p.replace("*", x) for p, _, _ in COMPARED for x in ("3", "7.ecc.sbe", "power.limit_w", "a")}
    names |= {"gpu.0.power.limit_w", "gpu.1.xid_79", "host.driver_version", "lib.torch.version", "nothing.here"}
    for name in names:
        first = next((w for p, w, _ in COMPARED if fnmatch.fnmatchcase(name, p)), 1)
        assert _rule_for(name)[0] == first, name
    assert _rule_for("gpu.2.power.limit_w") == (3, "GPU 2 power limit (W)")
