"""What fits where, the KV cache (issue 26 item 4): bytes per token from the attention shape (GQA, MQA, MLA, TP, PP),
the sequences a pool holds against the load offered, a context that cannot fit, the weights' measured memory against
their intended dtype, and the engine's queue saying what bounds the batch. Pure: evidence in, findings out."""

from __future__ import annotations

import json

import pytest
from support.evidence import ev, inventory, obs_ev

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.prongs.resource_account.fit_rules import fit_findings
from orchestrator.prongs.serving_engine.kv_fit import kv_bytes_per_element, kv_shape
from orchestrator.prongs.resource_account.queue_rules import engine_queue
from orchestrator.observations import Observations
from orchestrator.prongs.serving_engine.metrics import MetricSummary
from orchestrator.prongs.serving_engine.models import (
    EngineInstance, EngineMetricsScrape, EngineReport, LogState, SettingValue,
)
from orchestrator.prongs.settings_audit.models import ProcessSettings, SettingsFile, SettingsReport

H100 = "NVIDIA H100 80GB HBM3"
LLAMA_70B = {"num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8, "hidden_size": 8192,
             "intermediate_size": 28672, "torch_dtype": "bfloat16", "max_position_embeddings": 131072}
DEEPSEEK_V3 = {"num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128, "hidden_size": 7168,
               "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128}
KIB = 1024


def test_kv_bytes_per_token_count_kv_heads_not_attention_heads():
    kv = kv_shape(LLAMA_70B, "config.json")
    assert kv is not None
    # 2 (K, V) x 80 layers x 8 KV heads x 128 head_dim x 2 bytes = 320 KiB; 64 attention heads would be 2.5 MiB
    assert kv.bytes_per_token(2.0) == 320 * KIB
    assert kv.bytes_per_token(2.0, tp=4) == 80 * KIB  # 2 KV heads on each of 4 GPUs
    assert kv.bytes_per_token(2.0, tp=16) == 40 * KIB  # 8 heads over 16 GPUs: each keeps one (replicated)
    assert kv.bytes_per_token(2.0, pp=2) == 160 * KIB  # half the layers on each stage
    assert kv.bytes_per_token(1.0) == 160 * KIB  # an FP8 cache
    no_gqa = {k: v for k, v in LLAMA_70B.items() if k != "num_key_value_heads"}
    assert kv_shape(no_gqa, "x").bytes_per_token(2.0) == 8 * 320 * KIB  # type: ignore[union-attr]


def test_mla_caches_the_latent_on_every_tp_rank():
    kv = kv_shape(DEEPSEEK_V3, "config.json")
    assert kv is not None and kv.latent == 576
    assert kv.bytes_per_token(2.0) == 61 * 576 * 2 == kv.bytes_per_token(2.0, tp=8)


def test_head_dim_from_hidden_size_and_multimodal_text_config():
    kv = kv_shape({"text_config": {"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
                                   "hidden_size": 4096}}, "x")
    assert kv is not None and kv.head_dim == 128 and kv.bytes_per_token(2.0) == 128 * KIB
    assert kv_shape({"num_attention_heads": 32}, "x") is None  # no layer count: no answer, not a guess


@pytest.mark.parametrize("given,expected", [(None, 2.0), ("auto", 2.0), ("fp8", 1.0), ("fp8_e5m2", 1.0),
                                            ("bfloat16", 2.0)])
def test_kv_dtype_bytes(given, expected):
    assert kv_bytes_per_element(given)[0] == expected


def _engine(name: str = "vllm", settings: dict | None = None, log: LogState | None = None,
            metrics: dict[str, float] | None = None, origin: str = "process") -> EngineReport:
    s = {k: SettingValue(value=x, source=f"flag --{k}") for k, x in (settings or {}).items()}
    m = EngineMetricsScrape(metrics={k: MetricSummary(name=k, type="gauge", value=x) for k, x in (metrics or {}).items()})
    return EngineReport(host="gpu-box", engines=[EngineInstance(name=name, origin=origin, model="meta-llama/Llama-3.1-70B-Instruct",
                                                                settings=s, log=log, metrics=m)])  # type: ignore[arg-type]


def _config_ev(cfg: dict) -> SettingsReport:
    return SettingsReport(host="gpu-box", processes=[ProcessSettings(pid=7, engine="vllm", files={
        "/models/llama/config.json": SettingsFile(text=json.dumps(cfg), role="config.json")})])


def _view(engine: EngineReport | None, obs: dict | None = None, cfg: dict | None = None, n: int = 4) -> EvidenceView:
    evs = [ev("e1", inventory(H100, "9.0", n=n), tool="gpu_inventory")]
    if engine:
        evs.append(ev("e5", engine, tool="engine_config"))
    if cfg:
        evs.append(ev("e6", _config_ev(cfg), tool="settings_audit"))
    if obs:
        evs.append(obs_ev("e3", obs))
    return EvidenceView(evs, Observations.model_validate(obs) if obs else None)


def _bench(conc: int, inp: int, out: int) -> dict:
    return {"bench": [{"format": "vllm-bench-serve", "source": "b.json", "max_concurrency": conc, "input_len": inp,
                       "output_len": out, "completed": 500, "duration_s": 300.0, "output_throughput": 900.0}]}


def test_the_kv_cache_holding_fewer_requests_than_offered_shows_the_arithmetic():
    # Llama-3.1-70B at TP4 on H100s, the engine's own count: 180,000 tokens; 64 requests of 4096 + 1024 tokens
    eng = _engine(settings={"tp": 4, "max_model_len": 8192}, log=LogState(kv_cache_tokens=180_000))
    found = {f.id: f for f in fit_findings(_view(eng, _bench(64, 4096, 1024), LLAMA_70B))}
    f = found["fit-kv-fewer-sequences-than-offered"]
    assert "180,000 / 5,120 = 35.2 requests run at once against the 64 offered" in f.claim
    assert "2 (K and V) x 80 layers x 2 of 8 KV heads x head_dim 128 x 2 bytes = 80.0 KiB per token per GPU" in f.claim
    assert f.symptoms and "ttft" in f.symptoms and f.bound is None
    # at 32 offered the same cache holds them all: the numbers only, no cause
    found = {f.id: f for f in fit_findings(_view(eng, _bench(32, 4096, 1024), LLAMA_70B))}
    assert "fit-kv-fewer-sequences-than-offered" not in found
    assert "35.2 requests of 5,120 tokens, against the 32 offered" in found["fit-kv-cache"].claim


def test_without_the_engines_count_the_pool_is_what_the_weights_leave_at_most():
    # the config's shape (80 layers, H 8192, I 28672: 77.8 B parameters with attention taken as 4H^2) in BF16 over
    # TP4: 36.2 GiB of weights per GPU; 80 GB (74.5 GiB) x 0.9 - 36.2 = 30.8 GiB over 80 KiB per token
    eng = _engine(settings={"tp": 4, "gpu_memory_utilization": 0.9, "max_model_len": 8192}, origin="launch")
    [f] = [x for x in fit_findings(_view(eng, _bench(256, 4096, 1024), LLAMA_70B)) if x.id.startswith("fit-kv")]
    assert f.id == "fit-kv-fewer-sequences-than-offered"
    assert "at most 74.5 GiB x 0.9 - 36.2 GiB of weights = 30.8 GiB per GPU for KV" in f.claim
    assert "403,770 / 5,120 = 78.9 requests run at once against the 256 offered" in f.claim


def test_a_context_length_that_cannot_fit_says_so_with_the_arithmetic():
    # the same model on one H100 at TP2: 65 GiB of weights per GPU leave about 6.5 GiB, 160 KiB per token
    eng = _engine(settings={"tp": 2}, origin="launch")
    found = {f.id: f for f in fit_findings(_view(eng, None, LLAMA_70B, n=2))}
    f = found["fit-context-does-not-fit"]
    assert "131,072 tokens, the model's max_position_embeddings (the default)" in f.claim
    assert "20.00 GiB per GPU" in f.claim and "cannot fit" in f.claim
    # an engine that is running has passed vLLM's own start-up check: an estimate does not overrule it
    assert "fit-context-does-not-fit" not in {x.id for x in fit_findings(_view(_engine(settings={"tp": 2}), None,
                                                                                   LLAMA_70B, n=2))}


def test_weights_loaded_in_16_bits_under_an_fp8_quantization_are_told_by_the_engines_line():
    # sglang#8337's shape: Qwen3-235B-A22B at TP8 with --quantization fp8; 235 B x 1 byte / 8 = 27.4 GiB expected
    eng = _engine("sglang", {"tp": 8, "quantization": "fp8"}, LogState(weights_gib=79.6))
    eng.engines[0].model = "Qwen/Qwen3-235B-A22B"
    found = {f.id: f for f in fit_findings(_view(eng, None, None, n=8))}
    f = found["fit-weights-dtype-not-applied"]
    assert "235.0 B x 1 / 8 GPUs = 27.36 GiB per GPU; the measured memory is 2.9x that, 1.45x what BF16" in f.claim
    # the same line at the FP8 size: nothing to say
    eng.engines[0].log = LogState(weights_gib=27.5)
    assert "fit-weights-dtype-not-applied" not in {x.id for x in fit_findings(_view(eng, None, None, n=8))}


def test_the_queue_says_what_bounds_the_batch():
    full = _engine(metrics={"vllm:num_requests_running": 36, "vllm:num_requests_waiting": 78,
                            "vllm:kv_cache_usage_perc": 0.97})
    f = engine_queue(_view(full), busy=96.0, acct_ev="e9")
    assert f is not None and f.id == "queue-kv-cache-bounds-batch"
    assert "78 requests waiting and 36 running with its KV cache 97 % full" in f.claim
    room = _engine("sglang", {"max_num_seqs": 48}, metrics={"sglang:num_running_reqs": 48,
                                                             "sglang:num_queue_reqs": 200, "sglang:token_usage": 0.31})
    f = engine_queue(_view(room), busy=70.0)
    assert f is not None and f.id == "queue-request-limit-bounds-batch" and "limit of 48" in f.claim
    empty = _engine(metrics={"vllm:num_requests_running": 12, "vllm:num_requests_waiting": 0,
                             "vllm:kv_cache_usage_perc": 0.2})
    assert engine_queue(_view(empty), busy=30.0) is None


def test_weights_held_in_host_memory_show_in_the_serving_processes_rss():
    from orchestrator.prongs.resource_account.models import GpuBusy, ProcessAccount, ResourceAccount

    # an 8B model in BF16 (14.9 GiB) whose GPU holds 6 GiB while the server's resident set is 11 GiB: offloaded
    acct = ResourceAccount(host="gpu-box", window_s=2.0, gpus=[GpuBusy(index=0, samples=10, busy_pct=20.0,
                                                                       memory_used_mib=6144, memory_total_mib=81559)],
                           processes=[ProcessAccount(pid=7, kind="vllm", gpus=[0], rss_bytes=11 * 2**30)])
    obs = {"model": {"name": "Llama-3.1-8B-Instruct"}, "runs": [{"tp": 1}]}
    evs = [ev("e1", inventory(H100, "9.0", n=1), tool="gpu_inventory"), ev("e9", acct, tool="resource_account"),
           obs_ev("e3", obs)]
    [f] = [x for x in fit_findings(EvidenceView(evs, Observations.model_validate(obs))) if x.id.startswith("fit-w")]
    assert f.id == "fit-weights-not-on-gpu" and "hold 11.0 GiB of host memory (VmRSS" in f.claim
    acct.processes[0].rss_bytes = 2 * 2**30  # a small resident set: where the rest is, the account cannot say
    [f] = [x for x in fit_findings(EvidenceView(evs[:1] + [ev("e9", acct, tool="resource_account")] + evs[2:],
                                                Observations.model_validate(obs))) if x.id.startswith("fit-w")]
    assert "VmRSS" not in f.claim


def test_an_fp8_model_under_a_preallocating_engine_without_its_load_line_cannot_be_told():
    eng = _engine("vllm", {"tp": 8, "quantization": "fp8"}, LogState())
    eng.engines[0].model = "Qwen/Qwen3-235B-A22B"
    found = {f.id: f for f in fit_findings(_view(eng, None, None, n=8))}
    assert found["fit-weights-dtype-untold"].informational
    assert "cannot tell which dtype loaded" in found["fit-weights-dtype-untold"].claim


@pytest.mark.parametrize("line,weights,kv_mem", [
    ("(VllmWorker rank=0 pid=2817) INFO 04-09 10:13:41 [gpu_model_runner.py:1276] Model loading took 65.7301 GiB and "
     "92.414873 seconds", 65.7301, None),
    ("(EngineCore_DP0 pid=218) INFO 01-01 16:10:30 [gpu_model_runner.py:2653] Model loading took 15.27 GiB memory and "
     "6.512 seconds", 15.27, None),
    ("[2025-07-24 17:21:06 TP0] Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, avail mem=117.93 GB, "
     "mem usage=19.99 GB.", 19.99, None),
    ("[2024-12-13 01:44:59 TP0] Load weight end. type=MistralForCausalLM, dtype=torch.bfloat16, avail mem=9.69 GB",
     None, None),  # SGLang before 0.4.1 printed no usage: nothing read, nothing guessed
    ("(EngineCore pid=29723) INFO 06-23 10:27:28 [gpu_worker.py:440] Available KV cache memory: 5.16 GiB", None, 5.16),
])
def test_the_engines_weight_and_kv_memory_lines_are_read_as_printed(line, weights, kv_mem):
    import ast
    import re
    from pathlib import Path

    import orchestrator.probes.scripts as scripts
    from orchestrator.prongs.serving_engine.logs import parse_log_lines

    state = parse_log_lines([("server.log", 1, line)]).state
    assert (state.weights_gib, state.kv_cache_memory_gib) == (weights, kv_mem)
    # the probe script on the host keeps the line (its LOG_LINE filter), or the parser never sees it
    tree = ast.parse((Path(scripts.__path__[0]) / "engine.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "LOG_LINE")
    assert eval(compile(ast.Expression(node.value), "engine.py", "eval"), {"re": re}).search(line)


def test_a_quantization_named_only_by_the_model_name_is_the_one_both_weight_rules_use():
    # "-FP8" in the name and nothing else: weights and KV arithmetic agree on 1 byte per parameter
    eng = _engine("vllm", {"tp": 1}, LogState(kv_cache_tokens=100_000))
    eng.engines[0].model = "RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8"
    found = {f.id: f for f in fit_findings(_view(eng, None, None, n=1))}
    assert "8.0 B parameters x 1 bytes (fp8) = 7.5 GiB" in found["fit-weights-per-gpu"].claim
