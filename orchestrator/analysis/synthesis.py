"""The lead's offline synthesis: findings from every rule and agent become a Diagnosis body that cites real ids."""

from __future__ import annotations

import re

from orchestrator.analysis import relevance, served
from orchestrator.prongs.node_health import view as node_view
from orchestrator.prongs.node_health.clock_events import clock_events_answer
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.analysis.rules import run_rules
from orchestrator.diagnosis import (Bound, Cause, Gap, Noticed, Number, Recommendation, SubmittedDiagnosis,
                                    sentence_case)
from orchestrator.evidence import Evidence
from orchestrator.findings import AgentResult, BoundClaim, Finding, diagnosis_bound
from orchestrator.ranks import Rank
from orchestrator.observations import Observations

# Rank: the experiment's verdict first, then what explains it (roofline, kernels, autotune), then context.
_CATEGORY_RANK = {"fleet": 0, "observation": 0, "communication": 1, "roofline": 2, "kernel": 3, "autotune": 4, "log": 4,
                  "power": 5, "hardware": 6, "environment": 7, "other": 8,
                  "engine": 2, "workload": 2, "jit-cache": 5}  # serving engine: its config explains serving latency


_GEMM_SIDE = {"roofline", "kernel", "autotune"}


def _rank(f: Finding) -> float:
    node = node_view.rank(f)  # a high-severity node or interconnect fault explains the symptom first
    return node if node is not None else _CATEGORY_RANK.get(f.category, 8)


def _title(f: Finding) -> str:
    return f.title or f.id or f.category


def collect_findings(evidence: list[Evidence], observations: Observations | None,
                     results: list[AgentResult], view: EvidenceView | None = None) -> list[Finding]:
    """Rule findings over all evidence, plus agents' own findings that cite only existing ids (rules win on id)."""
    known = {e.id for e in evidence}
    found = run_rules(view if view is not None else EvidenceView(evidence, observations))
    seen = {f.id for f in found}
    for r in results:
        for f in r.findings:
            if f.rule:
                # a rule's finding over one agent's evidence: the rules just ran over all evidence (a superset, with
                # the observations), and what they no longer claim with the fuller context must not come back
                continue
            ev = [e for e in f.evidence if e in known]
            if ev and (not f.id or f.id not in seen):
                seen.add(f.id)
                found.append(f.model_copy(update={"evidence": ev}))
    return found


# The engine facts a catalog entry matches (`engine.<fact>=...`) and the flags they are read from (the derivations of
# prongs/serving_engine/cmdline.py: --enforce-eager or cudagraph_mode NONE turn CUDA graphs off, and so on).
_FACT_FROM = {"cuda_graphs": {"enforce_eager", "compilation_config", "disable_cuda_graph", "cuda_graph_config",
                              "use_cuda_graph", "cuda_graph_sizes"},
              "prefix_caching": {"enable_prefix_caching", "disable_radix_cache", "enable_block_reuse"},
              "chunked_prefill": {"enable_chunked_prefill", "chunked_prefill_size"}}


def _fold_changes(findings: list[Finding]) -> list[Finding]:
    """A setting that changed between the two runs and a finding about the state it set (CUDA graphs off, from
    --enforce-eager False -> True) are one cause: said once, in the finding that explains the mechanism, with the
    change, its evidence and its advice folded in."""
    changes = [f for f in findings if f.change_kind == "setting" and f.data.get("setting")]
    if not changes:
        return findings
    out, folded = list(findings), set()
    for c in changes:
        name = str(c.data["setting"]).lower()
        for i, f in enumerate(out):
            if f is c or f.change_kind or f.informational:
                continue
            facts = {m.split("=", 1)[0].removeprefix("engine.") for m in f.matched if m.startswith("engine.")}
            if not any(name == fact or name in _FACT_FROM.get(fact, ()) for fact in facts):
                continue
            change = c.title.replace(" changed between the two runs: ", " ", 1)
            out[i] = f.model_copy(update={
                "title": f"{_title(f)} ({change} between the two runs)",
                "claim": f"{f.claim} {c.title.rstrip('.')}: {_first_sentence(c.claim)}",
                "evidence": list(dict.fromkeys([*f.evidence, *c.evidence])),
                "recommendations": list(dict.fromkeys([*c.recommendations, *f.recommendations])),
                "symptoms": list(dict.fromkeys([*relevance.symptoms_of(f), *relevance.symptoms_of(c)])),
                "confidence": max(f.confidence, c.confidence), "static": False})
            folded.add(c.id)
            break
    return [f for f in out if f.id not in folded]


