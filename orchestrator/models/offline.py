"""The offline backend: deterministic, no network, no key.

Each agent's first turn calls every step of its declared `plan` in one message (so they run concurrently through
the real tools); its next turn submits what the analysis rules make of the evidence it gathered. The lead's plan
dispatches the prongs with `task`; when a prong plans a second round from what the first found (`Prong.follow_up`),
the lead's second turn makes those calls; its synthesis is `analysis.synthesize` over the whole run's evidence.
"""

from __future__ import annotations

import re
from typing import Any

from orchestrator.agentdefs import AgentDef
from orchestrator.context import RunView
from orchestrator.inputs import RunInputs
from orchestrator.messages import Block, ModelRequest, ModelResponse, TextBlock, ToolUseBlock, Usage

_PLACEHOLDER = re.compile(r"\{run\.([a-z_]+)\}")


def fill(value: Any, inputs: RunInputs) -> Any:
    """Substitute `{run.FIELD}` placeholders; a value that is exactly one placeholder takes the field's raw value."""
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole:
            return getattr(inputs, whole.group(1))
        return _PLACEHOLDER.sub(lambda m: str(getattr(inputs, m.group(1))), value)
    if isinstance(value, dict):
        return {k: fill(v, inputs) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, inputs) for v in value]
    return value


def _usable(step_when: str | None, inputs: RunInputs) -> bool:
    if not step_when:
        return True
    field = step_when.removeprefix("run.")
    return bool(getattr(inputs, field, None))


def _expand(step: Any, inputs: RunInputs) -> list[dict[str, Any]]:
    """The arguments of the calls a plan step makes: one, or one per usable host (`foreach: hosts`)."""
    args = fill(step.args, inputs)
    if getattr(step, "foreach", None) == "hosts" and inputs.hosts:
        return [{**args, "host": name} for name in inputs.usable_hosts]
    return [args]


class OfflineModel:
    """Receives what a model receives: its requests, and the run's inputs, evidence and finished results through a
    read-only `RunView`."""

    def __init__(self, defn: AgentDef, agent_id: str, run: RunView):
        self.defn = defn
        self.agent_id = agent_id
        self.run = run
        self.name = "offline"

    def _id(self, turn: int, i: int) -> str:
        return f"toolu_off_{re.sub(r'[^A-Za-z0-9]', '_', self.agent_id)}_{turn}_{i}"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        steps = [s for s in self.defn.plan if _usable(s.when, self.run.inputs)]
        first = [s for s in steps if s.round == 1]
        if request.turn == 1 and first and not request.final:
            return self._calls(1, first, "Running my plan")
        if request.turn == 2 and self.defn.role == "lead" and steps and not request.final:
            # the first round's evidence calls for more; the prongs that wait for a sampling window join here, so
            # that the second round runs while the window is still open
            again = [s for s in self._second_round() if _usable(s.when, self.run.inputs)]
            again += [s for s in steps if s.round == 2]
            if again:
                return self._calls(2, again, "Second round, from what the first one found")
        return self._submit(request)

    def _calls(self, turn: int, steps: list[Any], why: str) -> ModelResponse:
        calls = [(s.tool, args) for s in steps for args in _expand(s, self.run.inputs)]
        blocks: list[Block] = [ToolUseBlock(id=self._id(turn, i), name=tool, input=args)
                               for i, (tool, args) in enumerate(calls)]
        return ModelResponse(content=[TextBlock(text=f"{why}: {len(blocks)} tool calls."), *blocks],
                             stop_reason="tool_use", model=self.name, usage=Usage(calls=1))

    def _second_round(self) -> list[Any]:
        """Each prong's follow-up steps (`Prong.follow_up`) over the evidence of the first round, in prong order."""
        from orchestrator import prongs
        from orchestrator.analysis.evidence_view import EvidenceView
        from orchestrator.prong import load

        hooks = [load(p.follow_up) for p in prongs.PRONGS if p.follow_up]
        if not hooks:
            return []
        view = EvidenceView(self.run.evidence(), self.run.inputs.parsed_observations(), question=self.run.question)
        return [step for hook in hooks for step in hook(view)]

    def _submit(self, request: ModelRequest) -> ModelResponse:
        from orchestrator import analysis
        from orchestrator.analysis.synthesis import synthesize

        observations = self.run.inputs.parsed_observations()
        if self.defn.role == "lead":
            children = [r for r in self.run.results() if r.agent_id != self.agent_id]
            body = synthesize(self.run.question, observations, self.run.evidence(), children)
            name, payload = "submit_diagnosis", body.model_dump(mode="json")
        else:
            mine = self.run.evidence(self.agent_id)
            findings = analysis.agent_findings(mine, observations)
            errors = [e for e in mine if e.is_error]
            summary = (f"{self.defn.name}: {len(findings)} finding(s) from {len(mine)} tool result(s)"
                       + (f", {len(errors)} failed ({', '.join(e.tool for e in errors)})" if errors else ""))
            name = "submit_findings"
            payload = {"summary": summary, "findings": [f.wire() for f in findings]}
        return ModelResponse(content=[ToolUseBlock(id=self._id(request.turn, 0), name=name, input=payload)],
                             stop_reason="tool_use", model=self.name, usage=Usage(calls=1))


class OfflineBackend:
    name = "offline"

    def model_for(self, defn: AgentDef, agent_id: str, run: RunView) -> OfflineModel:
        return OfflineModel(defn, agent_id, run)
