"""The knowledge base: GPU specs, dtypes, architecture capabilities, backend support, cache locations and known issues.

Data lives in YAML files inside this package (read with importlib.resources, parsed once into pydantic models);
every entry carries its source. Each fact lives in one file and is read through one lookup here: peaks through
`gpu_spec`/`peaks`, dtypes through `dtype_info`/`bytes_per_element`/`tensor_dtype`/`native_mma`, caches through
`cache_specs`.
"""

from __future__ import annotations

import builtins
import difflib
import re
from functools import lru_cache
from importlib import resources
from typing import Any, Literal, cast, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, computed_field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # schemas built on first use: CLI start-up


TflopsKey = Literal["fp4", "fp6", "fp8", "bf16", "fp16", "tf32", "int8"]
"""A gpus.yaml `tflops` key: the dtypes a GPU's dense tensor peaks are listed for."""

_TFLOPS_KEYS: frozenset[str] = frozenset(get_args(TflopsKey))


def tflops_key(name: str) -> TflopsKey | None:
    """A tensor dtype name (`tensor_dtype`'s answer) as a `tflops` key; None for one with no such column (fp32, an
    unknown name), which `tflops.get` would answer None for too."""
    return cast(TflopsKey, name) if name in _TFLOPS_KEYS else None  # checked against the Literal's own values


class GpuSpec(_Strict):
    """One GPU product as nvidia-smi names it, with dense tensor peaks and the sources they come from."""

    name: str
    """The product name exactly as nvidia-smi prints it (amd-smi / rocm-smi's product name for AMD parts)."""
    aliases: list[str] = Field(default_factory=list)
    vendor: Literal["nvidia", "amd"] = "nvidia"
    arch: str
    cc: str
    """NVIDIA compute capability ("9.0"); AMD: the gfx target ("gfx942")."""
    sms: int | None = None
    """Streaming multiprocessors (AMD: compute units)."""
    tflops: dict[TflopsKey, float | None] = Field(default_factory=dict)
    """Dense tensor TFLOPS (int8: TOPS) per dtype; None = not verified. GeForce parts: FP32-accumulate rates."""
    tflops_note: str | None = None
    derived: list[TflopsKey] = Field(default_factory=list)
    """Peaks the vendor does not publish, derived from those it does (tflops_note says how)."""
    mem_bw_gbs: float | None = None
    memory_gb: float | None = None
    memory_note: str | None = None
    smem_per_sm_bytes: int | None = None
    smem_per_block_bytes: int | None = None
    tdp_w: float | None = None
    interconnect: str | None = None
    """GPU-to-GPU and host links (NVLink generation and bandwidth, PCIe generation)."""
    disputes: list[str] = Field(default_factory=list)
    """Where sources disagree: both figures, and which one is used."""
    sources: list[str] = Field(min_length=1)

    @property
    def source(self) -> str:
        return "; ".join(self.sources)

    def peak_tflops(self, dtype: str) -> float | None:
        """Dense peak for a dtype name as the roofline uses it (nvfp4/mxfp4 -> fp4)."""
        key = tflops_key(tensor_dtype(dtype))
        return self.tflops.get(key) if key is not None else None

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

    @computed_field  # type: ignore[prop-decorator]
    @property
    def tensor_dtypes(self) -> list[str]:
        """Dtypes with native tensor-core MMA on this CC (from dtypes.yaml, the one dtype table)."""
        return [d.name for d in dtypes() if self.cc in d.mma_ccs]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fp4_tensor_cores(self) -> bool:
        return native_mma("fp4", self.cc) is True

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fp8_tensor_cores(self) -> bool:
        return native_mma("fp8", self.cc) is True


class DtypeInfo(_Strict):
    """One dtype: its spellings, storage size, tensor peak and which compute capabilities run it natively."""

    name: str
    aliases: list[str] = Field(default_factory=list)
    bytes_per_element: float = Field(gt=0)
    """Including block-scale overhead (NVFP4 = 0.5 + 1/16)."""
    bytes_note: str | None = None
    tensor_peak: Literal["fp4", "fp8", "bf16", "fp16", "tf32", "int8"] | None
    """The gpus.yaml `tflops` key its GEMMs run at where native; None: no tensor-core peak (fp32)."""
    mma_ccs: list[str] = Field(default_factory=list)
    quantization: Literal["none", "weight_activation", "weight_only"]
    activation: str
    lowp: Literal["fp4", "fp8"] | None = None
    measurable: bool = False
    sources: list[str] = Field(min_length=1)

    @property
    def weight_only(self) -> bool:
        return self.quantization == "weight_only"


