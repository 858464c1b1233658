"""Typed evidence of the measurement probes: a GEMM sweep and an all-reduce sweep.

The fixed scripts (`probes/scripts/gemm_bench.py`, `comm_bench.py`) print the raw fields; `prongs/tensor_core_specs/probe.py`
validates them into these models and attaches the arithmetic (fractions of peak and of the roofline, bus bandwidth)
from `prongs/tensor_core_specs/arithmetic.py`. Fields the script or the arithmetic could not determine stay None.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.probes.results import GpuTopology, ProbeModel


class Peaks(BaseModel):
    """A GPU's dense tensor peaks per dtype and its memory bandwidth, with where they came from."""

    gpu: str
    dense_tflops: dict[str, float] = Field(default_factory=dict)
    """Dtype (bf16, fp8, nvfp4, mxfp4) -> dense (not sparse) tensor TFLOPS."""
    mem_bw_tbs: float | None = None
    """Memory bandwidth, TB/s (10^12 bytes per second)."""
    source: str = ""


class GemmShape(BaseModel):
    """One (N, K) the sweep times over M; `name` says what it is (gate_up, down, square)."""

    name: str
    n: int
    k: int


class ClockSample(BaseModel):
    """One power/clock reading taken while the sweep ran (t_s from the sweep's start)."""

    t_s: float
    gpu: int = 0
    power_w: float | None = None
    sm_clock_mhz: float | None = None
    utilization_pct: float | None = None


class GemmPoint(BaseModel):
    """One timed GEMM: C[M,N] = A[M,K] @ B[K,N] in one dtype."""

    shape: str
    dtype: str
    """bf16, fp8 (e4m3, per-tensor scales), nvfp4, mxfp4 — or fp32 on the CPU sanity path."""
    m: int
    n: int
    k: int
    ms: float
    """Median time of one GEMM over the repeats, milliseconds."""
    ms_min: float | None = None
    ms_max: float | None = None
    repeats: int = 0
    buffers: int = 1
    """Input sets rotated through so that the L2 does not hold the operands between calls."""
    timing: str | None = None
    """cuda_graph (one pass replayed as a graph: no launch overhead), eager, or cpu."""
    flops: float
    bytes: float
    """Bytes one GEMM must move at least: A, B read once, C written once (bf16 output)."""
    tflops: float
    gbps: float
    """Achieved bytes/s at the minimum traffic, in GB/s (10^9)."""
    t0_s: float | None = None
    t1_s: float | None = None
    """When the point ran, seconds from the sweep's start (to match clock samples)."""
    # Attached by the arithmetic when the dtype's peak is known:
    intensity: float | None = None
    """FLOP per byte of minimum traffic."""
    peak_tflops: float | None = None
    roofline_tflops: float | None = None
    """min(peak, intensity * bandwidth): the best this point can do."""
    fraction_of_peak: float | None = None
    fraction_of_roofline: float | None = None
    bound: Literal["memory", "compute"] | None = None
    """Which roof caps this point (intensity below or above the ridge)."""
    mean_power_w: float | None = None
    mean_sm_clock_mhz: float | None = None
    """Mean power and SM clock of the samples taken while the point ran: over its hold when it was held (a point
    alone is shorter than one sampling interval, so it usually has none)."""
    power_samples: int | None = None
    """How many samples those means are over."""
    # A held point (the decode-sized Ms the question is about) ran on, back to back, for hold_s seconds:
    hold_s: float | None = None
    hold_t0_s: float | None = None
    hold_t1_s: float | None = None
    hold_calls: int | None = None
    hold_ms: float | None = None
    """Mean time of one GEMM over the hold, milliseconds (a second timing of the same point)."""
    fraction_of_power_limit: float | None = None
    """mean_power_w over the sweep's power_limit_w, for a held point."""


