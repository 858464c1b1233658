"""The tools through which agents hand back their result: `submit_findings` and `submit_diagnosis`.

Both check that every cited evidence id exists in the run, so a result can never rest on evidence nobody recorded.
On an agent's forced final turn, unknown ids are dropped (and said so) instead of refused, since there is no next
turn to fix them in.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from orchestrator.diagnosis import SubmittedDiagnosis
from orchestrator.findings import Finding
from orchestrator.tools.base import Tool, ToolContext, ToolFailure, ToolOutput


class FindingsInput(BaseModel):
    summary: str = Field(description="What this prong found, in two or three sentences.")
    findings: list[Finding] = Field(default_factory=list)


def _unknown(ids: set[str], ctx: ToolContext) -> list[str]:
    return sorted(i for i in ids if not ctx.has_evidence(i))


class SubmitFindings(Tool):
    name = "submit_findings"
    acts = False
    description = "Finish your prong: hand the lead a summary and findings, each citing recorded evidence ids."
    Input = FindingsInput

    async def run(self, args: FindingsInput, ctx: ToolContext) -> ToolOutput:
        unknown = _unknown({e for f in args.findings for e in f.evidence}, ctx)
        note = ""
        if unknown and not ctx.final:
            raise ToolFailure(f"unknown evidence ids {', '.join(unknown)}; cite only ids shown as [evidence …]")
        if unknown:
            for f in args.findings:
                f.evidence = [e for e in f.evidence if ctx.has_evidence(e)]
            note = f" (dropped unknown evidence ids {', '.join(unknown)})"
        ctx.submit(args.model_dump(mode="json"))
        return ToolOutput(text=f"findings accepted: {len(args.findings)}{note}")


class SubmitDiagnosis(Tool):
    name = "submit_diagnosis"
    acts = False
    description = (
        "Submit the final diagnosis. Every cause must cite evidence ids that were recorded (ev-…); numbers name their "
        "source; recommendations say which cause they address; gaps name prongs that failed."
    )
    Input = SubmittedDiagnosis

    async def run(self, args: SubmittedDiagnosis, ctx: ToolContext) -> ToolOutput:
        cited = {e for c in args.causes for e in c.evidence}
        cited |= {n.source for n in args.numbers if n.source.startswith("ev-")}
        unknown = _unknown(cited, ctx)
        if unknown and not ctx.final:
            raise ToolFailure(f"unknown evidence ids {', '.join(unknown)}; cite only ids shown as [evidence …]")
        if unknown:
            causes = []
            for c in args.causes:
                kept = [e for e in c.evidence if ctx.has_evidence(e)]
                if kept:
                    causes.append(c.model_copy(update={"evidence": kept}))
            args = args.model_copy(update={
                "causes": causes,
                "numbers": [n for n in args.numbers if not (n.source.startswith("ev-") and n.source in unknown)],
            })
        ctx.submit(args.model_dump(mode="json"))
        return ToolOutput(text="diagnosis accepted")
