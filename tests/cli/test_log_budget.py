"""Issue 30 item 1: a `--log` is read within a byte budget (a 334 MB vLLM log timed the probes out, so nothing was
read): its start and its end are read with exact line numbers, the middle counted and said so; a device file, a
FIFO or a directory given as a local `--log` is refused up front with the right words."""

from __future__ import annotations

import os

import pytest

from orchestrator.hosts.local import LocalHost
from orchestrator.prongs.serving_engine import probe as engine_probe
from orchestrator.probes import logscan
from orchestrator.render.summaries import summarize_engines, summarize_logs
from support.cli import investigate, one_line

START = ("INFO 05-01 10:00:00 [api_server.py:1043] vLLM API server version 0.9.0\n"
         "INFO 05-01 10:00:00 [config.py:2118] Chunked prefill is enabled with max_num_batched_tokens=2048.\n")
STATS = ("INFO 05-01 10:00:05 [loggers.py:111] Engine 000: Avg prompt throughput: 100.0 tokens/s, Avg generation "
         "throughput: 2000.0 tokens/s, Running: 64 reqs, Waiting: 0 reqs, GPU KV cache usage: 50.0%, Prefix cache "
         "hit rate: 0.0%\n")
LAST = "WARNING 05-01 12:00:00 [fused_moe.py:100] Using default MoE config. Performance might be sub-optimal!\n"
N_STATS = 20_000


@pytest.fixture
def big_log(tmp_path, monkeypatch):
    path = tmp_path / "vllm.log"
    path.write_text(START + STATS * N_STATS + LAST)
    budget = 400_000  # the log is ~4.7 MB: read its first 50 kB and its last 350 kB
    monkeypatch.setattr(logscan, "MAX_LOG_BYTES", budget)
    monkeypatch.setattr(engine_probe, "MAX_LOG_BYTES", budget)
    return path


async def test_a_log_over_the_budget_is_read_at_its_start_and_its_end_with_exact_line_numbers(big_log):
    from orchestrator.knowledge import log_signatures

    scan = await logscan.scan_logs(LocalHost(), [str(big_log)], log_signatures())
    total = 2 + N_STATS + 1
    assert len(scan.skipped) == 1
    skip = scan.skipped[0]
    assert 4_000_000 < skip.bytes < 4_400_000
    assert scan.lines_scanned + skip.lines == total  # every line read or counted, none twice
    assert any(m.line_no == total and "default MoE config" in m.line for m in scan.matches), scan.matches[-3:]
    text = summarize_logs(scan)
    assert f"lines {skip.from_line:,}-{skip.from_line + skip.lines - 1:,}" in text and "not read" in text


async def test_the_engine_probe_keeps_the_startup_configuration_of_a_big_log(big_log):
    report = await engine_probe.collect_engine_report(LocalHost(), [str(big_log)], metrics=False)
    assert report.skipped_logs and report.skipped_logs[0].path == str(big_log)
    assert report.skipped_logs[0].lines > N_STATS // 2  # most of the stats lines were counted, not read
    assert any("max_num_batched_tokens=2048" in ln.line and ln.line_no == 2 for ln in report.lines)
    assert "not read" in summarize_engines(report)


async def test_a_log_under_the_budget_is_read_whole(tmp_path):
    path = tmp_path / "small.log"
    path.write_text(START + STATS * 10 + LAST)
    from orchestrator.knowledge import log_signatures

    scan = await logscan.scan_logs(LocalHost(), [str(path)], log_signatures())
    assert scan.skipped == [] and scan.lines_scanned == 13


@pytest.mark.parametrize("kind", ["device", "fifo", "directory"])
def test_a_local_log_that_is_no_file_is_refused_up_front(tmp_path, kind):
    target = {"device": "/dev/zero", "directory": str(tmp_path)}.get(kind)
    if kind == "fifo":
        target = str(tmp_path / "pipe")
        os.mkfifo(target)
    words = {"device": "is a device file", "fifo": "is a FIFO (named pipe)", "directory": "is a directory"}[kind]
    transcript = tmp_path / "t.jsonl"
    one_line(investigate("why slow", "--offline", "--log", target, "--transcript", transcript, tmp_path=tmp_path), 2,
             f"--log {target} {words}, not a log file")
    assert not transcript.exists()
