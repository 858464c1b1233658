"""Every catalog fix agrees with the evidence it cites: advice that presumes a state (a pending remap, NVIDIA's RMA
criteria) is given only when the facts show that state, checked per fix over the catalog and on the real ECC record
of an H200 (tests/analysis/data/realbox-h200/ecc.txt: one historical L2 SRAM error, nothing active)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.analysis.signals import catalog_findings
from orchestrator.evidence import Evidence
from orchestrator.knowledge.catalog import Catalog, CatalogError, Condition, Entry, Fix, catalog, load_catalog
from orchestrator.prongs.node_health.probe import health_from_output
from orchestrator.probes.scripts._smi import smi_strip_doctype
from support.smi_q import apply_smi_q

DATA = Path(__file__).parent / "data" / "realbox-h200"
NODE = Path(__file__).parent.parent / "node" / "data" / "h200"

# What a fix's words presume -> the conditions (fact suffix, operator, value) any one of which establishes it.
# NVIDIA's RMA criteria (https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/rma-policy-thresholds-for-row-remapping.html):
# the row-remapping failure flag, or the SRAM Threshold Exceeded flag; DCGM fails a GPU at 512 uncorrectable remaps
# (https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html) and its field diagnostic decides.
PRESUMES = [
    (re.compile(r"pending (?:row )?remap|remap (?:is )?pending", re.I),
     [("remapped_rows.pending", "eq", True)]),
    (re.compile(r"pending page retirement|page retirement (?:is )?pending", re.I),
     [("retired_pages.pending", "eq", True)]),
    (re.compile(r"\bRMA\b"),
     [("remapped_rows.failure", "eq", True), ("ecc.sram_threshold_exceeded", "eq", True),
      ("remapped_rows.uncorrectable", "ge", 512)]),
]
NOT_ADVICE = re.compile(r"\b(?:act only if|watch|if a|unless)\b", re.I)
"""A watch note names a state to wait for, it does not presume it."""


def _establishes(c: Condition, fact: str, op: str, value) -> bool:
    return c.fact.endswith(fact) and getattr(c, op) == value


def _always(entry: Entry) -> list[Condition]:
    """Conditions every signal of the entry requires (what holds whenever the entry fires)."""
    sets = [list(s.when) for s in entry.signals]
    if not sets or any(s.log for s in entry.signals):
        return []
    return [c for c in sets[0] if all(any(c == d for d in other) for other in sets[1:])]


def unmet_preconditions(cat: Catalog) -> list[str]:
    """`entry: fix` for every fix whose words presume a state its preconditions (its own `requires`, or what every
    signal of its entry requires) do not establish."""
    bad = []
    for e in cat:
        always = _always(e)
        for fx in e.fix:
            text = fx if isinstance(fx, str) else fx.text
            have = always + ([] if isinstance(fx, str) else list(fx.requires))
            if NOT_ADVICE.search(text):
                continue
            for words, needs in PRESUMES:
                if words.search(text) and not any(_establishes(c, *n) for c in have for n in needs):
                    bad.append(f"{e.id}: {text[:90]}")
    return bad


def test_every_catalog_fix_states_what_its_evidence_establishes():
    assert unmet_preconditions(catalog()) == []


def test_pending_remap_advice_without_a_pending_remap_is_caught():
    # planted: the old gpu-ecc-uncorrectable fix, fired by a lifetime count alone, told users to reset "so the
    # pending row remap takes effect" and to RMA
    planted = """
- id: planted-ecc
  area: node
  title: planted
  symptoms: [errors]
  signals:
    - when: [{fact: "gpu.*.ecc.aggregate.dbe", gt: 0}]
  claim: x
  fix:
    - "Drain GPU {gpu.index}, reset it so the pending row remap takes effect; if the errors recur, RMA the GPU."
  sources: [https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html]