def _setting_name(name: str) -> str:
    """A flag or variable as one key: `--enforce-eager`, `enforce_eager` and `ENFORCE_EAGER` are one setting."""
    return name.strip().lstrip("-").replace("-", "_").lower()


def _about_setting(f: Finding, name: str, flag: str) -> bool:
    """Whether finding f says what a setting did: a catalog entry matched on the state it sets (CUDA graphs off
    from --enforce-eager), on the variable itself (env.NCCL_P2P_DISABLE), or quotes the flag in its claim."""
    for m in f.matched:
        key = m.split("=", 1)[0]
        if key.startswith("engine."):
            fact = key.removeprefix("engine.")
            if name == fact or name in _FACT_FROM.get(fact, ()):
                return True
        elif key.startswith("env.") and _setting_name(key.removeprefix("env.")) == name:
            return True
    return bool(flag) and re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", f.claim) is not None


def _fold_settings(findings: list[Finding]) -> list[Finding]:
    """A non-default setting (the settings audit) and a finding that says what that setting did (NCCL peer-to-peer
    off, from NCCL_P2P_DISABLE=1) are one cause: said once, in the finding that explains the mechanism, with the
    setting's value against its default, its evidence and its advice folded in."""
    settings = [f for f in findings if f.rule == "settings_rule" and isinstance(f.data.get("setting"), dict)
                and not f.informational]
    if not settings:
        return findings
    out, folded = list(findings), set()
    for c in settings:
        flag = str(c.data["setting"].get("setting") or "")
        name = _setting_name(flag)
        for i, f in enumerate(out):
            if f is c or f.rule == "settings_rule" or f.change_kind or f.informational or f.id in folded:
                continue
            if not _about_setting(f, name, flag):
                continue
            out[i] = f.model_copy(update={
                "claim": f"{f.claim} {_first_sentence(c.claim)}",
                "evidence": list(dict.fromkeys([*f.evidence, *c.evidence])),
                "recommendations": list(dict.fromkeys([*f.recommendations, *c.recommendations])),
                "symptoms": list(dict.fromkeys([*relevance.symptoms_of(f), *relevance.symptoms_of(c)])),
                "confidence": max(f.confidence, c.confidence)})
            folded.add(c.id)
            break
    return [f for f in out if f.id not in folded]


def _catalog_bound(findings: list[Finding], ruled_out: set[str]) -> Finding | None:
    """A failure from the catalog (node fault, engine misconfiguration...) that says what the workload is bound by:
    fired by its signals, high severity, confident, not secondary, and not contradicted by the experiments (a bound
    another finding's evidence rules out)."""
    cands = [f for f in findings if f.rule == "catalog" and f.entry and f.bound in ("compute", "memory", "communication",
                                                                                   "latency")
             and f.severity == "high" and f.confidence >= 0.7 and not f.secondary and not f.informational
             and f.bound not in ruled_out]
    return max(cands, key=lambda f: f.confidence, default=None)


