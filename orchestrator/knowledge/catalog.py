"""The failure-mode catalog: what the field knows about slow inference, one YAML entry per failure mode.

Entries live in `orchestrator/knowledge/failure_modes/*.yaml` (one file per area, each a YAML list), are read with
importlib.resources (so an installed wheel carries them) and validated here at load. A wrong entry stops the load
with one line naming the file, the entry id and the field (`CatalogError`).

Entry shape (see tests/scenarios/README.md for how cases exercise them)::

    - id: gpu-power-limit-lowered          # unique, kebab-case
      area: node                           # kernel | autotune | node | interconnect | engine | jit-cache | workload | hardware
      title: GPU power limit set below its default
      symptoms: [throughput, itl, ttft]    # what it can explain: throughput | itl | ttft | startup | regression | errors | cost
      scope: {ccs: ["9.0"], gpus: ["H200"], libraries: {vllm: ">=0.6"}, dtypes: [nvfp4], not_ccs: ["8.9"]}
      signals:                             # ANY signal firing fires the entry
        - log: 'regex'                     # case-insensitive, searched in log lines (optional `sources`)
                                             # (every repetition between literals bounded, .{0,1000} not .*:
                                             # tests/fuzz/test_patterns_linear.py)
        - when: [{fact: "gpu.*.power.enforced_limit_w", lt_fact: "gpu.*.power.default_limit_w", ratio: 0.95}]
      claim: "GPU {gpu.index} enforces {gpu.power.enforced_limit_w} W ..."   # {fact}, {line}, {match[1]}
      explanation: "the mechanism"
      bound: compute                       # compute | memory | communication | latency | null
      confidence: 0.8
      severity: high                       # high | medium | low | info
      fix: ["nvidia-smi -i {gpu.index} -pl {gpu.power.default_limit_w}",
            {text: "...", requires: [{fact: "gpu.*.remapped_rows.pending", eq: true}]}]   # given only when it holds
      sources: [https://docs.nvidia.com/deploy/nvidia-smi/index.html]

A signal may carry both `log` and `when`: it fires when a matching line is found AND the conditions hold. A signal's
own `confidence`/`claim` override the entry's (a configuration risk seen without a log line is weaker). Entries
with `rule: <python rule id>` and `signals: []` hold the text, fix and sources of an arithmetic rule in
orchestrator/analysis (read with `entry(id)`).
"""

from __future__ import annotations

import datetime
import re
from functools import lru_cache
from importlib import resources
from typing import Any, Callable, Literal

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from orchestrator.knowledge.envparse import PROGRAMS

Area = Literal["kernel", "autotune", "node", "interconnect", "engine", "jit-cache", "workload", "hardware", "logs"]
Bound = Literal["compute", "memory", "communication", "latency"]
Severity = Literal["high", "medium", "low", "info"]
Symptom = Literal["throughput", "itl", "ttft", "startup", "regression", "errors", "cost"]
"""What a question says is slow or wrong (orchestrator.findings.Symptom; repeated here so knowledge imports nothing
of the analysis): an entry lists the symptoms its failure mode can cause."""

_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_LITERAL_OPS = ("eq", "ne", "lt", "le", "gt", "ge")
_FACT_OPS = tuple(f"{op}_fact" for op in _LITERAL_OPS)


_TABLE_REF = re.compile(r"\{xid:([a-z,]+)\}")


def expand_tables(pattern: str) -> str:
    """A log pattern with `{xid:CLASS[,CLASS]}` replaced by the alternation of the Xid codes of those classes
    (knowledge.xid_codes: xids.yaml's curated rows, then NVIDIA's whole table; `fatal` is every code counted as a
    fault of the GPU), so a code list is never written by hand beside the table it comes from."""
    from orchestrator import knowledge

    def codes(m: re.Match[str]) -> str:
        return "|".join(str(c) for c in knowledge.xid_codes(*m.group(1).split(",")))

    return _TABLE_REF.sub(codes, pattern)


