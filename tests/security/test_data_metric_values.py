"""An engine's /metrics is written by whoever answers on its port (a local user's fake vLLM, a broken exporter): the
exposition format allows NaN, +Inf and any float. `vllm:num_requests_running +Inf` made the serving floors raise
(`int(running)`: the rule's findings were lost), NaN or negative counts made NaN and negative means; the request
account (branch `request`) turned them into NaN floors and an OverflowError in the assembled diagnosis. The parser
keeps only what an engine can have counted or measured."""

from __future__ import annotations

import math

import pytest
from support.evidence import ev, inventory

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.observations import Observations
from orchestrator.prongs.serving_engine.metrics import parse_metrics
from orchestrator.prongs.serving_engine.probe import build_report
from orchestrator.prongs.serving_engine.rules import serving_latency

L = 'engine="0",model_name="m"'


def _text(running: str = "8", count: str = "100", total: str = "2.0", le: str = "0.05") -> str:
    """vLLM V1's exposition (names and labels as vllm/v1/metrics/loggers.py writes them)."""
    lines = ["# TYPE vllm:num_requests_running gauge", f"vllm:num_requests_running{{{L}}} {running}",
             "# TYPE vllm:generation_tokens_total counter", f"vllm:generation_tokens_total{{{L}}} {count}"]
    for name in ("vllm:inter_token_latency_seconds", "vllm:time_to_first_token_seconds"):
        lines += [f"# TYPE {name} histogram", f'{name}_bucket{{{L},le="{le}"}} {count}',
                  f'{name}_bucket{{{L},le="+Inf"}} {count}', f"{name}_count{{{L}}} {count}",
                  f"{name}_sum{{{L}}} {total}"]
    return "\n".join(lines) + "\n"


HOSTILE = [dict(running="+Inf"), dict(running="1e308"), dict(running="NaN"), dict(count="NaN"), dict(count="-100"),
           dict(count="+Inf"), dict(total="+Inf"), dict(total="NaN"), dict(le="NaN"), dict(count="1e300")]


@pytest.mark.parametrize("kw", HOSTILE, ids=[",".join(f"{k}={v}" for k, v in h.items()) for h in HOSTILE])
def test_a_hostile_value_is_no_measurement(kw):
    metrics, error = parse_metrics(_text(**kw))
    assert error is None
    for m in metrics.values():
        for field in ("value", "count", "sum", "mean", "p50", "p90", "p99"):
            x = getattr(m, field)
            assert x is None or (math.isfinite(x) and abs(x) <= 1e18), (m.name, field, x)
        assert (m.count or 0) >= 0 and (m.type != "counter" or (m.value or 0) >= 0), m
    ok, _ = parse_metrics(_text())
    assert ok["vllm:num_requests_running"].value == 8 and ok["vllm:inter_token_latency_seconds"].count == 100


@pytest.mark.parametrize("kw", HOSTILE, ids=[",".join(f"{k}={v}" for k, v in h.items()) for h in HOSTILE])
def test_the_serving_floors_read_a_hostile_metrics_page_without_failing(kw):
    report = build_report("gpu-box", {"engines": [{"argv": ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"],
                                                   "kind": "vllm", "pid": 7, "metrics": {
                                                       "url": "http://127.0.0.1:8000/metrics", "status": 200,
                                                       "text": _text(**kw)}}], "logs": []}, [])
    obs = Observations.model_validate({"model": {"name": "Llama-3.1-8B-Instruct", "quantization": "bf16"}})
    view = EvidenceView([ev("ev-1.1", inventory("NVIDIA H100 80GB HBM3", "9.0", 1), tool="gpu_inventory"),
                         ev("ev-2.1", report, tool="engine_config")], obs, question="why is decode slow?")
    for f in serving_latency(view):  # raised OverflowError on +Inf
        for n in f.numbers:
            assert n.value is None or math.isfinite(n.value), (f.id, n)