class BackendSupport(_Strict):
    library: str
    op: str
    backend: str
    ccs: list[int]
    note: str | None = None
    source: str


class CacheFormatInfo(_Strict):
    """What one kind of cache file holds (caches.yaml `formats`)."""

    library: str
    file_pattern: str
    content: str
    persisted: bool
    """True: the files hold tuning results or tuned configs that a restart reuses."""
    moe: bool = False
    """Fused-MoE tuned configs: named E=..,N=..,device_name=..; only this device's are read."""
    compare: dict[str, list[str]] = Field(default_factory=dict)
    """Metadata field -> installed packages it is compared with (the first installed; "torch_cuda" = torch's CUDA)."""
    skip_on_mismatch: bool = False
    """The library ignores the whole file when a compared field differs."""
    notes: list[str] = Field(default_factory=list)
    fix: list[str] = Field(default_factory=list)
    sources: list[str] = Field(min_length=1)


class CacheCandidate(_Strict):
    path: str
    """Template: ${VAR}, ~, {xdg_cache}, {tmp}, {user}, {site}, {cwd}, {extra} (see caches.yaml)."""
    list: bool = False
    """The variable holds a ':'-separated list of directories."""
    ordinal: bool = False
    """The library adds the device ordinal to the file name unless it has %d: match any ordinal."""

    @property
    def env_vars(self) -> builtins.list[str]:  # builtins: the `list` field above shadows the type in this class
        return re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", self.path)


class CollectRule(_Strict):
    glob: str
    format: str
    not_under: list[str] = Field(default_factory=list)
    """Directory names whose files this rule skips (FlashInfer's cached_ops hold binaries)."""


class SizeLimit(_Strict):
    env: str
    default_bytes: int


class CacheSpec(_Strict):
    """One place a library keeps a cache (caches.yaml `caches`); sent to the cache probe as a parameter."""

    name: str = Field(pattern=r"^[a-z0-9_]+$")
    format: str
    library: str
    kind: Literal["autotune", "tuned_config", "jit"]
    mode: Literal["first", "all"] = "first"
    locations: list[CacheCandidate] = Field(min_length=1)
    collect: list[CollectRule] = Field(default_factory=list)
    subdirs: int = Field(0, ge=0, le=3)
    size_limit: SizeLimit | None = None
    env_vars: list[str] = Field(default_factory=list)

    def info(self) -> CacheFormatInfo:
        return cache_formats_table()[self.format]

    @property
    def moving_env_vars(self) -> list[str]:
        """Variables that move this cache (env_set is true when one is set)."""
        return list(dict.fromkeys(v for c in self.locations for v in c.env_vars))


class CachesFile(_Strict):
    formats: dict[str, CacheFormatInfo]
    caches: list[CacheSpec]


def parse_caches(raw: Any) -> CachesFile:
    """Validate caches.yaml: unique cache names, and every format a cache or collect rule names is defined."""
    data = CachesFile.model_validate(raw)
    names = [c.name for c in data.caches]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"caches.yaml: cache name(s) used twice: {', '.join(dupes)}")
    for c in data.caches:
        for fmt in [c.format, *(r.format for r in c.collect)]:
            if fmt not in data.formats:
                raise ValueError(f"caches.yaml: cache {c.name!r} names format {fmt!r}, which `formats` does not define")
    return data


def _load(name: str) -> Any:
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: CLI start-up time


class CloudAddress(_Strict):
    """A cloud metadata or control-plane address that fetch treats as private (cloud_addresses.yaml)."""

    network: str
    service: str
    source: str


@lru_cache(maxsize=None)
def cloud_addresses() -> tuple[CloudAddress, ...]:
    return tuple(CloudAddress.model_validate(x) for x in _load("cloud_addresses.yaml"))


