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