def _caps_not_reached(causes: list[Finding], findings: list[Finding]) -> list[tuple[Finding, str]]:
    """Findings that say a setting caps the batch, when the engine's own state shows the batch is far from any cap
    (few requests running, none waiting), or below this cap (256 requests running under --max-num-seqs 512): a cap
    that is not reached cannot explain the shortfall. Each with the words that say why."""
    if any(f.batch_uncapped for f in causes):
        load = next((f for f in findings if f.batch_uncapped), None)
        why = (load.short or load.title).rstrip(".") if load else "few requests ran and none waited"
        return [(f, f"not a cause here: {why}, so the batch never reaches this cap.") for f in causes if f.caps_batch]
    running = [n.value for f in findings for n in f.numbers if n.name.startswith("requests running")]
    out = []
    for f in causes:
        setting = f.data.get("setting") if f.caps_batch else None
        cap = _as_number(setting.get("value")) if isinstance(setting, dict) else None
        if cap is not None and running and max(running) < cap:
            out.append((f, f"{_first_sentence(f.short or f.claim).rstrip('.')} (not a cause here: at most "
                           f"{max(running):,.0f} requests ran, below this cap of {cap:,.0f}, so it never bound the "
                           "batch)."))
    return out


_TERM_OF_PHASE: dict[str, relevance.Symptom] = {"prefill": "ttft", "decode": "itl"}


def _terms_at_floor(findings: list[Finding]) -> dict[str, Finding]:
    """The latency terms (ttft, itl) a serving roofline measured near its compute or memory floor (at or above it,
    under NEAR_RATIO): the GPU's own work, at its speed, is that term's time."""
    from orchestrator.prongs.serving_engine.floors import BELOW_RATIO, NEAR_RATIO

    out: dict[str, Finding] = {}
    for f in findings:
        s = f.data.get("serving") if f.rule == "serving_latency" else None
        if isinstance(s, dict) and s.get("bound") in ("compute", "memory") and \
                BELOW_RATIO <= float(s.get("ratio") or 0) < NEAR_RATIO and s.get("phase") in _TERM_OF_PHASE:
            out.setdefault(_TERM_OF_PHASE[str(s["phase"])], f)
    return out


def _idle_between_requests(relevant: list[Finding], findings: list[Finding],
                           asked: relevance.Asked) -> list[tuple[Finding, str]]:
    """The resource account's idle GPUs (and its 'measure next') when every latency term asked about sits near its
    floor and throughput is not asked: the term's own time is GPU work at the GPU's speed, so the window's idle share
    is the time between requests (the load offered), not what sets the term. Said apart, with both figures."""
    timed = asked.symptoms & {"ttft", "itl"}
    floors = _terms_at_floor(findings)
    if not timed or not timed <= set(floors) or asked.symptoms & {"throughput", "cost"}:
        return []
    at = "; ".join(_first_sentence(floors[t].short or floors[t].title).rstrip(".") for t in sorted(timed))
    out = []
    for f in relevant:
        claim = f.sets_bound
        if f.rule == "resource_account" and claim is not None and int(claim.rank) == Rank.ACCOUNT and \
                f.bound in (None, "latency"):
            said = _first_sentence(f.short or f.claim).rstrip(".")
            out.append((f, f"{said} (not what sets the {relevance.SAY[min(timed)]}: {at}; the GPU does that work at "
                           "its speed while a request runs, so the idle share is the time between requests, the load "
                           "offered)."))
    return out


def _as_number(value: object) -> float | None:
    try:
        x = float(str(value))
    except ValueError:
        return None
    return x if x > 0 and x == x and x != float("inf") else None


def _claims(findings: list[Finding]) -> list[tuple[Finding, BoundClaim]]:
    """Each finding's claim to set the bound that holds among these findings (a claim that needs another finding
    falls back to its alternative without it), and the catalog failure that states one."""
    ids = {f.id for f in findings}
    out = []
    for f in findings:
        claim = f.sets_bound
        while claim is not None and claim.needs and claim.needs not in ids:
            claim = claim.otherwise
        if claim is not None:
            out.append((f, claim))
    fault = _catalog_bound(findings, {b for f in findings for b in f.rules_out})
    if fault is not None:
        out.append((fault, BoundClaim(rank=Rank.CATALOG, bound=diagnosis_bound(fault.bound, "unknown"),
                                      words=f"{fault.title}: {fault.short or _first_sentence(fault.claim)}")))
    return out