class ClockEventReason(_Strict):
    """One clocks-event reason nvidia-smi reports (clock_events.yaml): its NVML bit, the probe's name for it, the
    label nvidia-smi prints, what it means, whether it holds the clocks below those requested, and the source."""

    reason: str
    bit: str
    label: str
    meaning: str
    slowdown: bool
    source: str


@lru_cache(maxsize=None)
def clock_event_reasons() -> dict[str, ClockEventReason]:
    """knowledge/clock_events.yaml by the probe's reason name (probes/scripts/_smi.py smi_gpu)."""
    return {r.reason: r for r in (ClockEventReason.model_validate(x) for x in _load("clock_events.yaml"))}


@lru_cache(maxsize=None)
def xid_rows() -> tuple[dict[str, Any], ...]:
    """knowledge/xids.yaml as read (the node probe's models validate and index them: prongs/node_health/kernel_log.py)."""
    return tuple(dict(x) for x in _load("xids.yaml"))


class XidRow(_Strict):
    """One row of NVIDIA's machine-readable Xid table (xid_table.yaml, NVSentinel's xiderrorsmapping.csv)."""

    code: int
    mnemonic: str
    action: str
    """NVIDIA's immediate action (RESET_GPU, RESTART_APP, IGNORE, WORKFLOW_NVLINK5_ERR, ...)."""
    fatal: bool


XID_TABLE_SOURCE = ("https://github.com/NVIDIA/NVSentinel/blob/6f8b0fcfa8e502bdda78fabf96facef729a9285b/distros/"
                    "kubernetes/nvsentinel/charts/gpu-health-monitor/xiderrorsmapping.csv")

FATAL_XID_CLASSES = ("fatal", "memory", "nvlink", "hardware")
"""The classes counted as a fault of the GPU (the node facts' fatal counts, the catalog's fatal Xid signal)."""


@lru_cache(maxsize=None)
def xid_table() -> dict[int, XidRow]:
    """NVIDIA's whole Xid table by code (xid_table.yaml: code, mnemonic, immediate action, FATAL/NONFATAL)."""
    rows = _load("xid_table.yaml")["rows"]
    return {int(r[0]): XidRow(code=int(r[0]), mnemonic=str(r[1]).strip(), action=str(r[2]).strip(),
                              fatal=str(r[3]).strip().upper() == "FATAL") for r in rows}


def xid_table_class(row: XidRow) -> str:
    """The class of a code xids.yaml does not curate, read from NVIDIA's table alone: its FATAL/NONFATAL column and
    its immediate action. FATAL rows are faults of the GPU: `nvlink` for the NVLink workflows, `memory` for the
    ECC-DBE workflow, `fatal` otherwise (reset, reboot, report). NONFATAL rows are `app` (RESTART_APP, CHECK_UVM:
    restart the application), `sympathetic` (WORKFLOW_XID_45: follows another Xid) or `info` (IGNORE, and 154's
    "follow the guidance of another Xid")."""
    a = row.action.upper()
    if row.fatal:
        if a.startswith("WORKFLOW_NVLINK"):
            return "nvlink"
        if a == "WORKFLOW_XID_48":
            return "memory"
        return "fatal"
    if a in ("RESTART_APP", "CHECK_UVM"):
        return "app"
    if a == "WORKFLOW_XID_45":
        return "sympathetic"
    return "info"


@lru_cache(maxsize=None)
def xid_classes() -> dict[int, tuple[str, bool]]:
    """Every code either table knows -> (class, counted as a GPU fault): xids.yaml's curated class first, else the
    class read from NVIDIA's table. A code in neither is unknown (absent here) and states no cause."""
    out = {code: (xid_table_class(row), row.fatal) for code, row in xid_table().items()}
    for r in xid_rows():
        out[int(r["code"])] = (str(r["class"]), bool(r["fatal"]) or r["class"] == "hardware")
    return out


def xid_codes(*classes: str) -> list[int]:
    """Codes of the given classes (`fatal` alone: every code counted as a GPU fault, curated or from the table)."""
    if classes == ("fatal",):
        return sorted(c for c, (_, fault) in xid_classes().items() if fault)
    return sorted(c for c, (k, _) in xid_classes().items() if k in classes)


