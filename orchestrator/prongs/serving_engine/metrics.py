"""An engine's Prometheus exposition text -> per-metric summaries, with `prometheus_client`'s text parser.

Gauges and counters are summed over their label sets (vLLM labels every series with model_name and engine, the DP
index; SGLang with tp_rank/pp_rank, where gauges repeat per rank: they are averaged instead); histograms give count,
sum, mean and the p50/p90/p99 interpolated from their cumulative buckets (as PromQL's histogram_quantile does).
Metric names as the engines expose them (FIELD.md section 5): vllm:*, sglang:*, trtllm_*, tgi_*. The counter
suffix `_total` is part of the name as exposed (vllm:num_preemptions_total).
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel


class MetricSummary(BaseModel):
    name: str
    type: str
    value: float | None = None
    """Gauges/counters: the sum (or, for per-rank gauges, the mean) over label sets."""
    count: float | None = None
    sum: float | None = None
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    series: int = 0
    labels: dict[str, str] = {}
    """Info gauges (`*_info`, e.g. vllm:cache_config_info): the labels of the first series, which carry config."""
    tail: list[float] = []
    """Histograms: the highest occupied bucket as [lower bound, upper bound, requests in it] (a few prompts far
    longer than the rest)."""
    by: dict[str, float] = {}
    """Counters and gauges labelled by how a request ended (`finished_reason`, `reason`: vLLM's and TensorRT-LLM's
    `request_success_total{finished_reason=stop|length|abort}`) or by model (Triton's nv_inference_*{model=...}): the
    value per label value, summed over the rest."""


_PER_RANK_LABELS = {"tp_rank", "pp_rank", "rank"}
_SPLIT_LABELS = ("finished_reason", "finish_reason", "reason", "model", "request_type", "general_type")
"""Labels whose values are kept apart (`MetricSummary.by`): how requests ended is what the request account reads."""


def _quantile(q: float, buckets: list[tuple[float, float]]) -> float | None:
    """histogram_quantile over cumulative (upper bound, count) buckets, sorted by bound."""
    if not buckets:
        return None
    total = buckets[-1][1]
    if total <= 0:
        return None
    rank = q * total
    prev_le, prev_c = 0.0, 0.0
    for le, c in buckets:
        if c >= rank:
            if math.isinf(le):
                return prev_le  # the last finite bound: the quantile is above it
            if c == prev_c:
                return le
            return prev_le + (le - prev_le) * (rank - prev_c) / (c - prev_c)
        prev_le, prev_c = le, c
    return buckets[-1][0]


def parse_metrics(text: str) -> tuple[dict[str, MetricSummary], str | None]:
    """(summaries by exposed name, parse error or None). A partial parse keeps what was read before an error."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, MetricSummary] = {}
    error = None
    try:
        for fam in text_string_to_metric_families(text):
            _family(fam, out)
    except Exception as exc:  # malformed exposition: keep what parsed
        error = f"{type(exc).__name__}: {str(exc)[:200]}"
    return out, error


def _real(value: float, *, counted: bool) -> bool:
    """Whether a sample's value can be what an engine counted or measured: finite, within METRIC_MAX_ABS, and not
    negative where it counts (a counter, a bucket, a count). The exposition format allows NaN, +Inf and any float,
    and whoever answers on the engine's port writes it: `vllm:num_requests_running +Inf` made the serving floors'
    `int(running)` raise, and NaN counts made NaN floors."""
    from orchestrator.limits import METRIC_MAX_ABS

    return math.isfinite(value) and abs(value) <= METRIC_MAX_ABS and (value >= 0 or not counted)


def _family(fam: Any, out: dict[str, MetricSummary]) -> None:
    if fam.type in ("histogram", "gaugehistogram"):
        buckets: dict[float, float] = {}
        count = total = 0.0
        series = set()
        for s in fam.samples:
            labels = {k: v for k, v in s.labels.items() if k != "le"}
            series.add(tuple(sorted(labels.items())))
            if not _real(s.value, counted=not s.name.endswith("_sum")):
                continue
            if s.name.endswith("_bucket"):
                try:
                    le = float(s.labels.get("le", "inf"))
                except ValueError:
                    continue
                if math.isnan(le):
                    continue
                buckets[le] = buckets.get(le, 0.0) + s.value
            elif s.name.endswith("_count"):
                count += s.value
            elif s.name.endswith("_sum"):
                total += s.value
        ordered = sorted(buckets.items())
        tail: list[float] = []
        for i in range(len(ordered) - 1, 0, -1):
            if ordered[i][1] > ordered[i - 1][1]:
                if math.isfinite(ordered[i][0]):
                    tail = [ordered[i - 1][0], ordered[i][0], ordered[i][1] - ordered[i - 1][1]]
                break
        out[fam.name] = MetricSummary(
            name=fam.name, type="histogram", count=count, sum=total, mean=(total / count) if count else None,
            p50=_quantile(0.5, ordered), p90=_quantile(0.9, ordered), p99=_quantile(0.99, ordered), series=len(series),
            tail=tail)
        return
    if fam.type == "summary":
        count = total = 0.0
        for s in fam.samples:
            if not _real(s.value, counted=not s.name.endswith("_sum")):
                continue
            if s.name.endswith("_count"):
                count += s.value
            elif s.name.endswith("_sum"):
                total += s.value
        out[fam.name] = MetricSummary(name=fam.name, type="summary", count=count, sum=total,
                                      mean=(total / count) if count else None)
        return
    by_name: dict[str, list[tuple[dict[str, str], float]]] = {}
    for s in fam.samples:
        if s.name.endswith("_created") or not _real(s.value, counted=fam.type == "counter"):
            continue
        by_name.setdefault(s.name, []).append((s.labels, s.value))
    for name, samples in by_name.items():
        values = [v for _, v in samples]
        if not values:
            continue
        per_rank = fam.type in ("gauge", "unknown") and any(_PER_RANK_LABELS & set(lbl) for lbl, _ in samples)
        value = sum(values) / len(values) if per_rank else sum(values)
        labels = dict(samples[0][0]) if name.endswith("_info") else {}
        by: dict[str, float] = {}
        split = next((k for k in _SPLIT_LABELS if any(k in lbl for lbl, _ in samples)), None)
        if split is not None:
            for lbl, v in samples:
                if split in lbl and not math.isnan(v):
                    by[lbl[split]] = by.get(lbl[split], 0.0) + v
        out[name] = MetricSummary(name=name, type=fam.type, value=value, series=len(samples), labels=labels, by=by)


def histogram(metrics: dict[str, MetricSummary], *names: str) -> MetricSummary | None:
    for n in names:
        m = metrics.get(n)
        if m is not None and m.type == "histogram" and m.count:
            return m
    return None
