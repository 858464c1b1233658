"""The diagnosis a run returns: the lead's submitted body plus what the run knows (evidence excerpts, usage, gaps)."""

from __future__ import annotations

import re

from orchestrator.context import RunContext
from orchestrator.diagnosis import AgentUsage, Diagnosis, EvidenceRef, Gap, RunUsage, SubmittedDiagnosis
from orchestrator.redact import scrub_model


def _evidence_refs(diag: SubmittedDiagnosis, run: RunContext) -> dict[str, EvidenceRef]:
    ids: list[str] = []
    for c in diag.causes:
        ids += c.evidence
    for a in diag.also_noticed:
        ids += a.evidence
    ids += [n.source for n in diag.numbers if n.source.startswith("ev-")]
    refs: dict[str, EvidenceRef] = {}
    for eid in dict.fromkeys(ids):
        ev = run.evidence.get(eid)
        if ev is not None:
            refs[eid] = EvidenceRef(agent=ev.agent_id, tool=ev.tool, host=ev.host,
                                    excerpt=ev.excerpt(run.settings.excerpt_chars), is_error=ev.is_error)
    return refs


def _run_usage(run: RunContext) -> RunUsage:
    agents = [
        AgentUsage(agent_id=aid, status=run.results[aid].status if aid in run.results else "unknown", usage=u,
                   duration_s=run.results[aid].duration_s if aid in run.results else 0.0)
        for aid, u in run.usage_by_agent.items()
    ]
    return RunUsage(total=run.total_usage(), agents=agents)


def assemble(question: str, submitted: SubmittedDiagnosis, run: RunContext) -> Diagnosis:
    """The submitted body plus what the run knows: evidence excerpts, usage, and gaps for every failed agent."""
    gaps = list(submitted.gaps)
    named = " ".join(g.what + " " + g.why for g in gaps)
    for aid, res in run.results.items():
        if res.status != "ok" and aid != "lead" and aid not in named and res.name not in named:
            gaps.append(Gap(what=aid, why=f"{res.status}: {res.error or 'no result'}"))
    for ev in run.evidence.of_kind("log_scan"):  # a --log path that was not there is a gap, whoever synthesized
        for p in (ev.data or {}).get("missing") or []:
            if p not in named:
                gaps.append(Gap(what=f"--log {p}", why=f"not found on {ev.host or run.inputs.host}; nothing in it "
                                                       "was read"))
                named += " " + p
    for h in run.inputs.hosts:  # a host that could not be used is a gap of the whole run, whoever synthesized
        if h.error and f"host {h.name}" not in named:
            gaps.append(Gap(what=f"host {h.name}" + (f" ({h.role})" if h.role else ""), why=h.error))
    body = submitted.model_dump()
    body["gaps"] = [g.model_dump() for g in gaps]
    if len(gaps) != len(submitted.gaps):  # the verdict's count of gaps counts the ones added here too
        n = len(gaps)
        body["verdict"] = re.sub(r"\b\d+ gaps? limits? this diagnosis",
                                 f"{n} gap{'s limit' if n != 1 else ' limits'} this diagnosis", body["verdict"])
    diag = Diagnosis(question=question, **body, evidence=_evidence_refs(submitted, run), usage=_run_usage(run))
    if run.inputs.hosts:
        from orchestrator.prongs.fleet.rules import fleet_table

        table = fleet_table(run.evidence.all(), run.inputs.hosts)
        if table is not None:
            diag.fleet = table
    from orchestrator.prongs.request.report import account_table_of

    diag.request_account = account_table_of(run.evidence.all(), run.inputs)
    # one place for what leaves the run: secrets redacted, terminal control removed
    return scrub_model(diag)