class CatalogError(ValueError):
    """A catalog entry that does not validate; the message is one line naming file, entry and field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Condition(_Strict):
    """One predicate on a fact (`fact` is a dotted key; `*` binds the same index across a signal's conditions)."""

    fact: str
    eq: Any = None
    ne: Any = None
    lt: float | None = None
    le: float | None = None
    gt: float | None = None
    ge: float | None = None
    eq_fact: str | None = None
    ne_fact: str | None = None
    lt_fact: str | None = None
    le_fact: str | None = None
    gt_fact: str | None = None
    ge_fact: str | None = None
    ratio: float = 1.0
    """Multiplier on the other fact for the `*_fact` operators (`lt_fact: b, ratio: 0.95`: a < 0.95 * b)."""
    in_: list[Any] | None = Field(None, alias="in")
    not_in: list[Any] | None = None
    matches: str | None = None
    exists: bool | None = None
    program: str | None = None
    """The program that reads this (environment) fact (`nccl`, `vllm`, `torch`, ...: orchestrator.knowledge.envparse):
    the value is compared as that program parses it (`NCCL_P2P_DISABLE=true` is 0 to NCCL's strtol)."""

    @field_validator("program")
    @classmethod
    def _known_program(cls, v: str | None) -> str | None:
        if v is not None and v not in PROGRAMS:
            raise ValueError(f"unknown program {v!r} (known: {', '.join(sorted(PROGRAMS))})")
        return v

    @model_validator(mode="after")
    def _one_operator(self) -> "Condition":
        ops = [k for k in _LITERAL_OPS + _FACT_OPS + ("in_", "not_in", "matches", "exists") if getattr(self, k) is not None]
        if not ops:
            raise ValueError("a condition needs an operator (eq, ne, lt, le, gt, ge, *_fact, in, not_in, matches, exists)")
        if self.matches is not None:
            re.compile(self.matches)
        return self

    @property
    def operators(self) -> list[str]:
        return [k for k in _LITERAL_OPS + _FACT_OPS + ("in_", "not_in", "matches", "exists") if getattr(self, k) is not None]


class Signal(_Strict):
    """What detects the failure: a log regex, conditions on facts, or both (then both must hold)."""

    log: str | None = None
    sources: list[Literal["server", "kernel", "nccl", "engine"]] | None = None
    """Log streams the regex applies to (None: all)."""
    when: list[Condition] = Field(default_factory=list)
    confidence: float | None = Field(None, ge=0.0, le=1.0)
    claim: str | None = None
    """Overrides the entry's claim when this signal fired."""
    bound: Bound | None = None
    """Overrides the entry's bound when this signal fired (a fault on the path the workload uses: a PCIe link
    trained low between the GPUs of a TP group bounds it by communication)."""

    @field_validator("log", mode="before")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if isinstance(v, str):
            v = expand_tables(v)
        if v is not None:
            try:
                re.compile(v, re.IGNORECASE)
            except re.error as e:
                raise ValueError(f"invalid regex {v!r}: {e}") from e
        return v

    @model_validator(mode="after")
    def _something(self) -> "Signal":
        if self.log is None and not self.when:
            raise ValueError("a signal needs `log` or `when`")
        return self

    def compiled(self) -> re.Pattern[str] | None:
        return _compile(self.log) if self.log else None


@lru_cache(maxsize=None)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


class Scope(_Strict):
    """Where an entry applies; every given key must match (unknown facts: see analysis/conditions.py)."""

    ccs: list[str] = Field(default_factory=list)
    not_ccs: list[str] = Field(default_factory=list)
    gpus: list[str] = Field(default_factory=list)
    """Substrings of the nvidia-smi product name (case-insensitive)."""
    libraries: dict[str, str] = Field(default_factory=dict)
    """Installed library (normalized distribution name) -> PEP 440 specifier; "" = any version installed."""
    dtypes: list[str] = Field(default_factory=list)
    """Workload quantizations (observations' model.quantization) the entry concerns; empty: any."""

    @field_validator("libraries")
    @classmethod
    def _specs(cls, v: dict[str, str]) -> dict[str, str]:
        for name, spec in v.items():
            try:
                SpecifierSet(spec or "")
            except InvalidSpecifier as e:
                raise ValueError(f"library {name}: invalid version specifier {spec!r} ({e})") from e
        return v

    @field_validator("ccs", "not_ccs", mode="before")
    @classmethod
    def _cc_strings(cls, v: Any) -> Any:
        return [str(x) for x in v] if isinstance(v, list) else v


class Fix(_Strict):
    """A fix with preconditions: `if` (a flag the rule that fires the entry passes) and/or `requires` (conditions on
    the facts of the GPU or host the finding is about, `*` bound as in the signal that fired): the fix is given only
    when they hold, so advice never contradicts the evidence it cites (no "reset so the pending remap takes effect"
    when nothing is pending; no RMA unless the vendor's criteria are met)."""

    text: str
    if_: str | None = Field(None, alias="if")
    requires: list[Condition] = Field(default_factory=list)
    source: str | None = None
    """The one of the entry's `sources` that says this fix, when it is not the first (issue 30 item 7: the
    TRITON_CACHE_AUTOTUNING advice cited FlashInfer's autotuner)."""
    tool: bool = False
    """Advice about investigate itself (pass --observations, --host): it cites no external document."""

    @model_validator(mode="after")
    def _conditional(self) -> "Fix":
        if self.if_ is None and not self.requires and self.source is None and not self.tool:
            raise ValueError("a fix mapping needs `if`, `requires`, `source` or `tool` (a plain fix is a string)")
        if self.tool and self.source is not None:
            raise ValueError("a fix about investigate itself (`tool: true`) cites no source")
        return self


class Verified(_Strict):
    """When an entry was last checked against its sources, and what was checked (numbers, versions, fix)."""

    date: datetime.date
    what: str = Field(min_length=1)


class Entry(_Strict):
    """One failure mode (or, with `rule:`, the words of an arithmetic rule)."""

    id: str
    area: Area
    title: str
    symptoms: list[Symptom] = Field(default_factory=list)
    """The symptoms this failure mode can explain (the synthesis ranks by the asked one; tests/catalog checks every
    entry states them)."""
    scope: Scope = Field(default_factory=Scope)
    signals: list[Signal] = Field(default_factory=list)
    rule: str | None = None
    """The Python rule (analysis/) that fires this entry, for arithmetic failure modes."""
    claim: str
    explanation: str = ""
    bound: Bound | None = None
    reasoning: str | None = None
    """One sentence for the diagnosis's bound reasoning when this entry's finding sets the bound (template)."""
    confidence: float = Field(0.7, ge=0.0, le=1.0)
    severity: Severity = "medium"
    fix: list[str | Fix] = Field(default_factory=list)
    """Concrete actions (templates). `{text, if: flag}` items are for rules: kept only when the rule sets the flag."""
    sources: list[str] = Field(min_length=1)
    notes: str | None = None
    """For maintainers: why the entry is shaped as it is (not shown to users)."""
    words: dict[str, str] = Field(default_factory=dict)
    """For rules: the finding's own title, claim and the clauses the rule adds when its numbers call for them,
    by name (templates filled with the rule's values); the rule picks which apply and states no text itself."""
    secondary_confidence: float | None = Field(None, ge=0.0, le=1.0)
    """For rules: the confidence when the rule's own evidence makes the finding secondary (else `confidence`)."""
    verified: Verified | None = None
    """What was checked against the sources and when (tests/catalog requires it of every entry)."""

    @field_validator("id")
    @classmethod
    def _kebab(cls, v: str) -> str:
        if not _ID.match(v):
            raise ValueError(f"id {v!r} is not kebab-case")
        return v

    @field_validator("sources")
    @classmethod
    def _public(cls, v: list[str]) -> list[str]:
        for s in v:
            if not re.match(r"^https?://\S+$", s):
                raise ValueError(f"source {s!r} is not a public URL (http(s)://...)")
            if "KNOWLEDGE.md" in s:
                raise ValueError("KNOWLEDGE.md is not a public source; cite the issue, PR, doc or source line")
        return v

    @model_validator(mode="after")
    def _fires_somehow(self) -> "Entry":
        if not self.signals and not self.rule:
            raise ValueError("an entry needs `signals` or a `rule`")
        for f in self.fix:
            if isinstance(f, Fix) and f.source is not None and f.source not in self.sources:
                raise ValueError(f"fix {f.text[:40]!r}: its source {f.source} is not among the entry's sources")
        return self

    @property
    def source(self) -> str:
        return self.sources[0]

    def fix_source(self, template: str) -> str | None:
        """The source a fix template cites: its own `source`, none for advice about investigate itself, else the
        entry's first source."""
        for f in self.fix:
            if isinstance(f, Fix) and f.text == template:
                return None if f.tool else (f.source or self.source)
        return self.source

    def cite(self, template: str, text: str) -> str:
        """A fix's filled text with the source that says it ("text [URL]"), or alone when it is about investigate."""
        src = self.fix_source(template)
        return f"{text} [{src}]" if src else text

    def all_fixes(self) -> list[str]:
        """Every fix template, conditional or not."""
        return [f if isinstance(f, str) else f.text for f in self.fix]

    def fixes(self, flags: set[str] | frozenset[str] = frozenset(),
              holds: Callable[[Condition], bool] | None = None) -> list[str]:
        """The fix templates that apply: plain ones always, conditional ones when their flag is set (if any) and
        their `requires` conditions hold (`holds` evaluates one; without it, a fix with requirements is left out)."""
        out = []
        for f in self.fix:
            if isinstance(f, str):
                out.append(f)
            elif (f.if_ is None or f.if_ in flags) and (not f.requires or (holds is not None
                                                                            and all(holds(c) for c in f.requires))):
                out.append(f.text)
        return out

    def log_patterns(self) -> list[str]:
        return [s.log for s in self.signals if s.log]


class Catalog:
    """The loaded entries, by id and in file order."""

    def __init__(self, entries: list[tuple[str, Entry]]):
        self.files = {e.id: f for f, e in entries}
        self.entries: tuple[Entry, ...] = tuple(e for _, e in entries)
        self.by_id = {e.id: e for e in self.entries}

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, entry_id: str) -> Entry | None:
        return self.by_id.get(entry_id)

    def for_rule(self, rule_id: str) -> list[Entry]:
        return [e for e in self.entries if e.rule == rule_id]

    def log_signatures(self) -> list[dict[str, str]]:
        """Every log signal as the log scan takes it: entry id and a case-insensitive regex."""
        return [{"id": e.id, "pattern": "(?i)" + p} for e in self.entries for p in e.log_patterns()]


