"""Issue 43 item 5: a question that is not about performance gets one line saying what the tool answers (it got
"No cause of the slowness is supported" and BF16 boilerplate); every question of the scenario corpus and the tests
is still asked."""

from __future__ import annotations

import pytest

from orchestrator.errors import InputError
from support.cli import ROOT, investigate, one_line


@pytest.mark.parametrize("question,needle", [
    ("why does my model output gibberish after quantizing to AWQ?", "about what the model outputs"),
    ("how much does it cost per million tokens on H100?", "investigate reference --gpu GPU --model MODEL"),
])
def test_an_out_of_scope_question_is_one_line_saying_what_the_tool_answers(question, needle, tmp_path):
    one_line(investigate(question, "--offline", tmp_path=tmp_path), 2,
             "investigate answers performance questions about LLM inference", needle)


def test_performance_and_health_questions_are_asked():
    from orchestrator.validate import check_scope

    import yaml

    asked = [yaml.safe_load(p.read_text())["question"] for p in sorted((ROOT / "tests/scenarios").rglob("case.yaml"))]
    asked += ["why is our cost per token so high?", "why is AWQ slow?", "why does vllm produce garbage at high batch?",
              "Is anything wrong with the GPUs? We see sporadic NaNs in outputs.", "why is FP4 slow?"]
    for q in asked:
        check_scope(q)  # raises for none of them


def test_the_library_says_the_same():
    from orchestrator.request import RunRequest

    with pytest.raises(InputError, match="about what the model outputs"):
        RunRequest.of("why does my model output gibberish after quantizing to AWQ?")
