"""Before and after (regressions): two benchmark runs and two engine logs compared, as data the settings
rules rank changed defaults and changed settings with.

- Two runs (`--bench AFTER --baseline BEFORE`, or `--bench` twice: first = before): throughput, TTFT, TPOT and ITL
  per statistic (mean, p50, p90, p95, p99), which symptoms got worse, and whether the two runs offered the same load
  (model, concurrency, request rate, input and output lengths) — a comparison at two loads is said to be one.
- Two logs (`--log AFTER --baseline-log BEFORE`): each log's engine, version and printed settings (vLLM's "non-default
  args" / "args: Namespace(...)" / "with config:", SGLang's "server_args=ServerArgs(...)"), and the settings whose
  value differs between them.

Pure: observations and log lines in, comparisons out.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from orchestrator.findings import Symptom
from orchestrator.observations import BenchResult, Latency
from orchestrator.prongs.serving_engine.logs import (RX_ARGS_NAMESPACE, RX_ENGINE_CONFIG, RX_NON_DEFAULT, RX_SERVER_ARGS,
                                             RX_VERSION, _kv_pairs)

WORSE_PCT = 5.0
"""A change smaller than this (in %) is run-to-run noise, not a regression."""
LOAD_TOLERANCE = 0.05
"""Mean input/output lengths within 5 % are the same load (random datasets vary a little)."""

BASELINE_LABEL = "baseline"

_LATENCIES: list[tuple[str, str, Symptom]] = [("ttft", "TTFT", "ttft"), ("tpot", "TPOT", "itl"), ("itl", "ITL", "itl"),
                                              ("e2el", "end-to-end latency", "itl")]
_STATS = ("mean", "p50", "p90", "p95", "p99")


@dataclass
class MetricChange:
    metric: str
    """`output throughput`, `TTFT p50`, ..."""
    before: float
    after: float
    unit: str
    symptom: Symptom
    higher_better: bool = False

    @property
    def change_pct(self) -> float:
        return (self.after - self.before) / self.before * 100 if self.before else 0.0

    @property
    def worse(self) -> bool:
        c = self.change_pct
        return (c < -WORSE_PCT) if self.higher_better else (c > WORSE_PCT)

    def shown(self) -> str:
        return (f"{self.metric} {self.before:g} -> {self.after:g} {self.unit} ({self.change_pct:+.0f} %"
                f"{', worse' if self.worse else ''})")


@dataclass
class BenchComparison:
    before: BenchResult
    after: BenchResult
    changes: list[MetricChange] = field(default_factory=list)
    load_differences: list[str] = field(default_factory=list)
    """Empty when both runs offered the same load."""

    @property
    def worse(self) -> set[Symptom]:
        return {c.symptom for c in self.changes if c.worse}

    def sentence(self, symptoms: set[Symptom] | None = None) -> str:
        """One sentence: the runs, the metrics that changed most on the symptoms given (all when None), the load."""
        shown = [c for c in self.changes if symptoms is None or c.symptom in symptoms]
        head = (f"The benchmark runs given (before: {self.before.source or self.before.name}; after: "
                f"{self.after.source or self.after.name})")
        load = ("at the same load (" + _load(self.after) + ")" if not self.load_differences else
                "at different loads (" + "; ".join(self.load_differences) + "), so part of the change is the load's")
        if not shown:
            return f"{head} were taken {load}."
        return f"{head} were taken {load}: " + "; ".join(c.shown() for c in shown) + "."


def bench_pair(runs: Iterable[BenchResult]) -> tuple[BenchResult, BenchResult] | None:
    """(before, after): the run labelled `baseline` (`--baseline FILE`) and the last other run, else the first and the
    last run given (`--bench BEFORE --bench AFTER`); None with fewer than two."""
    runs = list(runs)
    base = [r for r in runs if r.label == BASELINE_LABEL]
    rest = [r for r in runs if r.label != BASELINE_LABEL]
    if base and rest:
        return base[0], rest[-1]
    if len(runs) >= 2:
        return runs[0], runs[-1]
    return None


def _stat(lat: Latency | None, stat: str) -> float | None:
    return getattr(lat, stat) if lat is not None else None


def compare_bench(before: BenchResult, after: BenchResult) -> BenchComparison:
    out = BenchComparison(before=before, after=after)
    for name, label, unit in (("output_throughput", "output throughput", "tok/s"),
                              ("request_throughput", "request throughput", "req/s")):
        a, b = getattr(before, name), getattr(after, name)
        if a and b is not None:
            out.changes.append(MetricChange(label, a, b, unit, "throughput", higher_better=True))
    for name, label, symptom in _LATENCIES:
        for stat in _STATS:
            a, b = _stat(getattr(before, name), stat), _stat(getattr(after, name), stat)
            if a and b is not None:
                out.changes.append(MetricChange(f"{label} {stat}", a, b, "ms", symptom))
    out.load_differences = _load_differences(before, after)
    return out


def _load(r: BenchResult) -> str:
    bits = []
    if r.max_concurrency:
        bits.append(f"concurrency {r.max_concurrency}")
    if r.request_rate is not None:
        bits.append(f"request rate {r.request_rate}")
    if r.input_len:
        bits.append(f"{r.input_len:g} input tokens")
    if r.output_len:
        bits.append(f"{r.output_len:g} output tokens")
    return ", ".join(bits) or "load not recorded"


def _load_differences(a: BenchResult, b: BenchResult) -> list[str]:
    out = []
    for name, label in (("model", "model"), ("max_concurrency", "concurrency"), ("request_rate", "request rate")):
        x, y = getattr(a, name), getattr(b, name)
        if x is not None and y is not None and str(x) != str(y):
            out.append(f"{label} {x} before, {y} after")
    for name, label in (("input_len", "input tokens"), ("output_len", "output tokens")):
        x, y = getattr(a, name), getattr(b, name)
        if x and y and abs(y - x) / x > LOAD_TOLERANCE:
            out.append(f"{label} {x:g} before, {y:g} after")
    return out


# --- logs ------------------------------------------------------------------------------------------------------------

@dataclass
class LogSnapshot:
    """What one engine log says about the engine: its project, version and printed settings."""

    source: str
    project: str | None = None
    version: str | None = None
    settings: dict[str, str] = field(default_factory=dict)
    complete: bool = False
    """True when the log printed every argument (Namespace, ServerArgs): a key it lacks is not a default."""
    dumped: set[str] = field(default_factory=set)
    """Keys only the engine's config dump printed ("with config: ..."): compared only when both logs print them."""


