"""Engine command lines -> effective configuration; engine log lines -> state; Prometheus text -> summaries.

Command lines, log lines and metric names are the engines' own (sources in orchestrator/probes/engine_*.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.prongs.serving_engine.probe import build_report
from orchestrator.prongs.serving_engine.cmdline import effective_config, engine_kind, split_command
from orchestrator.prongs.serving_engine.logs import parse_log_lines
from orchestrator.prongs.serving_engine.metrics import parse_metrics

DATA = Path(__file__).parent / "data"
H200 = ("NVIDIA H200", 143771.0)
A100 = ("NVIDIA A100-SXM4-80GB", 81920.0)


def cfg(command: str, gpu=H200, **kw):
    argv = split_command(command)
    kind = engine_kind(argv)
    assert kind is not None, command
    settings, model = effective_config(kind, argv, gpu_name=gpu[0], gpu_mem_mib=gpu[1], **kw)
    return kind, {k: s.value for k, s in settings.items()}, {k: s for k, s in settings.items()}, model


def test_vllm_serve_enforce_eager_tp8_effective_config_with_default_sources():
    kind, v, s, model = cfg("/venv/bin/python3 /venv/bin/vllm serve meta-llama/Llama-3.1-70B-Instruct "
                            "--tensor-parallel-size 8 --enforce-eager --port 8000")
    assert kind == "vllm" and model == "meta-llama/Llama-3.1-70B-Instruct"
    assert v["tp"] == 8 and v["pp"] == 1 and v["ep"] == 1
    assert v["enforce_eager"] is True and v["cuda_graphs"] is False
    # absent flags: the engine's defaults, marked as such, with where they are set
    assert v["max_num_seqs"] == 1024 and s["max_num_seqs"].default and "get_batch_defaults" in s["max_num_seqs"].source
    assert v["max_num_batched_tokens"] == 8192
    assert v["gpu_memory_utilization"] == 0.92 and s["gpu_memory_utilization"].default
    assert v["prefix_caching"] is True and v["chunked_prefill"] is True and v["kv_cache_dtype"] == "auto"


def test_vllm_api_server_module_short_flags_and_a100_defaults():
    kind, v, s, model = cfg("python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-30B-A3B-FP8 -tp 2 "
                            "-dp 2 --enable-expert-parallel --no-enable-prefix-caching --kv-cache-dtype fp8 "
                            "--gpu-memory-utilization=0.95 --max-num-batched-tokens 512 -O3", gpu=A100)
    assert kind == "vllm" and model == "Qwen/Qwen3-30B-A3B-FP8"
    assert v["tp"] == 2 and v["dp"] == 2 and v["ep"] == 4  # EP spans TP x DP
    assert v["prefix_caching"] is False and not s["prefix_caching"].default
    assert v["kv_cache_dtype"] == "fp8" and v["gpu_memory_utilization"] == 0.95
    assert v["max_num_batched_tokens"] == 512 and v["max_num_seqs"] == 256  # A100: the small defaults
    assert v["cuda_graphs"] is True and v["cuda_graph_max_bs"] == 512


def test_vllm_compilation_config_cudagraph_mode_none_turns_graphs_off():
    _, v, s, _ = cfg("vllm serve m --compilation-config '{\"cudagraph_mode\": \"NONE\"}'")
    assert v["cuda_graphs"] is False and "cudagraph_mode NONE" in s["cuda_graphs"].source


def test_sglang_launch_server_flags():
    kind, v, s, model = cfg("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 "
                            "--disable-radix-cache --chunked-prefill-size -1 --mem-fraction-static 0.85 "
                            "--max-running-requests 48 --attention-backend triton --disable-cuda-graph")
    assert kind == "sglang" and model == "deepseek-ai/DeepSeek-V3"
    assert v["tp"] == 8 and v["prefix_caching"] is False and v["chunked_prefill"] is False
    assert v["gpu_memory_utilization"] == 0.85 and v["max_num_seqs"] == 48 and v["attention_backend"] == "triton"
    assert v["cuda_graphs"] is False and v["enforce_eager"] is True
    assert v["scheduler_policy"] == "fcfs" and s["scheduler_policy"].default


def test_trtllm_serve_with_extra_llm_api_options_yaml():
    extra = ("cuda_graph_config:\n  enable_padding: true\n  max_batch_size: 256\nkv_cache_config:\n  dtype: fp8\n"
             "  enable_block_reuse: false\n  free_gpu_memory_fraction: 0.85\nscheduler_config:\n"
             "  capacity_scheduler_policy: MAX_UTILIZATION\nenable_chunked_prefill: true\n")
    kind, v, s, model = cfg("trtllm-serve nvidia/Llama-3.3-70B-Instruct-FP8 --backend pytorch --tp_size 4 "
                            "--max_batch_size 512 --extra_llm_api_options /cfg/extra.yaml",
                            config_files={"/cfg/extra.yaml": extra})
    assert kind == "trtllm" and model == "nvidia/Llama-3.3-70B-Instruct-FP8"
    assert v["tp"] == 4 and v["max_num_seqs"] == 512 and v["max_num_batched_tokens"] == 8192
    assert v["scheduler_policy"] == "MAX_UTILIZATION" and "capacity_scheduler_policy" in s["scheduler_policy"].source
    assert v["kv_cache_dtype"] == "fp8" and v["prefix_caching"] is False and v["chunked_prefill"] is True
    assert v["cuda_graphs"] is True and v["cuda_graph_max_bs"] == 256 and v["gpu_memory_utilization"] == 0.85


def test_trtllm_default_capacity_scheduler_is_guaranteed_no_evict():
    _, v, s, _ = cfg("trtllm-serve serve Qwen/Qwen3-8B --port 8001")
    assert v["scheduler_policy"] == "GUARANTEED_NO_EVICT" and s["scheduler_policy"].default


def test_tgi_launcher_flags_env_and_cuda_graphs_off():
    kind, v, _, model = cfg("text-generation-launcher --model-id mistralai/Mistral-7B-Instruct-v0.3 --num-shard 2 "
                            "--cuda-graphs 0 --max-concurrent-requests 64",
                            env={"PREFIX_CACHING": "0", "ATTENTION": "paged"})
    assert kind == "tgi" and model == "mistralai/Mistral-7B-Instruct-v0.3"
    assert v["tp"] == 2 and v["cuda_graphs"] is False and v["max_num_seqs"] == 64
    assert v["prefix_caching"] is False and v["attention_backend"] == "paged"
    _, v, s, _ = cfg("text-generation-launcher --model-id m")
    assert v["cuda_graph_sizes"] == [1, 2, 4, 8, 16, 32] and s["cuda_graphs"].default


def test_not_an_engine():
    for cmd in ("grep vllm serve /var/log/x", "vim vllm.log", "python3 -m pytest tests/vllm"):
        assert engine_kind(split_command(cmd)) is None


VLLM_V1_LOG = """\
INFO 11-30 09:12:01 [api_server.py:1896] vLLM API server version 0.11.0
INFO 11-30 09:12:01 [utils.py:233] non-default args: {'model_tag': 'meta-llama/Llama-3.1-8B-Instruct', 'model': 'meta-llama/Llama-3.1-8B-Instruct', 'enforce_eager': True, 'max_num_seqs': 32}
(EngineCore_DP0 pid=212) INFO 11-30 09:12:09 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: model='meta-llama/Llama-3.1-8B-Instruct', speculative_config=None, tokenizer='meta-llama/Llama-3.1-8B-Instruct', dtype=torch.bfloat16, max_seq_len=131072, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, quantization=None, enforce_eager=True, kv_cache_dtype=auto, device_config=cuda, enable_prefix_caching=True, chunked_prefill_enabled=True, compilation_config={"level":0,"cudagraph_mode":0}
(EngineCore_DP0 pid=212) INFO 11-30 09:12:09 [vllm.py:958] Cudagraph is disabled under eager mode
(EngineCore_DP0 pid=212) INFO 11-30 09:12:10 [cuda.py:317] Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN', 'FLASHINFER', 'TRITON_ATTN', 'FLEX_ATTENTION'].
(EngineCore_DP0 pid=212) INFO 11-30 09:12:31 [kv_cache_utils.py:1087] GPU KV cache size: 449,152 tokens
(EngineCore_DP0 pid=212) INFO 11-30 09:12:31 [kv_cache_utils.py:1091] Maximum concurrency for 131,072 tokens per request: 3.43x
(APIServer pid=1) INFO 11-30 09:14:02 [loggers.py:127] Engine 000: Avg prompt throughput: 1024.3 tokens/s, Avg generation throughput: 412.5 tokens/s, Running: 32 reqs, Waiting: 17 reqs, GPU KV cache usage: 12.4%, Prefix cache hit rate: 0.0%
(APIServer pid=1) INFO 11-30 09:14:12 [loggers.py:127] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 431.0 tokens/s, Running: 32 reqs, Waiting: 25 reqs, GPU KV cache usage: 14.1%, Prefix cache hit rate: 0.0%
"""


def _lines(text: str, path: str = "/var/log/vllm.log"):
    return [(path, i, ln) for i, ln in enumerate(text.splitlines(), 1)]


def test_vllm_v1_log_state():
    f, version, settings = parse_log_lines(_lines(VLLM_V1_LOG))
    assert version == "0.11.0"
    assert settings["enforce_eager"].value is True and settings["max_num_seqs"].value == 32
    assert settings["tp"].value == 1 and settings["prefix_caching"].value is True
    assert f.selected_backend == "FLASH_ATTN" and f.kv_cache_tokens == 449152 and f.max_concurrency == 3.43
    assert f.eager_line and "Cudagraph is disabled" in f.eager_line
    assert f.stats_samples == 2 and f.waiting_max == 25 and f.running_max == 32
    assert f.kv_usage_max_pct == 14.1 and f.gen_tok_s_mean == pytest.approx(421.75)


def test_vllm_v0_preemption_fallback_and_moe_default_lines():
    text = (
        "INFO 12-06 17:06:57 selector.py:261] Cannot use FlashAttention-2 backend for Volta and Turing GPUs.\n"
        "INFO 12-06 17:06:57 selector.py:144] Using XFormers backend.\n"
        "INFO 12-06 17:07:30 gpu_executor.py:122] # GPU blocks: 2184, # CPU blocks: 2048\n"
        "WARNING 12-06 17:09:33 scheduler.py:1057] Sequence group 12 is preempted by PreemptionMode.RECOMPUTE mode "
        "because there is not enough KV cache space. This can affect the end-to-end performance. Increase "
        "gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
        "total_num_cumulative_preemption=51\n"
        "WARNING 09-24 20:53:34 [fused_moe.py:727] Using default MoE config. Performance might be sub-optimal! "
        "Config file not found at ['/venv/lib/python3.12/site-packages/vllm/model_executor/layers/fused_moe/configs/"
        "E=16,N=1536,device_name=NVIDIA_L40S,dtype=fp8_w8a8,block_shape=[128,128].json']\n"
        "INFO 12-06 17:10:02 metrics.py:351] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 322.1 "
        "tokens/s, Running: 96 reqs, Swapped: 0 reqs, Pending: 40 reqs, GPU KV cache usage: 99.7%, CPU KV cache "
        "usage: 0.0%.\n")
    f = parse_log_lines(_lines(text)).state
    assert f.selected_backend == "XFormers" and f.fallbacks and "Volta and Turing" in f.fallbacks[0]
    assert f.num_gpu_blocks == 2184 and f.preemption_lines == 1 and f.moe_default_config_lines == 1
    assert f.kv_usage_max_pct == 99.7 and f.waiting_max == 40


def test_sglang_log_state():
    text = (
        "[2025-03-07 21:40:02] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-R1', tokenizer_path="
        "'deepseek-ai/DeepSeek-R1', tp_size=16, dp_size=1, mem_fraction_static=0.88, max_running_requests=None, "
        "chunked_prefill_size=8192, disable_radix_cache=False, disable_cuda_graph=False, attention_backend='flashinfer', "
        "schedule_policy='fcfs', kv_cache_dtype='auto')\n"
        "[2025-03-07 21:41:10 TP0] KV Cache is allocated. #tokens: 123456, K size: 8.05 GB, V size: 8.05 GB\n"
        "[2025-03-07 21:49:32 TP0] Decode batch. #running-req: 233, #token: 370959, token usage: 0.99, "
        "cuda graph: True, gen throughput (token/s): 4594.01, #queue-req: 317, \n"
        "[2025-03-07 21:49:33 TP13] Decode out of memory happened. #retracted_reqs: 3, #new_token_ratio: 0.4000 -> 0.7000\n"
        "[2025-07-18 15:32:52 TP0] Prefill batch. #new-seq: 1, #new-token: 2192, #cached-token: 35, token usage: 0.00, "
        "#running-req: 0, #queue-req: 0\n")
    f, _, settings = parse_log_lines(_lines(text, "/var/log/sglang.log"))
    assert settings["tp"].value == 16 and settings["prefix_caching"].value is True
    assert settings["cuda_graphs"].value is True and settings["attention_backend"].value == "flashinfer"
    assert f.kv_cache_tokens == 123456 and f.preemption_lines == 1 and f.retracted_reqs == 3
    assert f.waiting_max == 317 and f.kv_usage_max_pct == pytest.approx(99.0)


def test_vllm_metrics_parse_counters_gauges_histograms():
    m, err = parse_metrics((DATA / "vllm_metrics_preempting.txt").read_text())
    assert err is None
    assert m["vllm:num_preemptions_total"].value == 1843 and m["vllm:kv_cache_usage_perc"].value == 0.998
    ttft = m["vllm:time_to_first_token_seconds"]
    assert ttft.count == 1000 and 0.5 < ttft.p50 < 0.75 and ttft.p99 == pytest.approx(2.5)
    assert m["vllm:cache_config_info"].labels["num_gpu_blocks"] == "16384"


def test_metrics_malformed_text_keeps_what_parsed():
    m, err = parse_metrics("vllm:num_requests_running{engine=\"0\"} 3\nthis is { not prometheus\n")
    assert err is not None


def test_build_report_without_process_reads_launch_script_and_log():
    data = {"engines": [], "gpu": {"name": "NVIDIA H200", "memory_mib": 143771},
            "launches": [{"path": "/srv/start.sh", "line_no": 3,
                          "command": "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 16 --port 8000"}],
            "logs": [{"path": "/var/log/vllm.log", "lines": [[i, ln] for i, ln in enumerate(VLLM_V1_LOG.splitlines(), 1)],
                      "total": 9}]}
    r = build_report("h", data, ["/srv/start.sh", "/var/log/vllm.log"])
    e = r.primary
    assert e is not None and e.origin == "launch" and e.value("max_num_seqs") == 16
    assert e.value("attention_backend_selected") == "FLASH_ATTN" and e.version == "0.11.0"
    facts = r.facts()
    assert facts["engine.name"] == "vllm" and facts["engine.max_num_seqs"] == 16
    assert facts["engine.log.waiting_max"] == 25 and facts["engine.cuda_graphs"] is False
    assert any(src == "server" and "Cudagraph" in line for src, _, _, line in r.log_lines())


def test_sglang_later_decode_and_prefill_wording():
    """SGLang's later lines: 'Decode batch,' with hybrid models' '#full token: .., full token usage: .., mamba ..'
    and 'Prefill batch,' (the scheduler's log_decode_stats / log_prefill_stats)."""
    from orchestrator.prongs.serving_engine.logs import parse_log_lines

    lines = ["[2026-03-23 09:20:01 TP0] Prefill batch, #new-seq: 1, #new-token: 2000, #cached-token: 500, full token "
             "usage: 0.03, mamba usage: 0.04, #running-req: 2, #queue-req: 0, ",
             "[2026-03-23 09:20:02 TP0] Decode batch, #running-req: 4, #full token: 9476, full token usage: 0.05, "
             "mamba num: 8, mamba usage: 0.05, accept len: 1.50, accept rate: 0.17, cuda graph: True, gen throughput "
             "(token/s): 124.74, #queue-req: 1, "]
    st = parse_log_lines(("/l", i + 1, ln) for i, ln in enumerate(lines)).state
    assert st.running_max == 4 and st.waiting_max == 1 and st.kv_usage_max_pct == 5.0
    assert st.prefix_hit_rate_pct == 20.0 and st.spec_accept_len_mean == 1.5 and st.spec_lines == 1
