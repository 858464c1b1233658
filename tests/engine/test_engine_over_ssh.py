"""The serving-engine prong end to end over a real sshd: staged engine processes with real command lines, a real
/metrics server on the staged host's loopback, a planted secret in the engines' environment that must never reach a
transcript, prompt or report."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from orchestrator.api import investigate
from orchestrator.benchresults import load_bench
from orchestrator.events import ToolResult
from orchestrator.hosts.local import LocalHost
from orchestrator.prongs.serving_engine.probe import collect_engine_report
from orchestrator.observations import Observations
from orchestrator.prongs.serving_engine.models import EngineReport
from orchestrator.settings import Settings
from support.stage_engine import SECRET_ENV, start_engines
from support.staged_host import stage_host

DATA = Path(__file__).parent / "data"
BENCH = DATA / "bench" / "vllm-infqps-concurrency64-Llama-3.1-8B-Instruct-20251130-101500.json"
needs_sshd = pytest.mark.skipif(shutil.which("sshd") is None and not os.path.exists("/usr/sbin/sshd"),
                                reason="OpenSSH sshd not installed")


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


async def test_probe_finds_each_engine_by_its_real_command_line(tmp_path, engines):
    staged = stage_host(tmp_path, variant="h200")
    engines(staged, [
        {"command": "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8 --enforce-eager "
                    "--api-key sk-cmdline-secret-DO-NOT-LEAK", "metrics": (DATA / "vllm_metrics_preempting.txt").read_text()},
        {"command": "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 --disable-radix-cache",
         "metrics": None},
        {"command": "trtllm-serve nvidia/Llama-3.1-8B-Instruct-FP8 --backend pytorch --max_batch_size 64"},
        {"command": "text-generation-launcher --model-id mistralai/Mistral-7B-Instruct-v0.3 --num-shard 1"},
    ])
    r = await collect_engine_report(staged.wrap(LocalHost()), [])
    by = {e.name: e for e in r.engines}
    assert set(by) == {"vllm", "sglang", "trtllm", "tgi"}
    v = by["vllm"]
    assert v.value("tp") == 8 and v.value("cuda_graphs") is False and v.metrics.metrics
    assert v.metrics.metrics["vllm:num_preemptions_total"].value == 1843
    assert by["sglang"].value("prefix_caching") is False and by["sglang"].metrics.status == 404
    assert by["trtllm"].value("max_num_seqs") == 64 and "/prometheus/metrics" in by["trtllm"].metrics.url
    dumped = r.model_dump_json()
    assert "sk-cmdline-secret-DO-NOT-LEAK" not in dumped and "<redacted on host>" in v.command
    for secret in SECRET_ENV.values():
        assert secret not in dumped
    assert "HF_TOKEN" not in dumped and "VLLM_API_KEY" not in dumped
    facts = r.facts()
    assert facts["engine.name"] == "vllm" and facts["metrics.vllm:num_preemptions_total"] == 1843


async def test_no_engine_running_and_no_logs_says_so(tmp_path):
    staged = stage_host(tmp_path, variant="h200")
    staged.env["INVESTIGATE_STAGED_TAG"] = "nothing-staged-here"
    r = await collect_engine_report(staged.wrap(LocalHost()), [])
    assert r.available and not r.engines and "no serving engine found" in r.reason


@needs_sshd
async def test_investigation_over_ssh_never_leaks_the_engine_secret(tmp_path, engines, sshd_factory):  # noqa: F811
    staged = stage_host(tmp_path, variant="h200")
    engines(staged, [{"command": "vllm serve meta-llama/Llama-3.1-8B-Instruct --enforce-eager --max-num-seqs 32 "
                                 "--hf-token hf_cmdlineSECRETdoNOTleak0123456789",
                      "metrics": (DATA / "vllm_metrics_preempting.txt").read_text(),
                      "env": {"VLLM_ATTENTION_BACKEND": "FLASHINFER", "NCCL_DEBUG": "INFO",
                              "VLLM_SECRET_TOKEN": "vllm-env-secret-DO-NOT-LEAK"}}])
    log = staged.root / "vllm.log"
    log.write_text((DATA / "logs" / "vllm-0.11-eager.log").read_text())
    sshd = sshd_factory(env=staged.env)
    path = tmp_path / "run.jsonl"
    report = tmp_path / "r.html"
    result = await investigate("why is inter-token latency high at batch 32?", host=sshd.alias,
                               ssh_config=str(sshd.ssh_config), logs=[str(log)], offline=True, transcript=path,
                               observations=Observations(bench=load_bench(BENCH)),
                               settings=Settings(power_sample_s=0.5))
    assert result.status == "ok", result.error
    recorded = [e for e in result.events if isinstance(e, ToolResult) and e.tool == "engine_config"]
    assert recorded and not recorded[0].is_error
    rep = EngineReport.model_validate(recorded[0].data)
    e = rep.primary
    assert e.origin == "process" and e.value("enforce_eager") is True and e.value("max_num_seqs") == 32
    assert e.env.get("VLLM_ATTENTION_BACKEND") == "FLASHINFER" and e.env.get("NCCL_DEBUG") == "INFO"
    assert e.log is not None and e.log.waiting_max == 31 and e.value("attention_backend_selected") == "FLASH_ATTN"
    from orchestrator.render.html import render_html

    report.write_text(render_html(result.diagnosis, result.events))
    texts = [path.read_text(), result.diagnosis.model_dump_json(), report.read_text()]
    for secret in [*SECRET_ENV.values(), "vllm-env-secret-DO-NOT-LEAK", "hf_cmdlineSECRETdoNOTleak0123456789"]:
        for t in texts:
            assert secret not in t


@needs_sshd
async def test_report_and_show_draw_the_engine_config_and_latency_against_the_floor(tmp_path, engines, sshd_factory):  # noqa: F811
    import subprocess
    import sys

    staged = stage_host(tmp_path, variant="h200")
    engines(staged, [{"command": "vllm serve meta-llama/Llama-3.1-8B-Instruct --enforce-eager --max-num-seqs 32",
                      "metrics": (DATA / "vllm_metrics_healthy.txt").read_text()}])
    sshd = sshd_factory(env=staged.env)
    path = tmp_path / "run.jsonl"
    result = await investigate("why is inter-token latency high?", host=sshd.alias, ssh_config=str(sshd.ssh_config),
                               offline=True, transcript=path, observations=Observations(bench=load_bench(BENCH)),
                               settings=Settings(power_sample_s=0.5))
    assert result.status == "ok", result.error
    sshd.stop()
    from orchestrator.render.html import render_html

    page = render_html(result.diagnosis, result.events)
    assert 'id="engine"' in page and "enforce_eager" in page and "flag --enforce-eager" in page
    assert "against the roofline floor" in page and "roofline floor" in page and "<svg class=\"latency\"" in page
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "160", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    show = subprocess.run([sys.executable, "-m", "orchestrator.cli", "show", str(path)], capture_output=True, text=True,
                          env=env, timeout=60)
    assert show.returncode == 0, show.stderr
    assert "vLLM" in show.stdout and "max running requests" in show.stdout and "x roofline floor" in show.stdout
    for secret in SECRET_ENV.values():
        assert secret not in page and secret not in show.stdout
