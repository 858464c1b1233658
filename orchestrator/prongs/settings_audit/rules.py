"""Findings of the settings audit: the non-default settings whose effect can explain the asked symptom
are causes; every non-default is listed in one context finding (the report's table); an upgrade question ranks the
defaults that changed between the two versions.

No setting has a rule of its own here: which settings exist, their defaults per version and their effects all come
from the knowledge base (knowledge/settings), so a setting the curation names is found wherever it is set.
"""

from __future__ import annotations

import re

from orchestrator.prongs.settings_audit import before_after as compared
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.prongs.settings_audit.audit import NonDefault, ProcessAudit, audit_process, env_file_settings, upgrade_in
from orchestrator.diagnosis import Number
from orchestrator.findings import Finding, Symptom
from orchestrator.knowledge import settings as kb
from orchestrator.prongs.serving_engine.models import EngineReport
from orchestrator.prongs.settings_audit.models import SettingsReport

_SYMPTOM_WORDS: list[tuple[Symptom, str]] = [
    ("ttft", r"\bttft\b|time to first|first token|prefill|prompt processing"),
    ("itl", r"\bitl\b|\btpot\b|inter-token|per-token|per token|token latency|decode|tokens? per second per|"
            r"generation speed"),
    ("startup", r"start-?up|starts? slow|load(ing)? time|takes? .* to (start|load)|boot|cold start|compil"),
    ("regression", r"upgrad|regress|slower (after|since|than before)|after (updat|moving|switching)|"
                   r"used to be faster"),
    ("throughput", r"throughput|tok/s|tokens/s|req/s|requests per|qps|capacity"),
    ("errors", r"crash|hang|error|fail|oom\b"),
]
_DEFAULT_SYMPTOMS: tuple[Symptom, ...] = ("throughput", "itl", "ttft")


def asked_symptoms(question: str) -> set[Symptom]:
    """Which symptoms the question names (throughput, itl, ttft when it names none)."""
    found: set[Symptom] = {s for s, pat in _SYMPTOM_WORDS if re.search(pat, question, re.I)}
    if found <= {"regression", "errors"}:  # "slow", "slower after ...": no phase named, so any of them
        found |= set(_DEFAULT_SYMPTOMS)
    return found


def _where(a: ProcessAudit) -> str:
    return f"{a.label} (pid {a.process.pid})"


def _cause(a: ProcessAudit, nd: NonDefault, ev: str, asked: set[Symptom]) -> Finding:
    assert nd.effect is not None
    eff = nd.effect
    v, d = nd.shown(nd.value), nd.shown(nd.default)
    dver = f"{kb.project_data(nd.doc.project)['label']} {nd.default_version}" if nd.default_version \
        else "its documentation"
    if nd.doc.project == a.project and a.version and nd.default_version and nd.default_version != a.version:
        dver += f", the nearest harvested release to the running {a.version}"
    given = "in its environment" if nd.origin == "env" else f"by {nd.origin}"
    title = f"{nd.name}={v} ({'slows' if eff.direction == 'slower' else 'changes'} {', '.join(eff.symptoms)})"
    claim = (f"{_where(a)} was given {nd.name}={v} {given}; the default ({dver}) is {d}. This setting {eff.effect}. "
             f"Source: {', '.join(eff.source)}.")
    return Finding(
        id=f"setting-{nd.doc.project}-{nd.doc.name}".lower(), claim=claim, title=title, category="engine",
        evidence=[ev], recommendations=[eff.fix] if eff.fix else [], symptoms=list(eff.symptoms),
        confidence=0.8 if eff.direction == "slower" else 0.5, severity="high" if eff.direction == "slower" else "medium",
        secondary=eff.direction != "slower", short=f"{nd.name}={v} {eff.effect}", bound=eff.bound,
        matched=[f"{nd.name}={v}"], data={"setting": nd.row, "asked": sorted(asked)},
        caps_batch=bool(_CAPS_BATCH.search(claim)))


_CAPS_BATCH = re.compile(r"\bcaps how many requests\b", re.I)
"""A setting whose documented effect caps the batch: no cause where the engine's own state shows the batch far
from any cap (`Finding.batch_uncapped`)."""