class GpuActivity(BaseModel):
    """What ran on the target GPUs just before a measurement (scripts/_quiet.py): figures taken while another
    process used a GPU are that GPU's shared figures, never its own."""

    read: bool = False
    error: str | None = None
    gpus: list[dict[str, float | int | None]] = Field(default_factory=list)
    """index, utilization_pct, power_w, memory_used_mib per target GPU (the last reading)."""
    others: list[dict[str, float | int | str | None]] = Field(default_factory=list)
    """gpu_index, pid, name, used_memory_mib of each compute process that is not the measurement's."""
    shared_gpu: bool | None = None
    busy: list[int] = Field(default_factory=list)
    waited_s: float = 0.0
    wait_s: float = 0.0
    apps_error: str | None = None


class GemmSweep(ProbeModel):
    kind: Literal["gemm_sweep"] = "gemm_sweep"
    device: str | None = None
    """"cuda" or "cpu" (the CPU path is a sanity check only; available stays False there)."""
    gpu_name: str | None = None
    compute_cap: str | None = None
    gpu_index: int | None = None
    torch_version: str | None = None
    torch_cuda: str | None = None
    l2_bytes: int | None = None
    shapes: list[GemmShape] = Field(default_factory=list)
    m_values: list[int] = Field(default_factory=list)
    dtypes: list[str] = Field(default_factory=list)
    """Dtypes timed."""
    dtypes_skipped: dict[str, str] = Field(default_factory=dict)
    """Dtype -> why it was not timed (not native on this GPU, torch lacks the API, the kernel raised)."""
    points: list[GemmPoint] = Field(default_factory=list)
    planned_points: int = 0
    budget_s: float | None = None
    elapsed_s: float | None = None
    stopped_early: bool = False
    """True when the time budget ended the sweep before every planned point ran (`reason` says where)."""
    sampler: str | None = None
    """How power and clocks were read: pynvml, nvidia-smi, or None."""
    power_limit_w: float | None = None
    """The GPU's enforced power limit when the sweep ran, W."""
    holds_skipped: list[str] = Field(default_factory=list)
    """Points that were to be held but the budget had no time left for."""
    samples: list[ClockSample] = Field(default_factory=list)
    peaks: Peaks | None = None
    gpu_activity: GpuActivity | None = None
    shared_gpu: bool | None = None
    """True: another process used the GPU while this ran (the figures are shared, not the GPU's own)."""


class CommPoint(BaseModel):
    """All-reduce of one message size within groups of one size (all groups run at once)."""

    group_size: int
    groups: int = 1
    bytes: int
    dtype: str
    ms: float
    """Median over repeats of the mean time of one all-reduce; the slowest rank's, milliseconds."""
    ms_min: float | None = None
    iters: int = 0
    repeats: int = 0
    correct: bool | None = None
    """Whether the all-reduce's sum matched the expected value on every rank."""
    algbw_gbps: float | None = None
    busbw_gbps: float | None = None
    """NCCL-tests convention: algbw * 2(n-1)/n, GB/s (10^9)."""


class CommSweep(ProbeModel):
    kind: Literal["comm_sweep"] = "comm_sweep"
    backend: str | None = None
    """nccl or gloo."""
    world_size: int | None = None
    group_sizes: list[int] = Field(default_factory=list)
    sizes: list[int] = Field(default_factory=list)
    """Message sizes planned, bytes."""
    devices: list[str] = Field(default_factory=list)
    torch_version: str | None = None
    nccl_version: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    """Environment set in every rank (NVLink multicast off)."""
    points: list[CommPoint] = Field(default_factory=list)
    budget_s: float | None = None
    elapsed_s: float | None = None
    stopped_early: bool = False
    topology_raw: str | None = None
    """`nvidia-smi topo -m` output, verbatim."""
    topology: GpuTopology | None = None
    rank_errors: list[str] = Field(default_factory=list)
    """Last stderr line of each rank that failed."""
    gpu_activity: GpuActivity | None = None
    shared_gpu: bool | None = None
    """True: another process used a GPU while this ran (the figures are shared, not the GPUs' own)."""


MEASURE_MODELS: tuple[type[ProbeModel], ...] = (GemmSweep, CommSweep)
