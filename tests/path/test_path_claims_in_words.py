"""A path finding says what it can explain in words: "It can explain: ttft_client_over_engine, itl_client_bursty"
printed the request account's internal names in the answer."""

from __future__ import annotations

from orchestrator.prongs.path import knowledge
from orchestrator.prongs.path.rules import RESIDUAL_WORDS


def test_every_residual_an_effect_names_has_words():
    named = {r for e in knowledge.effects() for r in e.residuals}
    assert named and named <= set(RESIDUAL_WORDS), sorted(named - set(RESIDUAL_WORDS))
    assert all("_" not in w for w in RESIDUAL_WORDS.values())
