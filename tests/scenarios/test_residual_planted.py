"""Residual cases fail once their planted evidence is taken away: each neutraliser removes one kind of evidence, the
same way for every case that plants it, so a case met by something other than its residual is caught.

- `runs_agree`: every benchmark run given the first run's latencies (two runs that differ in one condition no longer
  differ).
- `client_matches_engine`: the client's TTFT, ITL and end-to-end latency set to what the engine's own histograms say
  (nothing between the two measuring points).
- `tokens_agree`: the client's input length set to the engine's mean prompt tokens (the user sent what was
  prefilled).
- `generated_equals_kept`: the client's output length set to the engine's mean generated tokens and every finished
  request counted as stopped (nothing generated that was not kept).
- `engine_runs_offered`: the engine's running count (gauge and stats lines) set to the offered concurrency (nothing
  held back in front of it).
- `no_refusals`: no failed requests at the client, no aborted ones at the engine, no refusal lines (429, 503, overflow,
  aborts) in the logs.
- `prefix_cache_missed`: no prefix-cache hits at the engine.
- `layer_removed`: the in-between layer's own evidence gone: its config files, fake commands, services, its log files
  and its processes.
- `runtime_log_removed`: the engine process runtime's lines (garbage-collector timings) gone and the client's ITL tail
  flattened.

Like the development cases, these run in every suite run (harness.residual_mode).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, Callable

import pytest
from harness import ROOT
from planted import SSH, assert_fails_without, cases_of

pytestmark = [*SSH]

Case = dict[str, Any]
Neutraliser = Callable[[Case], Case]


def _dir(case: Case) -> Path:
    return ROOT / case["class"] / case["id"]


def _text(case: Case, ref: Any) -> str:
    f = _dir(case) / str(ref)
    return f.read_text() if isinstance(ref, str) and "\n" not in ref and f.is_file() else str(ref)


def _rewrite_engines(case: Case, rewrite: Callable[[str], str]) -> Case:
    """Every engine's /metrics text and every staged log, rewritten inline."""
    case = copy.deepcopy(case)
    stage = case["stage"]
    for eng in stage.get("engines") or []:
        if eng.get("metrics") is not None:
            eng["metrics"] = rewrite(_text(case, eng["metrics"]))
    for host_path, ref in (stage.get("logs") or {}).items():
        stage["logs"][host_path] = rewrite(_text(case, ref))
    return case


def _histogram_mean(text: str, name: str) -> float | None:
    """sum / count of a histogram over all its series (vLLM's or SGLang's name)."""
    total = count = 0.0
    for prefix in ("vllm:", "sglang:"):
        sums = re.findall(rf"^{prefix}{name}_sum{{[^}}]*}} ([\d.e+]+)", text, re.M)
        counts = re.findall(rf"^{prefix}{name}_count{{[^}}]*}} ([\d.e+]+)", text, re.M)
        total += sum(float(x) for x in sums)
        count += sum(float(x) for x in counts)
    return total / count if count else None


def _engine_texts(case: Case) -> str:
    return "\n".join(_text(case, e["metrics"]) for e in case["stage"].get("engines") or [] if e.get("metrics"))


def _bench(case: Case) -> list[dict[str, Any]]:
    return (case.get("observations") or {}).get("bench") or []


def runs_agree(case: Case) -> Case:
    case = copy.deepcopy(case)
    runs = _bench(case)
    for r in runs[1:]:
        for k in ("ttft", "tpot", "itl", "e2el", "request_throughput", "output_throughput", "input_len", "output_len"):
            if k in runs[0]:
                r[k] = copy.deepcopy(runs[0][k])
    case.pop("bench", None)  # benchmark files: the same run twice is no comparison
    return case


def client_matches_engine(case: Case) -> Case:
    case = copy.deepcopy(case)
    text = _engine_texts(case)
    for key, name in (("ttft", "time_to_first_token_seconds"), ("itl", "inter_token_latency_seconds"),
                      ("tpot", "inter_token_latency_seconds"), ("e2el", "e2e_request_latency_seconds")):
        mean = _histogram_mean(text, name)
        if mean is None:
            continue
        ms = round(mean * 1000, 2)
        for r in _bench(case):
            if key in r or key in ("ttft", "e2el"):
                r[key] = {"mean": ms, "p50": ms, "p99": round(ms * 1.3, 2)}
    case.pop("bench", None)
    return case


def tokens_agree(case: Case) -> Case:
    case = copy.deepcopy(case)
    mean = _histogram_mean(_engine_texts(case), "request_prompt_tokens")
    if mean is not None:
        for r in _bench(case):
            r["input_len"] = round(mean)
    return case


def generated_equals_kept(case: Case) -> Case:
    text = _engine_texts(case)
    mean = _histogram_mean(text, "request_generation_tokens")
    total = sum(float(x) for x in re.findall(r"^vllm:request_success_total{[^}]*} ([\d.e+]+)", text, re.M))

    def stopped(t: str) -> str:
        t = re.sub(r'(?m)^(vllm:request_success_total{[^}]*finished_reason="stop"[^}]*}) [\d.e+]+', rf"\1 {total}", t)
        return re.sub(r'(?m)^(vllm:request_success_total{[^}]*finished_reason="(length|abort)"[^}]*}) [\d.e+]+', r"\1 0.0", t)

    case = _rewrite_engines(case, stopped)
    if mean is not None:
        for r in _bench(case):
            r["output_len"] = round(mean)
    return case


