"""What a subagent hands back to its parent: small typed findings, not raw dumps."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from orchestrator.diagnosis import Bound as DiagnosisBound
from orchestrator.diagnosis import Number
from orchestrator.events import AgentStatus
from orchestrator.messages import Usage


Bound = Literal["compute", "memory", "communication", "latency", "gemm"]
"""What a finding says the workload is bound by (`gemm`: the per-GPU GEMMs, memory or compute not yet settled)."""

Symptom = Literal["throughput", "itl", "ttft", "startup", "regression", "errors", "cost"]
"""What a question says is slow or wrong: throughput (tok/s, req/s), itl (per-token latency: TPOT/ITL, decode step),
ttft (time to first token, prefill), startup (start-up / model load / compile time), regression (slower after a change),
errors (crashes, hangs, failures), cost (money per token, GPUs needed)."""

_TYPED_KEYS = ("title", "numbers", "informational", "secondary", "bound", "short", "rule", "entry", "severity",
               "matched", "symptoms", "explains", "static", "unmet", "sets_bound", "agrees", "rules_out", "queue_wait",
               "caps_batch", "batch_uncapped", "change_kind", "verdict_words", "reads",
               "contradicts")
"""Fields that older transcripts carried inside `data` (read back into the typed fields on load)."""


class BoundClaim(BaseModel):
    """How a finding sets the diagnosis's bound when no finding of a lower rank does, set by the rule that makes it."""

    model_config = ConfigDict(extra="forbid")
    rank: float
    """Its tier (`Rank`) plus a fraction below 1 that orders the findings of one tier."""
    bound: DiagnosisBound
    """The bound the diagnosis states when this finding sets it."""
    words: str = ""
    """The bound reasoning (the synthesis adds what other findings say in agreement, `Finding.agrees`)."""
    leads: bool = True
    """Whether the finding is then ranked first among the causes (an experiment or a roofline states the bound
    without being a cause itself)."""
    pointers: bool = False
    """Whether the reasoning names the other findings that point at latency or communication."""
    needs: str = ""
    """The id of a finding of the same rule that must also explain the asked symptom for this claim to hold (the
    resource account's claims need its finding that the GPUs idle)."""
    otherwise: BoundClaim | None = None
    """The claim that holds instead when `needs` is not met (the engine's held batch, outside the account)."""


def diagnosis_bound(bound: Bound | None, default: DiagnosisBound) -> DiagnosisBound:
    """A finding's bound as a diagnosis states it: `gemm` (the per-GPU GEMMs, memory or compute not settled) is
    unknown there; none is the default."""
    if bound is None:
        return default
    return "unknown" if bound == "gemm" else bound


def capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


class Agreement(BaseModel):
    """Words a finding adds to the bound reasoning when a finding of another tier sets the bound."""

    model_config = ConfigDict(extra="forbid")
    tier: int
    """The `Rank` tier of the finding whose reasoning these words join."""
    words: str
    order: int = 0
    """Position among the words that join that reasoning."""
    unless_bound: Bound | None = None
    """Left out when the finding that sets the bound says this bound itself."""


