"""The knowledge base: GPU specs, architecture capabilities, backend support, cache locations and known issues.

Data lives in YAML files inside this package (read with importlib.resources, parsed once into pydantic models);
every entry carries its source.
"""

from __future__ import annotations

import difflib
import re
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # schemas built on first use: CLI start-up


class GpuSpec(_Strict):
    """One GPU product as nvidia-smi names it, with dense tensor peaks and the sources they come from."""

    name: str
    aliases: list[str] = Field(default_factory=list)
    arch: str
    cc: str
    sms: int | None = None
    tflops: dict[str, float | None] = Field(default_factory=dict)
    """Dense tensor TFLOPS per dtype (fp4, fp8, bf16, fp16, tf32); None = not verified."""
    tflops_note: str | None = None
    mem_bw_gbs: float | None = None
    memory_gb: float | None = None
    memory_note: str | None = None
    smem_per_sm_bytes: int | None = None
    smem_per_block_bytes: int | None = None
    tdp_w: float | None = None
    disputes: list[str] = Field(default_factory=list)
    """Where sources disagree: both figures, and which one is used."""
    sources: list[str] = Field(min_length=1)

    @property
    def source(self) -> str:
        return "; ".join(self.sources)

    def peak_tflops(self, dtype: str) -> float | None:
        """Dense peak for a dtype name as the roofline uses it (nvfp4/mxfp4 -> fp4)."""
        return self.tflops.get(tensor_dtype(dtype))

    def ridge_flop_per_byte(self, dtype: str) -> float | None:
        peak = self.peak_tflops(dtype)
        if not peak or not self.mem_bw_gbs:
            return None
        return peak * 1e12 / (self.mem_bw_gbs * 1e9)


class Fact(_Strict):
    text: str
    source: str
    feature: str | None = None
    weight: float = Field(0.85, ge=0.0, le=1.0)
    """How much the fact explains a slow GEMM when it applies (the confidence of the finding it becomes)."""
    note: str | None = None
    """Why the weight is what it is."""


class ArchCaps(_Strict):
    """What one compute capability's tensor cores and memory system can do."""

    cc: str
    sm: str
    family: str
    peer_cc: str | None = None
    tensor_dtypes: list[str]
    fp4_tensor_cores: bool
    fp8_tensor_cores: bool
    tcgen05: bool
    tmem: bool
    two_sm_mma: bool
    wgmma: bool
    tma: bool
    clusters: bool
    cluster_shape_gemm: str | None = None
    multicast: bool
    max_smem_per_block_bytes: int
    smem_per_sm_bytes: int
    mma_instructions: list[str] = Field(default_factory=list)
    missing_vs_peer: list[Fact] = Field(default_factory=list)
    notes: list[Fact] = Field(default_factory=list)
    disputes: list[str] = Field(default_factory=list)
    sources: list[str] = Field(min_length=1)

    @property
    def cc_int(self) -> int:
        major, minor = self.cc.split(".")
        return int(major) * 10 + int(minor)


class BackendSupport(_Strict):
    library: str
    op: str
    backend: str
    ccs: list[int]
    note: str | None = None
    source: str


class CacheLocationInfo(_Strict):
    format: str
    library: str
    paths: list[str]
    env_vars: list[str] = Field(default_factory=list)
    file_pattern: str
    content: str
    notes: list[str] = Field(default_factory=list)
    source: str


class AppliesTo(_Strict):
    ccs: list[str] = Field(default_factory=list)
    """Empty: any compute capability."""
    libraries: list[str] = Field(default_factory=list)
    dtypes: list[str] = Field(default_factory=list)
    """Workload quantizations (observations' model.quantization) the issue concerns; empty: any."""


class IssueElsewhere(_Strict):
    """What a known issue's log line means on a GPU outside `applies_to.ccs` (where its documented cause is not shown)."""

    title: str
    cause: str
    fix: list[str]


class KnownIssue(_Strict):
    id: str
    title: str
    symptom: str
    patterns: list[str] = Field(default_factory=list)
    cause: str
    fix: list[str]
    applies_to: AppliesTo = Field(default_factory=AppliesTo)
    configuration_risk: bool = False
    elsewhere: IssueElsewhere | None = None
    source: str

    def compiled(self) -> list[re.Pattern[str]]:
        return [re.compile(p, re.IGNORECASE) for p in self.patterns]

    def matches(self, line: str) -> bool:
        return any(p.search(line) for p in self.compiled())

    def applies_to_cc(self, cc: str | None) -> bool | None:
        """Whether the issue's documented cause concerns this compute capability (None: cc unknown)."""
        if not self.applies_to.ccs:
            return True
        if cc is None:
            return None
        caps = arch_caps(cc)
        return (caps.cc if caps else str(cc)) in self.applies_to.ccs

    def applies_to_dtype(self, dtype: str | None) -> bool:
        """False only when the workload's quantization is known and the issue concerns other ones."""
        return not self.applies_to.dtypes or dtype is None or dtype.lower() in self.applies_to.dtypes

    def applies(self, cc: str | None, libraries: set[str], dtype: str | None = None) -> bool:
        """Whether this issue can apply on a GPU of cc with these libraries installed (and this workload dtype)."""
        if self.applies_to_cc(cc) is not True or not self.applies_to_dtype(dtype):
            return False
        return not self.applies_to.libraries or any(lib in libraries for lib in self.applies_to.libraries)