def _table(audits: list[ProcessAudit], ev: str) -> Finding | None:
    rows = [dict(nd.row, process=_where(a)) for a in audits for nd in a.nondefaults]
    if not rows:
        return None
    lines = [f"{r['setting']}={r['value']} (default {r['default']}{', ' + r['origin'] if r['origin'] != 'env' else ', env'}"
             + (f"; {r['direction']}: {', '.join(r['symptoms'])}" if r["effect"] else "") + ")" for r in rows]
    procs = ", ".join(_where(a) for a in audits)
    shown = "; ".join(lines[:8]) + (f"; and {len(lines) - 8} more (the report's table lists them all)"
                                    if len(lines) > 8 else "")
    many = len(rows) != 1
    return Finding(id="settings-audit", title="Non-default settings", category="engine",
                   informational=True, evidence=[ev], confidence=0.9, data={"rows": rows},
                   claim=f"{len(rows)} {'settings' if many else 'setting'} of {procs} "
                         f"{'differ' if many else 'differs'} from {'their defaults' if many else 'its default'}: "
                         + shown + ".")


def _upgrade(v: EvidenceView, audits: list[ProcessAudit]) -> tuple[str, str, str, str, list[str]] | None:
    """(project, old, new, where the two versions were read, evidence ids): the question's "from X to Y", else the
    versions two engine logs print (`--baseline-log BEFORE` and the `--log` read on the host)."""
    primary = audits[0] if audits else None
    up = upgrade_in(v.question, primary.project if primary else None)
    if up is not None:
        return (*up, "", [])
    logs = two_logs(v)
    if logs is None:
        return two_hosts(v)
    before, after, cites = logs
    project = kb.ENGINE_PROJECT.get(after.project or "") or after.project
    new = after.version or (primary.version if primary else None)
    if not (project and project in kb.projects() and before.version and new) or before.version == new:
        return None
    return (project, before.version, new, f"the two logs ({before.source} prints {before.version}, {after.source} "
            f"prints {new})", cites)


def two_hosts(v: EvidenceView) -> tuple[str, str, str, str, list[str]] | None:
    """Two hosts of a multi-host run serving the same engine at two versions (the fleet's engine probes): (project,
    older, newer, the hosts and their versions, evidence ids). Which host is "before" is the user's to say; the
    defaults that differ between the two versions are what differs between the hosts without either setting it."""
    seen: dict[str, tuple[str, str, str]] = {}
    for e, r in v.models():
        if isinstance(r, EngineReport) and r.available and e.host and r.primary and r.primary.version:
            seen.setdefault(e.host, (r.primary.name, r.primary.version, e.id))
    kinds = {k for k, _, _ in seen.values()}
    versions = sorted({ver for _, ver, _ in seen.values()}, key=kb.version_key)
    if len(kinds) != 1 or len(versions) != 2:
        return None
    project = kb.ENGINE_PROJECT.get(next(iter(kinds)))
    if project is None or project not in kb.projects():
        return None
    old, new = versions
    where = ", ".join(f"{h} runs {ver}" for h, (_, ver, _) in sorted(seen.items()))
    return project, old, new, f"the hosts ({where})", [ev for _, _, ev in seen.values()]


def two_logs(v: EvidenceView) -> tuple[compared.LogSnapshot, compared.LogSnapshot, list[str]] | None:
    """The run before's log (`--baseline-log`) and the run now's (`--log`, read by the engine probe), parsed."""
    oe = v.observations_evidence
    if oe is None or oe[1].baseline_log is None:
        return None
    base = oe[1].baseline_log
    for e, r in v.probes("engine_config"):
        assert isinstance(r, EngineReport)
        if r.lines:
            after = compared.log_snapshot((ln.line for ln in r.lines), r.log_files[0] if r.log_files else "--log")
            return compared.log_snapshot(base.lines, base.source or "--baseline-log"), after, [oe[0].id, e.id]
    return None


