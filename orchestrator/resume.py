"""What a new run takes from an earlier transcript, and what it never takes.

A transcript is data written by whoever wrote the file: evidence to display, never a plan to execute. `replay`
(orchestrator.api) shows it again and never acts (`Run(acts=False)`); it keeps the recorded limits of the run but
takes every setting that sends credentials, reaches the network or widens permissions from the user's own
configuration (`settings_from`). `resume` acts only on what the user confirms on the command line (the question and
the hosts, named again: `confirm_resume`), under the user's own settings and agent definitions; the finished
subagents' results are reused as evidence (`load_reuse`), everything else is planned afresh.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from orchestrator.agentdefs import AgentDef, load_agents
from orchestrator.context import RunContext
from orchestrator.inputs import RunInputs
from orchestrator.limits import RECORDED_MAX_DEPTH
from orchestrator.errors import InputError
from orchestrator.events import AgentFinished, AgentStarted, ModelCall, Notice, RunStarted, ToolCall, ToolResult
from orchestrator.evidence import Evidence
from orchestrator.findings import AgentResult
from orchestrator.settings import Settings
from orchestrator.transcript import Transcript


def _started(t: Transcript) -> RunStarted:
    started = t.of_type(RunStarted)
    if not started:
        raise InputError(f"{t.path}: the transcript has no run_started event; nothing to replay")
    return started[0]


MAX_RECORDED_DEPTH = RECORDED_MAX_DEPTH


def _depth(obj: Any) -> int:
    """How deeply lists and dicts nest in obj (iterative: a hostile depth cannot overflow the stack)."""
    deepest, stack = 0, [(obj, 0)]
    while stack:
        o, d = stack.pop()
        if isinstance(o, (dict, list)):
            deepest = max(deepest, d + 1)
            if deepest > MAX_RECORDED_DEPTH:
                return deepest
            stack.extend((v, d + 1) for v in (o.values() if isinstance(o, dict) else o))
    return deepest


def _recorded(t: Transcript, what: str, raw: Any, build: Any) -> Any:
    """`build(raw)`, or InputError naming the transcript and the first field that does not fit (one line)."""
    if _depth(raw) > MAX_RECORDED_DEPTH:
        raise InputError(f"{t.path}: the recorded {what} nest more than {MAX_RECORDED_DEPTH} levels deep; the "
                         "transcript is damaged or hostile: replay another one")
    try:
        return build(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])[:80] or what
        raise InputError(f"{t.path}: the recorded {what} do not fit at {where} ({err['msg'][:80]}); the transcript "
                         "is damaged or hostile: replay another one") from None


def inputs_from(t: Transcript) -> RunInputs:
    """The recorded run's inputs (InputError when the transcript never started a run or its inputs do not fit)."""
    rs = _started(t)
    fields = {k: v for k, v in rs.inputs.items() if k in RunInputs.model_fields}
    return _recorded(t, "inputs", fields, lambda raw: RunInputs(question=rs.question, **raw))


RECORDED_LIMITS = frozenset({
    "max_tokens", "temperature", "max_turns", "agent_timeout_s", "max_tokens_budget", "final_turn_reserve_s",
    "tool_timeout_s", "tool_output_chars", "excerpt_chars", "run_budget_tokens", "run_budget_usd", "prices",
})
"""The settings an exact replay takes from the transcript: they only bound or shape the recorded run (turns, token
budgets, output caps), so that the replay asks what the recording asked. Everything else (the API key and base URL,
the model ids, fetch's private-address and host allowances, web search, probes, host and SSH limits) is the user's
own: a setting that sends credentials, reaches the network or widens permissions never comes from a file someone
else wrote."""


def settings_from(t: Transcript, own: Settings) -> Settings:
    """The user's settings `own` with the recorded run's limits (`RECORDED_LIMITS`) laid over them."""
    recorded: dict[str, Any] = _started(t).settings
    limits = {k: v for k, v in recorded.items() if k in RECORDED_LIMITS}
    try:
        return Settings.model_validate({**own.model_dump(), **limits})
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])[:80]
        raise InputError(f"{t.path}: the recorded setting {where} is out of its domain ({err['msg']}); the "
                         "transcript is damaged or hostile: replay another one, or re-synthesize with --offline") from None


def recorded_target(t: Transcript) -> tuple[str, list[str]]:
    """The recorded run's question and hosts (none: this machine), as `investigate resume` shows them for
    confirmation (the question as `shown`: what is confirmed is what is then asked); InputError when the transcript
    cannot be resumed at all (finished, damaged, another host source)."""
    rec = _resumable(t)
    return shown(rec.question), _recorded_dests(rec)


def shown(text: str) -> str:
    """Recorded text as a person reads it: terminal control and hidden characters removed, whitespace runs as one
    space. A recorded question is confirmed, and then asked, in this form: a right-to-left override or a tail past
    what the confirmation showed is not asked unseen."""
    from orchestrator.sanitize import sanitize

    return " ".join(sanitize(text).split())


