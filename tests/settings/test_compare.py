"""Before and after (issue 27): two benchmark runs compared per statistic and load, two engine logs' versions and
settings compared (prongs/settings_audit/before_after.py), the log before read and redacted on this machine (orchestrator/baselines.py),
and the bad inputs of --baseline / --baseline-log refused in one line, exit 2, before any work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.prongs.settings_audit import before_after as compare
from orchestrator.baselines import BaselineLogError, load_baseline_log
from orchestrator.benchresults import load_bench

DATA = Path(__file__).parent / "data"


def _runs():
    before = load_bench(DATA / "before.json")[0].model_copy(update={"label": "baseline"})
    after = load_bench(DATA / "after.json")[0]
    return before, after


def test_two_runs_compared_per_statistic_at_the_same_load():
    before, after = _runs()
    c = compare.compare_bench(before, after)
    by = {m.metric: m for m in c.changes}
    assert by["ITL p50"].before == 24.9 and by["ITL p50"].after == 30.1 and by["ITL p50"].worse
    assert by["ITL p99"].worse and by["TPOT p50"].worse
    assert by["output throughput"].worse and round(by["output throughput"].change_pct) == -17
    assert not by["TTFT p50"].worse and not by["TTFT p99"].worse  # +0.5 %: noise, not a regression
    assert c.worse == {"itl", "throughput"} and c.load_differences == []
    s = c.sentence({"itl"})
    assert "at the same load (concurrency 64" in s and "ITL p50 24.9 -> 30.1 ms (+21 %, worse)" in s and "TTFT" not in s


def test_a_comparison_at_two_loads_says_so():
    before, after = _runs()
    after = after.model_copy(update={"max_concurrency": 128, "input_len": 2048.0})
    c = compare.compare_bench(before, after)
    assert "concurrency 64 before, 128 after" in c.load_differences
    assert any(d.startswith("input tokens 1024 before, 2048 after") for d in c.load_differences)
    assert "at different loads" in c.sentence()


def test_the_pair_is_the_baseline_and_the_last_run_else_first_and_last():
    before, after = _runs()
    other = after.model_copy(update={"source": "other.json"})
    assert compare.bench_pair([after, before, other]) == (before, other)  # --baseline's run, wherever it sits
    plain = before.model_copy(update={"label": None})
    assert compare.bench_pair([plain, after]) == (plain, after)  # --bench twice: first = before
    assert compare.bench_pair([after]) is None and compare.bench_pair([before]) is None


def test_two_logs_give_versions_and_the_settings_that_differ():
    b = compare.log_snapshot(load_baseline_log(DATA / "vllm-before.log").lines, "vllm-before.log")
    a = compare.log_snapshot((DATA / "vllm-after.log").read_text().splitlines(), "vllm-after.log")
    assert (b.project, b.version, a.version) == ("vllm", "0.28.0", "0.29.0")
    changes = {k: (x, y) for k, x, y in compare.setting_changes(b, a)}
    assert changes["max_num_seqs"] == ("256", "128")
    assert changes["async_scheduling"] == (None, "False")  # not printed before: its default then
    assert changes["enable_chunked_prefill"] == ("True", None)
    assert changes["enforce_eager"] == ("False", "True")  # both config dumps print it
    assert "pooler_config" not in changes  # in one config dump only: nothing to compare with
    assert "model" not in changes and "api_key" not in changes and "tensor_parallel_size" not in changes


def test_the_log_before_keeps_only_version_and_settings_lines_redacted():
    log = load_baseline_log(DATA / "vllm-before.log")
    assert log.source == "vllm-before.log" and len(log.lines) == 3  # banner, non-default args, engine config
    assert not any("KV cache size" in ln or "Starting vLLM" in ln for ln in log.lines)
    assert "sk-live" not in "\n".join(log.lines)


def test_a_log_with_no_version_or_settings_line_is_refused(tmp_path):
    p = tmp_path / "app.log"
    p.write_text("GET /health 200\nGET /v1/models 200\n")
    with pytest.raises(BaselineLogError, match="no engine version or settings line"):
        load_baseline_log(p)
    with pytest.raises(BaselineLogError, match="not found"):
        load_baseline_log(tmp_path / "missing.log")


def _cli(*args, tmp_path):
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("ANTHROPIC_API_KEY", None)
    p = subprocess.run([sys.executable, "-m", "orchestrator.cli", "why did ITL regress after the upgrade", *args,
                        "--transcript", str(tmp_path / "t.jsonl"), "--host", "nonexistent-host.invalid"],
                       capture_output=True, text=True, env=env, timeout=60)
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert not (tmp_path / "t.jsonl").exists()  # refused before any work: no host contacted, no transcript
    return lines[0]


@pytest.mark.parametrize("args,words", [
    (["--baseline", "{d}/before.json"], ["--baseline", "--bench AFTER"]),
    (["--bench", "{d}/after.json", "--baseline", "{d}/after.json"], ["same file", "--bench"]),
    (["--bench", "{d}/after.json", "--baseline", "{t}/missing.json"], ["--baseline", "missing.json", "not found"]),
    (["--baseline-log", "{d}/vllm-before.log"], ["--baseline-log", "--log AFTER"]),
    (["--log", "{d}/vllm-before.log", "--baseline-log", "{d}/vllm-before.log"], ["same file", "--log"]),
    (["--log", "{d}/vllm-after.log", "--baseline-log", "{t}/missing.log"], ["--baseline-log", "not found"]),
    (["--log", "{d}/vllm-after.log", "--baseline-log", "{d}/before.json"], ["no engine version or settings line"]),
])
def test_bad_baselines_are_one_line_exit_2_before_any_work(args, words, tmp_path):
    line = _cli(*[a.format(d=DATA, t=tmp_path) for a in args], tmp_path=tmp_path)
    for w in words:
        assert w in line, line