def _shown(v: Any) -> str:
    if isinstance(v, str):
        return v
    return repr(v)


def log_snapshot(lines: Iterable[str], source: str) -> LogSnapshot:
    snap = LogSnapshot(source=source)
    for line in lines:
        for rx in RX_VERSION:
            m = rx.search(line)
            if m and snap.version is None:
                snap.version = m.group(1)
                snap.project = ("trtllm" if "TensorRT-LLM" in line else "sglang" if "sglang" in line.lower()
                                else "vllm")
        m = RX_NON_DEFAULT.search(line)
        if m:
            snap.project = snap.project or "vllm"
            try:
                d = ast.literal_eval(m.group(1))
            except (ValueError, SyntaxError):
                d = {}
            for k, v in (d.items() if isinstance(d, dict) else []):
                snap.settings[str(k)] = _shown(v)
        for rx, project in ((RX_ARGS_NAMESPACE, "vllm"), (RX_SERVER_ARGS, "sglang")):
            m = rx.search(line)
            if m:
                snap.project = snap.project or project
                snap.complete = True
                for k, raw in _kv_pairs(m.group(1)).items():
                    snap.settings[k] = raw.strip().strip("'\"")
        m = RX_ENGINE_CONFIG.search(line)
        if m:  # vLLM's engine config: its own names (`enforce_eager=False`), every field printed
            for k, raw in _kv_pairs(m.group(1)).items():
                if k not in snap.settings:
                    snap.settings[k] = raw.strip().strip("'\"")
                    snap.dumped.add(k)
    return snap


_IGNORED = re.compile(r"^(model_tag|model|served_model_name|tokenizer|host|port|subparser|dispatch_function|"
                      r"api_key|ssl_\w+|allowed_\w+|uvicorn_\w+|seed|download_dir|model_path|tokenizer_path)$")


def setting_changes(before: LogSnapshot, after: LogSnapshot) -> list[tuple[str, str | None, str | None]]:
    """(setting, value before, value after) for every printed setting that differs; None: not printed (its default,
    when that log prints only the non-default ones)."""
    out = []
    for k in sorted(set(before.settings) | set(after.settings)):
        if _IGNORED.match(k):
            continue
        a, b = before.settings.get(k), after.settings.get(k)
        if (a is None or b is None) and (k in before.dumped or k in after.dumped):
            continue  # in one config dump only: the other log has none to compare with
        if a is None and before.complete or b is None and after.complete:
            continue  # printed in full on one side only: a field of one version, not a change the user made
        if a != b:
            out.append((k, a, b))
    return out
