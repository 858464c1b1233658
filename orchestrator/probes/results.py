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

    def facts(self) -> dict[str, str | int | float | bool]:
        """Flat dotted facts for the failure-mode catalog (see orchestrator/analysis/facts.py); {} by default.

        Namespaces: `gpu.<index>.*`, `host.*`, `env.<NAME>`, `nccl.*`, `lib.<name>.version`, `engine.*`,
        `metrics.*`, `obs.*`, `cache.*`. Values that are unknown are left out, never None.
        """
        return {}

    def log_lines(self) -> list[tuple[str, str, int, str]]:
        """(source, path, line number, line) for the catalog's `log` signals; source is server, kernel, nccl or
        engine. [] by default."""
        return []


def norm_lib(name: str) -> str:
    """A distribution name as the knowledge base spells it (lower case, dashes; flashinfer -> flashinfer-python)."""
    n = name.lower().replace("_", "-")
    return {"flashinfer": "flashinfer-python", "tensorrt-llm": "tensorrt-llm"}.get(n, n)


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

    def facts(self) -> dict[str, str | int | float | bool]:
        """`gpu.<index>.{name, bus_id, cc, architecture, power.draw_w, power.limit_w, clocks.sm_mhz,
        clocks.max_sm_mhz, clocks.mem_mhz, utilization_pct, temperature_c, memory.total_mib, memory.used_mib,
        numa_node, clocks_event.<reason>}` (reasons listed as active are True) and `host.{gpu_count,
        driver_version, cuda_version, nvlink}`."""
        out: dict[str, str | int | float | bool] = {"host.gpu_count": self.count}
        if self.driver_version:
            out["host.driver_version"] = self.driver_version
        if self.cuda_version:
            out["host.cuda_version"] = self.cuda_version
        if self.topology is not None and self.topology.links:
            out["host.nvlink"] = self.topology.nvlink
        for g in self.gpus:
            p = f"gpu.{g.index}."
            vals = {"name": g.name, "bus_id": g.pci_bus_id, "cc": g.compute_cap, "architecture": g.architecture,
                    "power.draw_w": g.power_draw_w, "power.limit_w": g.power_limit_w,
                    "clocks.sm_mhz": g.sm_clock_mhz, "clocks.max_sm_mhz": g.sm_clock_max_mhz,
                    "clocks.mem_mhz": g.mem_clock_mhz, "utilization_pct": g.utilization_pct,
                    "temperature_c": g.temperature_c, "memory.total_mib": g.memory_total_mib,
                    "memory.used_mib": g.memory_used_mib, "numa_node": g.numa_node}
            out.update({p + k: v for k, v in vals.items() if v is not None})
            for reason in g.clocks_throttle_reasons:
                out[p + "clocks_event." + reason.strip().lower().replace(" ", "_")] = True
        return out


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

    def facts(self) -> dict[str, str | int | float | bool]:
        """`lib.<normalized distribution name>.version`, `python.version`, `torch.cuda`, `torch.arch_list`
        (comma-separated)."""
        out: dict[str, str | int | float | bool] = {
            f"lib.{norm_lib(name)}.version": ver for name, ver in self.packages.items() if ver}
        if self.python_version:
            out["python.version"] = self.python_version
        if self.torch_cuda:
            out["torch.cuda"] = self.torch_cuda
        if self.torch_arch_list:
            out["torch.arch_list"] = ",".join(self.torch_arch_list)
        return out


# --- autotune caches ---------------------------------------------------------------------------------------------

CacheFormat = str
"""A cache format named in knowledge/caches.yaml (`format`); parsers register per format in prongs/autotune/cache_formats.py.
A plain string so that a new format is a data change, not a schema change."""


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
    cache: str | None = None
    """The caches.yaml cache (`name`) whose location held the file."""


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
    cache: str | None = None
    """The caches.yaml cache (`name`) this location belongs to."""
    bytes: int | None = None
    fstype: str | None = None
    """File system holding the location (or its nearest existing parent), from /proc/mounts."""
    in_tmp: bool | None = None
    """On tmpfs/ramfs or under /tmp, /dev/shm, /run: a reboot or container restart wipes it."""
    truncated: bool = False
    """The walk stopped at its file limit (counts are lower bounds)."""


