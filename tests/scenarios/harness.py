"""The scenario harness: load a case, stage its host, investigate it offline over a real sshd, check `expect`.

See README.md in this directory for the case format. `run_case` is what tests/scenarios/test_scenarios.py runs for
every case.yaml; it returns a `CaseOutcome` whose `failures` list what the diagnosis got wrong (empty: passed).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.analysis.rules import run_rules
from orchestrator.api import InvestigationResult, investigate
from orchestrator.diagnosis import Diagnosis, SubmittedDiagnosis
from orchestrator.analysis import relevance
from orchestrator.analysis.relevance import symptoms_of
from orchestrator.analysis.signals import QUOTE_CHARS
from orchestrator.events import ToolResult
from orchestrator.evidence import Evidence
from orchestrator.findings import Finding, Symptom
from orchestrator.observations import Observations
from orchestrator.settings import Settings
from support.consistency import contradictions
from support.hygiene import citation_problems, noise_problems
from support.sshd import start_sshd
from support.stagers import stage

ROOT = Path(__file__).resolve().parent
CLASSES = ("kernel", "autotune", "workload", "node", "interconnect", "engine", "jit-cache", "healthy", "account",
           "heldout", "settings", "residual", "residual-blind", "residual-blind-r3")

RESIDUAL_CLASSES = ("residual", "residual-blind", "residual-blind-r3")
"""Cases written before the mechanism that reconciles the request account (issue 40) existed. The development set
(`residual`) runs like every other class, each case must pass (its mechanisms have landed; a case the project knows it
fails is listed in residual/KNOWN_FAILING.md and runs as an expected failure). The held-back sets (`residual-blind`, and
`residual-blind-r3`, written after issue 40's mechanism existed) are
scored once per round by tests/scenarios/score.py and skipped otherwise: a run whose failures print the diagnosis
beside the case's expectations would show it to whoever builds the mechanism. INVESTIGATE_RESIDUAL_STRICT=1 runs
every residual class strict, INVESTIGATE_RESIDUAL=1 every one as expected failures (README.md, "Residual cases")."""

KNOWN_FAILING = ROOT / "residual" / "KNOWN_FAILING.md"
"""Development cases the tool fails, each with why: a line `- `case-id`: why` per case."""


def residual_mode(klass: str = "residual-blind") -> str:
    """How a residual class runs: `strict` (must pass), `xfail` (run, failures expected) or `off` (skipped)."""
    if os.environ.get("INVESTIGATE_RESIDUAL_STRICT", "") not in ("", "0"):
        return "strict"
    if os.environ.get("INVESTIGATE_RESIDUAL", "") not in ("", "0"):
        return "xfail"
    return "strict" if klass == "residual" else "off"


def known_failing(text: str | None = None) -> dict[str, str]:
    """case id -> why, from residual/KNOWN_FAILING.md (or `text` in its format)."""
    import re

    if text is None:
        text = KNOWN_FAILING.read_text() if KNOWN_FAILING.is_file() else ""
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^- `([^`]+)`: (.+)$", text, re.M)}


class Expect(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    bound: str | None = None
    causes: list[str] = Field(default_factory=list)
    """Regexes that must each match the diagnosis's own words (see `diagnosis_words`)."""
    recommendations: list[str] = Field(default_factory=list)
    """Regexes that must each match some recommendation's action."""
    verdict: list[str] = Field(default_factory=list)
    not_: list[str] = Field(default_factory=list, alias="not")
    """Regexes that must match none of the diagnosis's own words."""
    catalog: list[str] = Field(default_factory=list)
    """Catalog entry ids that must fire."""
    not_catalog: list[str] = Field(default_factory=list)
    no_area: list[str] = Field(default_factory=list)
    """Catalog areas from which no entry may fire (healthy cases)."""
    also_noticed: list[str] = Field(default_factory=list)
    """Regexes that must each match an also-noticed item (title and note)."""
    not_causes: list[str] = Field(default_factory=list)
    """Regexes that must match no ranked cause (title and explanation)."""
    gaps: list[str] = Field(default_factory=list)
    """Regexes that must each match a gap (what: why)."""

    @field_validator("causes", "recommendations", "verdict", "not_", "also_noticed", "not_causes", "gaps")
    @classmethod
    def _regexes(cls, v: list[str]) -> list[str]:
        for p in v:
            re.compile(p)
        return v


class Case(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    id: str
    class_: str = Field(alias="class")
    source: str | list[str]
    question: str
    symptom: Symptom | list[Symptom] | None = None
    """What the question says is slow or wrong (orchestrator.findings.Symptom); every case states it, and the
    scorecard counts ranked causes that cannot explain it."""
    stage: dict[str, Any] = Field(default_factory=dict)
    observations: dict[str, Any] | None = None
    bench: list[str] = Field(default_factory=list)
    """Benchmark result files of the case directory, read as `--bench FILE` reads them (orchestrator.benchresults)
    and added to the observations' runs after those given inline."""
    measure: bool = False
    """Run with --measure (the GEMM and all-reduce probes; on a host without a GPU they say why not)."""
    measure_wait_s: float = 0.0
    expect: Expect
    notes: str | None = None

    @field_validator("class_")
    @classmethod
    def _class(cls, v: str) -> str:
        if v not in CLASSES:
            raise ValueError(f"class {v!r} is not one of {', '.join(CLASSES)}")
        return v

    @field_validator("source")
    @classmethod
    def _public(cls, v: str | list[str]) -> str | list[str]:
        for s in [v] if isinstance(v, str) else v:
            if not re.match(r"^https?://", s):
                raise ValueError(f"source {s!r} is not a public URL")
        return v

    @property
    def symptoms(self) -> set[str]:
        return set() if self.symptom is None else {self.symptom} if isinstance(self.symptom, str) else set(self.symptom)

    @property
    def sources(self) -> list[str]:
        return [self.source] if isinstance(self.source, str) else list(self.source)


def discover(root: Path = ROOT) -> list[Path]:
    return sorted(root.glob("*/*/case.yaml"))


def load_case(path: Path) -> Case:
    case = Case.model_validate(yaml.safe_load(path.read_text()))
    if path.parent.parent.name != case.class_:
        raise ValueError(f"{path}: class {case.class_!r} but the case lives under {path.parent.parent.name}/")
    return case


STAGED = "<a line the case staged>"
"""What a staged line quoted by the diagnosis reads as in its words: the tool's own text there is the line itself (a
finding quoting it, e.g. the unclassified log lines), cut so that a quote cannot satisfy an expectation."""


def diagnosis_words(d: Diagnosis, echoed: list[str] = ()) -> str:
    """The diagnosis's own words: verdict, bound reasoning, cause titles and explanations, recommendations.

    Lines the case staged (log lines, file contents) are cut out first (whole, or the part a finding quotes:
    signals.QUOTE_CHARS), so a claim that merely quotes its input cannot satisfy an expectation."""
    parts = [d.verdict, f"bound: {d.bound}", d.bound_reasoning]
    parts += [f"{c.title}. {c.explanation}" for c in d.causes]
    parts += [f"{a.title}: {a.note}" for a in d.also_noticed]
    parts += [r.action for r in d.recommendations]
    text = "\n".join(parts)
    for line in sorted({ln.strip() for ln in echoed if len(ln.strip()) >= 12}, key=len, reverse=True):
        text = text.replace(line, STAGED)
        text = text.replace(line[:QUOTE_CHARS], STAGED)
    return text


def evidence_of(result: InvestigationResult) -> list[Evidence]:
    return [Evidence(id=e.evidence_id, agent_id=e.agent_id, tool=e.tool, host=e.host, text=e.content, data=e.data,
                     is_error=e.is_error) for e in result.events if isinstance(e, ToolResult)]


def findings_over(evidence: list[Evidence], observations: dict[str, Any] | None, question: str = "") -> list[Finding]:
    """The rules' findings over a run's evidence and question (what the synthesis ranked from)."""
    obs = Observations.model_validate(observations) if observations else None
    return run_rules(EvidenceView(evidence, obs, question=question))


def findings_of(result: InvestigationResult, observations: dict[str, Any] | None) -> list[Finding]:
    return findings_over(evidence_of(result), observations)


def fired_entries(found: list[Finding]) -> tuple[set[str], dict[str, str]]:
    """Catalog entry ids whose findings the evidence supports, and their areas."""
    return {f.entry for f in found if f.entry}, {f.entry: f.category for f in found if f.entry}


def fired(result: InvestigationResult, observations: dict[str, Any] | None,
          found: list[Finding] | None = None) -> tuple[set[str], dict[str, str]]:
    """Catalog entry ids whose findings the run's evidence supports, and their areas."""
    return fired_entries(findings_of(result, observations) if found is None else found)


def off_symptom(case: Case, d: Diagnosis | SubmittedDiagnosis, found: list[Finding],
                evidence: list[Evidence] | None = None) -> list[str]:
    """Ranked causes that cannot explain the case's symptom: each cause's finding (by title) states what it can
    explain (`relevance.symptoms_of`), judged against the case's own `symptom:`, not the question parser's reading,
    through the paths the evidence shows from one symptom to another (`relevance.with_paths`: where requests queue,
    what limits throughput sets time to first token). Target: none."""
    want = case.symptoms
    if not want:
        return []
    obs = Observations.model_validate(case.observations) if case.observations else None
    reading = relevance.with_paths(relevance.Asked(frozenset(want), certain=frozenset(want)),  # type: ignore[arg-type]
                                   EvidenceView(evidence or [], obs), found)
    by_title: dict[str, Finding] = {}
    for f in found:
        by_title.setdefault(f.title or f.id or f.category, f)
    out = []
    for c in d.causes:
        f = by_title.get(c.title)
        if f is None:
            continue  # an agent's own finding: no statement to check
        if not reading.stated(f):
            out.append(f"{c.title} (explains {', '.join(symptoms_of(f)) or 'nothing stated'}; asked {', '.join(sorted(want))})")
    return out


_BOUND_OF = {"compute": {"compute", "gemm"}, "memory": {"memory", "gemm"}, "communication": {"communication"},
             "latency": {"latency"}}


def bound_contradiction(d: Diagnosis, found: list[Finding]) -> str | None:
    """The bound sentence and the first cause must not contradict each other: the first cause's finding, if it
    implies a bound, implies the diagnosis's (or the diagnosis leaves the bound unknown)."""
    if not d.causes or d.bound == "unknown":
        return None
    f = next((x for x in found if (x.title or x.id or x.category) == d.causes[0].title), None)
    if f is None or f.bound is None or f.bound in _BOUND_OF[d.bound]:
        return None
    return f"bound is {d.bound!r} but the first cause ({d.causes[0].title}) implies {f.bound!r}"


@dataclass
class CaseOutcome:
    case: Case
    path: Path
    failures: list[str] = field(default_factory=list)
    words: str = ""
    fired: set[str] = field(default_factory=set)
    off_symptom: list[str] = field(default_factory=list)
    """Ranked causes that cannot explain the case's symptom (target: none; a case with one fails)."""
    ranked: list[str] = field(default_factory=list)
    """The ranked causes' titles."""
    held: list[str] = field(default_factory=list)
    """The case's `expect.causes` that a ranked cause matches."""
    before: list[str] | None = None
    """The ranked causes' titles as recorded in ranked.json (None: the case is not recorded there)."""

    @property
    def passed(self) -> bool:
        return not self.failures


def failed_outcome(path: Path, why: str) -> CaseOutcome:
    """The outcome of a case that raised (bad case file, staging error, crash): failed, for the scorecard."""
    try:
        case = load_case(path)
    except Exception:
        case = Case.model_construct(id=path.parent.name, class_=path.parent.parent.name, source="", question="",
                                    stage={}, observations=None, expect=Expect())
    return CaseOutcome(case, path, failures=[why])


def check(case: Case, d: Diagnosis, words: str, entries: set[str], areas: dict[str, str]) -> list[str]:
    e = case.expect
    out = []
    flags = re.IGNORECASE | re.DOTALL
    if e.bound is not None and d.bound != e.bound:
        out.append(f"bound is {d.bound!r}, expected {e.bound!r} ({d.bound_reasoning[:200]})")
    for p in e.causes:
        if not re.search(p, words, flags):
            out.append(f"no words match {p!r}")
    actions = "\n".join(r.action for r in d.recommendations)
    for p in e.recommendations:
        if not re.search(p, actions, flags):
            out.append(f"no recommendation matches {p!r}")
    for p in e.verdict:
        if not re.search(p, d.verdict, flags):
            out.append(f"verdict does not match {p!r}")
    for p in e.not_:
        m = re.search(p, words, flags)
        if m:
            out.append(f"words match the forbidden {p!r}: ...{words[max(0, m.start() - 60): m.end() + 60]}...")
    for c in e.catalog:
        if c not in entries:
            out.append(f"catalog entry {c} did not fire (fired: {', '.join(sorted(entries)) or 'none'})")
    for c in e.not_catalog:
        if c in entries:
            out.append(f"catalog entry {c} fired but must not")
    for area in e.no_area:
        bad = sorted(i for i, a in areas.items() if a == area)
        if bad:
            out.append(f"{area} entries fired on a healthy host: {', '.join(bad)}")
    noticed = "\n".join(f"{a.title}: {a.note}" for a in d.also_noticed)
    for p in e.also_noticed:
        if not re.search(p, noticed, flags):
            out.append(f"no also-noticed item matches {p!r}")
    gaps = "\n".join(f"{g.what}: {g.why}" for g in d.gaps)
    for p in e.gaps:
        if not re.search(p, gaps, flags):
            out.append(f"no gap matches {p!r}")
    ranked = "\n".join(f"{c.title}. {c.explanation}" for c in d.causes)
    for p in e.not_causes:
        m = re.search(p, ranked, flags)
        if m:
            out.append(f"a ranked cause matches the forbidden {p!r}: ...{ranked[max(0, m.start() - 60): m.end() + 60]}...")
    if case.symptom is None:
        out.append("the case states no `symptom:`")
    return out


RANKED = ROOT / "ranked.json"
"""The recorded ranked causes of every corpus case (`{"<class>/<id>": {"ranked": [titles], "held": [regexes]}}`):
`held` are the case's `expect.causes` that a ranked cause (title and explanation) matched when it was recorded. A
change to relevance or ranking that moves one of them out of the ranked causes (to also noticed, or away) fails the
case; `INVESTIGATE_RANKED_RECORD=1` records the cases a session runs again (tests/support/scorecard.py)."""


def ranked_baseline() -> dict[str, dict[str, list[str]]]:
    try:
        return json.loads(RANKED.read_text())
    except (OSError, ValueError):
        return {}


def _ranked_texts(d: Diagnosis | SubmittedDiagnosis) -> list[str]:
    return [f"{c.title}. {c.explanation}" for c in d.causes]


def judge(case: Case, path: Path, d: Diagnosis | SubmittedDiagnosis, evidence: list[Evidence],
          echoed: list[str], baseline: dict[str, dict[str, list[str]]] | None = None) -> CaseOutcome:
    """Every check of a case on a diagnosis and the evidence it was written from (run_case after staging and
    investigating; tests/support/rescore.py on recorded evidence)."""
    outcome = CaseOutcome(case, path)
    outcome.words = diagnosis_words(d, echoed)
    found = findings_over(evidence, case.observations, case.question)
    outcome.fired, areas = fired_entries(found)
    outcome.failures = check(case, d, outcome.words, outcome.fired, areas)
    outcome.off_symptom = off_symptom(case, d, found, evidence)
    outcome.failures += [f"ranked cause cannot explain the asked symptom: {x}" for x in outcome.off_symptom]
    contradiction = bound_contradiction(d, found)
    if contradiction:
        outcome.failures.append(contradiction)
    # every case: no recommendation contradicts what the ranked causes measured (issue 30 item 6)
    outcome.failures += [f"contradiction: {c}" for c in contradictions(d, case.observations)]
    # every case: each recommendation cites the source that says it, and the words carry no noise (issue 30 items 7, 8)
    outcome.failures += [f"citation: {c}" for c in citation_problems(d)]
    outcome.failures += [f"noise: {c}" for c in noise_problems(d)]
    flags = re.IGNORECASE | re.DOTALL
    ranked = _ranked_texts(d)
    outcome.ranked = [c.title for c in d.causes]
    outcome.held = [p for p in case.expect.causes if any(re.search(p, t, flags) for t in ranked)]
    if baseline is None:  # a corpus case is held to its recorded ranking; a copy (planted evidence removed) is not
        baseline = ranked_baseline() if path.resolve().is_relative_to(ROOT) else {}
    before = baseline.get(case_key(case))
    if before is not None:
        outcome.before = list(before.get("ranked", []))
        lost = [p for p in before.get("held", []) if p in case.expect.causes and p not in outcome.held]
        outcome.failures += [f"ranking lost the expected finding {p!r}: ranked before {outcome.before}, now "
                             f"{outcome.ranked}" for p in lost]
    return outcome


def case_key(case: Case) -> str:
    return f"{case.class_}/{case.id}"


def _dump(case: Case, result: InvestigationResult, echoed: list[str]) -> None:
    """With INVESTIGATE_CASE_DUMP=DIR, the case's question, observations, evidence and diagnosis as
    DIR/<class>__<id>.json: what the synthesis ran on, so a change to relevance or ranking can be replayed over the
    corpus without staging it again (tests/support/rescore.py)."""
    out = os.environ.get("INVESTIGATE_CASE_DUMP")
    if not out:
        return
    Path(out).mkdir(parents=True, exist_ok=True)
    doc = {"id": case.id, "class": case.class_, "question": case.question, "observations": case.observations,
           "evidence": [e.model_dump(mode="json") for e in evidence_of(result)], "echoed": echoed,
           "diagnosis": result.diagnosis.model_dump(mode="json") if result.diagnosis else None}
    (Path(out) / f"{case.class_}__{case.id}.json").write_text(json.dumps(doc))


def observations_of(case: Case, case_dir: Path) -> dict[str, Any] | None:
    """The case's observations with its `bench:` files' runs added, as the CLI's `--bench` adds them."""
    if not case.bench:
        return case.observations
    from orchestrator.benchresults import load_bench

    obs = Observations.model_validate(case.observations or {})
    obs.bench = [*obs.bench, *(r for name in case.bench for r in load_bench(case_dir / name))]
    return obs.model_dump(exclude_none=True, exclude_defaults=True)


async def run_case(path: Path, tmp: Path) -> CaseOutcome:
    case = load_case(path)
    case.observations = observations_of(case, path.parent)  # what the run and every check see, bench files included
    ctx = stage(path.parent, tmp, case.stage)
    try:
        sshd = start_sshd(tmp, env=ctx.env)
        try:
            result = await investigate(case.question, host=sshd.alias, ssh_config=str(sshd.ssh_config),
                                       observations=case.observations, logs=ctx.logs, offline=True, transcript=False,
                                       measure=case.measure,
                                       settings=Settings(power_sample_s=0.3, account_sample_s=1.0,
                                                         measure_wait_s=case.measure_wait_s, gemm_budget_s=20,
                                                         comm_budget_s=20))
        finally:
            sshd.stop()
    finally:
        for cleanup in ctx.cleanups:  # processes a stager started (staged engines)
            cleanup()
    echoed = [ln for p in ctx.logs for ln in Path(p).read_text(errors="replace").splitlines()]
    _dump(case, result, echoed)
    if result.status != "ok" or result.diagnosis is None:
        return CaseOutcome(case, path, failures=[f"run {result.status}: {result.error}"])
    return judge(case, path, result.diagnosis, evidence_of(result), echoed)
