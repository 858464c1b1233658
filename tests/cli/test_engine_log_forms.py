"""Issue 30 item 9: the serving engine's per-step token budget and an older vLLM's `args: Namespace(...)` are read from
its log (formats as vLLM prints them: vllm/config/scheduler.py, vllm/entrypoints/openai/api_server.py)."""

from __future__ import annotations

from orchestrator.hosts.local import LocalHost
from orchestrator.prongs.serving_engine.probe import collect_engine_report
from orchestrator.prongs.serving_engine.logs import parse_log_lines

NAMESPACE = ("INFO 05-01 16:02:39 [api_server.py:1044] args: Namespace(subparser='serve', model_tag='/data/model', "
             "config='', host=None, port=8000, tensor_parallel_size=2, gpu_memory_utilization=0.85, max_num_seqs=None, "
             "enforce_eager=False, lora_modules=[LoRAModulePath(name='a', path='/x')])")
CHUNKED = "INFO 10-20 06:48:01 [scheduler.py:205] Chunked prefill is enabled with max_num_batched_tokens=2048."
BANNER = "INFO 05-01 16:02:39 [api_server.py:1043] vLLM API server version 0.8.5"


def test_the_namespace_dump_and_the_chunked_prefill_budget_become_settings_with_their_lines():
    parsed = parse_log_lines([("vllm.log", 1, BANNER), ("vllm.log", 2, NAMESPACE), ("vllm.log", 3, CHUNKED)])
    got = {k: (v.value, v.source) for k, v in parsed.settings.items()}
    assert got["gpu_memory_utilization"] == (0.85, "log vllm.log:2")
    assert got["tp"] == (2, "log vllm.log:2")
    assert got["max_num_batched_tokens"] == (2048, "log vllm.log:3")
    assert "max_num_seqs" not in got  # None in the dump: not set, not a value


async def test_the_engine_probe_keeps_both_lines_of_a_real_log(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text("\n".join([BANNER, NAMESPACE, "INFO 05-01 16:02:40 [weight_utils.py:1] loading", CHUNKED]) + "\n")
    report = await collect_engine_report(LocalHost(), [str(log)], metrics=False)
    kept = {ln.line_no for ln in report.lines}
    assert {2, 4} <= kept
    parsed = parse_log_lines((ln.path, ln.line_no, ln.line) for ln in report.lines)
    assert parsed.settings["gpu_memory_utilization"].value == 0.85
    assert parsed.settings["max_num_batched_tokens"].value == 2048