def bound_of(findings: list[Finding]) -> tuple[Bound, str, Finding | None]:
    """The bound, its reasoning, and the finding that set it (ranked first), if one leads: the claim of lowest rank
    that the findings carry (`Finding.sets_bound`, set by the rules that make them), with what the other findings
    say in agreement (`Finding.agrees`)."""
    claims = _claims(findings)
    if not claims:
        return "unknown", NO_BOUND, None
    setter, claim = min(claims, key=lambda fc: fc[1].rank)  # the first of the lowest rank
    parts = [claim.words]
    if claim.pointers:
        pointers = [f for f in findings if f is not setter and f.bound in ("latency", "communication")]
        if pointers:
            parts.append("Evidence pointing the same way: " + "; ".join(f.title or f.id for f in pointers[:3]) + ".")
    tier = int(claim.rank)
    if tier == Rank.COMM_EXPERIMENT:
        # the experiment says where the time goes; a known communication fault the evidence shows says why, and leads
        why = _catalog_bound([f for f in findings if f.bound == "communication"], set())
        if why is not None:
            parts.append(f"{why.title} explains it: {why.short or _first_sentence(why.claim)}")
            setter = why
    agreeing = [(a.order, i, a.words) for i, f in enumerate(findings) if f is not setter for a in f.agrees
                if a.tier == tier and not (a.unless_bound is not None and a.unless_bound == setter.bound)]
    parts += [words for _, _, words in sorted(agreeing)]
    return claim.bound, " ".join(parts), setter if claim.leads else None


NO_BOUND = "The evidence gathered does not show which resource limits throughput."
"""The bound's reasoning when no finding sets one (`no_bound_words` says it in the terms of the question)."""


def no_bound_words(asked: relevance.Asked) -> str:
    """The bound's reasoning when nothing sets it, in the terms of what was asked: a TTFT question's "Bound:" line
    does not speak of throughput while its verdict speaks of the time to first token."""
    timed = [relevance.SAY[s] for s in ("ttft", "itl", "startup") if s in asked.symptoms]
    if not timed or asked.symptoms & {"throughput", "cost"}:
        return NO_BOUND
    return f"The evidence gathered does not show which resource sets the {' and the '.join(timed)}."


def unsettled_words(asked: relevance.Asked) -> str:
    """The verdict's words when causes are ranked but none sets the bound, in the terms of what was asked: a TTFT or
    start-up question is not told that the evidence does not settle what limits throughput."""
    sym = asked.symptoms
    if "regression" in sym:
        return "the evidence does not settle which change made it slower."
    if not sym or sym & {"throughput", "cost"}:
        return "the evidence does not settle which resource limits throughput."
    timed = [s for s in ("ttft", "itl", "startup") if s in sym]
    if timed:
        return ("the evidence does not settle which resource sets the "
                + " and the ".join(relevance.SAY[s] for s in timed) + ".")
    return "the evidence does not settle which of these is the fault."


def _first_sentence(text: str) -> str:
    """The first sentence of text (ending with its period), or all of it."""
    cut = text.find(". ")
    return text if cut < 0 else text[: cut + 1]


def _strip_source(action: str) -> str:
    """An action without its trailing [source] note, for the one-paragraph verdict."""
    action = action.rstrip()
    if action.endswith("]") and " [" in action:
        action = action[: action.rindex(" [")]
    return action.rstrip(".")


_CITATION = re.compile(r" ?\[([^\[\]]+)\]")


def _cite_once(text: str) -> str:
    """One citation per source in a paragraph: a source already cited (the same file or URL, whatever note follows
    it in parentheses) is not cited again; a bracket left empty goes."""
    seen: set[str] = set()

    def once(m: re.Match) -> str:
        kept = []
        for src in (s.strip() for s in m.group(1).split(";")):
            key = src.split(" (", 1)[0].strip().lower()
            if src and key not in seen:
                seen.add(key)
                kept.append(src)
        return f" [{'; '.join(kept)}]" if kept else ""

    return _CITATION.sub(once, text)


def _traced_gpus(view: EvidenceView) -> list[str]:
    """The GPUs the recorded traces name (a profile carries its device's name)."""
    return [str(r.get("gpu_name")) for ev in view.of_kind("trace_report") for r in (ev.data or {}).get("ranks", [])
            if isinstance(r, dict) and r.get("gpu_name")]


