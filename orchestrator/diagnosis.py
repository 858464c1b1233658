"""The Diagnosis (the product) and the models it is made of. It renders to terminal and Markdown in
`orchestrator/render/diagnosis.py` and to HTML in `orchestrator/render/html.py`; its JSON is the model's own dump."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer
from pydantic.json_schema import SkipJsonSchema

from orchestrator.messages import Usage

Bound = Literal["compute", "memory", "communication", "latency", "unknown"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# Python's own wording of an OS error ("FileNotFoundError: [Errno 2] No such file or directory: 'nvidia-smi'") is
# for programmers; a diagnosis says it as text ("nvidia-smi not found").
_OS_ERROR = re.compile(r"(?:\b[A-Z]\w*(?:Error|Exception): )?\[Errno -?\d+\] ([^:;\]\[]+?)(?:: (['\"])(.*?)\2)?(?=$|[;,)]| \()")
_EXC_PREFIX = re.compile(r"\b(?:builtins\.)?[A-Z]\w*(?:Error|Exception)\(\s*(['\"])(.*?)\1\s*\)")


_FIRST_WORD = re.compile(r"[a-z][a-z'-]*(?=[\s,:;.]|$)")


def sentence_case(text: str) -> str:
    """Text that starts a sentence starts with a capital: "no cause ..." -> "No cause ...". Identifiers stay as
    written ("sm_120a lacks ...", "nvidia-smi reports ...", "vLLM ..."): only a plain lowercase word is capitalized."""
    s = text.lstrip()
    m = _FIRST_WORD.match(s)
    if m is None or "-" in m.group(0):
        return text
    return text[: len(text) - len(s)] + s[0].upper() + s[1:]


def readable(text: str) -> str:
    """Error text as people read it: no `[Errno N]`, no exception class names, no Python reprs of exceptions."""

    def os_error(m: re.Match) -> str:
        what, path = m.group(1).strip(), m.group(3)
        if path is None:
            return what[:1].lower() + what[1:]
        if what.lower() == "no such file or directory":
            return f"{path} not found"
        return f"{what[:1].lower() + what[1:]}: {path}"

    text = _OS_ERROR.sub(os_error, text)
    return _EXC_PREFIX.sub(lambda m: m.group(2), text)


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


class Noticed(_Strict):
    """Something true the run found that does not explain the asked symptom (or is history, not an active fault):
    said once, apart from the ranked causes."""

    title: str
    note: str = ""
    """Why it is not a ranked cause, or what to watch."""
    evidence: list[str] = Field(default_factory=list)


class Gap(_Strict):
    what: str
    """Prong, probe or agent that did not deliver."""
    why: str

    @field_validator("what", "why")
    @classmethod
    def _readable(cls, v: str) -> str:
        return readable(v)


class EvidenceRef(_Strict):
    agent: str
    tool: str
    host: str | None = None
    excerpt: str = ""
    is_error: bool = False

    @field_validator("excerpt")
    @classmethod
    def _readable(cls, v: str) -> str:
        return readable(v)


class AgentUsage(_Strict):
    agent_id: str
    status: str = "ok"
    usage: Usage = Field(default_factory=Usage)
    duration_s: float = 0.0


class RunUsage(_Strict):
    total: Usage = Field(default_factory=Usage)
    agents: list[AgentUsage] = Field(default_factory=list)


class FleetRow(_Strict):
    """One fact compared across hosts (only facts that differ are listed)."""

    fact: str
    label: str
    values: dict[str, str]
    """host -> value as shown."""
    majority: str | None = None
    """The value most hosts have (None: no strict majority, nobody is blamed)."""
    odd: list[str] = Field(default_factory=list)
    """Hosts whose value differs from the majority."""
    weight: float = 1.0
    evidence: list[str] = Field(default_factory=list)


class FleetOutlier(_Strict):
    host: str
    score: float
    differs: list[str] = Field(default_factory=list)


class FleetTable(_Strict):
    """The fleet comparison of one role group (hosts that should be identical): see `prongs/fleet/rules.py`."""

    group: str
    hosts: list[str]
    rows: list[FleetRow] = Field(default_factory=list)
    identical: int = 0
    """How many compared facts are the same on every host."""
    outliers: list[FleetOutlier] = Field(default_factory=list)
    """The odd hosts, most different first."""


class AccountTerm(_Strict):
    """One term of the request account as each place measured it."""

    term: str
    run: str = ""
    """The client run (benchmark or the user's timings) the client figure comes from."""
    client: float | None = None
    engine: float | None = None
    floor: float | None = None
    unit: str


class AccountFloor(_Strict):
    term: str
    ms: float
    arithmetic: str
    source: str = ""


class AccountResidual(_Strict):
    """Two figures that should agree and do not, where the difference sits, and what the table makes of it."""

    shape: str
    words: str
    layer: str
    mechanism: str = ""
    """The confirmed mechanism, if one is."""
    candidates: list[str] = Field(default_factory=list)
    """The mechanisms the evidence still allows, most likely first."""
    ruled_out: list[str] = Field(default_factory=list)


class AccountWaste(_Strict):
    phase: str
    what: str
    share: float
    arithmetic: str


class RequestAccountTable(_Strict):
    """The request account: the user's latency and tokens term by term from each place they were measured, each
    term's physical floor, the residuals and the work nobody asked for (orchestrator/prongs/request)."""

    terms: list[AccountTerm] = Field(default_factory=list)
    floors: list[AccountFloor] = Field(default_factory=list)
    residuals: list[AccountResidual] = Field(default_factory=list)
    waste: list[AccountWaste] = Field(default_factory=list)
    evidence: list[str] = Field(default_factory=list)


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
    fleet: list[FleetTable] | None = None
    """Multi-host runs: the comparison of facts that should be identical across hosts (None: one host, and then
    left out of the dump, so one-host diagnoses and their recordings keep their shape)."""
    also_noticed: list[Noticed] = Field(default_factory=list)
    """True findings that cannot explain the asked symptom, or history with a watch note: never ranked causes
    (left out of the dump when empty, so older diagnoses and their recordings keep their shape)."""
    request_account: RequestAccountTable | None = None
    """The request account's arithmetic (None: the run has no request probe's evidence, and then left out of the
    dump, so older diagnoses and their recordings keep their shape)."""

    @model_serializer(mode="wrap")
    def _drop_empty_fleet(self, handler):
        out = handler(self)
        if isinstance(out, dict) and out.get("fleet") is None:
            out.pop("fleet", None)
        if isinstance(out, dict) and out.get("request_account") is None:
            out.pop("request_account", None)
        if isinstance(out, dict) and not out.get("also_noticed", True):
            out.pop("also_noticed", None)
        return out

    def cited_ids(self) -> set[str]:
        ids = {e for c in self.causes for e in c.evidence}
        ids |= {e for n in self.also_noticed for e in n.evidence}
        ids |= {n.source for n in self.numbers if n.source.startswith("ev-")}
        return ids

    # notebooks render results themselves
    def _repr_markdown_(self) -> str:
        from orchestrator.render.diagnosis import to_markdown

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
    also_noticed: SkipJsonSchema[list[Noticed]] = Field(default_factory=list)
    """The offline synthesis's also-noticed items (kept out of the tool's schema, so the `submit_diagnosis` tool a
    model sees, and the request fingerprints of recorded runs, stay as they were)."""

    @model_serializer(mode="wrap")
    def _drop_empty_noticed(self, handler):
        out = handler(self)
        if isinstance(out, dict) and not out.get("also_noticed", True):
            out.pop("also_noticed", None)
        return out
