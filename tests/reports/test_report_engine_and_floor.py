"""Issue 30 item 9: the reports' serving-engine section reads what the engine's own log says (vLLM 0.8's
`args: Namespace(... gpu_memory_utilization=0.85 ...)` line, vLLM 0.9's `non-default args: {...}` that replaced it,
and 'Chunked prefill is enabled with max_num_batched_tokens=2048.'; formats as in vLLM issues #18547, #19975), and the latency-vs-roofline-floor figures are filled when the observations give
`gpu.name` and the model's dimensions, though the host investigated shows no GPU (the floor needed a GPU from the
host's inventory and stayed empty). The Markdown report has every section the HTML has, except the two drawings."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from support.cli import investigate

QUIET = {"PATH": "/usr/bin:/bin", "INVESTIGATE_STAGED_TAG": f"none-{uuid.uuid4().hex}"}
"""No nvidia-smi, and no serving process of this machine counts (the probes keep only processes carrying the tag:
other tests start staged engines here meanwhile)."""

LOGS = [Path(__file__).with_name("vllm-0.8.5-startup.log"), Path(__file__).with_name("vllm-0.9.0-startup.log")]
BENCH = {"backend": "vllm", "model_id": "Qwen/Qwen3-30B-A3B-FP8", "max_concurrency": 16, "completed": 200,
         "duration": 40.0, "total_input_tokens": 204800, "total_output_tokens": 25600, "request_throughput": 5.0,
         "output_throughput": 640.0, "total_token_throughput": 5760.0, "mean_ttft_ms": 180.0, "median_ttft_ms": 150.0,
         "p99_ttft_ms": 420.0, "mean_tpot_ms": 22.0, "median_tpot_ms": 21.0, "p99_tpot_ms": 35.0, "mean_itl_ms": 22.0,
         "median_itl_ms": 20.5, "p99_itl_ms": 40.0}
OBS = ("model: {name: Qwen3-30B-A3B-FP8, quantization: fp8, num_layers: 48, hidden_size: 2048, num_experts: 128, "
       "top_k: 8, moe_intermediate_size: 768}\ngpu: {name: H100 SXM, count: 1}\n")
DRAWN = {"Roofline", "Fan-out timeline", "Where each step's time went"}
"""HTML sections that are drawings (SVG): the roofline's figures are in the Numbers, the timeline and the trace's
per-step bars in `investigate show`."""


def _reports(tmp_path, log: Path = LOGS[0]) -> tuple[str, str]:
    bench, obs = tmp_path / "bench.json", tmp_path / "obs.yaml"
    bench.write_text(json.dumps(BENCH))
    obs.write_text(OBS)
    html, md, transcript = tmp_path / "r.html", tmp_path / "r.md", tmp_path / "t.jsonl"
    proc = investigate("why is ITL high?", "--offline", "--bench", bench, "--observations", obs, "--log", log,
                       "--transcript", transcript, "--report", html, tmp_path=tmp_path, env=QUIET)
    assert proc.returncode == 0, proc.stderr
    proc = investigate("report", transcript, "-o", md, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return html.read_text(), md.read_text()


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name.split("-startup")[0])
def test_the_floor_is_filled_from_the_observed_gpu_and_the_engine_table_reads_the_log(tmp_path, log):
    html, md = _reports(tmp_path, log)
    ratios = re.findall(r"against the roofline floor: median ([0-9.]+)x the floor", html)
    assert len(ratios) == 2 and all(float(r) > 1 for r in ratios), ratios  # prefill and decode, each above its floor
    floor_rows = re.findall(r"^\| (p\d+|mean|floor) \| [0-9,.]+ \| ([^|]+) \|$", md, re.MULTILINE)
    assert floor_rows and all(x.strip() != "n/a" for _, x in floor_rows), floor_rows
    assert any(name == "floor" and x.strip() == "1.0x" for name, x in floor_rows)
    for text in (html, md):
        engine = re.sub(r"<[^>]+>", " ", text[text.index("Serving engine"):])
        assert re.search(r"GPU memory for weights\+KV\W+0\\?\.85\W", engine), engine[:1500]
        assert re.search(r"per-step token budget \(prefill chunk\)\W+2048\W", engine), engine[:1500]
        assert "startup.log:3" in engine and "startup.log:5" in engine  # each value with its log line


def test_the_markdown_report_has_every_section_of_the_html_report(tmp_path):
    html, md = _reports(tmp_path)
    h2 = {re.sub(r"<[^>]+>", "", t).split(" (")[0].strip() for t in re.findall(r"<h2[^>]*>(.*?)</h2>", html)}
    md2 = {t.split(" (")[0].strip() for t in re.findall(r"^## (.+)$", md, re.MULTILINE)}
    assert "Serving engine" in h2 and "Recommendations" in h2
    assert h2 - DRAWN <= md2, sorted(h2 - DRAWN - md2)