NO_DRIVER = "nvidia-smi is not on PATH: no NVIDIA driver tools on this host"
_NO_DRIVER = re.compile(r"nvidia-smi (is )?not (on PATH|installed|found)|No such file or directory: 'nvidia-smi'")


def _gaps(evidence: list[Evidence], results: list[AgentResult], view: EvidenceView,
          findings: list[Finding] | None = None) -> list[Gap]:
    gaps = [Gap(what=f"agent {r.name} ({r.agent_id})", why=f"status {r.status}: {r.error or 'no error message'}")
            for r in results if r.status != "ok"]
    # the same probe run by two agents (gpu_inventory by the specs and node prongs) is one gap naming both results,
    # and probes stopped for one reason (an interpreter --python names that is not there) one gap naming them all
    unavailable: dict[tuple[str, str], dict[str, list[str]]] = {}
    for ev, m in view.unavailable():
        # each probe words a missing driver its own way ("nvidia-smi is not on PATH", "... not installed", "... not
        # found"): one cause, one gap naming every probe it stopped
        reason = NO_DRIVER if _NO_DRIVER.search(m.reason or "") else (m.reason or "unavailable")
        unavailable.setdefault((m.host, reason), {}).setdefault(m.kind, []).append(ev.id)
    traced_gpus = _traced_gpus(view)
    errors = []
    for ev in evidence:
        if ev.is_error:
            if traced_gpus and ev.text.startswith("no GPU known"):
                continue  # the trace names the GPU (its GEMMs are read against that GPU's roofline): no gap
            stopped = (ev.host or "local", NO_DRIVER)
            if _NO_DRIVER.search(ev.text) and stopped in unavailable:
                unavailable[stopped].setdefault(ev.tool, []).append(ev.id)  # a tool the same missing driver stopped
                continue
            errors.append(Gap(what=f"tool {ev.tool} ({ev.id}, agent {ev.agent_id})", why=ev.excerpt() or "error"))
    for (host, reason), kinds in unavailable.items():
        ids = ", ".join(dict.fromkeys(i for got in kinds.values() for i in got))
        gaps.append(Gap(what=f"probe{'s' if len(kinds) > 1 else ''} {', '.join(kinds)} on {host} ({ids})", why=reason))
    gaps += errors
    gaps += [Gap(what=what, why=why) for what, why in view.notices]
    gaps += [Gap(what=what, why=why) for what, why in node_view.node_gaps(view)]
    # a measurement taken beside another workload is not the GPU's own: it limits what this diagnosis can say
    gaps += [Gap(what=f"{f.title} ({', '.join(f.evidence)})", why=f.claim) for f in findings or []
             if f.data.get("shared_gpu")]
    seen: set[tuple[str, str]] = set()
    once = []
    for g in gaps:  # a gap is said once, where it first came
        if (g.what, g.why) not in seen:
            seen.add((g.what, g.why))
            once.append(g)
    return once