def _regression(v: EvidenceView, audits: list[ProcessAudit], ev: str | None, asked: set[Symptom]) -> list[Finding]:
    up = _upgrade(v, audits)
    out = _log_changes(v, asked)
    if up is None:
        return out
    project, old, new, read_from, up_cites = up
    label = kb.project_data(project)["label"]
    given = {nd.doc.key for a in audits for nd in a.nondefaults}
    explicit = {(d.key) for a in audits for d in _explicit(a)}
    comparison = _bench_comparison(v)
    worse = comparison.worse if comparison else set()
    ranked = []
    for doc, before, after in kb.changed_defaults(project, old, new):
        if doc.key in explicit or doc.key in given:
            continue  # the process sets it itself: the changed default does not apply
        eff = kb.effect_applies(doc, after, before) or kb.effect_of(doc)
        hits = set(eff.symptoms) & asked if eff else set()
        if worse and hits:  # measured: what got worse ranks first; what the runs show unchanged is only listed
            hits &= worse
        ranked.append((0 if hits else 1 if eff else 2, doc, before, after, eff))
    ranked.sort(key=lambda t: (t[0], t[1].name))
    if not ranked:
        return out
    measured, numbers, obs_ev = before_after(v, asked)
    cites = list(dict.fromkeys(x for x in (ev, obs_ev, *up_cites) if x)) or \
        [e.id for e in v.evidence if not e.is_error][:1]
    if not cites:
        return out
    versions = f"{label} {old} and {new}" + (f" (read from {read_from})" if read_from else "")
    for rank, doc, before, after, eff in ranked[:5]:
        if rank > 0:
            continue
        assert eff is not None
        name = doc.flag if doc.kind == "cli" and doc.flag else doc.name
        out.append(Finding(
            id=f"changed-default-{project}-{doc.name}".lower(), category="engine", evidence=cites,
            title=f"Default of {name} changed in the upgrade: {_show(before)} -> {_show(after)}",
            claim=(f"Between {versions} the default of {name} changed from {_show(before)} to "
                   f"{_show(after)} ({doc.source} at {doc.url}); the serving process does not set it, so the upgrade "
                   f"changed it. This setting {eff.effect}. Source: {', '.join(eff.source)}."
                   + (f" {measured}" if measured else "")), numbers=numbers,
            recommendations=[f"Set {name}={_show(before)} explicitly to get {label} {old}'s behaviour back, and "
                             f"benchmark both ({eff.fix})"],
            symptoms=["regression", *eff.symptoms], confidence=0.6, severity="medium",
            data={"project": project, "old": old, "new": new, "setting": doc.name}, change_kind="default"))
    rest = [f"{(d.flag if d.kind == 'cli' and d.flag else d.name)}: {_show(b)} -> {_show(a)}"
            for _, d, b, a, _ in ranked[:40]]
    out.append(Finding(
        id=f"changed-defaults-{project}", category="engine", informational=True, evidence=cites, confidence=0.9,
        title=f"Defaults changed between {label} {old} and {new}",
        claim=(f"{measured} " if measured else "") + f"{len(ranked)} {'defaults' if len(ranked) != 1 else 'default'} "
              f"changed between {versions} (harvested from the releases' own definitions): " + "; ".join(rest) + ".",
        numbers=numbers, data={"project": project, "old": old, "new": new, "changed": len(ranked)}, change_kind="summary"))
    return out


def _log_changes(v: EvidenceView, asked: set[Symptom]) -> list[Finding]:
    """The settings two engine logs print differently: each whose new value has a curated effect on the asked
    symptom is a cause; all of them are listed."""
    logs = two_logs(v)
    if logs is None:
        return []
    before, after, cites = logs
    changes = compared.setting_changes(before, after)
    if not changes:
        return []
    project = kb.ENGINE_PROJECT.get(after.project or "") or after.project
    out: list[Finding] = []
    for key, a, b in changes:
        docs = [d for d in kb.find(key, project) if d.kind in ("cli", "config")] if project in kb.projects() else []
        if not docs or b is None:
            continue
        doc = docs[0]
        default, _ = kb.default_at(doc, after.version)
        eff = kb.effect_applies(doc, b, default)
        if eff is None or not set(eff.symptoms) & asked:
            continue
        name = doc.flag if doc.kind == "cli" and doc.flag else doc.name
        out.append(Finding(
            id=f"changed-setting-{doc.project}-{doc.name}".lower(), category="engine", evidence=cites,
            title=f"{name} changed between the two runs: {a if a is not None else 'default'} -> {b}",
            claim=(f"The engine log of the run before ({before.source}) shows {name}="
                   f"{a if a is not None else f'its default ({_show(default)})'}; the log of the run now "
                   f"({after.source}) shows {name}={b}. This setting {eff.effect}. Source: {', '.join(eff.source)}."),
            recommendations=[f"Set {name} back to {a if a is not None else _show(default)} and benchmark both "
                             f"({eff.fix})"], symptoms=["regression", *eff.symptoms], confidence=0.7,
            severity="high" if eff.direction == "slower" else "medium", bound=eff.bound,
            data={"setting": doc.name, "before": a, "after": b}, change_kind="setting"))
    shown = [f"{k}: {a if a is not None else 'default'} -> {b if b is not None else 'default'}"
             for k, a, b in changes[:30]]
    out.append(Finding(
        id="changed-settings-logs", category="engine", informational=True, evidence=cites, confidence=0.9,
        title="Settings that differ between the two logs",
        claim=(f"{len(changes)} {'settings differ' if len(changes) != 1 else 'setting differs'} between the engine log "
               f"of the run before ({before.source}, {before.version or 'version not printed'}) and the run now "
               f"({after.source}, {after.version or 'version not printed'}): " + "; ".join(shown) + "."),
        data={"changes": [list(c) for c in changes]}, change_kind="summary"))
    return out


