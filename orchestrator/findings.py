"""What a subagent hands back to its parent: small typed findings, not raw dumps."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.events import AgentStatus
from orchestrator.messages import Usage


class Finding(BaseModel):
    """One claim with the evidence it rests on."""

    model_config = ConfigDict(extra="forbid")
    id: str = ""
    """Rule or finding id (e.g. `smem-per-block`), stable across runs."""
    claim: str
    """One or two sentences, true of the cited evidence."""
    confidence: float = Field(0.5, ge=0.0, le=1.0)
    evidence: list[str] = Field(default_factory=list)
    """Evidence ids (`ev-…`) this claim rests on."""
    recommendations: list[str] = Field(default_factory=list)
    """Concrete actions: env vars, flags, versions, backends."""
    category: str = "other"
    """kernel, autotune, hardware, roofline, observation, power, communication, log, environment, other."""
    data: dict[str, Any] = Field(default_factory=dict)
    """Numbers behind the claim (for the lead's `numbers` section)."""


class AgentResult(BaseModel):
    """A subagent's result, whatever its status."""

    model_config = ConfigDict(extra="forbid")
    agent_id: str
    name: str
    status: AgentStatus
    summary: str = ""
    findings: list[Finding] = Field(default_factory=list)
    evidence_ids: list[str] = Field(default_factory=list)
    """Every evidence id the agent recorded."""
    error: str | None = None
    turns: int = 0
    usage: Usage = Field(default_factory=Usage)
    duration_s: float = 0.0

    def for_parent(self) -> str:
        """The compact text the parent model sees as the `task` tool's result."""
        lines = [f"agent {self.name} ({self.agent_id}) finished: status={self.status}"]
        if self.error:
            lines.append(f"error: {self.error}")
        if self.summary:
            lines.append(f"summary: {self.summary}")
        for f in self.findings:
            ev = ", ".join(f.evidence) or "no evidence"
            lines.append(f"- [{f.id or f.category}] {f.claim} (confidence {f.confidence:.2f}; evidence: {ev})")
            for r in f.recommendations:
                lines.append(f"    recommend: {r}")
        if self.evidence_ids:
            lines.append(f"evidence recorded: {', '.join(self.evidence_ids)}")
        return "\n".join(lines)