def _where(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(entry)"


def validate_entries(raw: Any, filename: str) -> list[Entry]:
    """Validate one file's list of entries; raise CatalogError (one line) on the first bad one."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise CatalogError(f"{filename}: expected a YAML list of entries, got {type(raw).__name__}")
    out = []
    for n, item in enumerate(raw, 1):
        eid = item.get("id") if isinstance(item, dict) else None
        label = f"entry {eid!r}" if eid else f"entry #{n}"
        if not isinstance(item, dict):
            raise CatalogError(f"{filename}: {label}: expected a mapping, got {type(item).__name__}")
        try:
            out.append(Entry.model_validate(item))
        except ValidationError as e:
            err = e.errors()[0]
            msg = err["msg"].removeprefix("Value error, ")
            more = f" (+{e.error_count() - 1} more)" if e.error_count() > 1 else ""
            raise CatalogError(f"{filename}: {label}: field {_where(err['loc'])}: {msg}{more}") from None
    return out


def load_catalog(files: dict[str, str]) -> Catalog:
    """Build a catalog from {filename: yaml text}; checks every entry and that ids are unique across files."""
    entries: list[tuple[str, Entry]] = []
    seen: dict[str, str] = {}
    for name in sorted(files):
        try:
            raw = yaml.load(files[name], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: run start-up
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f" line {mark.line + 1}" if mark else ""
            raise CatalogError(f"{name}:{where}: not valid YAML ({getattr(e, 'problem', e)})") from None
        for entry in validate_entries(raw, name):
            if entry.id in seen:
                raise CatalogError(f"{name}: entry {entry.id!r}: field id: duplicate (also in {seen[entry.id]})")
            seen[entry.id] = name
            entries.append((name, entry))
    return Catalog(entries)


def _package_files() -> dict[str, str]:
    root = resources.files(__package__).joinpath("failure_modes")
    return {f"failure_modes/{p.name}": p.read_text(encoding="utf-8")
            for p in root.iterdir() if p.name.endswith((".yaml", ".yml"))}


@lru_cache(maxsize=None)
def catalog() -> Catalog:
    """The packaged catalog, loaded and validated once."""
    return load_catalog(_package_files())


def entry(entry_id: str) -> Entry:
    """A catalog entry by id (KeyError names the id: rules must not reference entries that do not exist)."""
    e = catalog().get(entry_id)
    if e is None:
        raise KeyError(f"no catalog entry {entry_id!r}")
    return e
