"""Analysis: roofline math, observation reading, and the rules that turn evidence into findings and a diagnosis.

The names below are imported on first use: `investigate specs`/`roofline` import `analysis.roofline` alone and must
not pay for the rules, the synthesis and the catalog (start-up time of the CLI).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from orchestrator.evidence import Evidence
    from orchestrator.findings import Finding
    from orchestrator.observations import Observations

__all__ = ["RULES", "Rule", "EvidenceView", "agent_findings", "precompute", "run_rules", "synthesize"]

_LAZY = {"EvidenceView": "orchestrator.analysis.evidence_view", "RULES": "orchestrator.analysis.rules",
         "Rule": "orchestrator.analysis.rules", "run_rules": "orchestrator.analysis.rules",
         "synthesize": "orchestrator.analysis.synthesis"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'orchestrator.analysis' has no attribute {name!r}")


def agent_findings(evidence: list[Evidence], observations: Observations | None) -> list[Finding]:
    """The findings one agent's evidence supports (every rule runs; each claims only what it can cite: rules are
    evidence-driven, whichever agent gathered it)."""
    from orchestrator.analysis.evidence_view import EvidenceView
    from orchestrator.analysis.rules import run_rules

    return run_rules(EvidenceView(evidence, observations))


def precompute(ev: Evidence) -> None:
    """Work out, as a result is recorded, what every analysis of it will read: the parsed probe model, its facts and
    the facts the fleet comparison weighs (each kept with the evidence). A fleet's analysis runs when its slowest
    host has answered; what it needs from the hosts that answered earlier is then ready. A payload that does not
    fit its model is left for the analysis, which says so."""
    if ev.is_error or not ev.data or ev.data.get("kind") in (None, "observations"):
        return
    from orchestrator.analysis import facts
    from orchestrator.prongs.fleet import rules as fleet

    try:
        facts.precompute(ev)
        if ev.host:
            fleet.precompute(ev)
    except Exception:  # the analysis meets the same problem and records it as a notice
        pass
