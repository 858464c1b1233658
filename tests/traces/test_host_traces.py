"""Traces found on the investigated host over a real sshd: the serving process's torch-profiler directory (its
VLLM_TORCH_PROFILER_DIR, vLLM's --profiler-config torch_profiler_dir, SGLANG_TORCH_PROFILER_DIR) or `--trace
host:PATH`; the newest trace per rank copied within a byte budget and read like a local --trace (real H200 extracts)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from orchestrator.api import investigate
from orchestrator.events import ToolResult
from orchestrator.hosts import open_host
from orchestrator.prongs.serving_engine.probe import collect_engine_report
from orchestrator.prongs.trace.host import fetch, profiler_dirs
from orchestrator.settings import Settings
from orchestrator.traces.model import TraceReport
from support.stage_engine import start_engines
from support.staged_host import stage_host

DATA = Path(__file__).parent / "data"
needs_sshd = pytest.mark.skipif(shutil.which("sshd") is None and not os.path.exists("/usr/sbin/sshd"),
                                reason="OpenSSH sshd not installed")


def _put(d: Path, name: str, src: str, age_s: float) -> Path:
    """A real trace extract under the name the engine writes, aged by age_s."""
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    shutil.copyfile(DATA / src, p)
    t = time.time() - age_s
    os.utime(p, (t, t))
    return p


@pytest.fixture
def engines():
    started = []

    def start(staged, specs):
        e = start_engines(staged, specs)
        started.append(e)
        return e

    yield start
    for e in started:
        e.stop()


@needs_sshd
async def test_vllm_profiler_dir_trace_is_found_copied_and_read(tmp_path, engines, sshd_factory):
    staged = stage_host(tmp_path, variant="h200")
    prof = staged.root / "vllm_profile"
    # vLLM's worker traces: {worker_name}.{time_ns}.pt.trace.json.gz (torch.profiler.tensorboard_trace_handler)
    older = _put(prof, "dp0_pp0_tp0_rank0.1764600000000000000.pt.trace.json.gz", "decode_eager_sync.json.gz", 3600)
    newest = _put(prof, "dp0_pp0_tp0_rank0.1764603600000000000.pt.trace.json.gz", "decode_eager_sleep.json.gz", 60)
    (prof / "notes.txt").write_text("not a trace\n")
    engines(staged, [{"command": "vllm serve meta-llama/Llama-3.1-8B-Instruct --enforce-eager",
                      "env": {"VLLM_TORCH_PROFILER_DIR": str(prof)}}])
    sshd = sshd_factory(env=staged.env)
    result = await investigate("why is inter-token latency high?", host=sshd.alias, ssh_config=str(sshd.ssh_config),
                               offline=True, traces=["host:"], baseline_traces=[f"host:{older}"],
                               transcript=tmp_path / "run.jsonl",
                               settings=Settings(power_sample_s=0.5))
    assert result.status == "ok", result.error
    recorded = [e for e in result.events if isinstance(e, ToolResult) and e.tool == "trace_analysis"]
    assert recorded and not recorded[0].is_error, recorded and recorded[0].text
    rep = TraceReport.model_validate(recorded[0].data)
    assert len(rep.ranks) == 1
    acc = rep.ranks[0]
    assert acc.source.endswith(":" + str(newest))  # the host's file is cited, not the local copy
    assert acc.idle_owners[0].name == "planted_host_sleep"  # the newest trace was read (the older one has no sleep)
    assert rep.diff is not None and rep.diff.baseline.endswith(":" + str(older))  # the older one as the baseline
    assert rep.diff.current.endswith(":" + str(newest))
    note = "\n".join(rep.notes)
    assert "VLLM_TORCH_PROFILER_DIR of pid" in note and "an older trace of rank 0" in note
    assert "notes.txt" not in note


@needs_sshd
async def test_profiler_config_and_sglang_dirs_newest_per_rank_within_the_budget(tmp_path, engines, sshd_factory):
    staged = stage_host(tmp_path, variant="h200")
    vdir, sdir = staged.root / "vprof", staged.root / "sprof"
    _put(vdir, "dp0_pp0_tp0_rank0.1.pt.trace.json.gz", "prefill_eager.json.gz", 30)
    # SGLang: one {id}-TP-{tp}-DP-0-PP-0-EP-0.trace.json.gz per rank, and merged-{id}.trace.json.gz beside them
    r0 = _put(sdir, "1764600000-TP-0-DP-0-PP-0-EP-0.trace.json.gz", "prefill_eager_collective.json.gz", 20)
    r1 = _put(sdir, "1764600000-TP-1-DP-0-PP-0-EP-0.trace.json.gz", "prefill_eager.json.gz", 10)
    _put(sdir, "merged-1764600000.trace.json.gz", "prefill_graph.json.gz", 5)
    engines(staged, [
        {"command": ["vllm", "serve", "m", "--profiler-config",
                     '{"profiler": "torch", "torch_profiler_dir": "%s"}' % vdir]},
        {"command": "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2",
         "env": {"SGLANG_TORCH_PROFILER_DIR": str(sdir)}},
    ])
    sshd = sshd_factory(env=staged.env)
    host = await open_host(sshd.alias, ssh_config=str(sshd.ssh_config), settings=Settings())
    try:
        engines_found = (await collect_engine_report(host, [], metrics=False)).engines
        dirs = profiler_dirs(engines_found)
        assert {d.dir for d in dirs} == {str(vdir), str(sdir)}
        assert any("--profiler-config torch_profiler_dir" in d.why for d in dirs)
        budget = r0.stat().st_size + 1000  # room for rank 0 only
        got = await fetch(host, dirs, tmp_path / "copies", budget_bytes=budget)
    finally:
        await host.aclose()
    by_path = {t.path: t for t in got.traces}
    assert by_path[str(r0)].local and Path(by_path[str(r0)].local).read_bytes() == r0.read_bytes()
    assert by_path[str(r1)].rank == 1 and "over the copy budget" in by_path[str(r1)].skipped
    assert not any("merged-" in t.path for t in got.traces)
    assert len(got.copied) == 1  # vLLM's rank-0 file is older than SGLang's rank-0 one: the same rank, left out
    assert "an older trace of rank 0" in by_path[str(vdir / "dp0_pp0_tp0_rank0.1.pt.trace.json.gz")].skipped


@needs_sshd
async def test_a_named_host_dir_that_is_a_credential_path_is_refused(tmp_path, sshd_factory):
    staged = stage_host(tmp_path, variant="h200")
    sshd = sshd_factory(env=staged.env)
    host = await open_host(sshd.alias, ssh_config=str(sshd.ssh_config), settings=Settings())
    try:
        got = await fetch(host, [("/root/.ssh", "--trace"), ("relative/dir", "--trace")], tmp_path / "c")
    finally:
        await host.aclose()
    assert not got.copied and len(got.errors) == 2
    assert "credentials" in got.errors[0] and "not an absolute path" in got.errors[1]


def test_a_relative_host_trace_path_is_one_line_exit_2(tmp_path):
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    proc = subprocess.run([sys.executable, "-m", "orchestrator.cli", "why?", "--offline", "--trace", "host:traces/x"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "must be absolute" in lines[0] and "Traceback" not in proc.stderr


def test_the_host_traces_summary_is_one_line_whose_parts_stay_apart():
    """A gap shows the summary on one line: its parts were joined with newlines and two-space indents, and a gap's
    one-line rendering ran them together ('...listed /x  /x is not a directory  rank 0 ...')."""
    from orchestrator.prongs.trace.host import HostTrace, HostTraces

    got = HostTraces(host="h", dirs=["/p"], errors=["/q is not a directory"],
                     traces=[HostTrace(path="/p/a.json.gz", size=2_000_000, mtime=0.0, rank=0, local="/tmp/a"),
                             HostTrace(path="/p/b.json.gz", size=1, mtime=0.0, skipped="over the copy budget")])
    text = got.summary()
    assert "\n" not in text
    assert text.split("; ") == ["traces on h: listed /p", "/q is not a directory",
                                "rank 0 /p/a.json.gz: copied (2.0 MB)", "rank ? /p/b.json.gz: skipped: over the copy budget"]
