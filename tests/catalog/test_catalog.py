"""The failure-mode catalog: every entry validates, a broken one is named in one line, every entry is exercised.

Coverage: each entry needs a public source, a case that fires it and one where it must not fire. Cases come from
the scenario corpus (`expect.catalog` / `expect.not_catalog`, and healthy cases' `no_area`), from unit cases in any
tests/**/catalog_cases.yaml (run here through the signal engine), or, for entries an arithmetic rule fires, from a
named test (`test: path::function`, which must exist).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.analysis.rules import run_rules
from orchestrator.analysis.signals import Fact, HostFacts, Line, evaluate_entry, render
from orchestrator.evidence import Evidence
from orchestrator.knowledge.catalog import CatalogError, catalog, load_catalog

TESTS = Path(__file__).resolve().parents[1]
UNIT_FILES = sorted(TESTS.rglob("catalog_cases.yaml"))
UNIT_CASES = [(p, i, c) for p in UNIT_FILES for i, c in enumerate(yaml.safe_load(p.read_text()) or [])]

GOOD = """
- id: demo-entry
  area: node
  title: A demo
  signals: [{log: "boom"}]
  claim: "x"
  sources: [https://example.org/issue/1]
"""


def test_every_packaged_entry_validates_and_ids_are_unique():
    entries = list(catalog())
    assert len(entries) >= 15
    assert len({e.id for e in entries}) == len(entries)


@pytest.mark.parametrize("mutation,needle", [
    (("sources: [https://example.org/issue/1]", "sources: []"), "field sources"),
    (("sources: [https://example.org/issue/1]", "sources: [KNOWLEDGE.md]"), "field sources"),
    (('signals: [{log: "boom"}]', 'signals: [{log: "(unclosed"}]'), "field signals.0.log"),
    (("area: node", "area: nodes"), "field area"),
    (('signals: [{log: "boom"}]', 'signals: [{when: [{fact: gpu.0.cc, bigger: 3}]}]'), "field signals.0.when.0"),
    (('signals: [{log: "boom"}]', 'signals: [{when: [{fact: gpu.0.cc}]}]'), "field signals.0.when.0"),
    (("id: demo-entry", "id: Demo_Entry"), "field id"),
    (("  claim: \"x\"\n", ""), "field claim"),
    (("title: A demo", "title: A demo\n  scope: {libraries: {vllm: '>>1'}}"), "field scope.libraries"),
])
def test_a_broken_entry_gives_one_line_naming_file_entry_and_field(mutation, needle):
    text = GOOD.replace(*mutation)
    assert text != GOOD
    with pytest.raises(CatalogError) as e:
        load_catalog({"failure_modes/demo.yaml": text})
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("failure_modes/demo.yaml: entry ") and needle in msg, msg
    assert "demo-entry" in msg or "Demo_Entry" in msg or "#1" in msg


def test_duplicate_ids_and_bad_yaml_are_named():
    with pytest.raises(CatalogError, match=r"b.yaml: entry 'demo-entry': field id: duplicate \(also in a.yaml\)"):
        load_catalog({"a.yaml": GOOD, "b.yaml": GOOD})
    with pytest.raises(CatalogError, match=r"^c.yaml: line \d+: not valid YAML"):
        load_catalog({"c.yaml": "- id: [unclosed\n"})
    assert len(load_catalog({"a.yaml": GOOD})) == 1


def test_every_template_renders_without_facts():
    empty = HostFacts("h")
    for e in catalog():
        for t in [e.claim, e.explanation, *e.all_fixes()] + [s.claim for s in e.signals if s.claim]:
            out = render(t, empty)
            assert not re.search(r"(?<!\{)\{[a-z_.*\[\]0-9-]+\}(?!\})", out), (e.id, out)


def _host(case: dict) -> HostFacts:
    hf = HostFacts("h")
    for k, v in (case.get("facts") or {}).items():
        hf.facts[k] = Fact(v, "ev-f")
        if k.startswith("lib."):
            hf.has_python_env = True
    for src, path, no, text in case.get("lines") or []:
        hf.lines.append(Line(src, path, no, text, "ev-l"))
    return hf


@pytest.mark.parametrize("path,i,case", UNIT_CASES, ids=[f"{c['entry']}-{'fires' if c['fires'] else 'not'}-{i}"
                                                          for _, i, c in UNIT_CASES])
def test_unit_case(path, i, case):
    e = catalog().get(case["entry"])
    assert e is not None, f"{path.relative_to(TESTS)} case {i}: no catalog entry {case['entry']!r}"
    if "test" in case:
        file, _, name = case["test"].partition("::")
        assert re.search(rf"^(async )?def {re.escape(name)}\(", (TESTS.parent / file).read_text(), re.M), case["test"]
        return
    hits = evaluate_entry(e, _host(case))
    assert bool(hits) == case["fires"], f"{case['entry']} {'did not fire' if case['fires'] else 'fired'}: {case}"


def _scenario_coverage() -> tuple[set[str], set[str]]:
    fires, nots = set(), set()
    areas = {e.id: e.area for e in catalog()}
    for p in sorted((TESTS / "scenarios").glob("*/*/case.yaml")):
        exp = (yaml.safe_load(p.read_text()) or {}).get("expect") or {}
        fires |= set(exp.get("catalog") or [])
        nots |= set(exp.get("not_catalog") or [])
        nots |= {i for i, a in areas.items() if a in (exp.get("no_area") or [])}
    return fires, nots


def test_every_entry_has_a_source_a_case_that_fires_it_and_one_that_must_not():
    fires, nots = _scenario_coverage()
    for _, _, c in UNIT_CASES:
        (fires if c["fires"] else nots).add(c["entry"])
    missing = []
    for e in catalog():
        assert e.sources and all(s.startswith(("http://", "https://")) for s in e.sources), e.id
        if e.id not in fires:
            missing.append(f"{e.id}: no case fires it")
        if e.id not in nots:
            missing.append(f"{e.id}: no case where it must not fire")
    assert not missing, "add a scenario case or a catalog_cases.yaml unit case:\n" + "\n".join(missing)


# --- failures are never silent ------------------------------------------------------------------------------------


def _boom(view):
    raise RuntimeError("planted")


def test_a_failing_rule_is_a_notice_in_use_and_raises_under_test(monkeypatch):
    view = EvidenceView([])
    with pytest.raises(RuntimeError, match="planted"):
        run_rules(view, [_boom])
    monkeypatch.setenv("INVESTIGATE_STRICT_RULES", "0")
    view = EvidenceView([])
    assert run_rules(view, [_boom]) == []
    assert view.notices == [("rule _boom", "failed and was skipped: RuntimeError: planted")]


def test_evidence_that_fails_validation_becomes_a_gap(monkeypatch):
    from orchestrator.analysis.synthesis import synthesize

    bad = Evidence(id="ev-1.1", agent_id="a", tool="gpu_inventory", data={"kind": "gpu_inventory", "gpus": "lots"})
    d = synthesize("why slow?", None, [bad], [])
    assert any("ev-1.1" in g.what and "does not validate" in g.why for g in d.gaps), d.gaps