@lru_cache(maxsize=None)
def price_rows() -> dict[str, Any]:
    """knowledge/prices.yaml as read (orchestrator/pricing.py validates it into its price table)."""
    return dict(_load("prices.yaml"))


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
def _caches_file() -> CachesFile:
    return parse_caches(_load("caches.yaml"))


def cache_specs() -> tuple[CacheSpec, ...]:
    """Every cache location the cache probe inventories, in report order (caches.yaml `caches`)."""
    return tuple(_caches_file().caches)


def cache_formats_table() -> dict[str, CacheFormatInfo]:
    """Cache file formats by name (caches.yaml `formats`)."""
    return _caches_file().formats


def cache_format(fmt: str) -> CacheFormatInfo | None:
    return cache_formats_table().get(fmt)


def persisted_formats() -> frozenset[str]:
    """Formats whose files hold tuning results or tuned configs."""
    return frozenset(k for k, f in cache_formats_table().items() if f.persisted)


def skipped_on_mismatch_formats() -> frozenset[str]:
    """Formats whose loader ignores the whole file when its metadata does not match the installed versions."""
    return frozenset(k for k, f in cache_formats_table().items() if f.skip_on_mismatch)


def moe_formats() -> frozenset[str]:
    """Fused-MoE tuned-config formats."""
    return frozenset(k for k, f in cache_formats_table().items() if f.moe)


@lru_cache(maxsize=None)
def dtypes() -> tuple[DtypeInfo, ...]:
    """The dtype table (dtypes.yaml)."""
    return parse_dtypes(_load("dtypes.yaml"))


def parse_dtypes(raw: Any) -> tuple[DtypeInfo, ...]:
    """Validate a dtype table; a spelling used by two entries is an error naming both."""
    table = tuple(DtypeInfo.model_validate(x) for x in raw)
    seen: dict[str, str] = {}
    for d in table:
        for spelling in [d.name, *d.aliases]:
            key = spelling.strip().lower()
            if key in seen and seen[key] != d.name:
                raise ValueError(f"dtypes.yaml: {spelling!r} names both {seen[key]} and {d.name}")
            seen[key] = d.name
    return table


@lru_cache(maxsize=None)
def _dtype_index() -> dict[str, DtypeInfo]:
    return {s.strip().lower(): d for d in dtypes() for s in [d.name, *d.aliases]}


def dtype_info(dtype: str | None) -> DtypeInfo | None:
    """The dtype-table entry for any spelling (case-insensitive: "NVFP4", "bfloat16", "fp8_w8a8"); None if unknown."""
    if not dtype:
        return None
    return _dtype_index().get(dtype.strip().lower())


def dtype_names() -> list[str]:
    """Canonical dtype names, in table order."""
    return [d.name for d in dtypes()]


class UnknownDtype(ValueError):
    """The dtype is not in dtypes.yaml."""


def bytes_per_element(dtype: str) -> float:
    """Storage bytes per element, block scales included; raises UnknownDtype naming the known dtypes."""
    info = dtype_info(dtype)
    if info is None:
        raise UnknownDtype(f"unknown dtype {dtype!r}; use one of {', '.join(dtype_names())}")
    return info.bytes_per_element


def canonical_dtype(dtype: str) -> str:
    """The table's spelling of a dtype ("bfloat16" -> "bf16"); an unknown one lower-cased."""
    info = dtype_info(dtype)
    return info.name if info else dtype.strip().lower()


def tensor_dtype(dtype: str) -> str:
    """The tensor-core peak a dtype runs at (NVFP4 and MXFP4 both use the FP4 peak)."""
    info = dtype_info(dtype)
    if info is None:
        return dtype.strip().lower()
    return info.tensor_peak or info.name


def lowp_class(dtype: str | None) -> str | None:
    """'fp4' / 'fp8' for quantizations that need those tensor cores to run natively, else None (w4a16: None)."""
    info = dtype_info(dtype)
    return info.lowp if info else None


def activation_dtype(dtype: str) -> str:
    """The activation dtype a weight format usually runs with (NVFP4 W4A4; weight-only formats BF16)."""
    info = dtype_info(dtype)
    return info.activation if info else "bf16"