def synthesize(question: str, observations: Observations | None, evidence: list[Evidence],
               results: list[AgentResult]) -> SubmittedDiagnosis:
    """Write the diagnosis body: verdict, bound, ranked causes, numbers, recommendations and gaps."""
    view = EvidenceView(evidence, observations, question=question)
    findings = _fold_settings(_fold_changes(collect_findings(evidence, observations, results, view)))
    gaps = _gaps(evidence, results, view, findings)
    if not findings:
        why = "no evidence was gathered" if not evidence else "the evidence gathered supports no finding"
        return SubmittedDiagnosis(
            verdict=f"Unknown: {why}, so nothing can be said about \"{question}\" without guessing. See the gaps.",
            bound="unknown", bound_reasoning="No evidence shows the limiting resource.",
            gaps=gaps or [Gap(what="evidence", why=why)])

    asked = relevance.with_paths(relevance.asked(question, observations), view, findings)
    # Only what can explain the asked symptom is ranked (and may set the bound); the rest is said once, apart. A
    # finding whose condition the evidence does not show (a MoE kernel's tuning for a model not known to be MoE) is
    # said apart too.
    relevant = [f for f in findings if asked.explains(f) and not f.unmet]
    # a verdict never contradicts a figure it holds: a verdict read off a figure the evidence contradicts (a decode
    # called memory-bound below its memory floor, a prefill bound read off a TTFT spent outside the engine) is left
    # out; the finding that contradicts it (`Finding.contradicts`) says why
    contradicted = {x for f in findings for x in f.contradicts}
    vetoed = {f.id for f in findings if f.reads and f.reads in contradicted}
    relevant = [f for f in relevant if f.id not in vetoed]
    waits = _idle_between_requests(relevant, findings, asked)  # the window's idle share against a term at its floor
    relevant = [f for f in relevant if all(f is not w for w, _ in waits)]
    bound, reasoning, setter = bound_of(relevant)
    if reasoning == NO_BOUND:
        reasoning = no_bound_words(asked)
    not_serving = served.never_served(view, asked)
    if not_serving is not None:
        # no serving time to account for: no bound, whatever the GPUs or the host do meanwhile
        bound = "unknown"
        reasoning = (f"{_not_served_words(not_serving)}: {not_serving}, so there is no serving time to account for "
                     f"and no bound is named." + (f" {sentence_case(_first_sentence(setter.short or setter.claim))}"
                                                  if setter is not None else ""))
    causes_f = [f for f in relevant if not f.informational]
    # When the evidence puts the limit in communication or latency, per-GPU GEMM findings (roofline, kernels, tuning)
    # are true but not what limits throughput: rank them after the communication and power findings. A catalog
    # failure that set the bound (a node fault explaining the symptom) comes first; what holds on every host of a
    # kind (an architecture's missing instructions) after what this host's evidence shows; what the evidence
    # quantifies (`explains`: the share of the asked shortfall) before what it does not.
    behind = _GEMM_SIDE if bound in ("communication", "latency") else set()
    causes_f.sort(key=lambda f: (f is not setter, f.secondary or f.confidence < 0.5 or f.category in behind,
                                 relevance.about(f) is not None, -(f.explains or 0.0), _rank(f), -f.confidence))
    causes_f = _agree_with_bound(causes_f, bound)
    uncapped = _caps_not_reached(causes_f, findings)  # a batch cap the engine's own state shows it is far from
    causes_f = [f for f in causes_f if all(f is not u for u, _ in uncapped)]
    at_floor = set(map(id, _terms_at_floor(findings).values()))
    # a term near its floor that the question is not about is no problem to notice: the GPU's work at its speed
    noticed_f = [(f, _why_not(f, asked)) for f in findings if f not in relevant and f.id not in vetoed
                 and _noticeable(f) and all(f is not w for w, _ in waits) and id(f) not in at_floor]
    noticed_f = [(f, _unmet_note(f) if f.unmet else note) for f, note in noticed_f]
    noticed_f += uncapped
    noticed_f += waits
    noticed_f += [(f, _why_not(f, asked)) for f in relevant if f.informational and f.rule == "catalog"]
    noticed_f += [(f, _first_sentence(f.short or f.claim).rstrip(".") + " (it can explain the symptom too; ranked "
                   "after the first five causes).") for f in causes_f[MAX_CAUSES:]]
    advised_f, causes_f = causes_f, causes_f[:MAX_CAUSES]  # every cause that explains the symptom keeps its advice
    causes = [Cause(title=_title(f), explanation=f.claim + _kept_note(f, asked), confidence=f.confidence,
                    evidence=f.evidence) for f in causes_f]
    noticed_f.sort(key=lambda x: x[0].severity != "info")  # a health record to watch first, then the rest
    also = [Noticed(title=_title(f), note=note, evidence=f.evidence) for f, note in noticed_f]

    numbers: list[Number] = []
    seen_n: set[str] = set()
    for f in findings:
        for n in f.numbers:
            if n.name not in seen_n:
                seen_n.add(n.name)
                numbers.append(n)

    context_f = [f for f in relevant if f.informational and f.rule != "catalog"]  # ceilings, what was ruled out
    recs: list[Recommendation] = []
    seen_r: set[str] = set()
    for f in advised_f + (context_f if not causes_f else []):
        for action in f.recommendations:
            if action not in seen_r:
                seen_r.add(action)
                recs.append(Recommendation(action=action, why=f"{_title(f)} (evidence {', '.join(f.evidence)})", addresses=_title(f)))

    hw = next((f for f in findings if f.id == "gpu-peaks"), None)
    lead = f"On {hw.claim.split(':')[0]}, " if hw else ""
    if not_serving is not None:  # said first, before the hardware and the causes
        lead = f"{_not_served_words(not_serving)}" + (f" on {hw.claim.split(':')[0]}" if hw else "") + \
            f": {not_serving}. "
    if causes and not_serving is not None:
        verdict = f"{lead}Ranked causes: " + " ".join(f"({i}) {_titled_number(f)};" for i, f in
                                                       enumerate(causes_f[:4], 1)).rstrip(";") + "."
        if recs:
            verdict += f" Start with: {_strip_source(recs[0].action)}."
    elif causes:
        limiter = (f"the primary limiter is {bound}: {_first_sentence(reasoning)}" if bound != "unknown"
                   else f"no GPU or host resource is the limit: {_first_sentence(reasoning)}"
                   if setter is not None and setter.sets_bound is not None and int(setter.sets_bound.rank) == Rank.ACCOUNT
                   and setter.bound is None and reasoning
                   else _first_sentence(reasoning[:1].lower() + reasoning[1:])
                   if setter is not None and setter.sets_bound is not None
                   and int(setter.sets_bound.rank) == Rank.RESIDUAL and reasoning
                   else unsettled_words(asked))
        limiter = limiter.rstrip()
        if not limiter.endswith((".", "!", "?")):  # a reading that ends in its source's parentheses, not a period
            limiter += "."
        verdict = f"{lead}{limiter} Ranked causes: " + " ".join(f"({i}) {_titled_number(f)};" for i, f in
                                                                  enumerate(causes_f[:4], 1)).rstrip(";") + "."
        if recs:
            verdict += f" Start with: {_strip_source(recs[0].action)}."
    else:
        # nothing explains the slowness, but what was established still answers part of the question
        context = " ".join(f.claim for f in context_f if f.id != "gpu-peaks")
        what = "the slowness" if not asked.symptoms or asked.symptoms & {"throughput", "itl", "ttft"} else asked.words()
        busy = next((f for f in context_f if f.data.get("gpus_busy")), None)
        if busy is not None and not_serving is None and asked.symptoms & {"throughput", "itl", "ttft"}:
            # no fault, and the GPUs busy the whole window: their own work is what the time goes to, said first
            context = " ".join(f.claim for f in context_f if f.id not in ("gpu-peaks", busy.id))
            verdict = (f"{lead}the GPUs' own work is the limit, and no fault is found: {busy.claim} "
                       + context).rstrip()
        else:
            verdict = ((f"{lead}no" if lead and not_serving is None else f"{lead}No" if lead else "No")
                       + f" cause of {what} is supported by the evidence. " + context).rstrip()
        if also:
            verdict += " Also noticed, not a cause here: " + "; ".join(a.title for a in also[:3]) + "."
    said = next((f for f in relevant if f.verdict_words), None)
    if said is not None:  # is my number bad? the published figure for the same GPU and model (prongs/reference)
        verdict += f" {said.verdict_words}"
    healthy = node_view.healthy_line(view, findings)
    if healthy:
        verdict += f" {healthy}"
    throttling = clock_events_answer(view, question)  # "is my GPU throttling?" answered in words
    if throttling:
        verdict += f" {throttling}"
    if gaps:
        verdict += f" {len(gaps)} gap{'s limit' if len(gaps) != 1 else ' limits'} this diagnosis."
    return SubmittedDiagnosis(verdict=sentence_case(_cite_once(verdict)), bound=bound, bound_reasoning=reasoning, causes=causes,
                              numbers=numbers, recommendations=recs, gaps=gaps, also_noticed=also)


