"""The user's observations (`--observations FILE`, YAML or JSON), parsed at the edge into typed models.

Every field is optional; an unknown key is an error naming the key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelInfo(_Strict):
    name: str | None = None
    quantization: str | None = None
    """nvfp4, mxfp4, fp8, bf16, ..."""
    num_layers: int | None = None
    num_experts: int | None = None
    top_k: int | None = None
    hidden_size: int | None = None
    moe_intermediate_size: int | None = None
    intermediate_size: int | None = None
    num_moe_layers: int | None = None
    active_params_b: float | None = None


class RunObservation(_Strict):
    """One serving configuration and what it achieved."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    concurrency: int | None = None
    batch: int | None = None
    """Decode batch per step; default: concurrency."""
    input_len: int | None = None
    output_len: int | None = None
    total_tok_s: float | None = None
    output_tok_s: float | None = None
    label: str | None = None

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def decode_batch(self) -> int | None:
        return self.batch if self.batch is not None else self.concurrency

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        parts = [f"TP{self.tp}"]
        if self.pp > 1:
            parts.append(f"PP{self.pp}")
        if self.ep > 1:
            parts.append(f"EP{self.ep}")
        if self.dp > 1:
            parts.append(f"DP{self.dp}")
        return "+".join(parts)


class GpuObservation(_Strict):
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_occupancy: float | None = None
    """A fraction, 0..1."""
    utilization_pct: float | None = None
    """nvidia-smi's utilization.gpu, 0..100."""
    name: str | None = None
    count: int | None = None

    @property
    def busy_fraction(self) -> float | None:
        if self.sm_occupancy is not None:
            return self.sm_occupancy
        if self.utilization_pct is not None:
            return self.utilization_pct / 100.0
        return None


BenchFormat = Literal["vllm-bench-serve", "sglang-bench-serving", "genai-perf"]


class Latency(_Strict):
    """One latency metric's distribution, in milliseconds."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    std: float | None = None

    @property
    def empty(self) -> bool:
        return all(v is None for v in (self.mean, self.p50, self.p90, self.p95, self.p99))


class BenchResult(_Strict):
    """One benchmark run as an observation."""

    format: BenchFormat
    source: str = ""
    label: str | None = None
    model: str | None = None
    backend: str | None = None
    request_rate: float | str | None = None
    """Requests/s offered; "inf" when every request was sent at once."""
    max_concurrency: int | None = None
    completed: int | None = None
    failed: int | None = None
    duration_s: float | None = None
    input_len: float | None = None
    """Mean input tokens per request."""
    output_len: float | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None
    """Output tokens/s over the run."""
    total_token_throughput: float | None = None
    ttft: Latency | None = None
    tpot: Latency | None = None
    itl: Latency | None = None
    e2el: Latency | None = None

    @property
    def name(self) -> str:
        bits = [self.label or self.backend or self.format]
        if self.max_concurrency:
            bits.append(f"concurrency {self.max_concurrency}")
        elif self.request_rate is not None:
            bits.append(f"{self.request_rate} req/s")
        return ", ".join(bits)


class Observations(_Strict):
    model: ModelInfo | None = None
    runs: list[RunObservation] = []
    gpu: GpuObservation | None = None
    bench: list[BenchResult] = []
    """Benchmark runs read from `--bench FILE` (orchestrator/benchresults.py): TTFT/TPOT/ITL at a load."""
    notes: str | None = None


class ObservationsError(ValueError):
    """The observations file is missing or does not fit; the message names the file, the field and the fix."""


def load_observations(path: str | Path) -> Observations:
    p = Path(path)
    if not p.is_file():
        raise ObservationsError(f"observations file {p} not found; pass an existing YAML or JSON file to --observations")
    text = p.read_text(encoding="utf-8")
    try:
        raw = json.loads(text) if p.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where is not None else (f" at line {exc.lineno}" if hasattr(exc, "lineno") else "")
        raise ObservationsError(f"observations file {p} is not valid YAML/JSON{line}; fix the syntax") from None
    return parse_observations(raw or {}, source=str(p))


def parse_observations(raw: object, source: str = "observations") -> Observations:
    if not isinstance(raw, dict):
        raise ObservationsError(f"{source}: expected a mapping with keys model, runs, gpu, notes")
    try:
        return Observations.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        if err["type"] == "extra_forbidden":
            raise ObservationsError(
                f"{source}: unknown key {loc!r}; allowed keys are described in the README's observations section"
            ) from None
        raise ObservationsError(f"{source}: field {loc!r}: {err['msg']}") from None