def engine_runs_offered(case: Case) -> Case:
    offered = max((r.get("max_concurrency") or 0 for r in _bench(case)), default=0) or 64

    def full(t: str) -> str:
        t = re.sub(r"Running: \d+ reqs", f"Running: {offered} reqs", t)
        t = re.sub(r"#running-req: \d+", f"#running-req: {offered}", t)
        return re.sub(r"(?m)^((vllm:num_requests_running|sglang:num_running_reqs){[^}]*}) [\d.e+]+", rf"\1 {offered}.0", t)

    return _rewrite_engines(case, full)


REFUSALS = re.compile(r" 429 | 503 |\b429:|Too Many Requests|Rate Limit|overflow|\bUO\b|Aborted request|Killing|probe failed")


def no_refusals(case: Case) -> Case:
    def clean(t: str) -> str:
        t = "\n".join(ln for ln in t.splitlines() if not REFUSALS.search(ln))
        return re.sub(r'(?m)^(vllm:request_success_total{[^}]*finished_reason="abort"[^}]*}) [\d.e+]+', r"\1 0.0", t)

    case = _rewrite_engines(case, clean)
    for r in _bench(case):
        if r.get("failed"):
            r["completed"] = (r.get("completed") or 0) + r["failed"]
            r["failed"] = 0
    return case


def prefix_cache_missed(case: Case) -> Case:
    def missed(t: str) -> str:
        t = re.sub(r"(?m)^(vllm:prefix_cache_hits_total{[^}]*}) [\d.e+]+", r"\1 0.0", t)
        return re.sub(r"Prefix cache hit rate: [\d.]+%", "Prefix cache hit rate: 0.0%", t)

    return _rewrite_engines(case, missed)


LAYER_PROCS = re.compile(r"nginx|haproxy|envoy|litellm|ray::|queue|gpustack|dynamo|tritonserver|python_backend|uvicorn")


def layer_removed(case: Case) -> Case:
    case = copy.deepcopy(case)
    stage = case["stage"]
    for key in ("files", "commands", "services"):
        stage.pop(key, None)
    engines_logs = {p: ref for p, ref in (stage.get("logs") or {}).items()
                    if not re.search(r"nginx|haproxy|envoy|litellm|istio|ray|serve", p)}
    if engines_logs:
        stage["logs"] = engines_logs
    else:
        stage.pop("logs", None)
    acct = stage.get("account") or {}
    if acct.get("processes"):
        acct["processes"] = [p for p in acct["processes"] if not LAYER_PROCS.search(" ".join(map(str, p["argv"])))]
    return case


def runtime_log_removed(case: Case) -> Case:
    case = _rewrite_engines(case, lambda t: "\n".join(ln for ln in t.splitlines() if "GC took" not in ln))
    for r in _bench(case):
        if r.get("itl", {}).get("p50") is not None:
            p50 = r["itl"]["p50"]
            r["itl"] = {"mean": p50, "p50": p50, "p99": round(p50 * 1.15, 2)}
    return case


def both(*fs: Neutraliser) -> Neutraliser:
    def f(case: Case) -> Case:
        for g in fs:
            case = g(case)
        return case
    return f


PLANTED: dict[str, Neutraliser] = {
    "litellm-triton-provider-adds-fixed-5s-ttft-h100": runs_agree,
    "ray-serve-default-max-ongoing-requests-caps-batch": both(engine_runs_offered, client_matches_engine),
    "litellm-team-tpm-limit-429-refuses-load-a100": both(no_refusals, layer_removed),
    "coding-agent-system-prompt-prefill-tokens-h100": both(tokens_agree, runs_agree),
    "qwen25vl-full-res-photos-image-tokens-a100": tokens_agree,
    "qwen3-thinking-tokens-generated-not-kept-h200": both(generated_equals_kept, client_matches_engine),
    "finetune-generation-config-no-eot-length-cap-l4": generated_equals_kept,
    "client-timeout-retries-duplicate-prefill-h100": no_refusals,
    "haproxy-server-maxconn-queues-before-vllm-h100": both(layer_removed, client_matches_engine),
    "nginx-default-buffering-gzip-sse-l40s": both(layer_removed, client_matches_engine),
    "warm-prefix-cache-rerun-ttft-below-floor-h100": both(prefix_cache_missed, runs_agree),
    "vllm-api-server-gc-gen2-pauses-itl-tail-b200": runtime_log_removed,
}

CASES = [p for p in cases_of("residual") if p.parent.name in PLANTED]


def test_every_planted_case_exists():
    assert sorted(PLANTED) == sorted(p.parent.name for p in CASES)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.parent.name)
async def test_residual_case_fails_without_its_planted_evidence(path: Path, tmp_path):
    await assert_fails_without(path, tmp_path, PLANTED[path.parent.name])