def _cc_key(cc: str | float | None) -> str | None:
    if cc is None:
        return None
    s = str(cc).strip().lower().removeprefix("sm_").removeprefix("sm").rstrip("af")
    if "." not in s and s.isdigit() and len(s) >= 2:
        s = f"{s[:-1]}.{s[-1]}"
    try:
        major, minor = s.split(".")
        return f"{int(major)}.{int(minor)}"
    except ValueError:
        return None


def native_mma(dtype: str, cc: str | float | None) -> bool | None:
    """Whether compute capability cc has native tensor-core MMA for dtype; None when dtype or cc is unknown."""
    info, key = dtype_info(dtype), _cc_key(cc)
    if info is None or key is None:
        return None
    return key in info.mma_ccs


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


def gpu_family(name: str | None) -> list[GpuSpec]:
    """The GPUs a short name stands for: every GPU whose name or an alias has, for each word of the query, a word
    starting with it ("h100" -> the SXM, PCIe and NVL parts; "a100" -> the four A100s), in catalogue order."""
    words = _norm(name or "").split()
    if not words:
        return []
    return [g for g in gpus() if any(all(any(t.startswith(w) for t in c.split()) for w in words)
                                     for c in [_norm(g.name)] + [_norm(a) for a in g.aliases])]


def closest_gpu_names(name: str, n: int = 3) -> list[str]:
    """The known GPU names nearest to name, best first.

    A query whose every word starts a word of a GPU's name or alias names a family: all its members come back
    ("h100" -> the SXM, PCIe and NVL parts; "mi300" -> MI300X; "rtx 6000 pro" -> the three RTX PRO 6000 editions).
    Otherwise the n nearest by spelling, a shared model number ("5090") counting more than spelling.
    """
    key = _norm(name)
    words = key.split()
    family: list[tuple[float, str]] = []
    scored: list[tuple[float, str]] = []
    for g in gpus():
        cands = [_norm(g.name)] + [_norm(a) for a in g.aliases]
        best = max(difflib.SequenceMatcher(None, key, c).ratio() for c in cands)
        if words and any(all(any(t.startswith(w) for t in c.split()) for w in words) for c in cands):
            family.append((best, g.name))
            continue
        # a shared model number (e.g. "6000", "5090") is a stronger hint than spelling
        if any(tok.isdigit() and tok in c.split() for tok in words for c in cands):
            best += 0.5
        scored.append((best, g.name))
    family.sort(key=lambda t: -t[0])
    scored.sort(key=lambda t: -t[0])
    if family:
        return [nm for _, nm in family[:8]]
    return [nm for _, nm in scored[:n]]


def gpu_names() -> list[str]:
    """Every GPU the catalogue knows, by the name nvidia-smi (or the vendor tool) prints."""
    return [g.name for g in gpus()]


def arch_caps(cc: str | float | None) -> ArchCaps | None:
    """Capabilities for a compute capability ("12.0", 12.0, "sm_120", "120")."""
    key = _cc_key(cc)
    return next((a for a in archs() if a.cc == key), None) if key else None


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
# A word in a question stands for the spellings the knowledge base uses (dtype words: from dtypes.yaml, plus the
# PTX instruction spellings of their tensor-core class).
_MMA_WORDS = {"fp4": ("mxf4", "mxf4nvf4"), "fp8": ("f8f6f4",)}
_SYNONYMS = {
    "moe": ("moe", "fused_moe", "expert"),
    "blackwell": ("blackwell", "sm100", "sm120", "sm_100", "sm_120"),
    "sm120": ("sm120", "sm_120", "12.0"),
    "sm100": ("sm100", "sm_100", "10.0"),
    "hopper": ("hopper", "sm90", "sm_90", "9.0"),
}
def _dtype_word(word: str) -> str | None:
    """The tensor peak a query word names when it is a dtype with a low- or half-precision peak ("nvfp4" -> "fp4")."""
    info = dtype_info(word)
    return info.tensor_peak if info and info.tensor_peak in ("fp4", "fp8", "bf16", "fp16") else None