"""
    bad = unmet_preconditions(load_catalog({"planted.yaml": planted}))
    assert len(bad) == 2 and all(b.startswith("planted-ecc") for b in bad)  # pending, and RMA


def test_a_fix_with_requires_is_given_only_when_its_facts_hold():
    fx = Fix.model_validate({"text": "reset", "requires": [{"fact": "gpu.*.remapped_rows.pending", "eq": True}]})
    e = Entry.model_validate({"id": "x", "area": "node", "title": "x", "claim": "x", "signals": [{"log": "x"}],
                              "fix": ["always", fx.model_dump(by_alias=True)], "sources": ["https://example.org"]})
    assert e.fixes() == ["always"]  # nothing to evaluate the requirement with: left out
    assert e.fixes(holds=lambda c: True) == ["always", "reset"]
    assert e.fixes(holds=lambda c: False) == ["always"]


def realbox_node(edit: dict[str, str] | None = None):
    """The real H200 capture's XML with the real ECC record of ecc.txt applied (the same GPU model and driver), then
    `edit` (XML path under <gpu> -> text)."""
    root = ET.fromstring(smi_strip_doctype((NODE / "smi-qx-idle.xml").read_text()))
    gpu = root.find("gpu")
    apply_smi_q(gpu, (DATA / "ecc.txt").read_text())
    for path, value in (edit or {}).items():
        gpu.find(path).text = value
    return health_from_output({"smi_xml": ET.tostring(root, encoding="unicode")})


def test_real_h200_ecc_record_is_history_not_an_active_fault():
    node = realbox_node()
    g = node.gpus[0]
    assert (g.ecc_aggregate_dbe, g.ecc_volatile_dbe, g.ecc_aggregate_sram_dbe, g.sram_sources) == (1, 0, 1, {"l2": 1})
    ev = Evidence(id="ev-1", agent_id="a", tool="node_health", host="h", text="", data=node.model_dump(mode="json"))
    found = {f.entry: f for f in catalog_findings(EvidenceView([ev])) if f.category == "node"}
    assert set(found) == {"gpu-ecc-historical"}
    f = found["gpu-ecc-historical"]
    assert f.informational and f.severity == "info" and f.symptoms == ["errors"]
    assert "none since the driver loaded" in f.claim and "L2 1" in f.claim
    advice = " ".join(f.recommendations)
    assert not re.search(r"pending (row )?remap takes effect|\bRMA\b|nvidia-smi -r", advice), advice
    assert advice.startswith("Watch GPU 0")


@pytest.mark.parametrize("edit,entry,says", [
    ({"ecc_errors/volatile/dram_uncorrectable": "1", "ecc_errors/aggregate/dram_uncorrectable": "2"},
     "gpu-ecc-uncorrectable", r"1 uncorrectable ECC error\(s\) since the driver loaded \(1 in DRAM, 0 in SRAM"),
    ({"ecc_errors/aggregate/sram_threshold_exceeded": "Yes"}, "gpu-sram-threshold-exceeded", r"RMA"),
    ({"remapped_rows/remapped_row_pending": "Yes"}, "gpu-row-remap-pending", r"so the pending row remap takes effect"),
])
def test_active_states_fire_their_entry_with_the_advice_they_establish(edit, entry, says):
    node = realbox_node(edit)
    ev = Evidence(id="ev-1", agent_id="a", tool="node_health", host="h", text="", data=node.model_dump(mode="json"))
    found = {f.entry: f for f in catalog_findings(EvidenceView([ev])) if f.category == "node"}
    assert entry in found and "gpu-ecc-historical" not in found
    assert re.search(says, found[entry].claim + " ".join(found[entry].recommendations))


def test_every_catalog_entry_states_the_symptoms_it_can_explain():
    # the synthesis ranks by the asked symptom: an entry that states none could never be judged against it
    assert [e.id for e in catalog() if not e.symptoms] == []
    with pytest.raises(CatalogError, match=r"entry 'x': field symptoms\.0"):  # only the known symptoms
        load_catalog({"x.yaml": "- {id: x, area: node, title: x, claim: x, signals: [{log: x}], symptoms: [slowness], "
                                "sources: ['https://example.org']}"})


def test_a_changed_flag_and_the_state_it_set_are_one_cause():
    """--enforce-eager False -> True between two logs and 'CUDA graphs are off' (the catalog entry the flag fires) are
    one mechanism: one cause, titled with the change, citing both, advising both; other changes stay causes."""
    from orchestrator.analysis.synthesis import synthesize
    from orchestrator.observations import BaselineLog, Observations
    from orchestrator.prongs.serving_engine.models import (EngineInstance, EngineLogLine, EngineReport,
                                                           SettingValue)

    def log(version, args):
        return [f"(APIServer pid=1) INFO 11-28 10:02:44 [api_server.py:1896] vLLM API server version {version}",
                f"(APIServer pid=1) INFO 11-28 10:02:44 [utils.py:233] non-default args: {args}"]
    after = log("0.29.0", "{'model': 'meta-llama/Llama-3.1-8B-Instruct', 'enforce_eager': True, "
                          "'async_scheduling': False}")
    before = log("0.29.0", "{'model': 'meta-llama/Llama-3.1-8B-Instruct', 'enforce_eager': False}")
    src = "log /var/log/vllm.log:2"
    eng = EngineInstance(name="vllm", version="0.29.0", pid=1, model="meta-llama/Llama-3.1-8B-Instruct",
                         settings={"enforce_eager": SettingValue(value=True, source=src),
                                   "cuda_graphs": SettingValue(value=False, source=src),
                                   "async_scheduling": SettingValue(value=False, source=src)})
    rep = EngineReport(host="local", engines=[eng], log_files=["/var/log/vllm.log"],
                       lines=[EngineLogLine(path="/var/log/vllm.log", line_no=i + 1, line=ln)
                              for i, ln in enumerate(after)])
    obs = Observations(baseline_log=BaselineLog(source="before.log", lines=before))
    ev = [Evidence(id="ev-0.1", agent_id="lead", tool="observations",
                   data={"kind": "observations", "observations": obs.model_dump(mode="json")}),
          Evidence(id="ev-1.1", agent_id="a", tool="engine_config", data=rep.model_dump(mode="json"))]
    d = synthesize("why did inter-token latency get worse after the restart?", obs, ev, [])
    titles = [c.title for c in d.causes]
    graphs = [t for t in titles if "CUDA graphs" in t]
    assert len(graphs) == 1 and "--enforce-eager False -> True between the two runs" in graphs[0], titles
    assert not any(t.startswith("--enforce-eager changed") for t in titles), titles
    assert any(t.startswith("--async-scheduling changed") for t in titles), titles
    cause = next(c for c in d.causes if "CUDA graphs" in c.title)
    assert set(cause.evidence) == {"ev-0.1", "ev-1.1"}
    assert any("--enforce-eager back to False" in r.action for r in d.recommendations)
