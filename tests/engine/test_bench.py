"""--bench: each benchmark result format parsed from a file in its real format; unknown formats refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.benchresults import BenchFormatError, load_bench, parse_bench_text
from orchestrator.observations import parse_observations

BENCH = Path(__file__).parent / "data" / "bench"


def test_vllm_bench_serve_save_result():
    (r,) = load_bench(BENCH / "vllm-infqps-concurrency64-Llama-3.1-8B-Instruct-20251130-101500.json")
    assert r.format == "vllm-bench-serve" and r.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert r.request_rate == "inf" and r.max_concurrency == 64 and r.completed == 1000
    assert r.input_len == 1024 and r.output_len == 128 and r.output_throughput == 2089.1
    assert r.ttft.p50 == 388.1 and r.ttft.p99 == 901.6 and r.tpot.mean == 27.9 and r.itl.p50 == 24.9
    assert r.e2el is None  # e2el is not in the default --percentile-metrics


def test_vllm_append_result_is_one_run_per_line():
    one = (BENCH / "vllm-infqps-concurrency64-Llama-3.1-8B-Instruct-20251130-101500.json").read_text()
    runs = parse_bench_text(one + "\n" + one.replace('"max_concurrency": 64', '"max_concurrency": 8') + "\n")
    assert [r.max_concurrency for r in runs] == [64, 8]


def test_sglang_bench_serving_jsonl():
    runs = load_bench(BENCH / "sglang_1130_500_1024_256.jsonl")
    assert [r.format for r in runs] == ["sglang-bench-serving"] * 2
    assert [r.max_concurrency for r in runs] == [16, 128]
    assert runs[1].ttft.mean == 1840.6 and runs[1].itl.p95 == pytest.approx(47.1) and runs[1].e2el.p99 == 6120.9
    assert runs[0].input_len == 1024 and runs[0].total_token_throughput == pytest.approx(6539.0 + 1302.5)


def test_genai_perf_profile_export():
    (r,) = load_bench(BENCH / "profile_export_genai_perf.json")
    assert r.format == "genai-perf" and r.model == "Qwen/Qwen2.5-7B-Instruct" and r.max_concurrency == 32
    assert r.ttft.p50 == 210.9 and r.itl.p99 == 22.4 and r.e2el.mean == 4210.3
    assert r.input_len == 2048 and r.output_len == 255.8 and r.output_throughput == 2025.3


def test_bench_runs_validate_as_observations():
    runs = load_bench(BENCH / "sglang_1130_500_1024_256.jsonl")
    obs = parse_observations({"bench": [r.model_dump(mode="json", exclude_none=True) for r in runs]})
    assert obs.bench[1].max_concurrency == 128


@pytest.mark.parametrize("text", ['{"tokens_per_second": 1234}', "not json at all\n{", "[]", '{"mean_ttft_ms": 1}'])
def test_unknown_formats_name_what_was_expected(text):
    with pytest.raises(BenchFormatError) as e:
        parse_bench_text(text, "x.json")
    msg = str(e.value)
    assert "x.json" in msg and "vllm bench serve" in msg and "bench_serving" in msg and "genai-perf" in msg
    assert "\n" not in msg


def _cli(*args):
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True, env=env,
                          timeout=60)


def test_cli_unknown_bench_file_is_one_line_exit_2_before_any_work(tmp_path):
    p = _cli("why is TTFT high", "--bench", str(BENCH / "unknown.json"), "--transcript", str(tmp_path / "t.jsonl"),
             "--host", "nonexistent-host.invalid")
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "unknown.json" in lines[0] and "genai-perf" in lines[0] and "Traceback" not in p.stderr
    assert not (tmp_path / "t.jsonl").exists()  # checked before the run: no host contacted, no transcript
    p = _cli("why", "--bench", str(tmp_path / "missing.json"))
    assert p.returncode == 2 and "missing.json" in p.stderr and "--bench" in p.stderr