MAX_CAUSES = 5
"""Ranked causes a diagnosis lists; the rest of what explains the symptom goes to also noticed."""

_COMPATIBLE: dict[str, set[str]] = {"compute": {"compute", "gemm"}, "memory": {"memory", "gemm"},
                                    "communication": {"communication"}, "latency": {"latency"}}


def _agree_with_bound(causes: list[Finding], bound: Bound) -> list[Finding]:
    """The causes with the first one agreeing with the bound: when the first would imply another bound (a compute
    fault first under a communication bound), the first cause that agrees with the bound leads instead, so the bound
    sentence and the first cause never contradict each other."""
    if not causes or bound == "unknown" or causes[0].bound is None or causes[0].bound in _COMPATIBLE[bound]:
        return causes
    agree = next((f for f in causes if f.bound is None or f.bound in _COMPATIBLE[bound]), None)
    if agree is None:
        return causes
    return [agree] + [f for f in causes if f is not agree]


def _titled_number(f: Finding) -> str:
    """A cause's title with the number of the evidence it rests on, when the title carries none: each sentence of
    the verdict carries a number from the evidence."""
    title = _title(f)
    if re.search(r"\d", title) or not f.numbers:
        return title
    n = f.numbers[0]
    value = f"{n.value:,.0f}" if abs(n.value) >= 100 else f"{n.value:g}"
    peak = f" of {n.peak:,.0f}" if n.peak and abs(n.peak) >= 100 else f" of {n.peak:g}" if n.peak else ""
    if n.unit.strip() == "%" and n.peak == 100:
        peak = ""  # "44 of 100 %" says "44 %"
    return f"{title} ({n.name} {value}{peak} {n.unit})"


