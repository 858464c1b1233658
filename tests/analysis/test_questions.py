"""The question parser against real question titles (tests/analysis/questions.yaml: titles from public issue
trackers as their authors wrote them, each with the symptom it asks about and its URL): it must read at least 90 %
of them, naming no more than two symptoms besides "regression" (which qualifies another); the misses are printed.
And the symptom the observations imply: a before/after pair of runs of one shape is a regression question."""

from __future__ import annotations

from pathlib import Path

import yaml

from orchestrator.analysis.relevance import asked
from orchestrator.observations import Observations

ROWS = yaml.safe_load((Path(__file__).parent / "questions.yaml").read_text())


def _hit(row: dict) -> tuple[bool, set[str]]:
    want = {row["symptom"]} if isinstance(row["symptom"], str) else set(row["symptom"])
    got = set(asked(row["q"]).symptoms)
    return bool(want & got) and len(got - {"regression"}) <= 2, got


def test_the_set_is_real_and_labelled():
    assert len(ROWS) >= 40
    assert all(r["url"].startswith("https://github.com/") and r["q"] and r["symptom"] for r in ROWS)
    assert len({r["url"] for r in ROWS}) == len(ROWS)


def test_the_parser_reads_at_least_90_percent_of_real_titles(capsys):
    misses = []
    for r in ROWS:
        ok, got = _hit(r)
        if not ok:
            misses.append(f"MISS {r['q']!r}: read {sorted(got)}, labelled {r['symptom']} ({r['url']})")
    with capsys.disabled():
        print(f"\nquestion titles read: {len(ROWS) - len(misses)}/{len(ROWS)}")
        for m in misses:
            print(m)
    assert len(ROWS) - len(misses) >= 0.9 * len(ROWS), "\n".join(misses)


def test_a_before_after_pair_of_runs_is_a_regression_question():
    q = "Is this normal? Llama 3 8B on one L40S."
    pair = Observations.model_validate({"runs": [
        {"tp": 1, "concurrency": 8, "output_tok_s": 900, "label": "vllm 0.6.1"},
        {"tp": 1, "concurrency": 8, "output_tok_s": 610, "label": "vllm 0.6.6"}]})
    shapes = Observations.model_validate({"runs": [
        {"tp": 4, "concurrency": 8, "output_tok_s": 900, "label": "tp4"},
        {"tp": 8, "concurrency": 8, "output_tok_s": 1200, "label": "tp8"}]})
    assert "regression" in asked(q, pair).symptoms
    assert "regression" not in asked(q, shapes).symptoms  # TP4 against TP8 is a comparison, not a before/after


def test_the_figures_and_the_noun_say_which_symptom():
    assert asked("getting 180 ms per token on an H100 with a 70B model, is this normal?").symptoms == {"itl"}
    assert asked("context load time before generation is long").symptoms == {"ttft"}
    assert "startup" in asked("the engine takes forever initializing").symptoms
    assert "regression" in asked("decode got worse: 0.9.2 against 0.10.1").symptoms


def test_a_model_version_or_a_rate_is_not_a_regression():
    # one engine version, a model's "3.1" and a "2.5 tok/s": nothing is compared with anything
    assert "regression" not in asked("Llama 3.1 70B on vLLM 0.6.3 gets only 2.5 tok/s on 4 A100s, why?").symptoms
    assert "regression" in asked("TTFT went from 80 ms to 400 ms going 0.6.3 -> 0.7.1").symptoms


TITLES = yaml.safe_load((Path(__file__).parent / "issue_titles.yaml").read_text())


def test_the_reader_reads_the_titles_of_public_performance_issues(capsys):
    """Over 100 titles from the engines' own trackers (issue_titles.yaml), none of them in questions.yaml: the
    reader names the symptom a maintainer would assign in at least 95 % (86 of 102 before the reader read rates of
    GPU utilization, 'performs worse', 'bad results', 'unresponsive', loading phrases and engine generations)."""
    assert len(TITLES) >= 100 and not {r["url"] for r in TITLES} & {r["url"] for r in ROWS}
    assert {r["url"].split("/")[4] for r in TITLES} >= {"vllm", "sglang", "TensorRT-LLM", "text-generation-inference",
                                                        "llama.cpp", "ollama"}
    misses = [f"MISS {r['q']!r}: read {sorted(got)}, labelled {r['symptom']} ({r['url']})"
              for r in TITLES for ok, got in [_hit(r)] if not ok]
    with capsys.disabled():
        print(f"\nissue titles read: {len(TITLES) - len(misses)}/{len(TITLES)}")
        for m in misses:
            print(m)
    assert len(TITLES) - len(misses) >= 0.95 * len(TITLES), "\n".join(misses)


def test_what_the_user_measured_and_compares_names_the_symptom_for_certain():
    tp = Observations.model_validate({"runs": [{"tp": 1, "concurrency": 8, "output_tok_s": 400},
                                               {"tp": 2, "concurrency": 8, "output_tok_s": 430}]})
    barely = asked("Why is tensor parallel 2 barely faster than a single GPU on this workstation?", tp)
    assert "throughput" in barely.certain and not barely.uncertain
    generic = asked("Why is tensor parallel 2 barely faster than a single GPU on this workstation?")
    assert generic.symptoms == {"throughput"} and generic.uncertain  # the words alone: a rate, uncertainly
    assert asked("why is TTFT high under load?").certain == {"ttft"}


def test_a_decode_worker_is_a_place_not_the_decode_phase():
    """In a disaggregated deployment "prefill and decode workers" names where the work runs; the symptom is what the
    question asks of it."""
    assert asked("prefill and decode workers on two 2xH100 nodes: our TTFT is 0.67 s, how much is the hand-off?"
                 ).symptoms == {"ttft"}
    assert "itl" in asked("decode is slow on the decode worker").symptoms
    assert "itl" in asked("the decode-side pods stutter").symptoms
