"""What a profile's findings rank (orchestrator/prongs/trace/rules.py): the step account is context, never a cause;
a finding that costs under 5 % of the step is said apart with its share, never ranked; shares read as percentages; a
launch-bound prefill step is not told to capture decode in CUDA graphs; a profile that names its GPU leaves no
"no GPU known" gap."""

from __future__ import annotations

from pathlib import Path

from orchestrator.analysis.synthesis import synthesize
from orchestrator.evidence import Evidence
from orchestrator.prongs.trace.tool import place_on_roofline
from orchestrator.traces.analyze import analyze

DATA = Path(__file__).parent / "data"


def _diagnose(question: str, name: str):
    report = analyze([str(DATA / name)])
    place_on_roofline(report)
    evidence = [Evidence(id="ev-7.1", agent_id="trace-7", tool="trace_analysis", text="",
                         data=report.model_dump(mode="json")),
                Evidence(id="ev-4.2", agent_id="tensor-core-specs-4", tool="roofline", is_error=True,
                         text="no GPU known: none on the host and no gpu.name in the observations")]
    return synthesize(question, None, evidence, [])


def test_a_decode_trace_ranks_what_costs_the_step_and_says_the_rest_apart():
    d = _diagnose("why is decode slow?", "decode_eager_sleep.json.gz")
    titles = [c.title for c in d.causes]
    assert titles[0] == "The GPU waits for the host (launch-bound steps)"
    assert not any("Where a step's time goes" in t or "GEMM" in t for t in titles), titles
    gemms = [a for a in d.also_noticed if "GEMM far below" in a.title]
    assert gemms and all("it takes 0." in a.note for a in gemms)  # 0.5-0.6 % of the step, said with its share
    assert not [n for n in d.numbers if n.unit == "fraction"]
    assert any(n.unit == "%" and n.name == "GPU busy share" and 7.0 <= n.value <= 7.2 for n in d.numbers)
    assert "of 100" not in d.verdict and "fraction" not in d.verdict
    assert "us)) Ranked causes" not in d.verdict and ". Ranked causes:" in d.verdict  # the reading ends its sentence
    assert "Capture the decode step in CUDA graphs" in d.recommendations[0].action
    assert not [g for g in d.gaps if "no GPU known" in g.why]  # the trace names the H200


def test_a_prefill_trace_is_not_told_to_capture_decode():
    d = _diagnose("why is prefill slow?", "prefill_eager_collective.sqlite")
    actions = " ".join(r.action for r in d.recommendations)
    assert "decode step in CUDA graphs" not in actions and "prefill step" in d.recommendations[0].action