class Finding(BaseModel):
    """One claim with the evidence it rests on, and the typed facts the synthesis ranks and words it by."""

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
    """kernel, autotune, hardware, roofline, observation, power, communication, log, environment, node,
    interconnect, engine, jit-cache, workload, other."""
    title: str = ""
    """Short cause title (the diagnosis's cause title); empty: the id stands in."""
    numbers: list[Number] = Field(default_factory=list)
    """Numbers behind the claim (the diagnosis's `numbers` section)."""
    severity: Literal["high", "medium", "low", "info"] | None = None
    """Ranking hint from the catalog entry."""
    secondary: bool = False
    """True, but not what limits throughput here: ranked after the primary causes."""
    informational: bool = False
    """Context (hardware ceilings, what was ruled out), not a cause."""
    bound: Bound | None = None
    """What the finding says the workload is bound by, if anything."""
    short: str = ""
    """One-sentence form of the claim for the bound reasoning."""
    rule: str = ""
    """The Python rule that produced the finding (empty for agents' own findings)."""
    entry: str = ""
    """The catalog entry (orchestrator/knowledge/failure_modes) the finding instantiates, if any."""
    matched: list[str] = Field(default_factory=list)
    """What fired it: the matching log lines (`path:line: text`) or fact values (`key=value`)."""
    symptoms: SkipJsonSchema[list[Symptom]] = Field(default_factory=list)
    """The symptoms this finding can explain (empty: not stated; the synthesis then treats it by its category).
    Kept out of the `submit_findings` tool's schema, like `explains`: recorded runs' request fingerprints (the tool
    definitions are part of them) stay as they were, so shipped transcripts replay exactly."""
    explains: SkipJsonSchema[float | None] = Field(default=None, ge=0.0)
    """How much of the asked shortfall it explains where the evidence allows: a fraction of the step / request time
    (0-1), None when not quantified."""
    static: SkipJsonSchema[bool] = False
    """A property of the hardware or its layout that is the same before and after a change (how the GPUs are linked):
    true, but it cannot explain a regression."""
    unmet: SkipJsonSchema[str] = ""
    """The condition under which this finding would matter that the evidence does not show (the served model is MoE):
    said under also noticed with it, never ranked."""
    sets_bound: SkipJsonSchema[BoundClaim | None] = None
    """How this finding sets the diagnosis's bound, at which rank; None: it does not."""
    agrees: SkipJsonSchema[list[Agreement]] = Field(default_factory=list)
    """What it adds to the bound reasoning when a finding of another tier sets the bound."""
    rules_out: SkipJsonSchema[list[Bound]] = Field(default_factory=list)
    """Bounds its evidence excludes: a catalog failure that says one of them does not set the bound."""
    queue_wait: SkipJsonSchema[bool] = False
    """It shows requests waiting in the engine's queue (what limits throughput then sets the TTFT too)."""
    caps_batch: SkipJsonSchema[bool] = False
    """It says a setting caps how many requests run at once."""
    batch_uncapped: SkipJsonSchema[bool] = False
    """The engine's own state shows the batch far from any cap (few requests running, none waiting): a cap that is
    not reached is not a cause."""
    change_kind: SkipJsonSchema[Literal["", "setting", "default", "summary"]] = ""
    """What it says changed between two runs: a setting the user changed, a default the version changed, or a summary
    of either; empty for a finding about one run."""
    verdict_words: SkipJsonSchema[str] = ""
    """A sentence the verdict carries whenever this finding explains the asked symptom (the published reference)."""
    reads: SkipJsonSchema[str] = ""
    """The measured figure whose roofline verdict this finding states (`decode`: the inter-token latency against the
    decode floor; `prefill`: the TTFT against the prefill floor); empty for other findings."""
    contradicts: SkipJsonSchema[list[str]] = Field(default_factory=list)
    """Measured figures (`reads`) whose verdicts this finding's evidence contradicts (a decode step below its memory
    floor, a TTFT spent outside the engine): the synthesis leaves those verdicts out, so the diagnosis never states a
    bound a figure it holds contradicts."""
    data: dict[str, Any] = Field(default_factory=dict)
    """Rule-specific extras (e.g. a measured ratio); nothing the synthesis relies on by magic key."""

    @model_validator(mode="before")
    @classmethod
    def _lift_legacy_data(cls, value: Any) -> Any:
        """Findings recorded before the typed fields kept them in `data`: read them back from there."""
        if isinstance(value, dict) and isinstance(value.get("data"), dict):
            data = dict(value["data"])
            lifted = {k: data.pop(k) for k in _TYPED_KEYS if k in data}
            if "bound_hint" in data and "bound" not in lifted:
                lifted["bound"] = data.pop("bound_hint")
            if lifted:
                value = {**{k: v for k, v in lifted.items() if v is not None}, **value, "data": data}
        return value

    def wire(self) -> dict[str, Any]:
        """The finding as the `submit_findings` tool takes it (typed fields inside `data`, so the tool schema and
        recorded transcripts stay as they were); `Finding.model_validate` reads it back."""
        dumped = self.model_dump(mode="json")
        base = {k: dumped.pop(k) for k in ("id", "claim", "confidence", "evidence", "recommendations", "category")}
        extras = dumped.pop("data")
        typed = {k: v for k, v in dumped.items() if v not in (None, "", [], False)}
        return {**base, "data": {**extras, **typed}}


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