def _recorded_dests(rec: RunInputs) -> list[str]:
    return [e.dest for e in rec.hosts] if rec.hosts else ([] if rec.host == "local" else [rec.host])


def _resumable(t: Transcript) -> RunInputs:
    from orchestrator.events import RunFinished

    rec = inputs_from(t)  # a damaged or hostile recording is refused as such first
    finished = t.of_type(RunFinished)
    if finished and finished[-1].status == "ok":  # no question or host makes it resumable
        raise InputError(f"{t.path} finished (status ok): nothing to resume; `investigate replay {t.path}` shows its "
                         "diagnosis, and a new question starts a new run")
    if any(e.via not in ("ssh", "local") for e in rec.hosts):
        kinds = sorted({e.via for e in rec.hosts} - {"ssh", "local"})
        raise InputError(f"{t.path} was recorded over {', '.join(kinds)}; resume reopens only hosts named with --host: "
                         "run the question again with the same host source")
    return rec


def confirm_resume(t: Transcript, question: str | None, hosts: list[str], *,
                   accept_recorded: bool = False) -> tuple[str, list[str]]:
    """The question and hosts a resume acts on: the ones the user named again, or, with `accept_recorded`, the
    recorded ones the user was shown and confirmed; checked against the recording.

    A resume continues the recorded run, so the hosts named must be the recorded ones (none: a run on this machine);
    InputError (one line, saying what to pass) when the user named none, others, or no question."""
    rec = _resumable(t)
    recorded = _recorded_dests(rec)
    if accept_recorded:
        question = question if question is not None and question.strip() else shown(rec.question)
        hosts = hosts or list(recorded)
    named = " ".join(f"--host {_arg(d)}" for d in recorded)
    if recorded and not hosts:
        raise InputError(f"{t.path} was recorded on {', '.join(map(_arg, recorded))}; resume acts only on hosts you "
                         f"name again: add {named}")
    if sorted(hosts) != sorted(recorded) and not (not recorded and hosts == ["local"]):
        was = ", ".join(map(_arg, recorded)) or "this machine"
        again = f"pass {named}" if recorded else "pass no --host"
        raise InputError(f"{t.path} was recorded on {was}, not on {', '.join(map(_arg, hosts))}; resume continues the "
                         f"recorded run: {again}, or start a new run with `investigate QUESTION --host ...`")
    if question is None or not question.strip():
        raise InputError("resume acts only on what you confirm: pass the question again with --question "
                         f"{_arg(rec.question)}")
    return question.strip(), recorded


def quoted(text: str, limit: int = 200) -> str:
    """Recorded text as shown to the user: one shell argument (terminal controls removed, length bounded)."""
    return _arg(text, limit)


def _arg(text: str, limit: int = 200) -> str:
    """`text` as one shell argument a user can copy (`shown`, length bounded)."""
    import shlex

    s = shown(text)
    return shlex.quote(s if len(s) <= limit else s[:limit] + "…")


def agents_from(t: Transcript) -> dict[str, AgentDef]:
    """The agent definitions the recorded run used (the installed ones for a transcript too old to carry them)."""
    started = t.of_type(RunStarted)
    if not started or not started[0].agent_defs:
        return load_agents()
    return _recorded(t, "agent definitions", started[0].agent_defs,
                     lambda raw: {n: AgentDef.model_validate(d) for n, d in raw.items()})


def load_reuse(run: RunContext, old: Transcript) -> None:
    """Mark every subagent that finished ok in an earlier transcript as reusable, with its events and evidence."""
    finished = {e.agent_id: e for e in old.of_type(AgentFinished) if e.status == "ok" and e.agent_id != "lead"}
    # descendants of a reusable agent travel with it
    parent = {e.agent_id: e.parent_id for e in old.of_type(AgentStarted)}

    def root(aid: str) -> str | None:
        while (up := parent.get(aid)) is not None and up != "lead":
            aid = up
        return aid if aid in finished else None

    for ev in old.events:
        aid = getattr(ev, "agent_id", None)
        if not aid or not isinstance(ev, (AgentStarted, ModelCall, ToolCall, ToolResult, AgentFinished, Notice)):
            continue
        top = root(aid)
        if top is None:
            continue
        run.reuse_events.setdefault(top, []).append(ev)
        if isinstance(ev, ToolResult):
            run.evidence.add(Evidence(id=ev.evidence_id, agent_id=ev.agent_id, tool=ev.tool, host=ev.host,
                                      text=ev.content, data=ev.data, is_error=ev.is_error))
    for aid, fin in finished.items():
        if root(aid) == aid:
            run.reuse[aid] = _recorded(old, f"results of agent {aid}", fin.result, AgentResult.model_validate)
