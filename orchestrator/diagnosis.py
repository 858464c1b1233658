"""The Diagnosis (the product) and its pure renderers: terminal, Markdown and JSON. HTML lives in `report_html.py`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from orchestrator.messages import Usage

Bound = Literal["compute", "memory", "communication", "latency", "unknown"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Cause(_Strict):
    title: str
    explanation: str
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: list[str] = Field(min_length=1)
    """Evidence ids this cause rests on; every one must exist in the run."""


class Number(_Strict):
    name: str
    value: float
    unit: str
    peak: float | None = None
    """The ceiling the value is compared against, in the same unit."""
    source: str
    """Evidence id or knowledge source."""
    note: str = ""


class Recommendation(_Strict):
    action: str
    why: str
    addresses: str = ""
    """Title of the cause this addresses."""


class Gap(_Strict):
    what: str
    """Prong, probe or agent that did not deliver."""
    why: str


class EvidenceRef(_Strict):
    agent: str
    tool: str
    host: str | None = None
    excerpt: str = ""
    is_error: bool = False


class AgentUsage(_Strict):
    agent_id: str
    status: str = "ok"
    usage: Usage = Field(default_factory=Usage)
    duration_s: float = 0.0


class RunUsage(_Strict):
    total: Usage = Field(default_factory=Usage)
    agents: list[AgentUsage] = Field(default_factory=list)


class Diagnosis(_Strict):
    question: str
    verdict: str
    bound: Bound = "unknown"
    bound_reasoning: str = ""
    causes: list[Cause] = Field(default_factory=list)
    numbers: list[Number] = Field(default_factory=list)
    recommendations: list[Recommendation] = Field(default_factory=list)
    gaps: list[Gap] = Field(default_factory=list)
    evidence: dict[str, EvidenceRef] = Field(default_factory=dict)
    usage: RunUsage = Field(default_factory=RunUsage)

    def cited_ids(self) -> set[str]:
        ids = {e for c in self.causes for e in c.evidence}
        ids |= {n.source for n in self.numbers if n.source.startswith("ev-")}
        return ids

    # notebooks render results themselves
    def _repr_markdown_(self) -> str:
        return to_markdown(self)


class SubmittedDiagnosis(_Strict):
    """What the lead submits through `submit_diagnosis`: the Diagnosis without the parts the run fills in."""

    verdict: str
    bound: Bound = "unknown"
    bound_reasoning: str = ""
    causes: list[Cause] = Field(default_factory=list)
    numbers: list[Number] = Field(default_factory=list)
    recommendations: list[Recommendation] = Field(default_factory=list)
    gaps: list[Gap] = Field(default_factory=list)


def fmt_number(v: float) -> str:
    """A number as people read it: thousands separated, no trailing zeros, 3 significant digits below 1."""
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:,.2f}".rstrip("0").rstrip(".")
    return f"{v:.3g}"


def number_line(n: Number) -> str:
    s = f"{n.name}: {fmt_number(n.value)} {n.unit}"
    if n.peak:
        s += f" of {fmt_number(n.peak)} {n.unit} ({100 * n.value / n.peak:.1f} %)"
    if n.note:
        s += f" — {n.note}"
    return s + f" [{n.source}]"


def _cell(s: str) -> str:
    # a pipe would end a Markdown table cell
    return s.replace("|", "\\|").replace("\n", " ")


def to_markdown(d: Diagnosis) -> str:
    out = [f"# Diagnosis: {d.question}", "", d.verdict, "", f"**Bound:** {d.bound} — {d.bound_reasoning}".rstrip(" —"), ""]
    if d.causes:
        out += ["## Causes (ranked)", ""]
        for i, c in enumerate(d.causes, 1):
            out.append(f"{i}. **{c.title}** (confidence {c.confidence:.2f}; evidence {', '.join(c.evidence)})  ")
            out.append(f"   {c.explanation}")
        out.append("")
    if d.numbers:
        out += ["## Numbers", ""] + [f"- {number_line(n)}" for n in d.numbers] + [""]
    if d.recommendations:
        out += ["## Recommendations", ""]
        for r in d.recommendations:
            tail = f" (addresses: {r.addresses})" if r.addresses else ""
            out.append(f"- **{r.action}** — {r.why}{tail}")
        out.append("")
    if d.gaps:
        out += ["## Gaps", ""] + [f"- {g.what}: {g.why}" for g in d.gaps] + [""]
    if d.evidence:
        out += ["## Evidence", ""]
        for eid, ev in d.evidence.items():
            err = " (error)" if ev.is_error else ""
            host = f" on {ev.host}" if ev.host else ""
            excerpt = ev.excerpt.replace("\n", " ")
            out.append(f"- `{eid}` {ev.agent} · {ev.tool}{host}{err}: {excerpt}")
        out.append("")
    t = d.usage.total
    if t.calls:
        out += ["## Usage", "", f"{t.calls} model calls, {t.input_tokens} in / {t.output_tokens} out / "
                f"{t.cache_read_tokens} cache read / {t.cache_write_tokens} cache write tokens, ${t.cost_usd:.4f}", ""]
    if d.usage.agents:
        out += ["| agent | status | calls | tokens | cost | time |", "|---|---|--:|--:|--:|--:|"]
        for a in d.usage.agents:
            u = a.usage
            out.append(f"| {_cell(a.agent_id)} | {a.status} | {u.calls} | {u.total_tokens} | ${u.cost_usd:.4f} | "
                       f"{a.duration_s:.1f} s |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_terminal(d: Diagnosis, console) -> None:
    """Print the diagnosis with rich onto console (a string console in tests)."""
    from rich.markdown import Markdown

    console.print(Markdown(to_markdown(d)))
