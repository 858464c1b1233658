"""Issue 30 item 8: the observations evidence reads as a person writes it: no "total None tok/s" for a value not
given, no Python dict repr (`model: {'name': ...}`)."""

from __future__ import annotations

from orchestrator.api import investigate_sync


def _observations_text(tmp_path, obs: dict) -> str:
    result = investigate_sync("why slow", offline=True, observations=obs, transcript=tmp_path / "t.jsonl")
    texts = [e.content for e in result.events if getattr(e, "tool", None) == "observations"
             and getattr(e, "type", "") == "tool_result"]
    assert texts
    return texts[0]


def test_values_not_given_are_left_out_and_no_dict_repr_is_shown(tmp_path):
    text = _observations_text(tmp_path, {"model": {"name": "GLM-5-NVFP4", "num_experts": 256, "top_k": 8},
                                         "runs": [{"tp": 8, "concurrency": 512}, {"tp": 4, "pp": 2,
                                                                                   "output_tok_s": 1318.5}]})
    assert "None" not in text and "{" not in text
    assert "model: name GLM-5-NVFP4, num_experts 256, top_k 8" in text
    assert "run TP8: concurrency 512" in text and "run TP4+PP2: output 1318.5 tok/s" in text
