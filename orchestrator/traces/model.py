"""The typed account of a trace: what the trace tool records as evidence and the analysis rules read."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _M(BaseModel):
    # a figure that is not finite is a reader's bug or a hostile trace's: refused here, never rendered as Infinity
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class StepRow(_M):
    """One step on the GPU timeline: from its first GPU activity to the next step's first (the last: to its end)."""

    index: int
    label: str
    start_us: float
    dur_us: float
    busy_us: dict[str, float] = Field(default_factory=dict)
    """Busy time by kernel class (an instant covered by several classes credited once, compute first)."""
    idle_us: dict[str, float] = Field(default_factory=dict)
    """Idle time by cause: host_bound, short_gap, other."""
    steady: bool = True
    excluded_because: str = ""


class KernelRow(_M):
    name: str
    cls: str
    count_per_step: float
    us_per_step: float
    share_of_step: float
    mean_us: float
    p50_us: float
    p99_us: float


class ClassRow(_M):
    cls: str
    us_per_step: float
    share_of_step: float


class IdleOwner(_M):
    """GPU idle time that fell inside a host-side range (user annotation / NVTX range) of the launching thread."""

    name: str
    us_per_step: float
    share_of_step: float
    gaps: int


class SyncRow(_M):
    """Host calls that block until the GPU (or a copy) is done."""

    name: str
    count_per_step: float
    host_us_per_step: float
    share_of_step: float
    idle_after_us_per_step: float
    """GPU idle that started within a short time after the call returned (the cost the GPU sees)."""


class LaunchStats(_M):
    launches: int
    launch_delay_p50_us: float
    launch_delay_p99_us: float
    runtime_over_50us: int
    runtime_over_50us_per_step: float
    kernels_shorter_than_launch: int
    kernels_shorter_than_launch_share: float
    launch_overhead_us_per_step: float
    """Host time in launch calls per step."""


class GemmRow(_M):
    """A GEMM whose shape was recorded (CPU op `Input Dims`), on the roofline of the GPU the trace names."""

    op: str
    m: int
    n: int
    k: int
    batch: int = 1
    dtype: str
    count: int
    mean_us: float
    achieved_tflops: float
    achieved_gbs: float
    peak_tflops: float | None = None
    bandwidth_gbs: float | None = None
    attainable_tflops: float | None = None
    fraction_of_attainable: float | None = None
    bound: str | None = None
    us_per_step: float = 0.0


class StreamRow(_M):
    stream: int
    device: int
    busy_us_per_step: float
    kernels_per_step: float
    idle_host_bound_us_per_step: float
    idle_short_gap_us_per_step: float
    idle_other_us_per_step: float


class Breakdown(_M):
    """Per steady step, averaged over the steady steps (microseconds and fractions of the step)."""

    step_us: float
    step_p50_us: float
    step_p99_us: float
    busy_us: float
    idle_us: float
    busy_share: float
    idle_share: float
    by_class_us: dict[str, float]
    idle_by_cause_us: dict[str, float]
    compute_us: float
    comm_us: float
    comm_overlapped_us: float
    comm_exposed_us: float
    copy_us: float
    """Memcpy/memset time not hidden under compute or communication."""


class RankAccount(_M):
    source: str
    rank: int | None
    fmt: Literal["kineto", "nsys"]
    gpu_name: str | None = None
    events_read: int = 0
    gpu_activities: int = 0
    runtime_calls: int = 0
    skipped: dict[str, int] = Field(default_factory=dict)
    step_source: str
    """How steps were found: `markers: NAME`, `periodic: anchor kernel NAME`, or `whole trace`."""
    steps_total: int
    steady_steps: int
    excluded: list[str] = Field(default_factory=list)
    window_start_us: float
    window_end_us: float
    breakdown: Breakdown
    steps: list[StepRow]
    classes: list[ClassRow]
    top_kernels: list[KernelRow]
    idle_owners: list[IdleOwner]
    sync_calls: list[SyncRow]
    launch: LaunchStats
    gemms: list[GemmRow]
    streams: list[StreamRow]
    collective_wait_us_per_step: float | None = None
    """Communication time spent waiting for the slowest rank (set when several ranks are compared)."""
    collective_wait_share: float | None = None


class Straggler(_M):
    rank: int | None
    source: str
    reason: str
    step_us: dict[str, float]
    """Median steady step time per rank (rank label -> us)."""
    late_us_per_step: float
    """How much later than the earliest rank this rank starts its collectives, per step (median)."""
    wait_caused_share: float
    """Mean share of the other ranks' step time they spend in collectives waiting for it."""


class DiffRow(_M):
    name: str
    cls: str
    base_us_per_step: float
    cur_us_per_step: float
    delta_us_per_step: float
    status: Literal["new", "gone", "changed"]


class TraceDiff(_M):
    baseline: str
    current: str
    base_step_us: float
    cur_step_us: float
    by_class: list[DiffRow]
    kernels: list[DiffRow]
    base_comm_overlapped_share: float | None
    cur_comm_overlapped_share: float | None
    idle_delta_us_per_step: dict[str, float]


class TraceReport(_M):
    kind: Literal["trace_report"] = "trace_report"
    files: list[str]
    ranks: list[RankAccount]
    straggler: Straggler | None = None
    diff: TraceDiff | None = None
    baseline: list[RankAccount] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
