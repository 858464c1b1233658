"""Does a diagnosis recommend what its own measured evidence contradicts? (issue 30 item 6)

The parallelism comparison of the observations (analysis/observation_rules.py) measures which TP degree ran faster
on the same GPUs. A recommendation to lower TP when the higher TP degree ran faster, or to raise TP when the lower one
did, contradicts the ranked causes built on that comparison.
"""

from __future__ import annotations

import re
from typing import Any

from orchestrator.analysis.observation_rules import analyze_observations
from orchestrator.diagnosis import Diagnosis
from orchestrator.observations import parse_observations

LOWER_TP = re.compile(r"\b(reduce|lower|decrease|smaller|fewer GPUs per)\b[^.;]*\bTP\b|\bTP\b[^.;]*\b(reduce|lower)",
                      re.IGNORECASE)
RAISE_TP = re.compile(r"\b(raise|increase|higher|larger|widen)\b[^.;]*\bTP\b", re.IGNORECASE)


def contradictions(d: Diagnosis, observations: dict[str, Any] | None) -> list[str]:
    """The recommendations of `d` that the observations' parallelism comparison contradicts, with why."""
    if not observations:
        return []
    comps = analyze_observations(parse_observations(observations)).comparisons
    out = []
    for r in d.recommendations:
        for c in comps:
            if c.verdict == "gemm" and LOWER_TP.search(r.action):
                out.append(f"{r.action!r} advises a lower TP degree, but {c.a} ran {c.ratio:.2f}x faster than {c.b}")
            if c.verdict == "communication" and RAISE_TP.search(r.action):
                out.append(f"{r.action!r} advises a higher TP degree, but {c.b} ran {1 / c.ratio:.2f}x faster "
                           f"than {c.a}")
    return out