def _dtype_synonyms(word: str) -> tuple[str, ...] | None:
    """Spellings a dtype word stands for: its entry's, its tensor peak, and for a class word (fp4, fp8) every
    dtype of that low-precision class (fp4 also finds nvfp4/mxfp4/e2m1)."""
    info = dtype_info(word)
    if info is None:
        return None
    group = [info]
    if info.lowp and info.name == info.lowp:
        group += [d for d in dtypes() if d.lowp == info.lowp and d is not info]
    out = [word] + [s.lower() for d in group for s in (d.name, *d.aliases)]
    out += [info.tensor_peak or info.name, *_MMA_WORDS.get(info.tensor_peak or "", ())]
    return tuple(dict.fromkeys(out))


def _terms(query: str) -> list[tuple[str, ...]]:
    words = [w for w in re.split(r"[^a-z0-9_.]+", query.lower())
             if w and w not in _STOPWORDS and (len(w) >= 3 or any(c.isdigit() for c in w))]
    return [_SYNONYMS.get(w) or _dtype_synonyms(w) or (w,) for w in dict.fromkeys(words)]


def dtype_support(dtype: str) -> dict[str, Any]:
    """Which architectures have native tensor cores for a dtype (fp4/fp8/bf16/fp16), with sources."""
    key = tensor_dtype(dtype)
    native = [a for a in archs() if native_mma(key, a.cc)]
    lacking = [a for a in archs() if a not in native]
    info = dtype_info(key)
    sources = sorted({src for a in native for src in a.sources} | set(info.sources if info else []))
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
    for e in _catalog().entries:
        consider("issue", f"{e.id}: {e.title}", f"{e.claim} {e.explanation} Fix: {' '.join(e.all_fixes())}", "; ".join(e.sources))
    for b in backends():
        ccs = ", ".join(str(c) for c in b.ccs)
        consider("backend", f"{b.library} {b.op} {b.backend}", f"supported CCs: {ccs}. {b.note or ''}".strip(), b.source)
    for c in cache_specs():
        fmt = c.info()
        consider("cache", f"{c.library} {c.name} ({c.format})",
                 f"paths: {', '.join(x.path for x in c.locations)}; env: {', '.join(c.env_vars)}; {fmt.content} "
                 f"{' '.join(fmt.notes)} Fix: {' '.join(fmt.fix)}", "; ".join(fmt.sources))
    for g in gpus():
        consider("gpu", g.name, f"{g.arch} CC {g.cc} {' '.join(g.aliases)} {' '.join(g.disputes)}", g.source)
    scored.sort(key=lambda x: (-x[0], x[1]))
    hits = [h for _, _, h in scored]
    named = dict.fromkeys(d for alts in terms for d in [_dtype_word(alts[0])] if d)
    return [dtype_support(d) for d in named] + hits[: max(limit - len(named), 0)]


def log_signatures() -> list[dict[str, str]]:
    """Every failure-mode catalog log pattern as the log scan takes it: entry id and a case-insensitive regex."""
    return _catalog().log_signatures()


def _catalog():
    # imported on first use: `investigate specs`/`roofline` never need the failure-mode catalog (CLI start-up time)
    from orchestrator.knowledge.catalog import catalog

    return catalog()


class ModelFamily(_Strict):
    """A model family by name (model_families.yaml): the case-insensitive pattern of its names, whether it is a
    mixture of experts, and the config.json that says so."""

    pattern: str
    moe: bool
    source: str
    mla: bool = False
    """Multi-head latent attention (config.json's kv_lora_rank): DeepSeek-V2/V3/R1 and the models built on them."""


@lru_cache(maxsize=None)
def model_families() -> tuple[ModelFamily, ...]:
    return tuple(ModelFamily.model_validate(x) for x in _load("model_families.yaml"))


def mla_by_name(name: str | None) -> bool | None:
    """Whether a served model's name is one of an MLA family (the first family its name matches), None when none."""
    if not name:
        return None
    import re

    low = name.lower()
    for fam in model_families():
        if re.search(fam.pattern, low):
            return fam.mla
    return None


def moe_by_name(name: str | None) -> tuple[bool, str] | None:
    """(is a mixture of experts, the source) for a served model's name, from the first family whose pattern it matches;
    None for a name no family matches."""
    if not name:
        return None
    import re

    low = name.lower()
    for fam in model_families():
        if re.search(fam.pattern, low):
            return fam.moe, fam.source
    return None
