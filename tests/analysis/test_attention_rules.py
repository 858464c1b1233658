"""MLA attention's backend against the context it serves (analysis/attention_rules.py): Triton's MLA at long
context where a faster MLA backend runs is ranked; at short context nothing; with the context unknown it is said
apart with its condition; with nothing faster on the list the engine printed, nothing."""

from __future__ import annotations

from orchestrator.prongs.serving_engine.attention_rules import mla_triton_long_context
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.evidence import Evidence
from orchestrator.observations import Observations
from orchestrator.prongs.serving_engine.models import EngineInstance, EngineLogLine, EngineReport, LogState

LINE = ("(EngineCore pid=992724) INFO 10-10 13:41:44 [cuda.py:506] Using TRITON_MLA attention backend out of "
        "potential backends: {}.")


def _view(line: str, question: str, input_len: int | None = None) -> EvidenceView:
    rep = EngineReport(host="gpu-box", engines=[EngineInstance(name="vllm", origin="log",
                                                               log=LogState(selected_backend="TRITON_MLA"))],
                       lines=[EngineLogLine(path="/var/log/vllm.log", line_no=7, line=line)])
    obs = {"gpu": {"name": "NVIDIA B200", "count": 8}}
    if input_len:
        obs["runs"] = [{"tp": 8, "concurrency": 8, "input_len": input_len, "output_len": 256, "output_tok_s": 400}]
    return EvidenceView([Evidence(id="ev-5.1", agent_id="engine-5", tool="engine_config", host="gpu-box", text="",
                                  data=rep.model_dump(mode="json")),
                         Evidence(id="ev-0.7", agent_id="lead", tool="observations", text="",
                                  data={"kind": "observations", "observations": obs})],
                        Observations.model_validate(obs), question=question)


def test_triton_mla_at_long_context_with_a_faster_backend_listed_is_ranked():
    (f,) = mla_triton_long_context(_view(LINE.format("['CUTLASS_MLA', 'FLASHINFER_MLA', 'TRITON_MLA']"),
                                         "why is decode slow?", 32000))
    assert not f.unmet and "CUTLASS_MLA, FLASHINFER_MLA" in f.title and "32,000 tokens" in f.claim
    assert "--attention-backend CUTLASS_MLA" in f.recommendations[0]


def test_short_prompts_unknown_context_and_nothing_faster():
    assert mla_triton_long_context(_view(LINE.format("['CUTLASS_MLA', 'TRITON_MLA']"), "why slow?", 1024)) == []
    (f,) = mla_triton_long_context(_view(LINE.format("['CUTLASS_MLA', 'TRITON_MLA']"), "why slow?"))
    assert f.unmet.startswith("at long context")  # said apart, with the condition that would make it matter
    assert mla_triton_long_context(_view(LINE.format("['TRITON_MLA']"), "why slow?", 32000)) == []
