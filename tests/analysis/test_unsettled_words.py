"""When causes are ranked but none sets the bound, the verdict says what is unsettled in the terms of the question:
a time-to-first-token, start-up, regression or crash question is not told about throughput."""

from __future__ import annotations

import pytest

from orchestrator.analysis import relevance
from orchestrator.analysis.synthesis import unsettled_words


@pytest.mark.parametrize("question, words", [
    ("why is throughput low on this box?", "which resource limits throughput."),
    ("is anything wrong with this box?", "which of these is the fault."),
    ("why is time to first token 4 seconds?", "which resource sets the time to first token."),
    ("why does vllm serve take 10 minutes to start?", "which resource sets the start-up time."),
    ("it got slower after upgrading vllm from 0.10 to 0.11", "which change made it slower."),
    ("why does the server crash with NCCL errors under load?", "which of these is the fault."),
])
def test_the_unsettled_verdict_names_what_was_asked(question, words):
    asked = relevance.asked(question)
    assert unsettled_words(asked) == "the evidence does not settle " + words, (question, asked.symptoms)


@pytest.mark.parametrize("question, words", [
    ("why is time to first token 4 seconds?", "which resource sets the time to first token."),
    ("TP4 decode latency on vllm is worse than on our other cluster", "which resource sets the per-token latency."),
    ("why is throughput low on this box?", "which resource limits throughput."),
])
def test_the_bound_line_with_no_bound_speaks_of_what_was_asked(question, words):
    """The verdict said "which resource sets the time to first token" and the Bound line under it "which resource
    limits throughput"."""
    from orchestrator.analysis.synthesis import no_bound_words

    assert no_bound_words(relevance.asked(question)) == "The evidence gathered does not show " + words


def test_the_bound_line_does_not_repeat_the_cause_that_explains_it():
    """"Bound: communication — Over PCIe every all-reduce ..." was the first cause's explanation word for word."""
    from orchestrator.diagnosis import Cause, Diagnosis
    from orchestrator.render.diagnosis import said_once

    why = ("Over PCIe every all-reduce crosses PCIe switches and host bridges, so each decode step pays NCCL's PCIe "
           "latency per layer; fewer GPUs per group pay less. [https://example.org/issue]")
    d = Diagnosis(question="why is TP8 slower than TP4?", verdict="The primary limiter is communication.",
                  bound="communication", bound_reasoning=why + " The GPUs are busy 40 % of the time.",
                  causes=[Cause(title="TP8 is slower than TP4", explanation=why, confidence=0.7, evidence=["ev-0.7"])])
    assert said_once(d)[1] == "The GPUs are busy 40 % of the time."
