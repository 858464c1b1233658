"""Benchmark result files (`--bench FILE`) -> typed observations, in the formats the tools write them.

- `vllm bench serve --save-result` (vllm/benchmarks/serve.py): one JSON object (or, with --append-result, one per
  line) with `request_rate` (number or inf), `max_concurrency`, `completed`, `duration`, `total_input_tokens`,
  `total_output_tokens`, `request_throughput`, `output_throughput`, `total_token_throughput`, and per metric m of
  ttft/tpot/itl/e2el: `mean_{m}_ms`, `median_{m}_ms`, `std_{m}_ms`, `p{P}_{m}_ms`.
- SGLang `python -m sglang.bench_serving --output-file` (python/sglang/bench_serving.py): JSONL, one run per line,
  same latency keys (`{mean,median,std,p99}_{ttft,tpot,itl}_ms`, `_e2e_latency_ms`), plus `dataset_name`,
  `random_input_len`, `random_output_len`, `concurrency`.
- genai-perf `profile_export_genai_perf.json` (genai-perf/genai_perf/export_data/json_exporter.py): one key per metric
  (`time_to_first_token`, `inter_token_latency`, `request_latency` in ms; `input_sequence_length`,
  `output_sequence_length`; `output_token_throughput`, `request_throughput`), each {unit, avg, p25..p99, min, max,
  std}, plus `input_config`. AIPerf's `profile_export_aiperf.json` has the same metric shape.
An unknown file is one clear error naming the three formats expected.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from orchestrator.errors import InputError
from orchestrator.observations import BenchFormat, BenchResult, Latency, ObservationsError

MAX_BYTES = 64_000_000
"""A result file with per-request detail (`--save-detailed`: every request's TTFT and ITLs) of a long run fits; a
larger one is refused before it is parsed."""

EXPECTED = ("expected `vllm bench serve --save-result` JSON (keys like mean_ttft_ms, request_throughput), SGLang "
            "bench_serving JSONL (one such object per line) or genai-perf profile_export_genai_perf.json "
            "(metrics like time_to_first_token, each with avg, p50, p99)")
"""The formats a --bench file may be in. Worded so that no secret redactor takes it for a `key: value` credential
(`token: {avg` once came out as `token: [REDACTED]`)."""

_FLAT_METRIC_SUFFIXES = ("_ms", "_throughput", "throughput")
_FLAT_COUNTS = ("completed", "failed", "duration", "total_input_tokens", "total_output_tokens", "max_concurrency",
                "request_rate", "random_input_len", "random_output_len")
_GENAI_METRICS = ("time_to_first_token", "inter_token_latency", "request_latency", "input_sequence_length",
                  "output_sequence_length", "output_token_throughput", "request_throughput", "ttft", "itl")


class BenchFormatError(ObservationsError):
    """A --bench file is missing or in no known format; the message names the file and the formats expected."""


def _f(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) or math.isinf(x) else x


def _i(v: Any) -> int | None:
    x = _f(v)
    return int(x) if x is not None else None


def _latency_from_flat(d: dict[str, Any], m: str, alt: str | None = None) -> Latency | None:
    def get(stat: str) -> float | None:
        for name in (m, alt):
            if name and f"{stat}_{name}_ms" in d:
                return _f(d[f"{stat}_{name}_ms"])
        return None

    lat = Latency(mean=get("mean"), p50=get("median") if get("median") is not None else get("p50"), p90=get("p90"),
                  p95=get("p95"), p99=get("p99"), std=get("std"))
    return None if lat.empty else lat


def _is_flat(d: Any) -> bool:
    return isinstance(d, dict) and any(k in d for k in ("mean_ttft_ms", "median_ttft_ms", "mean_tpot_ms")) and any(
        k in d for k in ("request_throughput", "output_throughput", "completed"))


def _rate(v: Any) -> float | str | None:
    if isinstance(v, str) and v.lower() in ("inf", "infinity"):
        return "inf"
    x = v if isinstance(v, (int, float)) else None
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return _f(v)


def _from_flat(d: dict[str, Any], fmt: BenchFormat, source: str) -> BenchResult:
    completed = _i(d.get("completed"))
    tin, tout = _f(d.get("total_input_tokens")), _f(d.get("total_output_tokens"))
    input_len = tin / completed if tin is not None and completed else _f(d.get("random_input_len"))
    output_len = tout / completed if tout is not None and completed else _f(d.get("random_output_len"))
    total = _f(d.get("total_token_throughput"))
    if total is None and _f(d.get("input_throughput")) is not None and _f(d.get("output_throughput")) is not None:
        total = _f(d["input_throughput"]) + _f(d["output_throughput"])  # type: ignore[operator]
    return BenchResult(
        format=fmt, source=source, label=d.get("label") or None, model=d.get("model_id") or d.get("model") or None,
        backend=d.get("backend"), request_rate=_rate(d.get("request_rate")),
        max_concurrency=_i(d.get("max_concurrency")) or _i(d.get("concurrency_limit")),
        completed=completed, failed=_i(d.get("failed")), duration_s=_f(d.get("duration")),
        input_len=round(input_len, 2) if input_len is not None else None,
        output_len=round(output_len, 2) if output_len is not None else None,
        request_throughput=_f(d.get("request_throughput")), output_throughput=_f(d.get("output_throughput")),
        total_token_throughput=total, ttft=_latency_from_flat(d, "ttft"), tpot=_latency_from_flat(d, "tpot"),
        itl=_latency_from_flat(d, "itl"), e2el=_latency_from_flat(d, "e2el", "e2e_latency"),
    )


def _stat_block(d: Any) -> Latency | None:
    if not isinstance(d, dict):
        return None
    lat = Latency(mean=_f(d.get("avg")), p50=_f(d.get("p50")), p90=_f(d.get("p90")), p95=_f(d.get("p95")),
                  p99=_f(d.get("p99")), std=_f(d.get("std")))
    return None if lat.empty else lat


def _find(d: Any, key: str, depth: int = 0) -> Any:
    """The first value of `key` anywhere in a nested config dict (genai-perf nests its CLI args by version)."""
    if depth > 5 or not isinstance(d, dict):
        return None
    if key in d and not isinstance(d[key], dict):
        return d[key]
    for v in d.values():
        got = _find(v, key, depth + 1)
        if got is not None:
            return got
    return None


def _is_genai_perf(d: Any) -> bool:
    if not isinstance(d, dict):
        return False
    if isinstance(d.get("records"), dict):
        d = d["records"]
    return any(isinstance(d.get(k), dict) and ("avg" in d[k] or "p50" in d[k])
               for k in ("time_to_first_token", "request_latency", "inter_token_latency", "ttft"))


def _from_genai_perf(d: dict[str, Any], source: str) -> BenchResult:
    cfg = d.get("input_config") or {}
    m = d["records"] if isinstance(d.get("records"), dict) else d
    ttft = _stat_block(m.get("time_to_first_token") or m.get("ttft"))
    itl = _stat_block(m.get("inter_token_latency") or m.get("itl"))
    e2el = _stat_block(m.get("request_latency"))
    isl, osl = _stat_block(m.get("input_sequence_length")), _stat_block(m.get("output_sequence_length"))
    out_tp = m.get("output_token_throughput") or {}
    req_tp = m.get("request_throughput") or {}
    model = _find(cfg, "model") or _find(cfg, "model_names")
    if isinstance(model, list):
        model = model[0] if model else None
    return BenchResult(
        format="genai-perf", source=source, model=str(model) if model else None,
        backend=str(_find(cfg, "service_kind") or _find(cfg, "endpoint_type") or "") or None,
        request_rate=_rate(_find(cfg, "request_rate")), max_concurrency=_i(_find(cfg, "concurrency")),
        input_len=isl.mean if isl else None, output_len=osl.mean if osl else None,
        output_throughput=_f(out_tp.get("avg")) if isinstance(out_tp, dict) else None,
        request_throughput=_f(req_tp.get("avg")) if isinstance(req_tp, dict) else None,
        ttft=ttft, itl=itl, e2el=e2el,
    )


def parse_bench_text(text: str, source: str = "bench") -> list[BenchResult]:
    """Every run in a benchmark result file's text; BenchFormatError when it is none of the known formats."""
    from orchestrator.safeload import SafeLoadError, load_json

    docs: list[Any] = []
    try:
        docs = [load_json(text, source=f"bench file {source}")]
    except SafeLoadError as exc:
        if "is not valid JSON" not in str(exc):  # bounded: nesting, an over-long integer
            raise BenchFormatError(f"{exc}; {EXPECTED}") from None
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                docs.append(load_json(line, source=f"bench file {source} line {n}"))
            except SafeLoadError as exc:
                if "is not valid JSON" not in str(exc):
                    raise BenchFormatError(f"{exc}; {EXPECTED}") from None
                if docs:  # the lines before it were runs: this is a JSON-lines file with one broken line
                    raise BenchFormatError(f"bench file {source}: line {n} is not valid JSON; fix or remove that "
                                           "line (JSON lines: one run per line)") from None
                raise BenchFormatError(f"bench file {source} is neither JSON nor JSON lines; {EXPECTED}") from None
    if len(docs) == 1 and isinstance(docs[0], list):
        docs = docs[0]
    out: list[BenchResult] = []
    for n, d in enumerate(docs, 1):
        where = f"bench file {source}" + (f" run {n}" if len(docs) > 1 else "")
        if (bad := _negative(d)) is not None:
            raise BenchFormatError(f"{where}: {bad[0]} = {bad[1]:g} is negative; latencies, throughputs and counts "
                                   "are at least 0: pass the file the benchmark wrote")
        if _is_genai_perf(d) or _is_flat(d):
            try:
                if _is_genai_perf(d):
                    out.append(_from_genai_perf(d, source))
                else:
                    sglang = any(k in d for k in ("dataset_name", "mean_e2e_latency_ms",
                                                  "total_output_tokens_retokenized", "accept_length")) \
                        and "endpoint_type" not in d
                    out.append(_from_flat(d, "sglang-bench-serving" if sglang else "vllm-bench-serve", source))
            except ValidationError as exc:  # a field of the wrong kind (a number where a label goes, ...)
                err = exc.errors()[0]
                field = ".".join(str(x) for x in err["loc"])[:60]
                raise BenchFormatError(f"{where}: {field}: {err['msg'][:80]}; {EXPECTED}") from None
        else:
            found = (f"found keys {', '.join(sorted(map(str, d))[:8])}" if isinstance(d, dict) and d else
                     "found an empty object" if isinstance(d, dict) else f"found a JSON {_json_kind(d)}")
            raise BenchFormatError(f"{where} is not a known benchmark result ({found}); {EXPECTED}")
    if not out:
        raise BenchFormatError(f"bench file {source} holds no benchmark run; {EXPECTED}")
    return out


def _json_kind(v: Any) -> str:
    return {list: "list", str: "string", bool: "boolean", type(None): "null"}.get(type(v), "number")


def _negative(d: Any) -> tuple[str, float] | None:
    """The first metric or count of a benchmark result that is a negative number, as (key, value)."""
    if not isinstance(d, dict):
        return None
    m = d["records"] if isinstance(d.get("records"), dict) else d
    for key in _GENAI_METRICS:
        block = m.get(key)
        if isinstance(block, dict):
            for stat, v in block.items():
                if (x := _f(v)) is not None and x < 0:
                    return f"{key}.{stat}", x
    for key, v in d.items():
        if isinstance(key, str) and (key.endswith(_FLAT_METRIC_SUFFIXES) or key in _FLAT_COUNTS):
            if (x := _f(v)) is not None and x < 0:
                return key, x
    return None


def load_bench(path: str | Path) -> list[BenchResult]:
    from orchestrator.safeload import SafeLoadError, read_capped
    from orchestrator.validate import check_input_file

    try:  # a device, FIFO or directory is named as such before anything is read
        p = check_input_file(path, "bench file", "pass the result file the benchmark wrote to --bench",
                             max_bytes=MAX_BYTES)
    except InputError as exc:
        raise BenchFormatError(str(exc)) from None
    try:
        text = read_capped(p, what="bench file", max_bytes=64 << 20)  # a genai-perf export with per-request records
    except SafeLoadError as exc:
        raise BenchFormatError(f"{exc}; pass a benchmark result file to --bench ({EXPECTED})") from None
    return parse_bench_text(text, source=p.name)
