"""Issue 30 item 7: each recommendation cites the source that says it. A fix naming a project's own switch cites
that project (the TRITON_CACHE_AUTOTUNING advice cited FlashInfer's autotuner.py); advice about investigate itself
("Pass --observations") cites no external document (it cited the nvidia-smi documentation). The same check runs on
every scenario case's diagnosis (tests/scenarios/harness.py)."""

from __future__ import annotations

import pytest

from orchestrator.analysis.templates import entry_words
from orchestrator.diagnosis import Diagnosis, Recommendation
from orchestrator.knowledge.catalog import Fix, catalog
from support.hygiene import citation_problem, citation_problems

ENTRIES = list(catalog())


def _fix_texts(e) -> list[str]:
    return [f if isinstance(f, str) else f.text for f in e.fix]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_every_catalog_fix_cites_a_source_of_its_entry_that_names_what_it_advises(entry):
    for template in _fix_texts(entry):
        src = entry.fix_source(template)
        assert src is None or src in entry.sources
        problem = citation_problem(template, [src] if src else [])
        assert problem is None, f"{entry.id}: {problem}"


def test_the_triton_and_tensorrt_llm_persistence_advice_cite_their_own_projects():
    recs = entry_words("autotune-not-persisted", flags={"triton", "tensorrt-llm", "flashinfer"})["recommendations"]
    triton = next(r for r in recs if "TRITON_CACHE_AUTOTUNING" in r)
    assert triton.endswith("[https://github.com/triton-lang/triton/blob/main/python/triton/knobs.py]")
    tllm = next(r for r in recs if "TLLM_AUTOTUNER_CACHE_PATH" in r)
    assert "NVIDIA/TensorRT-LLM" in tllm and "flashinfer" not in tllm


def test_advice_about_investigate_itself_cites_nothing():
    for flags in ({"local"}, {"remote"}):
        recs = entry_words("no-gpu-on-host", flags=flags)["recommendations"]
        obs = next(r for r in recs if "--observations" in r)
        assert "http" not in obs and "[" not in obs
    local = next(r for r in entry_words("no-gpu-on-host", flags={"local"})["recommendations"] if "--host" in r)
    assert "http" not in local


def test_a_fix_source_outside_the_entry_sources_is_refused_at_load():
    from orchestrator.knowledge.catalog import Entry
    with pytest.raises(ValueError, match="not among the entry's sources"):
        Entry(id="x-y", area="kernel", title="t", rule="r", claim="c", sources=["https://a.example/1"],
              fix=[Fix(text="do it", source="https://b.example/2")])


def test_the_check_finds_a_misattributed_and_a_tool_advice_citation():
    bad = Diagnosis(question="q", verdict="v", bound="unknown", bound_reasoning="r", recommendations=[
        Recommendation(action="Set TRITON_CACHE_AUTOTUNING=1. [https://github.com/flashinfer-ai/flashinfer/blob/"
                              "main/flashinfer/autotuner.py]", why="w"),
        Recommendation(action="Pass `--observations obs.yaml` with the model. "
                              "[https://docs.nvidia.com/deploy/nvidia-smi/index.html]", why="w"),
        Recommendation(action="Set VLLM_USE_FLASHINFER_SAMPLER=1 [https://github.com/vllm-project/vllm/blob/main/"
                              "vllm/envs.py]", why="w")])
    found = citation_problems(bad)
    assert len(found) == 2 and "flashinfer" in found[0] and "investigate itself" in found[1]


def test_the_serving_rule_advice_written_in_python_cites_a_source_that_names_it():
    from orchestrator.prongs.serving_engine import rules as serving_rules

    entry = serving_rules._entry()
    assert entry is not None
    for recs in serving_rules._RECS.values():
        for text in recs:
            assert citation_problem(text, [entry.source]) is None, text
