"""Analysis: roofline math, observation reading, and the rules that turn evidence into findings and a diagnosis."""

from __future__ import annotations

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.analysis.rules import RULES, Rule, run_rules
from orchestrator.analysis.synthesis import synthesize
from orchestrator.evidence import Evidence
from orchestrator.findings import Finding
from orchestrator.observations import Observations

__all__ = ["RULES", "Rule", "EvidenceView", "agent_findings", "run_rules", "synthesize"]


def agent_findings(agent_name: str, evidence: list[Evidence], observations: Observations | None) -> list[Finding]:
    """The findings one agent's evidence supports (every rule runs; each claims only what it can cite)."""
    del agent_name  # rules are evidence-driven; the agent's name does not change what its evidence shows
    return run_rules(EvidenceView(evidence, observations))