def _load(name: str) -> Any:
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: CLI start-up time


@lru_cache(maxsize=None)
def gpus() -> tuple[GpuSpec, ...]:
    return tuple(GpuSpec.model_validate(x) for x in _load("gpus.yaml"))


@lru_cache(maxsize=None)
def archs() -> tuple[ArchCaps, ...]:
    return tuple(ArchCaps.model_validate(x) for x in _load("arch.yaml"))


@lru_cache(maxsize=None)
def backends() -> tuple[BackendSupport, ...]:
    return tuple(BackendSupport.model_validate(x) for x in _load("backends.yaml"))


@lru_cache(maxsize=None)
def cache_locations() -> tuple[CacheLocationInfo, ...]:
    return tuple(CacheLocationInfo.model_validate(x) for x in _load("caches.yaml"))


@lru_cache(maxsize=None)
def known_issues() -> tuple[KnownIssue, ...]:
    return tuple(KnownIssue.model_validate(x) for x in _load("issues.yaml"))


def issue(issue_id: str) -> KnownIssue | None:
    return next((i for i in known_issues() if i.id == issue_id), None)


_DTYPE_ALIASES = {
    "nvfp4": "fp4", "mxfp4": "fp4", "fp4": "fp4", "e2m1": "fp4", "w4a4": "fp4",
    "fp8": "fp8", "e4m3": "fp8", "e5m2": "fp8", "fp8_w8a8": "fp8", "mxfp8": "fp8", "w8a8": "fp8",
    "bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16", "half": "fp16", "tf32": "tf32",
}


def tensor_dtype(dtype: str) -> str:
    """The tensor-core peak a dtype runs at (NVFP4 and MXFP4 both use the FP4 peak)."""
    return _DTYPE_ALIASES.get(dtype.strip().lower(), dtype.strip().lower())


def _norm(name: str) -> str:
    s = name.lower().replace("nvidia", " ").replace("geforce", " ")
    s = re.sub(r"[^a-z0-9]+", " ", s)
    return " ".join(s.split())


def gpu_spec(name: str | None) -> GpuSpec | None:
    """Find a GPU by exact nvidia-smi name, alias, or normalized name; no fuzzy guesses (Max-Q never matches the 600 W part)."""
    if not name:
        return None
    for g in gpus():
        if name == g.name or name in g.aliases:
            return g
    key = _norm(name)
    for g in gpus():
        if key == _norm(g.name) or key in {_norm(a) for a in g.aliases}:
            return g
    return None


def closest_gpu_names(name: str, n: int = 3) -> list[str]:
    """The known nvidia-smi names nearest to name, best first."""
    key = _norm(name)
    scored: list[tuple[float, str]] = []
    for g in gpus():
        cands = [_norm(g.name)] + [_norm(a) for a in g.aliases]
        best = max(difflib.SequenceMatcher(None, key, c).ratio() for c in cands)
        # a shared model number (e.g. "6000", "5090") is a stronger hint than spelling
        if any(tok.isdigit() and tok in c.split() for tok in key.split() for c in cands):
            best += 0.5
        scored.append((best, g.name))
    scored.sort(key=lambda t: -t[0])
    return [nm for _, nm in scored[:n]]


def arch_caps(cc: str | float | None) -> ArchCaps | None:
    """Capabilities for a compute capability ("12.0", 12.0, "sm_120", "120")."""
    if cc is None:
        return None
    s = str(cc).strip().lower().removeprefix("sm_").removeprefix("sm").rstrip("af")
    if "." not in s and s.isdigit() and len(s) >= 2:
        s = f"{s[:-1]}.{s[-1]}"
    try:
        major, minor = s.split(".")
        s = f"{int(major)}.{int(minor)}"
    except ValueError:
        return None
    return next((a for a in archs() if a.cc == s), None)


def backends_for(cc: str | None, library: str | None = None, op: str | None = None) -> list[BackendSupport]:
    """Backends whose supported CC list includes cc."""
    caps = arch_caps(cc)
    if caps is None:
        return []
    return [b for b in backends() if caps.cc_int in b.ccs and (library is None or b.library == library)
            and (op is None or b.op == op)]


