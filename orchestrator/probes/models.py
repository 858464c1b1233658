"""Typed evidence: what each probe turns a host into.

Every probe returns one of these models; tools record it as the `data` of a `ToolResult` (with its `kind` tag), and
the analysis rules read it back from there. Fields a probe could not determine stay None: the rules must never
claim what a None does not show.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class ProbeModel(BaseModel):
    """Base of every probe result: whether the probe could look at all, and why not."""

    kind: str
    host: str = "local"
    available: bool = True
    """False when the probe could not look (no nvidia-smi, no python, host lost)."""
    reason: str | None = None
    """Why the probe was unavailable or partial, one line."""
    commands: list[str] = Field(default_factory=list)
    """Commands or files the probe read, for the evidence excerpt."""
    probe_s: float | None = None
    """Wall time of the probe on our side, seconds: its round trips to the host included (None: not timed, e.g. a
    transcript recorded before probes were timed). Probes of one host share results within a run, so a tool call
    that found its probe already done or under way can take far less than this."""
    timings: dict[str, float] = Field(default_factory=dict)
    """Where the probe's time went, phase -> seconds, as the probe measured it on the host (e.g. the kernel
    inventory's `walk`, `sources`, `listing`)."""


# --- GPU inventory ---------------------------------------------------------------------------------------------


class GpuInfo(BaseModel):
    index: int
    name: str
    """Product name exactly as nvidia-smi reports it (knowledge lookups use this)."""
    architecture: str | None = None
    """nvidia-smi's product_architecture (Hopper, Blackwell, ...)."""
    compute_cap: str | None = None
    """"major.minor", e.g. "12.0"."""
    pci_bus_id: str | None = None
    uuid: str | None = None
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None
    power_draw_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_mhz: float | None = None
    utilization_pct: float | None = None
    temperature_c: float | None = None
    clocks_throttle_reasons: list[str] = Field(default_factory=list)
    """Active clocks-event (throttle) reasons, e.g. sw_power_cap, hw_slowdown."""
    numa_node: int | None = None


class GpuLink(BaseModel):
    a: int
    b: int
    kind: str
    """nvidia-smi topo -m cell: X, NV#, PIX, PXB, PHB, NODE, SYS."""


class GpuTopology(BaseModel):
    links: list[GpuLink] = Field(default_factory=list)
    nvlink: bool = False
    """True when any GPU pair is connected by NVLink."""
    cpu_affinity: dict[int, str] = Field(default_factory=dict)
    numa_affinity: dict[int, str] = Field(default_factory=dict)
    raw: str = ""


class GpuInventory(ProbeModel):
    kind: Literal["gpu_inventory"] = "gpu_inventory"
    driver_version: str | None = None
    cuda_version: str | None = None
    gpus: list[GpuInfo] = Field(default_factory=list)
    topology: GpuTopology | None = None

    @property
    def count(self) -> int:
        return len(self.gpus)


# --- power and clocks --------------------------------------------------------------------------------------------


class PowerSample(BaseModel):
    t_s: float
    gpu: int
    power_w: float | None = None
    sm_clock_mhz: float | None = None
    utilization_pct: float | None = None


class GpuPowerSummary(BaseModel):
    gpu: int
    samples: int
    mean_power_w: float | None = None
    max_power_w: float | None = None
    power_limit_w: float | None = None
    mean_sm_clock_mhz: float | None = None
    max_sm_clock_mhz: float | None = None
    mean_utilization_pct: float | None = None


class PowerSampling(ProbeModel):
    kind: Literal["power_sampling"] = "power_sampling"
    duration_s: float = 0.0
    interval_s: float = 0.0
    samples: list[PowerSample] = Field(default_factory=list)
    summary: list[GpuPowerSummary] = Field(default_factory=list)


# --- python environment ----------------------------------------------------------------------------------------


class PythonEnv(ProbeModel):
    kind: Literal["python_env"] = "python_env"
    interpreter: str | None = None
    interpreter_source: str | None = None
    """Why this interpreter: "--python", "vllm process 1234", "python3 on PATH"."""
    interpreters_seen: list[str] = Field(default_factory=list)
    python_version: str | None = None
    virtualenv: str | None = None
    packages: dict[str, str] = Field(default_factory=dict)
    """Distribution name (normalized, lower-case, dashes) -> version, for the inference libraries we look for."""
    torch_cuda: str | None = None
    torch_arch_list: list[str] = Field(default_factory=list)
    """torch.cuda.get_arch_list() if torch imports, else from the installed build's metadata."""


# --- autotune caches ---------------------------------------------------------------------------------------------