class CacheState(BaseModel):
    """One cache of knowledge/caches.yaml on this host, summed over its locations (the cache.<name>.* facts)."""

    name: str
    library: str
    kind: str
    """autotune | tuned_config | jit."""
    format: str
    path: str
    """Where it is (the first existing location), else where the library would put it."""
    present: bool
    """A location exists and holds at least one file."""
    files: int = 0
    bytes: int = 0
    env_set: bool = False
    """A variable that moves this cache is set (in the serving process's environment or the probe's)."""
    in_tmp: bool = False
    """It lives (or would be written) on tmpfs or under /tmp, /dev/shm, /run: a restart wipes it."""
    persisted: bool = False
    """It survives a restart and is usable: present, not in_tmp, and (autotune and tuned-config caches) holding at
    least one result the library would use here (this device, no metadata mismatch that skips it, entries > 0)."""
    result_files: int = 0
    usable_files: int = 0
    mismatched_files: int = 0
    """Result files for another device or whose metadata disagrees with the installed versions."""
    limit_bytes: int | None = None
    """Size beyond which the library evicts (CUDA_CACHE_MAXSIZE or its default)."""


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
    caches: list[CacheState] = Field(default_factory=list)
    """Per-cache state (knowledge/caches.yaml `caches`), the source of the cache.* facts."""

    def facts(self) -> dict[str, str | int | float | bool]:
        """Flat facts for the catalog's signals.

        - `cache.<name>.{present, files, bytes, persisted, env_set, in_tmp, path, kind, library, result_files,
          usable_files, mismatched_files, entries, fallback_entries, limit_bytes}` for every cache of
          knowledge/caches.yaml the probe looked for (flashinfer_jit, trtllm_autotuner, vllm_fused_moe,
          sglang_fused_moe, vllm_flashinfer_autotune, triton, inductor, tunableop, deep_gemm, vllm_torch_compile,
          cuda_compute_cache, user_given): see CacheState;
        - `cache.format.<format>.{files, entries, fallback_entries, metadata_mismatch, location_exists}` per parsed
          file format;
        - `cache.persisted_any`, `cache.tuned_config_for_device` (when known), `cache.device_name`;
        - `env.<NAME>` for the cache environment variables found set.
        """
        if not self.available:
            return {}
        out: dict[str, str | int | float | bool] = {"cache.persisted_any": self.persisted_any}
        if self.tuned_config_for_device is not None:
            out["cache.tuned_config_for_device"] = self.tuned_config_for_device
        if self.device_name:
            out["cache.device_name"] = self.device_name
        for c in self.caches:
            for key, value in c.model_dump(exclude={"name", "format"}).items():
                if value is not None:
                    out[f"cache.{c.name}.{key}"] = value
            mine = [f for f in self.files if f.cache == c.name]
            out[f"cache.{c.name}.entries"] = sum(f.entries for f in mine)
            out[f"cache.{c.name}.fallback_entries"] = sum(f.fallback_entries for f in mine)
        for loc in self.locations:
            key = f"cache.format.{loc.format}.location_exists"
            out[key] = bool(out.get(key)) or loc.exists
        for f in self.files:
            p = f"cache.format.{f.format}."
            out[p + "files"] = int(out.get(p + "files", 0)) + 1
            out[p + "entries"] = int(out.get(p + "entries", 0)) + f.entries
            out[p + "fallback_entries"] = int(out.get(p + "fallback_entries", 0)) + f.fallback_entries
            out[p + "metadata_mismatch"] = bool(out.get(p + "metadata_mismatch")) or bool(f.metadata_mismatch)
        for k, v in self.env.items():
            out[f"env.{k}"] = v
        return out


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

    def facts(self) -> dict[str, str | int | float | bool]:
        """`lib.<name>.version`, `kernels.arch`, `kernels.<name>.compiled_archs` (comma-separated),
        `kernels.<name>.tile_candidates` (count)."""
        out: dict[str, str | int | float | bool] = {}
        if self.arch:
            out["kernels.arch"] = self.arch
        for lib in self.libraries:
            n = norm_lib(lib.name)
            if lib.version:
                out[f"lib.{n}.version"] = lib.version
            if lib.compiled_archs:
                out[f"kernels.{n}.compiled_archs"] = ",".join(lib.compiled_archs)
            out[f"kernels.{n}.tile_candidates"] = len(lib.tile_candidates)
        return out