def _noticeable(f: Finding) -> bool:
    """Worth a line under also noticed: a cause-like finding, not context (hardware ceilings, what was ruled out)."""
    return not f.informational or (f.rule == "catalog" and bool(f.entry))


def _why_not(f: Finding, asked: relevance.Asked) -> str:
    """One line: what f says, and why it is not a ranked cause here."""
    said = _first_sentence(f.short or f.claim).rstrip(".")
    subject = relevance.about(f)
    if f.static and "regression" in asked.symptoms:
        why = "it is the same before and after the change, so it cannot explain the regression"
    elif subject == "cache":
        why = f"it costs start-up time (tuning or compiling again at each start), not {asked.words()}"
    elif subject is not None:
        why = "true of every GPU of this architecture whatever the workload; the question is not about its kernels"
    else:
        can = ", ".join(relevance.SAY[s] for s in relevance.symptoms_of(f)) or "nothing measured here"
        why = f"it can explain {can}, not {asked.words()}"
        minor = [words for s, words in asked.minor if s in relevance.symptoms_of(f)]
        if minor:  # the term it explains is quoted, but too small a share of each request to explain its time
            why += ": " + "; ".join(minor)
    if f.informational and not f.static:
        why = _history_note(f)
    return f"{said} ({why})."


def _not_served_words(why: str) -> str:
    return "The engine has not served yet" if why.startswith("it is still loading") else "The engine never served"


def _unmet_note(f: Finding) -> str:
    """One line for a finding whose condition the evidence does not show: what it says, and on what it depends."""
    return f"{_first_sentence(f.short or f.claim).rstrip('.')} (it matters only {f.unmet}; the evidence does not show that)."


def _kept_note(f: Finding, asked: relevance.Asked) -> str:
    """For a cause ranked although it states none of the asked symptoms (the question's symptom is uncertain): the
    symptom it explains."""
    if asked.stated(f):
        return ""
    can = ", ".join(relevance.SAY[s] for s in relevance.symptoms_of(f))
    return (f" (It explains {can}; the question does not say for certain what is slow, so it stays ranked.)"
            if can else "")


def _history_note(f: Finding) -> str:
    """A historical record (severity info) with nothing active: context, and what to watch."""
    watch = _strip_source(f.recommendations[0]) if f.recommendations else "watch it"
    return f"history, nothing active: {watch[:1].lower() + watch[1:]}"
