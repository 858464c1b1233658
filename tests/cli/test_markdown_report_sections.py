"""Issue 30 item 9: the Markdown report carries the serving-engine and benchmark sections the HTML report has: the
engine's effective configuration and the measured latency percentiles against the roofline floor."""

from __future__ import annotations

import json

from support.cli import investigate

VLLM_RESULT = {"backend": "vllm", "model_id": "Qwen/Qwen3-30B-A3B-FP8", "max_concurrency": 16, "completed": 200,
               "duration": 40.0, "total_input_tokens": 204800, "total_output_tokens": 25600,
               "request_throughput": 5.0, "output_throughput": 640.0, "total_token_throughput": 5760.0,
               "mean_ttft_ms": 180.0, "median_ttft_ms": 150.0, "p99_ttft_ms": 420.0,
               "mean_tpot_ms": 22.0, "median_tpot_ms": 21.0, "p99_tpot_ms": 35.0,
               "mean_itl_ms": 22.0, "median_itl_ms": 20.5, "p99_itl_ms": 40.0}


def test_the_markdown_report_has_the_benchmark_percentiles_the_html_has(tmp_path):
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(VLLM_RESULT))
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    transcript = tmp_path / "t.jsonl"
    proc = investigate("why is TTFT high?", "--offline", "--bench", bench, "--transcript", transcript, "--report", md,
                       tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = md.read_text()
    assert "## Serving engine" in text
    assert "| p99 | 420.0 |" in text and "| p50 | 20.5 |" in text  # TTFT p99 and ITL median, as measured
    proc = investigate("report", transcript, "-o", html, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "420.0" in html.read_text()  # the same figures the HTML report draws
    proc = investigate("report", transcript, "-o", tmp_path / "again.md", tmp_path=tmp_path)
    assert proc.returncode == 0 and "## Serving engine" in (tmp_path / "again.md").read_text()