# --- log scan ----------------------------------------------------------------------------------------------------


class LogMatch(BaseModel):
    path: str
    line_no: int
    line: str
    signature_id: str


class UnclassifiedLine(BaseModel):
    """A WARNING/ERROR (or known-library trouble) line no catalog signature matched, with its repeat count."""

    path: str
    line_no: int
    line: str
    count: int = 1
    """Lines with the same text once numbers, ids and timestamps are masked."""
    level: Literal["error", "warning", "library"] = "warning"


class LogSkip(BaseModel):
    """The middle of a log larger than the byte budget, counted but not read (its start and its end were)."""

    path: str
    bytes: int
    lines: int
    from_line: int

    @property
    def text(self) -> str:
        last = self.from_line + self.lines - 1
        return (f"{self.path}: lines {self.from_line:,}-{last:,} ({self.bytes / 1e6:,.1f} MB) not read: the log is "
                f"larger than the {MAX_LOG_BYTES / 1e6:,.0f} MB read; its start and its end were")


MAX_LOG_BYTES = 16_000_000
"""How much of one `--log` file a probe reads: all of a smaller one; of a larger one its start (the engine's
arguments and configuration) and its end (its latest state). A 334 MB vLLM log took past the probes' timeouts, so
nothing was read."""


class LogScan(ProbeModel):
    kind: Literal["log_scan"] = "log_scan"
    files: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    lines_scanned: int = 0
    matches: list[LogMatch] = Field(default_factory=list)
    unclassified: list[UnclassifiedLine] = Field(default_factory=list)
    """WARNING/ERROR and known-library trouble lines no signature matched: deduplicated, counted, capped."""
    unclassified_total: int = 0
    """How many such lines there were in all (before deduplication and the cap)."""
    refused: dict[str, str] = Field(default_factory=dict)
    """Paths not read, and why (not a log file: /proc, /sys, a device, a FIFO; a credential), one line each."""
    skipped: list[LogSkip] = Field(default_factory=list)
    """Logs larger than MAX_LOG_BYTES: the lines between their start and their end, not read."""

    def log_lines(self) -> list[tuple[str, str, int, str]]:
        """Every matched line once (the `--log` files are server logs)."""
        seen: dict[tuple[str, int], tuple[str, str, int, str]] = {}
        for m in self.matches:
            seen.setdefault((m.path, m.line_no), ("server", m.path, m.line_no, m.line))
        return list(seen.values())


def _probe_models() -> dict[str, type[ProbeModel]]:
    from orchestrator.prongs import parts  # each prong's models, named in its record

    models: list[type[ProbeModel]] = [GpuInventory, PowerSampling, PythonEnv, AutotuneReport, KernelInventory, LogScan]
    for part in parts("probe_models"):
        models.extend(part if isinstance(part, tuple) else (part,))
    return {m.model_fields["kind"].default: m for m in models}


PROBE_MODELS: dict[str, type[ProbeModel]] = {}
"""Probe model by `kind`; filled on first use (the prongs' models import this module)."""


def parse_probe(data: dict[str, Any] | None) -> ProbeModel | None:
    """Turn a recorded `data` payload back into its probe model (None when it is not a known probe)."""
    if not PROBE_MODELS:
        PROBE_MODELS.update(_probe_models())
    if not data or data.get("kind") not in PROBE_MODELS:
        return None
    return PROBE_MODELS[data["kind"]].model_validate(data)
