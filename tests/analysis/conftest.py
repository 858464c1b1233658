"""Fixtures of the analysis tests; the evidence builders they use live in tests/support/evidence.py."""

from __future__ import annotations

import pytest

from support.evidence import SEED_OBS, seed_evidence
from orchestrator.evidence import Evidence
from orchestrator.observations import Observations


@pytest.fixture
def seed() -> list[Evidence]:
    return seed_evidence()


@pytest.fixture
def seed_obs() -> Observations:
    return Observations.model_validate(SEED_OBS)