CacheFormat = Literal[
    "flashinfer_autotune",
    "flashinfer_jit",
    "trtllm_autotuner",
    "vllm_fused_moe",
    "sglang_fused_moe",
    "vllm_flashinfer_autotune",
    "triton_autotune",
    "inductor",
    "tunableop",
]


class TunedEntry(BaseModel):
    op: str
    runner: str | None = None
    tactic: Any = None
    """Chosen tactic / config; -1 is the fallback tactic."""
    shape: str | None = None
    fallback: bool = False


class CacheFile(BaseModel):
    format: CacheFormat
    path: str
    size_bytes: int | None = None
    entries: int = 0
    fallback_entries: int = 0
    ops: list[str] = Field(default_factory=list)
    sample: list[TunedEntry] = Field(default_factory=list)
    """First entries, for evidence excerpts."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    metadata_mismatch: list[str] = Field(default_factory=list)
    """Metadata fields that disagree with the installed versions or this GPU (the cache would be skipped)."""
    device_name: str | None = None
    """Device the file was tuned for, when its name or metadata says."""
    matches_device: bool | None = None
    """Whether device_name matches this host's GPU name exactly (None when unknown)."""
    expert_shape: dict[str, Any] | None = None
    """E, N, dtype, block_shape for fused-MoE config files."""
    error: str | None = None
    """Why the file could not be parsed."""


class CacheLocation(BaseModel):
    format: CacheFormat
    path: str
    exists: bool
    env_var: str | None = None
    """Environment variable that moved this location, if any."""
    files: int = 0
    devices: list[str] = Field(default_factory=list)
    """Fused-MoE config locations: the device names configs exist for (as spelled in the file names)."""
    subdirs: list[str] = Field(default_factory=list)
    """Version/arch subdirectories (FlashInfer JIT cache, vLLM FlashInfer autotune cache, SGLang triton_X_Y_Z)."""


class AutotuneReport(ProbeModel):
    kind: Literal["autotune_caches"] = "autotune_caches"
    env: dict[str, str] = Field(default_factory=dict)
    """Cache-related environment variables found set (in the probe's environment or the serving process's)."""
    locations: list[CacheLocation] = Field(default_factory=list)
    files: list[CacheFile] = Field(default_factory=list)
    device_name: str | None = None
    persisted_any: bool = False
    """True when any persisted autotune result or tuned config (not only JIT binaries) exists."""
    tuned_config_for_device: bool | None = None
    """Whether a fused-MoE tuned config exists for this exact device name (and expert shape, when known)."""
    expert_shape: dict[str, Any] | None = None
    """E and N looked for, from the observations."""


# --- kernel inventory --------------------------------------------------------------------------------------------


class LibraryKernels(BaseModel):
    name: str
    version: str | None = None
    path: str | None = None
    tile_candidates: list[str] = Field(default_factory=list)
    """Per-arch tile shapes found in installed sources for this GPU's arch."""
    jit_arch_dirs: list[str] = Field(default_factory=list)
    compiled_archs: list[str] = Field(default_factory=list)
    """sm_XX (sm_90a ...) of the GPU code images compiled into the library's shared objects: read from each one's
    fatbin headers, or listed by `cuobjdump --list-elf` where the headers carry flags we do not know."""
    backends_for_arch: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class KernelInventory(ProbeModel):
    kind: Literal["kernel_inventory"] = "kernel_inventory"
    arch: str | None = None
    """sm_XX of the GPU looked for, e.g. sm_120."""
    libraries: list[LibraryKernels] = Field(default_factory=list)
    cuobjdump: bool = False


# --- log scan ----------------------------------------------------------------------------------------------------


class LogMatch(BaseModel):
    path: str
    line_no: int
    line: str
    signature_id: str


class LogScan(ProbeModel):
    kind: Literal["log_scan"] = "log_scan"
    files: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    lines_scanned: int = 0
    matches: list[LogMatch] = Field(default_factory=list)


def _probe_models() -> dict[str, type[ProbeModel]]:
    from orchestrator.probes.measure_models import MEASURE_MODELS

    return {
        m.model_fields["kind"].default: m
        for m in (GpuInventory, PowerSampling, PythonEnv, AutotuneReport, KernelInventory, LogScan, *MEASURE_MODELS)
    }


PROBE_MODELS: dict[str, type[ProbeModel]] = {}
"""Probe model by `kind`; filled on first use (the measurement models import this module)."""


def parse_probe(data: dict[str, Any] | None) -> ProbeModel | None:
    """Turn a recorded `data` payload back into its probe model (None when it is not a known probe)."""
    if not PROBE_MODELS:
        PROBE_MODELS.update(_probe_models())
    if not data or data.get("kind") not in PROBE_MODELS:
        return None
    return PROBE_MODELS[data["kind"]].model_validate(data)
