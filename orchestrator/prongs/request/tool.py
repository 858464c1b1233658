"""The `request_account` tool: the request account of the workload, with the candidate mechanisms of its residuals.

It reads what the account needs that no other prong reads (the served model's files: stop tokens, chat template,
image processor, architecture) and returns, for the model that calls it, the account as far as this call can see it
(the engine's view from the serving-engine probe, which it shares, the client's from the run's observations and
benchmark results, the floors on the host's GPU) and the mechanisms the residual table gives for each residual. The
offline synthesis computes the same account over the whole run's evidence (prongs/request/rules.py).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from orchestrator.evidence import Evidence
from orchestrator.prongs.request.probe import model_refs, on_mig, request_files
from orchestrator.tools.base import Tool, ToolContext, ToolOutput


class RequestAccountInput(BaseModel):
    models: list[str] = Field(default_factory=list, description=(
        "Model directories or hub ids to read besides the ones the engines serve (optional). A root probe reads only "
        "what a running engine names, as that engine could: these are read only where the probe runs unprivileged."))


def account_text(evidence: list[Evidence], inputs) -> str:
    """The account and the candidate mechanisms as text (what a model reads)."""
    from orchestrator.analysis.evidence_view import EvidenceView
    from orchestrator.prongs.request.account import build_account
    from orchestrator.prongs.request.report import account_lines

    v = EvidenceView(evidence, inputs.parsed_observations(), question=inputs.question)
    acct = build_account(v)
    if acct is None:
        return "request account: no client figures (observations, --bench) and no engine figures (/metrics, logs)."
    return "\n".join(account_lines(v, acct))


class RequestAccountTool(Tool):
    name = "request_account"
    on_host = True
    description = (
        "The request account of the workload: every term of the user's latency and tokens from each place it was "
        "measured (the client's benchmark or timings, the engine's /metrics histograms and logs), reconciled by "
        "conservation (end-to-end = queue + TTFT + (n-1) x ITL + transport; tokens prefilled = sent + added; tokens "
        "generated = kept + not kept; requests offered = served + refused; Little's law), each term against its "
        "physical floor on this GPU, the residuals where two figures disagree, and for each residual the mechanisms "
        "that produce it (confirmed, ruled out, or the candidates and the one measurement that splits them). Also "
        "reads the served model's files (config.json, generation_config.json stop tokens, the chat template's special "
        "tokens, the image processor's sizing). Read-only."
    )
    Input = RequestAccountInput
    timeout_s = 90.0

    async def run(self, args: RequestAccountInput, ctx: ToolContext) -> ToolOutput:
        from orchestrator.probes.gpu import gpu_inventory
        from orchestrator.prongs.serving_engine.probe import engine_report

        host = ctx.host()
        rep = await engine_report(host, list(ctx.inputs.logs))
        files = await request_files(host, model_refs(rep, args.models), on_mig(rep))
        inv = await gpu_inventory(host)
        ev = [Evidence(id="engine", agent_id="", tool="engine_config", data=rep.model_dump(mode="json")),
              Evidence(id="files", agent_id="", tool="request_account", data=files.model_dump(mode="json")),
              Evidence(id="gpus", agent_id="", tool="gpu_inventory", data=inv.model_dump(mode="json"))]
        obs = ctx.inputs.parsed_observations()
        if obs is not None:
            ev.append(Evidence(id="observations", agent_id="", tool="observations", data={
                "kind": "observations", "observations": obs.model_dump(mode="json")}))
        text = account_text(ev, ctx.inputs)
        return ToolOutput(text=text, data=files.model_dump(mode="json"), untrusted=True, host=host.name)