_STOPWORDS = frozenset(
    "a an and are as at be but by do does for from how i in is it its my of on or so the this to too was what when "
    "where which who why with slow slower fast faster performance perf low high bad poor".split()
)
# A word in a question stands for the spellings the knowledge base uses.
_SYNONYMS = {
    "fp4": ("fp4", "nvfp4", "mxfp4", "e2m1", "mxf4"),
    "nvfp4": ("nvfp4", "fp4", "mxf4nvf4"),
    "mxfp4": ("mxfp4", "fp4", "mxf4"),
    "fp8": ("fp8", "e4m3", "e5m2", "f8f6f4"),
    "bf16": ("bf16", "bfloat16"),
    "moe": ("moe", "fused_moe", "expert"),
    "blackwell": ("blackwell", "sm100", "sm120", "sm_100", "sm_120"),
    "sm120": ("sm120", "sm_120", "12.0"),
    "sm100": ("sm100", "sm_100", "10.0"),
    "hopper": ("hopper", "sm90", "sm_90", "9.0"),
}
_DTYPE_WORDS = {"fp4": "fp4", "nvfp4": "fp4", "mxfp4": "fp4", "fp8": "fp8", "bf16": "bf16", "fp16": "fp16"}


def _terms(query: str) -> list[tuple[str, ...]]:
    words = [w for w in re.split(r"[^a-z0-9_.]+", query.lower())
             if w and w not in _STOPWORDS and (len(w) >= 3 or any(c.isdigit() for c in w))]
    return [_SYNONYMS.get(w, (w,)) for w in dict.fromkeys(words)]


def dtype_support(dtype: str) -> dict[str, Any]:
    """Which architectures have native tensor cores for a dtype (fp4/fp8/bf16/fp16), with sources."""
    key = _DTYPE_WORDS.get(dtype.lower(), dtype.lower())
    native = [a for a in archs() if (a.fp4_tensor_cores if key == "fp4" else a.fp8_tensor_cores if key == "fp8"
                                     else key in a.tensor_dtypes)]
    lacking = [a for a in archs() if a not in native]
    sources = sorted({src for a in native for src in a.sources})
    return {
        "type": "dtype",
        "dtype": key,
        "title": f"native {key} tensor cores",
        "text": (f"Native {key} tensor-core MMA: " + ", ".join(f"CC {a.cc} ({a.family}: {'; '.join(a.mma_instructions) or a.sm})"
                                                          for a in native)
                 + (f". Without them (CC {', '.join(a.cc for a in lacking)}) {key} weights run through dequantizing or "
                    "emulated kernels." if lacking else ".")),
        "native_ccs": [a.cc for a in native],
        "lacking_ccs": [a.cc for a in lacking],
        "source": "; ".join(sources),
    }


def search(query: str, limit: int = 12) -> list[dict[str, Any]]:
    """Knowledge entries (arch facts, known issues, backends, caches, GPUs) ranked by how many query terms they match.

    Stopwords and words like "slow" are ignored; dtype and architecture words match their other spellings (fp4 also
    finds nvfp4/mxfp4/e2m1). A dtype in the query adds which architectures support it natively.
    """
    terms = _terms(query)
    scored: list[tuple[int, int, dict[str, Any]]] = []

    def consider(kind: str, title: str, body: str, source: str) -> None:
        hay = f"{title} {body} {source}".lower()
        score = sum(1 for alts in terms if any(a in hay for a in alts))
        if terms and score * 2 >= len(terms):  # at least half the query's terms
            scored.append((score, len(scored), {"type": kind, "title": title, "text": body, "source": source}))

    for a in archs():
        for f in a.missing_vs_peer + a.notes:
            consider("arch", f"CC {a.cc} ({a.sm}, {a.family})", f.text, f.source)
    for i in known_issues():
        consider("issue", f"{i.id}: {i.title}", f"{i.symptom} Cause: {i.cause} Fix: {' '.join(i.fix)}", i.source)
    for b in backends():
        ccs = ", ".join(str(c) for c in b.ccs)
        consider("backend", f"{b.library} {b.op} {b.backend}", f"supported CCs: {ccs}. {b.note or ''}".strip(), b.source)
    for c in cache_locations():
        consider("cache", f"{c.library} {c.format}",
                 f"paths: {', '.join(c.paths)}; env: {', '.join(c.env_vars)}; {c.content} {' '.join(c.notes)}", c.source)
    for g in gpus():
        consider("gpu", g.name, f"{g.arch} CC {g.cc} {' '.join(g.aliases)} {' '.join(g.disputes)}", g.source)
    scored.sort(key=lambda x: (-x[0], x[1]))
    hits = [h for _, _, h in scored]
    dtypes = dict.fromkeys(_DTYPE_WORDS[w] for alts in terms for w in alts[:1] if w in _DTYPE_WORDS)
    return [dtype_support(d) for d in dtypes] + hits[: max(limit - len(dtypes), 0)]


def log_signatures() -> list[dict[str, str]]:
    """The known issues' log patterns as the log scan takes them: id and a case-insensitive regex."""
    return [{"id": i.id, "pattern": "(?i)" + pat} for i in known_issues() for pat in i.patterns]
