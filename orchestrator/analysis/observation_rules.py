"""Reading the user's observations: what a parallelism comparison rules out, and what power vs limit says.

Follows KNOWLEDGE.md's caution: TP8 vs TP4+PP2 doubles each GPU's GEMM width at the same per-GPU share of work,
so a large drop under the wider shards points at the per-GPU GEMMs and rules out all-reduce as the main cost, but
does not separate compute- from memory-bound GEMMs; tokens per expert, intensity vs ridge and power do.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.observations import GpuObservation, Observations, RunObservation

# A throughput ratio beyond these reads as a real difference, not noise between runs.
SIGNIFICANT_RATIO = 1.3
# Power below this share of the limit while the GPU reads this busy means the SMs wait rather than compute.
LOW_POWER_FRACTION = 0.7
HIGH_POWER_FRACTION = 0.9
BUSY_FRACTION = 0.9

Verdict = Literal["gemm", "communication", "inconclusive"]


class ScalingComparison(BaseModel):
    """Two runs of the same workload on the same number of GPUs under different parallelism."""

    a: str
    b: str
    a_tok_s: float
    b_tok_s: float
    ratio: float
    """a / b throughput."""
    a_tp: int
    b_tp: int
    a_gpus: int | None = None
    b_gpus: int | None = None
    """The GPUs each run used, when they differ (a larger TP group on more GPUs)."""
    verdict: Verdict
    rules_out: list[str] = Field(default_factory=list)
    cannot_separate: list[str] = Field(default_factory=list)
    reasoning: str


PowerPattern = Literal["stall", "compute", "idle", "unclear"]
"""What power against the limit says the SMs do: wait (stall), run math (compute), little at all (idle), or unclear."""


class PowerReading(BaseModel):
    power_w: float
    limit_w: float
    fraction: float
    busy: float | None
    pattern: PowerPattern
    reasoning: str
    kernel_time: bool = False
    """`busy` is utilization.gpu (time a kernel ran), not SM occupancy."""

    @property
    def while_busy(self) -> str:
        """How a title says the GPU was busy: occupancy only when occupancy was given."""
        if self.kernel_time and self.busy is not None:
            return f"while a kernel ran {self.busy * 100:.0f} % of the time"
        return "at high occupancy"


class ObservationAnalysis(BaseModel):
    comparisons: list[ScalingComparison] = Field(default_factory=list)
    power: PowerReading | None = None
    notes: list[str] = Field(default_factory=list)


def _throughput(r: RunObservation) -> float | None:
    return r.total_tok_s if r.total_tok_s is not None else r.output_tok_s


def compare_runs(a: RunObservation, b: RunObservation) -> ScalingComparison | None:
    """Compare two runs on the same GPU count; a is the one with the larger TP degree."""
    ta, tb = _throughput(a), _throughput(b)
    if ta is None or tb is None or tb <= 0 or ta <= 0 or a.tp == b.tp:
        return None
    if a.tp < b.tp:
        a, b, ta, tb = b, a, tb, ta
    if a.gpus != b.gpus:
        return _more_gpus(a, b, ta, tb)
    ratio = ta / tb
    wide, narrow = b.name, a.name  # b has fewer GPUs per TP group: each GPU's GEMM shards are wider
    if ratio >= SIGNIFICANT_RATIO:
        return ScalingComparison(
            a=a.name, b=b.name, a_tok_s=ta, b_tok_s=tb, ratio=ratio, a_tp=a.tp, b_tp=b.tp, verdict="gemm",
            rules_out=["all-reduce communication as the dominant cost"],
            cannot_separate=["compute-bound vs memory-bound GEMMs", "kernel choice vs tile efficiency"],
            reasoning=(
                f"{narrow} ran {ratio:.2f}x faster than {wide} on the same {a.gpus} GPUs. Per token each GPU does the "
                f"same share of GEMM work in both, but under {wide} each GPU's GEMM shards are {a.tp // max(b.tp, 1)}x "
                f"wider (and pipeline micro-batches re-stream the stage's weights) while its all-reduces span fewer "
                f"GPUs. Throughput falling as the shards grow rules out all-reduce communication as the main cost and "
                f"puts it in the per-GPU GEMMs, i.e. kernel efficiency on this GPU. It cannot by itself separate "
                f"compute-bound from memory-bound GEMMs."
            ),
        )
    if ratio <= 1 / SIGNIFICANT_RATIO:
        return ScalingComparison(
            a=a.name, b=b.name, a_tok_s=ta, b_tok_s=tb, ratio=ratio, a_tp=a.tp, b_tp=b.tp, verdict="communication",
            rules_out=["per-GPU GEMM width as the dominant cost"],
            cannot_separate=["interconnect bandwidth vs synchronization latency"],
            reasoning=(
                f"{wide} (fewer GPUs per all-reduce) ran {1 / ratio:.2f}x faster than {narrow} on the same {a.gpus} "
                f"GPUs: the cost grows with the all-reduce group, which points at communication or synchronization "
                f"rather than the GEMMs."
            ),
        )
    return ScalingComparison(
        a=a.name, b=b.name, a_tok_s=ta, b_tok_s=tb, ratio=ratio, a_tp=a.tp, b_tp=b.tp, verdict="inconclusive",
        cannot_separate=["communication vs GEMM cost"],
        reasoning=f"{narrow} and {wide} are within {SIGNIFICANT_RATIO:.1f}x of each other ({ratio:.2f}x): no clear signal.",
    )


def read_power(power_w: float | None, limit_w: float | None, busy: float | None,
               kernel_time: bool = False) -> PowerReading | None:
    """Power vs limit at a given busy fraction: low power while busy -> the SMs stall (memory/sync), not math.

    `kernel_time`: the busy fraction is nvidia-smi's utilization.gpu, the share of time a kernel was running (NVML
    nvmlUtilization_t), not SM occupancy: the words say so."""
    if power_w is None or not limit_w:
        return None
    frac = power_w / limit_w
    busy_txt = "" if busy is None else (
        f" while a kernel ran {busy * 100:.0f} % of the time (utilization.gpu: time, not SM occupancy)" if kernel_time
        else f" at {busy * 100:.0f} % utilization")
    pattern: PowerPattern
    if busy is not None and busy >= BUSY_FRACTION and frac < LOW_POWER_FRACTION:
        pattern, why = "stall", (
            f"{power_w:.0f} W of {limit_w:.0f} W ({frac * 100:.0f} %){busy_txt}: the GPU is occupied but draws little "
            f"power, so its SMs mostly wait (on memory, barriers or communication) rather than run tensor-core math."
        ) if not kernel_time else (
            f"{power_w:.0f} W of {limit_w:.0f} W ({frac * 100:.0f} %){busy_txt}: kernels run nearly all the time but "
            f"draw little power, so they mostly wait (on memory, barriers or communication) or keep few SMs busy, "
            f"rather than run tensor-core math."
        )
    elif frac >= HIGH_POWER_FRACTION:
        pattern, why = "compute", (
            f"{power_w:.0f} W of {limit_w:.0f} W ({frac * 100:.0f} %){busy_txt}: near the power limit, the math units "
            f"are busy and clocks may be power-capped."
        )
    elif busy is not None and busy < 0.5:
        pattern, why = "idle", f"{power_w:.0f} W of {limit_w:.0f} W{busy_txt}: the GPU is mostly idle."
    else:
        pattern, why = "unclear", f"{power_w:.0f} W of {limit_w:.0f} W ({frac * 100:.0f} %){busy_txt}."
    return PowerReading(power_w=power_w, limit_w=limit_w, fraction=frac, busy=busy, pattern=pattern, reasoning=why,
                        kernel_time=kernel_time)


def read_gpu_observation(gpu: GpuObservation | None) -> PowerReading | None:
    if gpu is None:
        return None
    return read_power(gpu.power_w, gpu.power_limit_w, gpu.busy_fraction, kernel_time=gpu.sm_occupancy is None)


POOR_SCALING = 0.6
"""Throughput gained per GPU added, as a share of linear, at or below which a larger TP group on more GPUs did not pay
for its GPUs (doubling them gave at most 1.2x): what grows with the group, the all-reduce, is implicated."""


def _more_gpus(a: RunObservation, b: RunObservation, ta: float, tb: float) -> ScalingComparison | None:
    """A larger TP group on more GPUs (a) against a smaller one on fewer (b), all else equal (pipeline and expert
    parallelism): every added GPU takes a share of the weights and the GEMMs, and adds itself to every all-reduce. If
    the throughput barely grows, or falls, what the added GPUs paid for is the all-reduce (communication and
    synchronization), not the per-GPU work."""
    if (a.pp, a.ep) != (b.pp, b.ep) or a.gpus <= b.gpus or (a.concurrency, a.batch) != (b.concurrency, b.batch):
        return None
    gain, more = ta / tb, a.gpus / b.gpus
    verdict: Verdict = "communication" if gain / more <= POOR_SCALING else "inconclusive"
    how = (f"{'fell' if gain < 1 else 'grew only'} {gain:.2f}x with {more:g}x the GPUs "
           f"({a.name} on {a.gpus}: {ta:,.0f} tok/s; {b.name} on {b.gpus}: {tb:,.0f} tok/s)")
    return ScalingComparison(
        a=a.name, b=b.name, a_tok_s=ta, b_tok_s=tb, ratio=gain, a_tp=a.tp, b_tp=b.tp, a_gpus=a.gpus, b_gpus=b.gpus,
        verdict=verdict, rules_out=["per-GPU GEMM work as the dominant cost"] if verdict == "communication" else [],
        cannot_separate=["interconnect bandwidth vs synchronization latency"],
        reasoning=(f"Throughput {how}: each added GPU takes a share of the weights and GEMMs but joins every "
                   f"all-reduce, so the larger TP group's all-reduce (communication and synchronization) is what the "
                   f"added GPUs paid for." if verdict == "communication" else
                   f"Throughput {how}: {gain / more:.0%} of linear scaling, no clear signal."))


def analyze_observations(obs: Observations | None) -> ObservationAnalysis:
    """Every pairwise same-GPU-count comparison, and the power reading."""
    out = ObservationAnalysis()
    if obs is None:
        return out
    runs = obs.runs
    for i, a in enumerate(runs):
        for b in runs[i + 1:]:
            c = compare_runs(a, b)
            if c is not None:
                out.comparisons.append(c)
    out.power = read_gpu_observation(obs.gpu)
    if out.power and out.power.pattern == "stall" and any(c.verdict == "communication" for c in out.comparisons):
        out.notes.append("Low power at full utilization with faster small all-reduce groups: communication or synchronization.")
    return out