def _bench_comparison(v: EvidenceView) -> compared.BenchComparison | None:
    oe = v.observations_evidence
    pair = compared.bench_pair(oe[1].bench) if oe else None
    return compared.compare_bench(*pair) if pair else None


def before_after(v: EvidenceView, asked: set[Symptom]) -> tuple[str, list[Number], str | None]:
    """The run before (`--baseline FILE`, else the first `--bench`) and the run after (the last `--bench`) on the
    asked metrics: a sentence, the numbers, and the observations' evidence id ('' / [] / None without two runs)."""
    oe = v.observations_evidence
    comparison = _bench_comparison(v)
    if oe is None or comparison is None:
        return "", [], None
    wanted = {"p50", "p99", "throughput"}
    shown = [c for c in comparison.changes if c.symptom in asked
             and (c.metric.rsplit(" ", 1)[-1] in wanted or c.symptom == "throughput")
             and not (c.metric.startswith("end-to-end") or c.metric.startswith("request"))]
    if not shown:
        return "", [], None
    before, after = comparison.before, comparison.after
    numbers = [Number(name=f"{c.metric} after vs before", value=round(c.after, 4), unit=c.unit, peak=None,
                      source=oe[0].id, note=f"before: {c.before:g} {c.unit} ({before.source or before.name}); after: "
                                            f"{c.after:g} {c.unit} ({after.source or after.name})")
               for c in shown]
    head = comparison.sentence(set())
    return (head.rstrip(".") + ": " + "; ".join(c.shown() for c in shown) + "."), numbers, oe[0].id


def _explicit(a: ProcessAudit) -> list[kb.SettingDoc]:
    """Settings the process gives explicitly (even at their default value)."""
    out = []
    if a.project:
        for tok in a.process.argv:
            name = tok.split("=", 1)[0]
            doc = kb.flags(a.project).get(name) or (kb.flags(a.project).get("--" + name[5:])
                                                   if name.startswith("--no-") else None)
            if doc is not None:
                out.append(doc)
    out += [d for n in a.process.env if (d := kb.env_settings().get(n)) is not None]
    out += [d for path, f in a.process.files.items() if f.role == "nccl.conf" and f.text
            for d, _v, _o in env_file_settings(path, f.text)]
    return out


def _show(v: object) -> str:
    if kb.is_computed(v):
        return "computed at start"
    return "unset" if v is None else str(v)


def settings_rule(v: EvidenceView) -> list[Finding]:
    """The analysis rule (see `rules.RULES`)."""
    reports = v.probes("settings_audit")
    asked = asked_symptoms(v.question)
    audits: list[ProcessAudit] = []
    ev: str | None = None
    for e, r in reports:
        assert isinstance(r, SettingsReport)
        if r.processes and ev is None:
            ev = e.id
            audits = [audit_process(p) for p in r.processes]
    out: list[Finding] = []
    if ev is not None:
        for a in audits:
            for nd in a.nondefaults:
                if nd.effect is not None and set(nd.effect.symptoms) & asked:
                    out.append(_cause(a, nd, ev, asked))
        table = _table(audits, ev)
        if table is not None:
            out.append(table)
    if "regression" in asked or _bench_comparison(v) is not None or two_logs(v) is not None \
            or two_hosts(v) is not None:
        out += _regression(v, audits, ev, asked | {"regression"})
    return out
