"""Each result's facts are worked out as it is recorded (`analysis.precompute`, which the run hands the loop): a fleet's analysis, which runs once the
slowest host has answered, finds the earlier hosts' facts ready; what it concludes does not change."""

from __future__ import annotations

from pydantic import BaseModel
from support.core import core_registry, write_agents
from support.evidence import ev, inventory, seed_evidence

from orchestrator import analysis
from orchestrator.agentdefs import load_agents
from orchestrator.analysis import signals
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.inputs import RunInputs
from orchestrator.models.doubles import DoublesBackend, ScriptedModel, call, respond
from orchestrator.run import Run
from orchestrator.settings import Settings
from orchestrator.tools.base import Tool, ToolOutput


def _kept(e) -> set[str]:
    return set(e.__pydantic_private__["_derived"])


def test_precompute_keeps_the_facts_every_analysis_reads_and_changes_no_finding():
    prepared = seed_evidence()
    for e in prepared:
        analysis.precompute(e)
    inv = next(e for e in prepared if e.tool == "gpu_inventory")
    assert {"probe_model", "model_facts", "probe_facts", "fleet_facts"} <= _kept(inv)
    assert not _kept(next(e for e in prepared if e.kind == "observations"))
    found = [f.model_dump() for f in analysis.run_rules(EvidenceView(prepared))]
    assert found == [f.model_dump() for f in analysis.run_rules(EvidenceView(seed_evidence()))]


def test_a_payload_that_does_not_fit_is_left_for_the_view_to_report():
    bad = ev("ev-1.9", tool="gpu_inventory", data={"kind": "gpu_inventory", "gpus": "not a list"})
    analysis.precompute(bad)  # no exception
    view = EvidenceView([bad])
    assert any("ev-1.9" in what for what, _ in view.notices)
    assert signals.gather(view) == {}


class _Inventory(Tool):
    name = "inventory"
    description = "A GPU inventory of gpu-box."

    class Input(BaseModel):
        pass

    async def run(self, args, ctx) -> ToolOutput:
        return ToolOutput(text="8 GPUs", data=inventory().model_dump(mode="json"), host="gpu-box")


async def test_the_run_precomputes_each_result_as_it_is_recorded(tmp_path):
    registry = core_registry()
    registry.add(_Inventory())
    model = ScriptedModel([respond(call("inventory"), call("inventory")),
                           respond(call("submit_diagnosis", verdict="v", causes=[
                               {"title": "t", "explanation": "e", "confidence": 0.5, "evidence": ["ev-0.1"]}]))])
    agents = write_agents(tmp_path / "agents", lead_tools=("task", "inventory"))
    async with Run(inputs=RunInputs(question="q"), settings=Settings(prefetch_probes=False),
                   backend=DoublesBackend({"lead": model}), agents=load_agents([agents]), registry=registry,
                   transcript=False) as run:
        await run.investigate()
        recorded = [e for e in run.context.evidence.all() if e.tool == "inventory"]
    assert len(recorded) == 2
    assert all({"probe_facts", "fleet_facts"} <= _kept(e) for e in recorded)
