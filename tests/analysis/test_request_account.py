"""The request account (orchestrator/prongs/request): the terms from each measuring point, the floors, the residuals
and the mechanisms the residual table confirms, rules out or leaves as candidates. Real formats throughout: vLLM's
Prometheus exposition text through the serving-engine probe's own parser, llama-server's, Ollama's and vLLM's log
lines as those programs print them, Triton's per-model counters, the observations' benchmark runs."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys

import pytest
from support.evidence import ev, inventory

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.observations import Observations
from orchestrator.prongs.request.account import BELOW_FLOOR, build_account, shape_from_config
from orchestrator.prongs.request.engine_logs import read_request_logs
from orchestrator.prongs.request.models import RequestFiles
from orchestrator.prongs.request.probe import server_models
from orchestrator.prongs.request.rules import request_account_findings
from orchestrator.prongs.request.table import load_table, render, table
from orchestrator.prongs.serving_engine.probe import build_report
from orchestrator.redact import redact

LABELS = 'engine="0",model_name="m"'


def _metrics(*, ttft_s: float, itl_s: float, e2e_s: float, n: int, prompt: float, gen: float, running: float,
             waiting: float = 0.0, reasons: dict[str, float] | None = None, max_tokens: float | None = None,
             hits: float = 0.0) -> str:
    """vLLM V1's exposition text (names and labels as vllm/v1/metrics/loggers.py writes them), sums and counts
    only: the account reads means."""
    lines = []
    for name, kind, value in (("vllm:num_requests_running", "gauge", running),
                              ("vllm:num_requests_waiting", "gauge", waiting),
                              ("vllm:prompt_tokens_total", "counter", prompt * n),
                              ("vllm:generation_tokens_total", "counter", gen * n),
                              ("vllm:prefix_cache_queries_total", "counter", prompt * n),
                              ("vllm:prefix_cache_hits_total", "counter", hits)):
        lines += [f"# TYPE {name} {kind}", f"{name}{{{LABELS}}} {value}"]
    lines.append("# TYPE vllm:request_success_total counter")
    for reason, count in (reasons or {"stop": n}).items():
        lines.append(f'vllm:request_success_total{{engine="0",finished_reason="{reason}",model_name="m"}} {count}')
    hists = {"vllm:time_to_first_token_seconds": (n, ttft_s * n), "vllm:inter_token_latency_seconds":
             (n * (gen - 1), itl_s * n * (gen - 1)), "vllm:e2e_request_latency_seconds": (n, e2e_s * n),
             "vllm:request_prompt_tokens": (n, prompt * n), "vllm:request_generation_tokens": (n, gen * n)}
    if max_tokens:
        hists["vllm:request_params_max_tokens"] = (n, max_tokens * n)
    for name, (count, total) in hists.items():
        lines += [f"# TYPE {name} histogram", f'{name}_bucket{{{LABELS},le="+Inf"}} {count}',
                  f"{name}_count{{{LABELS}}} {count}", f"{name}_sum{{{LABELS}}} {total}"]
    return "\n".join(lines) + "\n"


def _engine(metrics: str | None = None, logs: list[str] | None = None, model: str = "meta-llama/Llama-3.1-8B-Instruct",
            flags: tuple[str, ...] = ()):
    data = {"engines": [{"argv": ["vllm", "serve", model, *flags], "kind": "vllm", "pid": 7,
                         **({"metrics": {"url": "http://127.0.0.1:8000/metrics", "status": 200, "text": metrics}}
                            if metrics else {})}] if metrics else [],
            "logs": [{"path": "/var/log/engine.log", "lines": [[i + 1, ln] for i, ln in enumerate(logs or [])]}]}
    return build_report("gpu-box", data, ["/var/log/engine.log"] if logs else [])


def _view(engine=None, bench: list[dict] | None = None, model: dict | None = None, question: str = "",
          files: RequestFiles | None = None, gpu: str = "NVIDIA H100 80GB HBM3", count: int = 1) -> EvidenceView:
    obs = Observations.model_validate({"model": model or {"name": "Llama-3.1-8B-Instruct", "quantization": "bf16"},
                                       "bench": bench or []})
    evs = [ev("ev-1.1", inventory(gpu, "9.0", count, nvlink=True), tool="gpu_inventory"),
           ev("ev-2.1", data={"kind": "observations", "observations": obs.model_dump(mode="json")},
              tool="observations")]
    if engine is not None:
        evs.append(ev("ev-3.1", engine, tool="engine_config"))
    if files is not None:
        evs.append(ev("ev-4.1", files, tool="request_account"))
    return EvidenceView(evs, obs, question=question)


def _client(label: str = "bench", **kw) -> dict:
    return {"format": "client", "label": label, "source": "timings", **kw}


def _shapes(v: EvidenceView) -> set[str]:
    acct = build_account(v)
    assert acct is not None
    return {r.shape for r in acct.residuals}


# --- the account's terms and residuals ------------------------------------------------------------------------------

def test_client_ttft_far_above_the_engines_is_a_residual_on_the_path():
    eng = _engine(_metrics(ttft_s=0.046, itl_s=0.0068, e2e_s=0.91, n=3840, prompt=1024, gen=128, running=16))
    v = _view(eng, [_client(max_concurrency=96, completed=3840, failed=0, input_len=1024, output_len=128,
                            request_throughput=17.6, ttft={"mean": 4588.0}, itl={"p50": 6.7},
                            e2el={"mean": 5452.0})])
    acct = build_account(v)
    assert acct is not None
    by = {r.shape: r for r in acct.residuals}
    assert {"ttft.client_over_engine", "e2e.client_over_engine", "load.client_over_engine"} <= set(by)
    r = by["ttft.client_over_engine"]
    assert r.between == ("client", "engine") and round(r.b) == 46 and "between the client and the engine" in r.layer
    assert by["load.client_over_engine"].a == 96 and by["load.client_over_engine"].b == 16


def test_figures_that_agree_make_no_residual_and_the_account_says_they_reconcile():
    eng = _engine(_metrics(ttft_s=1.385, itl_s=0.0196, e2e_s=7.49, n=600, prompt=12167, gen=313, running=4),
                  model="meta-llama/Llama-3.3-70B-Instruct")
    v = _view(eng, [_client(max_concurrency=4, completed=600, input_len=12140, output_len=310,
                            ttft={"mean": 1431.0, "p50": 1420.0}, itl={"mean": 19.8, "p50": 19.7},
                            e2el={"mean": 7523.0})],
              model={"name": "Llama-3.3-70B-Instruct", "quantization": "fp8"}, gpu="NVIDIA H200",
              question="time to first token is 1.4 s, is the proxy adding latency?")
    assert _shapes(v) == set()
    found = {f.id: f for f in request_account_findings(v)}
    ok = found["request-reconciled"]
    assert "1.61x one prefill of its 12,167-token prompts" in ok.title  # the question is about TTFT
    assert "27 tokens: a chat template" in ok.claim and "proxy" not in ok.title.lower()


def test_generated_far_beyond_kept_with_the_length_cap_and_a_missing_stop_token_is_confirmed():
    eng = _engine(_metrics(ttft_s=0.12, itl_s=0.0312, e2e_s=31.4, n=600, prompt=631, gen=1002, running=4,
                           reasons={"stop": 24, "length": 576, "abort": 0}, max_tokens=1024),
                  flags=("--tensor-parallel-size", "2"))
    files = RequestFiles(host="gpu-box", models=[{
        "ref": "/models/x", "path": "/models/x", "generation": {"eos_token_id": 128001},
        "special_tokens": {"128001": "<|end_of_text|>", "128009": "<|eot_id|>"},
        "template_tokens": ["<|eot_id|>", "<|start_header_id|>"], "eos_token": "<|end_of_text|>"}])
    assert files.facts()["model_files.turn_end_missing_tokens"] == "<|eot_id|> (128009)"
    v = _view(eng, [_client(max_concurrency=4, completed=600, input_len=612, output_len=181,
                            e2el={"mean": 31950.0})], files=files, gpu="NVIDIA L4", count=2)
    assert {"tokens_out.engine_over_client", "finish.length"} <= _shapes(v)
    found = {f.id: f for f in request_account_findings(v)}
    f = found["request-stop-token-missing"]
    assert "576" in f.claim and "1,024" in f.claim and "128009" in f.claim and f.sets_bound is not None
    assert any("eos_token_id" in r for r in f.recommendations)
    # the twin: the stop token is there, requests stop on their own: no such finding
    ok = files.model_copy(deep=True)
    ok.models[0].generation["eos_token_id"] = [128001, 128009]
    v2 = _view(_engine(_metrics(ttft_s=0.12, itl_s=0.0301, e2e_s=6.5, n=600, prompt=631, gen=214, running=4,
                                reasons={"stop": 592, "length": 8}), flags=("--tensor-parallel-size", "2")),
               [_client(max_concurrency=4, completed=600, input_len=612, output_len=214, e2el={"mean": 6525.0})],
               files=ok, gpu="NVIDIA L4", count=2)
    assert "request-stop-token-missing" not in {f.id for f in request_account_findings(v2)}


def test_aborted_requests_sent_again_are_retries_and_their_work_is_counted():
    eng = _engine(_metrics(ttft_s=44.0, itl_s=0.021, e2e_s=56.0, n=638, prompt=17473, gen=227, running=9,
                           waiting=23, reasons={"stop": 212, "abort": 426}))
    v = _view(eng, [_client(max_concurrency=32, completed=212, failed=88, input_len=24100, output_len=410,
                            e2el={"mean": 51220.0})], model={"name": "Llama-3.3-70B-Instruct", "quantization": "fp8"},
              count=2)
    acct = build_account(v)
    assert acct is not None and {"requests.engine_over_client", "finish.abort"} <= {r.shape for r in acct.residuals}
    waste = {w.phase: w for w in acct.waste}
    assert round(waste["prefill"].share, 2) == round(1 - 212 * 24100 / (638 * 17473), 2)
    found = {f.id: f for f in request_account_findings(v)}
    assert "426" in found["request-client-timeout-retries"].claim


def test_an_engine_count_that_covers_several_runs_is_not_a_residual_of_one():
    eng = _engine(_metrics(ttft_s=0.052, itl_s=0.0183, e2e_s=5.52, n=1600, prompt=500, gen=300, running=8))
    runs = [_client("direct", max_concurrency=8, completed=800, input_len=500, output_len=300,
                    ttft={"mean": 53.0}, itl={"p50": 18.2}, e2el={"mean": 5524.0}),
            _client("again", max_concurrency=8, completed=800, input_len=500, output_len=300,
                    ttft={"mean": 55.0}, itl={"p50": 18.3}, e2el={"mean": 5531.0})]
    acct = build_account(_view(eng, runs))
    assert acct is not None and not acct.residuals and not acct.waste


def test_a_blended_engine_figure_is_not_set_against_one_run():
    """Two runs, TTFT 612 and 29 ms; the engine's histogram, 293 ms, counts both: no run differs from the engine."""
    eng = _engine(_metrics(ttft_s=0.293, itl_s=0.0127, e2e_s=1.89, n=400, prompt=8192, gen=128, running=0,
                           hits=1635200))
    runs = [_client("run 1", max_concurrency=16, completed=200, input_len=8192, output_len=128,
                    ttft={"mean": 612.0}, e2el={"mean": 2288.0}),
            _client("run 2", max_concurrency=16, completed=200, input_len=8192, output_len=128,
                    ttft={"mean": 29.4}, e2el={"mean": 1566.0})]
    shapes = _shapes(_view(eng, runs))
    assert not {"ttft.client_over_engine", "ttft.engine_over_client"} & shapes
    assert "ttft.client_below_floor" in shapes  # 29 ms for 8,192 tokens: below one prefill on an H100


def test_a_decode_below_its_dense_floor_is_a_mixture_of_experts_and_the_bound_is_vetoed():
    """Mixtral 8x7B at batch 1 decodes below the floor of reading every weight (wrong model), not below its
    active-parameter floor."""
    eng = _engine(_metrics(ttft_s=0.038, itl_s=0.0051, e2e_s=1.34, n=400, prompt=512, gen=256, running=1),
                  flags=("--tensor-parallel-size", "2"))
    model = {"name": "Mixtral-8x7B-Instruct-v0.1", "quantization": "bf16", "num_layers": 32, "num_experts": 8,
             "top_k": 2, "hidden_size": 4096, "moe_intermediate_size": 14336, "active_params_b": 12.9}
    v = _view(eng, [_client(max_concurrency=1, completed=400, input_len=512, output_len=256,
                            itl={"p50": 5.19})], model=model, count=2)
    acct = build_account(v)
    assert acct is not None and "itl.below_dense_floor" in {r.shape for r in acct.residuals}
    assert 3.8 < acct.floors["itl"].ms < 3.9 and acct.floors["dense_itl"].ms > 13
    f = {x.id: x for x in request_account_findings(v)}["request-moe-active-floor"]
    assert "12.9 B active" in f.title and "1.3" in f.claim


def test_a_client_itl_below_the_memory_floor_vetoes_any_memory_bound_verdict():
    eng = _engine(_metrics(ttft_s=0.052, itl_s=0.0183, e2e_s=5.52, n=800, prompt=500, gen=300, running=8))
    v = _view(eng, [_client("through the proxy", max_concurrency=8, completed=800, input_len=500, output_len=300,
                            ttft={"mean": 3961.0}, itl={"mean": 5.7, "p50": 0.02, "p99": 1180.0},
                            e2el={"mean": 5607.0})], model={"name": "Mistral-7B-Instruct-v0.3"}, gpu="NVIDIA L40S")
    found = {f.id: f for f in request_account_findings(v)}
    veto = found["request-contradiction-floor"]
    assert veto.contradicts == ["decode"]
    assert BELOW_FLOOR > 0.02 / 16.2


def test_one_slot_serving_four_users_is_flat_throughput_and_ollama_says_why():
    logs = ['Aug 17 10:02:11 h ollama[1873]: time=2025-08-17T10:02:11.482Z level=INFO source=routes.go:1318 '
            'msg="server config" env="map[OLLAMA_MAX_QUEUE:512 OLLAMA_NUM_PARALLEL:1 OLLAMA_HOST:http://0.0.0.0:11434]"']
    logs += [f"Aug 17 10:06:{10 + i:02d} h ollama[1873]: [GIN] 2025/08/17 - 10:06:{10 + i:02d} | 200 | "
             f"{9.6 * (i % 4 + 1):.6f}s |       10.0.0.21 | POST     \"/api/chat\"" for i in range(8)]
    v = _view(_engine(None, logs), [
        _client("alone", max_concurrency=1, completed=12, input_len=1500, output_len=420, e2el={"mean": 9610.0}),
        _client("four at once", max_concurrency=4, completed=16, input_len=1500, output_len=420,
                request_throughput=0.104, e2el={"mean": 24010.0})],
        model={"name": "qwen2.5:14b (Q4_K_M)", "quantization": "q4_k_m"}, gpu="NVIDIA GeForce RTX 4090")
    assert "throughput.flat_with_concurrency" in _shapes(v)
    f = {x.id: x for x in request_account_findings(v)}["request-ollama-parallel-one"]
    assert "OLLAMA_NUM_PARALLEL" in f.title and any("OLLAMA_NUM_PARALLEL" in r for r in f.recommendations)


def test_without_the_layer_on_the_host_the_path_residual_names_candidates_and_what_splits_them():
    eng = _engine(_metrics(ttft_s=0.063, itl_s=0.025, e2e_s=14.1, n=388, prompt=460, gen=560, running=16))
    v = _view(eng, [_client(max_concurrency=64, completed=388, failed=612, input_len=460, output_len=560,
                            e2el={"mean": 14120.0})], model={"name": "Qwen2.5-7B-Instruct"},
              gpu="NVIDIA A100-SXM4-80GB")
    f = next(x for x in request_account_findings(v) if x.id.startswith("request-residual-requests"))
    assert f.data["candidates"] and len(f.recommendations) == len(f.data["candidates"])
    assert all(": if it is this (" in r for r in f.recommendations)  # the measurement, then the fix if it is that


# --- engine logs, servers, the table ------------------------------------------------------------------------------

def test_llama_server_slot_lines_show_the_history_prefilled_again():
    lines = ["srv          init: initializing slots, n_slots = 1"]
    for task, (prompt, past) in enumerate(((6412, 6555), (6601, 6744), (6790, 6930))):
        lines += [f"slot update_slots: id  0 | task {task} | new prompt, n_ctx_slot = 16384, n_keep = 0, "
                  f"n_prompt_tokens = {prompt}",
                  f"slot update_slots: id  0 | task {task} | kv cache rm [0, end)",
                  f"slot      release: id  0 | task {task} | stop processing: n_past = {past}, truncated = 0",
                  f"prompt eval time =    3518.44 ms /  {prompt} tokens (    0.55 ms per token,  1822.40 tokens per "
                  "second)", "       eval time =    4232.80 ms /   143 tokens (   29.60 ms per token,    33.78 "
                  "tokens per second)"]
    logs = read_request_logs(("/var/log/llama.log", i, ln) for i, ln in enumerate(lines))
    facts = logs.facts()
    assert facts["request.log.llama.full_reprocess_share"] == 1.0 and facts["request.log.llama.slots"] == 1
    assert facts["request.log.llama.held_before_mean"] == (6555 + 6744) / 2
    assert round(facts["request.log.llama.eval_ms_per_token"], 1) == 29.6


def test_vllm_gc_debug_lines_and_per_engine_stats():
    lines = ["(APIServer pid=1) INFO 11-04 08:30:00 [gc_utils.py:84] GC took 128.400ms to complete. Collected 200 "
             "objects (out of 2882843) in GC generation 2.",
             "(EngineCore_DP0 pid=214) INFO 11-04 08:30:00 [gc_utils.py:84] GC took 1.100ms to complete. Collected 0 "
             "objects (out of 61204) in GC generation 1.",
             "(APIServer pid=1) INFO 11-04 08:30:02 [gc_utils.py:84] GC took 142.100ms to complete. Collected 253 "
             "objects (out of 2894774) in GC generation 2."]
    for pid in (5120, 5188):
        lines.append(f"(ServeReplica:app:VLLMDeployment pid={pid}) INFO 10-15 14:20:12 [loggers.py:127] Engine 000: "
                     "Avg prompt throughput: 12554.1 tokens/s, Avg generation throughput: 3114.1 tokens/s, Running: 5 "
                     "reqs, Waiting: 0 reqs, GPU KV cache usage: 8.3%, Prefix cache hit rate: 0.0%")
    facts = read_request_logs(("/var/log/x.log", i, ln) for i, ln in enumerate(lines)).facts()
    assert facts["request.log.gc.api_server_gen2_pause_ms_max"] == 142.1
    assert facts["request.log.gc.apiserver.gen2_interval_s"] == 2.0 and "request.log.gc.enginecore.gen2_count" not in facts
    assert facts["request.log.engines"] == 2 and facts["request.log.running_per_engine"] == 5


def test_triton_per_model_counters_name_the_per_token_step():
    counts = (("ensemble", 1200), ("tensorrt_llm", 1200), ("postprocessing", 307200))
    text = "\n".join(
        ["# TYPE nv_inference_request_success counter"]
        + [f'nv_inference_request_success{{model="{m}",version="1"}} {n}' for m, n in counts]
        + ["# TYPE nv_inference_exec_count counter"]
        + [f'nv_inference_exec_count{{model="{m}",version="1"}} {n}' for m, n in counts]
        + ["# TYPE nv_inference_request_duration_us counter",
           'nv_inference_request_duration_us{model="tensorrt_llm",version="1"} 2006400000',
           "# TYPE nv_inference_compute_infer_duration_us counter",
           'nv_inference_compute_infer_duration_us{model="postprocessing",version="1"} 12318720000',
           "# TYPE nv_trt_llm_request_metrics gauge",
           'nv_trt_llm_request_metrics{model="tensorrt_llm",request_type="active",version="1"} 1']) + "\n"
    by = {m.name: m for m in server_models(text)}
    assert by["tensorrt_llm"].llm and round(by["tensorrt_llm"].request_ms or 0) == 1672
    assert round(by["postprocessing"].compute_ms or 0, 1) == 40.1 and not by["postprocessing"].llm


def test_every_mechanism_of_the_table_is_whole_and_its_words_survive_redaction():
    t = table()
    assert t.shapes and t.mechanisms
    used = {m for s in t.shapes.values() for m in s.mechanisms}
    assert used <= set(t.mechanisms) and set(t.mechanisms) - used <= {"chat-template-only", "prompt-truncated",
                                                                       "other-traffic"} | used
    from orchestrator.prongs.request.table import host_facts

    from support.hygiene import citation_problem

    hf = host_facts({})
    for mid, m in t.mechanisms.items():
        assert m.sources and all(s.startswith("https://") or s.startswith("http://") for s in m.sources), mid
        for text in (m.title, m.claim, m.fix, m.split):
            words, _ = render(text, hf, {"residual": "TTFT 1 ms at the client against 2 ms at the engine",
                                         "residual_note": "engine A: 12, engine B: 1"})
            assert redact(words) == words, (mid, words)  # "token: X" would be taken for a credential
        for text in (m.fix, m.split, f"{m.split} if it is this: {m.fix}"):  # each is cited with the first source
            assert citation_problem(render(text, hf)[0], [m.sources[0]]) is None, mid


def test_a_shape_naming_an_undefined_mechanism_is_refused():
    with pytest.raises(ValueError, match="not defined"):
        load_table(json.dumps({"shapes": {"x.y": {"says": "s", "mechanisms": ["nope"]}}, "mechanisms": {}}))


def test_config_json_gives_active_parameters_of_a_mixture_of_experts():
    cfg = {"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
           "intermediate_size": 14336, "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000}
    s = shape_from_config(cfg)
    assert s is not None and 46e9 < s.total_params < 47.5e9 and 12.5e9 < s.active_params < 13.2e9


def test_the_host_script_reads_only_the_keys_it_names(tmp_path):
    """scripts/request_files.py on real files under a staged root: the stop ids, the template's special tokens and
    the image sizing leave the host; the template's text does not."""
    d = tmp_path / "models" / "m"
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                                               "secret_field": "x"}))
    (d / "generation_config.json").write_text(json.dumps({"eos_token_id": 128001}))
    (d / "tokenizer_config.json").write_text(json.dumps({
        "eos_token": "<|end_of_text|>", "chat_template": "{{ m }}<|eot_id|> SECRET-TEMPLATE-TEXT",
        "added_tokens_decoder": {"128001": {"content": "<|end_of_text|>", "special": True},
                                 "128009": {"content": "<|eot_id|>", "special": True}}}))
    from orchestrator.probes import scripts
    from orchestrator.probes.runner import with_params

    # the engine that names them: the host reads a model's files only as the process that names it could
    engine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--model", "/models/m",
                               "--model", "/models/absent"])
    try:
        src = with_params(scripts.load("request_files"), {"models": [
            {"ref": "/models/m", "pid": engine.pid}, {"ref": "/models/absent", "pid": engine.pid}], "servers": False})
        out = subprocess.run([sys.executable, "-I", "-S", "-"], input=src, capture_output=True, text=True, timeout=60,
                             env={**os.environ, "INVESTIGATE_NODE_ROOT": str(tmp_path)})
    finally:
        engine.kill()
        engine.wait()
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["looked"] == ["/models/m", "/models/absent"] and len(data["models"]) == 1
    m = data["models"][0]
    assert m["generation"] == {"eos_token_id": 128001} and "secret_field" not in m["config"]
    assert m["template_tokens"] == ["<|eot_id|>"] and "SECRET-TEMPLATE-TEXT" not in out.stdout
    files = RequestFiles.model_validate({"kind": "request_files", "models": data["models"]})
    assert files.facts()["model_files.turn_end_missing"] is True


def test_a_model_whose_files_were_not_read_is_a_gap():
    """A model reference the host refused to read (no process that names it could) is said in the diagnosis's gaps,
    not silently missing."""
    files = RequestFiles(host="gpu-box", looked=["/root/model"], refused={"/root/model": "no running process names it"})
    v = _view(files=files)
    request_account_findings(v)
    assert ("the served model's files (/root/model) on gpu-box (ev-4.1)", "no running process names it") in v.notices


async def test_the_tool_gives_a_model_the_account_and_the_mechanisms(tmp_path):
    """The `request_account` tool on this machine (real probes over the local host: no engine runs here), with the
    observations' two runs: the model reads every term, the residual between the runs and its candidates."""
    from orchestrator.hosts.local import LocalHost
    from orchestrator.inputs import RunInputs
    from orchestrator.prongs.request.tool import RequestAccountTool
    from orchestrator.tools.base import execute
    from orchestrator.tools.mock import MockToolContext

    obs = {"model": {"name": "Llama-3.1-8B-Instruct"}, "bench": [
        _client("direct", max_concurrency=4, completed=400, input_len=512, output_len=200, ttft={"mean": 101.8},
                itl={"mean": 10.6, "p50": 10.5}, e2el={"mean": 2211.0}),
        _client("through the gateway", max_concurrency=4, completed=400, input_len=512, output_len=200,
                ttft={"mean": 5104.6}, itl={"mean": 10.6, "p50": 10.5}, e2el={"mean": 7213.0})]}
    ctx = MockToolContext(host=LocalHost(), inputs=RunInputs(question="why is TTFT 5 s through the gateway?",
                                                             observations=obs))
    out = (await execute(RequestAccountTool(), "request_account", {}, ctx)).output
    assert not out.is_error, out.text
    assert "TTFT [through the gateway, concurrency 4]: client 5,105 ms" in out.text
    assert "residual ttft.run_over_run" in out.text and "confirmed: Something in front of the engine adds a fixed " \
                                                         "time before each first token (5,003 ms)" in out.text
    assert out.data is not None and out.data["kind"] == "request_files"


def test_every_renderer_carries_the_account():
    """The account's arithmetic in JSON (the diagnosis field, left out when absent), Markdown, HTML and the terminal."""
    import io

    from rich.console import Console

    from orchestrator.diagnosis import Diagnosis
    from orchestrator.prongs.request.report import (account_html, account_markdown, render_account_terminal,
                                                    table_of)

    eng = _engine(_metrics(ttft_s=0.046, itl_s=0.0068, e2e_s=0.91, n=3840, prompt=1024, gen=128, running=16))
    v = _view(eng, [_client(max_concurrency=96, completed=3840, failed=0, input_len=1024, output_len=128,
                            request_throughput=17.6, ttft={"mean": 4588.0}, itl={"p50": 6.7}, e2el={"mean": 5452.0})])
    acct = build_account(v)
    assert acct is not None
    d = Diagnosis(question="q", verdict="v", request_account=table_of(v, acct))
    dumped = d.model_dump(mode="json")
    assert dumped["request_account"]["residuals"][0]["shape"] == "ttft.client_over_engine"
    assert "request_account" not in Diagnosis(question="q", verdict="v").model_dump(mode="json")
    md = "\n".join(account_markdown([], d, lambda s: s))
    assert "## Request account" in md and "| TTFT |" in md and "4,588 ms" in md and "floor of itl" in md
    html = account_html([], d, set())
    assert 'id="request-account"' in html and "4,588 ms" in html and "<script" not in html
    buf = io.StringIO()
    render_account_terminal([], d, Console(file=buf, width=160))
    assert "Request account" in buf.getvalue() and "4,588 ms" in buf.getvalue()
    assert account_markdown([], Diagnosis(question="q", verdict="v"), lambda s: s) == []


def test_the_second_round_plans_the_path_probe_only_when_it_would_split_the_candidates():
    """A TTFT far above the engine's with no layer read yet: the path prong's call; with its facts in the evidence,
    or with a mechanism confirmed, nothing."""
    from orchestrator.prongs.path.models import PathReport
    from orchestrator.prongs.request.rules import second_round

    eng = _engine(_metrics(ttft_s=0.046, itl_s=0.0068, e2e_s=0.91, n=3840, prompt=1024, gen=128, running=16))
    bench = [_client(max_concurrency=96, completed=3840, failed=0, input_len=1024, output_len=128,
                     request_throughput=17.6, ttft={"mean": 4588.0}, itl={"p50": 6.7}, e2el={"mean": 5452.0})]
    steps = second_round(_view(eng, bench))
    assert [s.tool for s in steps] == ["task"] and steps[0].args["agent"] == "path"
    assert "proxy-connection-cap" in steps[0].args["brief"] and "4,588 ms" in steps[0].args["brief"]
    looked = _view(eng, bench)  # the path probe ran and found no layer: nothing more to read
    looked = EvidenceView(looked.evidence + [ev("ev-5.1", PathReport(host="gpu-box"), tool="path_layers")],
                          looked.observations_evidence[1] if looked.observations_evidence else None)
    assert second_round(looked) == []
    retries = _engine(_metrics(ttft_s=44.0, itl_s=0.021, e2e_s=56.0, n=638, prompt=17473, gen=227, running=9,
                               waiting=23, reasons={"stop": 212, "abort": 426}))
    confirmed = _view(retries, [_client(max_concurrency=32, completed=212, failed=88, input_len=24100, output_len=410,
                                        e2el={"mean": 51220.0})], count=2)
    assert second_round(confirmed) == []  # the retries are confirmed on the engine's own counters


def test_answers_the_engine_finished_but_the_client_lost_are_a_timeout_between_them():
    """Every request finished at the engine, a fifth failed at the client; the longest take 95 s in the engine and
    the proxy in front gives up after 60 s: the timeout between them. With the proxy's timeout above the longest
    request it is ruled out."""
    from orchestrator.prongs.path.models import Layer, LayerValue, PathReport

    eng = _engine(_metrics(ttft_s=0.4, itl_s=0.03, e2e_s=80.0, n=1000, prompt=800, gen=2600, running=24))
    bench = [_client(max_concurrency=24, completed=800, failed=200, input_len=800, output_len=2600,
                     e2el={"mean": 61000.0})]

    def with_proxy(timeout: str) -> EvidenceView:
        v = _view(eng, bench)
        proxy = PathReport(host="gpu-box", layers=[Layer(layer="nginx", label="nginx", settings={
            "proxy_read_timeout": LayerValue(value=timeout, where="/etc/nginx/conf.d/llm.conf:12")})])
        return EvidenceView(v.evidence + [ev("ev-5.1", proxy, tool="path_layers")], v.observations_evidence[1]
                            if v.observations_evidence else None)

    acct = build_account(with_proxy("60s"))
    assert acct is not None and "requests.served_not_delivered" in {r.shape for r in acct.residuals}
    found = {f.id: f for f in request_account_findings(with_proxy("60s"))}
    f = found["request-timeout-between"]
    assert "proxy_read_timeout = 60s" in f.title and "80" in f.claim
    assert "request-timeout-between" not in {x.id for x in request_account_findings(with_proxy("600s"))}


def test_only_a_timeout_that_bounds_a_request_is_set_against_the_requests_time():
    """A probe's timeout (1 s), nginx's keepalive_timeout and proxy_connect_timeout bound no request: beside a
    proxy_read_timeout of 600 s they are no timeout between. proxy_read_timeout bounds the gap between two reads:
    with streamed answers (the client measured a TTFT) 60 s is set against the longest wait for a first token (0.4 s,
    not the 80 s answers) and cuts nothing; Envoy's route timeout bounds the whole response and does."""
    from orchestrator.prongs.path.models import Layer, LayerValue, PathReport

    eng = _engine(_metrics(ttft_s=0.4, itl_s=0.03, e2e_s=80.0, n=1000, prompt=800, gen=2600, running=24))

    def with_layers(layers: dict[str, dict[str, str]], streamed: bool) -> list[str]:
        timing = {"ttft": {"mean": 420.0}, "itl": {"p50": 30.0}} if streamed else {}
        v = _view(eng, [_client(max_concurrency=24, completed=800, failed=200, input_len=800, output_len=2600,
                                e2el={"mean": 61000.0}, **timing)])
        rep = PathReport(host="gpu-box", layers=[Layer(layer=name, label=name, settings={
            k: LayerValue(value=x, where=f"/etc/{name}.conf:3") for k, x in settings.items()})
            for name, settings in layers.items()])
        return [f.title for f in request_account_findings(EvidenceView(
            v.evidence + [ev("ev-5.1", rep, tool="path_layers")], v.observations)) if f.id == "request-timeout-between"]

    quiet = {"nginx": {"proxy_read_timeout": "600s", "keepalive_timeout": "75s", "proxy_connect_timeout": "5s"},
             "k8s": {"readiness_timeout_s": "1"}}
    assert with_layers(quiet, streamed=False) == []
    assert with_layers({"nginx": {"proxy_read_timeout": "60s"}}, streamed=True) == []
    assert with_layers({"nginx": {"proxy_read_timeout": "60s"}}, streamed=False)
    cut = with_layers({"envoy": {"route_timeout": "60s"}}, streamed=True)
    assert cut and "route_timeout = 60s" in cut[0]


def test_the_findings_words_survive_redaction():
    """A fixed delay before each first token (two runs) and a stop token missing: every word the findings carry
    reaches the report unredacted ("... first token: TTFT ..." was taken for a credential and cut)."""
    runs = [_client("direct", max_concurrency=4, completed=400, input_len=512, output_len=200,
                    ttft={"mean": 101.8}, itl={"mean": 10.6, "p50": 10.5}, e2el={"mean": 2211.0}),
            _client("through the gateway", max_concurrency=4, completed=400, input_len=512, output_len=200,
                    ttft={"mean": 5104.6}, itl={"mean": 10.6, "p50": 10.5}, e2el={"mean": 7213.0})]
    found = request_account_findings(_view(None, runs))
    assert any(f.id == "request-proxy-fixed-delay" for f in found)
    for f in found:
        for text in (f.title, f.claim, f.short, *(f.recommendations or []),
                     f.sets_bound.words if f.sets_bound else ""):
            assert redact(text) == text, text


# --- n completions per request, speculation, the context window ----------------------------------------------------

def _n_metrics(n_req: int, n: int, gen: float, running: float) -> str:
    """vLLM V1 with n completions per request: each child counted as a request (e2e, success), request_params_n
    once per parent."""
    text = _metrics(ttft_s=0.13, itl_s=0.0165, e2e_s=4.2, n=n_req * n, prompt=1500, gen=gen, running=running)
    return text + ("# TYPE vllm:request_params_n histogram\n"
                   f'vllm:request_params_n_bucket{{{LABELS},le="+Inf"}} {n_req}\n'
                   f"vllm:request_params_n_count{{{LABELS}}} {n_req}\nvllm:request_params_n_sum{{{LABELS}}} "
                   f"{n_req * n}\n")


def test_n_completions_per_request_are_the_client_s_requests_and_the_rest_of_the_decode_is_not_kept():
    eng = _engine(_n_metrics(3000, 5, gen=249, running=160))
    v = _view(eng, [_client("harness", max_concurrency=32, completed=3000, failed=0, input_len=1500, output_len=250,
                            request_throughput=5.3, e2el={"mean": 6041.0})])
    acct = build_account(v)
    assert acct is not None and acct.engine is not None and acct.engine.parents == 3000
    by = {r.shape: r for r in acct.residuals}
    # the engine's 15,000 finished requests are 3,000 parents x 5: not more requests than the client sent
    assert "requests.engine_over_client" not in by
    assert by["load.engine_over_client"].a == 160 and by["load.engine_over_client"].b == 32
    out = by["tokens_out.engine_over_client"]
    assert round(out.a) == 3000 * 5 * 249 and out.b == 3000 * 250
    (w,) = [w for w in acct.waste if w.phase == "decode"]
    assert round(w.share, 2) == round(1 - 750000 / 3735000, 2) and "n = 5" in w.arithmetic
    f = {x.id: x for x in request_account_findings(v)}["request-n-greater-than-one"]
    assert "n = 5" in f.title and any("n=1" in r for r in f.recommendations)


def _spec_metrics(drafts: float, drafted: float, accepted: float, itl_s: float) -> str:
    text = _metrics(ttft_s=0.055, itl_s=itl_s, e2e_s=0.72, n=200, prompt=1422, gen=246, running=0)
    for name, value in (("vllm:spec_decode_num_drafts_total", drafts),
                        ("vllm:spec_decode_num_draft_tokens_total", drafted),
                        ("vllm:spec_decode_num_accepted_tokens_total", accepted)):
        text += f"# TYPE {name} counter\n{name}{{{LABELS}}} {value}\n"
    return text


def _vllm_bench(label: str, conc: int, tpot: float, itl: float, throughput: float) -> dict:
    """A `vllm bench serve` result as the observations hold it (orchestrator/benchresults.py reads its JSON)."""
    return {"format": "vllm-bench-serve", "label": label, "max_concurrency": conc, "completed": 200, "input_len": 1422.0,
            "output_len": 246.0, "output_throughput": throughput, "request_throughput": throughput / 246,
            "ttft": {"mean": 55.0, "p50": 54.6}, "tpot": {"mean": tpot, "p50": tpot},
            "itl": {"mean": itl, "p50": itl}, "e2el": {"mean": 724.0, "p50": 724.0}}


def test_a_time_per_token_below_the_floor_with_speculation_is_tokens_per_step_not_a_wrong_figure():
    # 1 + 26,773 / 22,311 = 2.2 tokens per step: 6.0 ms per step is 2.73 ms per token, below the 4.8 ms floor
    eng = _engine(_spec_metrics(22311, 111555, 26773, itl_s=0.006))
    v = _view(eng, [_client("ngram5", max_concurrency=1, completed=200, input_len=1422, output_len=246,
                            ttft={"mean": 54.6}, itl={"p50": 5.98}, tpot={"p50": 2.73}, e2el={"mean": 724.0})])
    acct = build_account(v)
    assert acct is not None
    (r,) = [r for r in acct.residuals if r.shape == "itl.client_below_floor"]
    assert r.term == "time per output token" and r.a == 2.73 and "2.2 tokens per chunk" in r.note
    found = {x.id: x for x in request_account_findings(v)}
    f = found["request-speculative-decoding"]
    assert "2.2 tokens per target step" in f.title and "2.73 ms per token" in f.claim
    # the floor bounds the step, and the step's own verdict stands: no veto of the decode's reading
    assert found["request-contradiction-floor"].contradicts == []
    rejected = next(w for w in acct.waste if w.what == "rejected drafts")
    assert round(rejected.tokens) == 111555 - 26773 and round(rejected.of_tokens) == 111555 + 22311


def test_two_runs_at_one_load_differing_in_speculation_name_the_verify_cost_at_high_load():
    eng = _engine(_spec_metrics(176426, 882130, 119242, itl_s=0.0174))
    runs = [_vllm_bench("baseline", 1, 5.3, 5.28, 182.3), _vllm_bench("baseline", 64, 8.6, 8.57, 6799.4),
            _vllm_bench("ngram5", 1, 2.73, 5.98, 340.4), _vllm_bench("ngram5", 64, 11.88, 18.95, 4892.3)]
    v = _view(eng, runs)
    acct = build_account(v)
    assert acct is not None
    moved = [r for r in acct.residuals if r.shape == "itl.run_over_run"]
    assert {(r.a, r.b) for r in moved} == {(5.3, 2.73), (11.88, 8.6)}
    f = {x.id: x for x in request_account_findings(v)}["request-speculation-verify-at-load"]
    # 64 x (5 + 1) = 384 positions per step, 1.68 tokens per sequence, 1 - 1.68 / 6 = 72 % of them rejected
    assert "384 positions" in f.title and "1.68 tokens" in f.title and "72 %" in f.claim
    assert any("speculat" in r.lower() for r in f.recommendations)


OLLAMA_TRUNCATION = [
    'Feb 04 09:30:11 h ollama[2211]: time=2025-02-04T09:30:11.443Z level=INFO source=server.go:376 msg="starting '
    'llama server" cmd="/usr/local/bin/ollama runner --model /m --ctx-size 8192 --batch-size 512 --n-gpu-layers 33 '
    '--threads 16 --parallel 4 --port 41835"'] + [
    f'Feb 04 09:30:{21 + i} h ollama[2211]: time=2025-02-04T09:30:{21 + i}.026Z level=WARN source=runner.go:129 '
    f'msg="truncating input prompt" limit=2048 prompt={p} keep=5 new=2048' for i, p in enumerate((4907, 5257, 5188))]


def test_prompts_cut_to_the_context_window_are_tokens_sent_against_tokens_prefilled():
    logs = read_request_logs(("/var/log/ollama.log", i, t) for i, t in enumerate(OLLAMA_TRUNCATION, 1))
    facts = logs.facts()
    assert facts["request.log.context.truncated"] == 3 and facts["request.log.context.limit"] == 2048
    assert facts["request.log.context.slot_ctx"] == 8192 // 4 and facts["request.log.context.divided"] is True
    v = _view(_engine(None, OLLAMA_TRUNCATION), [_client("RAG", max_concurrency=1, completed=400, input_len=5000,
                                                         output_len=380, ttft={"mean": 214.0, "p50": 211.0})],
              model={"name": "llama3.1:8b (Q4_K_M GGUF)", "quantization": "q4_k_m"}, gpu="NVIDIA GeForce RTX 4090")
    acct = build_account(v)
    assert acct is not None
    (r,) = [r for r in acct.residuals if r.shape == "tokens_in.client_over_engine"]
    assert round(r.a) == round((4907 + 5257 + 5188) / 3) and r.b == 2048
    f = {x.id: x for x in request_account_findings(v)}["request-context-window-truncates"]
    assert "truncated to 2,048 tokens" in f.title and any("num_ctx" in x for x in f.recommendations)


def test_requests_refused_for_their_length_name_the_window_and_what_fits():
    lines = ["(APIServer pid=1) ERROR 08-27 09:14:02 [serving_chat.py:222] ValueError: This model's maximum context "
             f"length is 4096 tokens. However, you requested {p + 1024} tokens ({p} in the messages, 1024 in the "
             "completion). Please reduce the length of the messages or completion." for p in (3618, 9137, 3265)]
    eng = _engine(_metrics(ttft_s=0.14, itl_s=0.0129, e2e_s=4.4, n=2195, prompt=2237, gen=332, running=24), lines)
    v = _view(eng, [_client("doc QA", max_concurrency=24, completed=2195, failed=1805, input_len=3216,
                            output_len=320, e2el={"mean": 4412.0})], question="45% come back as HTTP 400")
    acct = build_account(v)
    assert acct is not None
    assert {"requests.refused_too_long", "requests.client_over_engine"} <= {r.shape for r in acct.residuals}
    f = {x.id: x for x in request_account_findings(v)}["request-context-window-refuses"]
    # 4,096 - 1,024 of max_tokens = 3,072 tokens of prompt fit
    assert "4,096 tokens" in f.title and "3,072" in f.claim
    assert any("max-model-len" in x for x in f.recommendations)


def test_a_title_whose_figure_is_unknown_is_said_without_it():
    from orchestrator.prongs.request.table import UNKNOWN, without_unknowns

    u = UNKNOWN
    assert without_unknowns(f"A serial step runs once per token ({u}, {u} ms per execution)") == \
        "A serial step runs once per token"
    assert without_unknowns(f"Images become tokens: the engine prefills {u} tokens per request") == \
        "Images become tokens"
    assert without_unknowns("Is it the proxy? It is.") == "Is it the proxy? It is."  # a question mark is text
    hf = {"x.y": 1}
    from orchestrator.analysis.facts import Fact, HostFacts

    text, missing = render("curl -w '%{time_connect}' and {x.y} of {a.b}", HostFacts(host="h", facts={
        k: Fact(v, "ev") for k, v in hf.items()}))
    assert "%{time_connect}" in text and missing == ["a.b"]


def test_a_large_batch_reads_its_kv_so_decode_is_memory_bound_not_compute_bound():
    # Llama 3.1 8B (32 layers x 8 KV heads x 128 x 2 x 2 bytes = 128 KiB per token) at 250 running: 16 GB of weights
    # and 250 x ~1,150 tokens of KV per step, against 2 x 8e9 x 250 FLOPs: memory, though the weights alone say compute
    eng = _engine(_metrics(ttft_s=0.139, itl_s=0.0129, e2e_s=3.99, n=4000, prompt=997, gen=300, running=250))
    v = _view(eng, [_client("locust", max_concurrency=256, completed=4000, input_len=1000, output_len=300,
                            ttft={"mean": 145.0}, itl={"p50": 12.9}, e2el={"mean": 4083.0})], gpu="NVIDIA H200")
    acct = build_account(v)
    assert acct is not None
    fl = acct.floors["itl"]
    assert fl.bound == "memory" and fl.bound_without_kv == "compute" and "GB of KV" in fl.arithmetic
    f = {x.id: x for x in request_account_findings(v)}["request-decode-reads-kv"]
    assert f.contradicts == ["decode"] and "memory-bound" in f.title


def test_a_name_that_says_another_model_than_the_engine_serves_is_a_residual():
    eng = _engine(_metrics(ttft_s=0.2, itl_s=0.0172, e2e_s=5.35, n=1000, prompt=2003, gen=300, running=16),
                  model="RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic",
                  flags=("--served-model-name", "llama-3.1-8b-instruct"))
    v = _view(eng, [{"format": "vllm-bench-serve", "label": "openai-chat", "model": "llama-3.1-8b-instruct",
                     "max_concurrency": 16, "completed": 1000, "input_len": 2003.0, "output_len": 300.0,
                     "ttft": {"mean": 204.0}, "tpot": {"p50": 17.17}, "itl": {"p50": 17.17}}],
              model={"name": "llama-3.1-8b-instruct"}, gpu="NVIDIA H200")
    acct = build_account(v)
    assert acct is not None and acct.named is not None
    (r,) = [r for r in acct.residuals if r.shape == "model.named_vs_served"]
    assert r.a == 8.0 and round(r.b) == 70
    f = {x.id: x for x in request_account_findings(v)}["request-served-model-alias"]
    assert "Llama-3.3-70B" in f.title and "--served-model-name" in f.claim + r.words()


ENVOY_CUT = [
    '{"start_time":"2026-06-11T14:0%d:07.215Z","method":"POST","response_code":"200","response_flags":"%s",'
    '"duration":"%d","upstream_host":"10.42.1.37:8000"}' % (i, flag, dur)
    for i, (flag, dur) in enumerate((("UT", 15001), ("UT", 15003), ("UT", 15002), ("-", 8603)))]


def test_a_proxy_that_cut_requests_after_a_fixed_time_is_a_timeout_between_not_a_client_that_cancels():
    logs = read_request_logs(("/var/log/envoy/access.log", i, t) for i, t in enumerate(ENVOY_CUT, 1))
    facts = logs.facts()
    assert facts["request.log.proxy.kind"] == "envoy" and facts["request.log.proxy.timeouts"] == 3
    assert facts["request.log.proxy.cut_after_s"] == 15.002
    eng = _engine(_metrics(ttft_s=0.315, itl_s=0.063, e2e_s=11.45, n=1000, prompt=644, gen=178, running=16,
                           reasons={"stop": 557, "abort": 443}), ENVOY_CUT)
    v = _view(eng, [_client("chat", max_concurrency=16, completed=557, failed=443, input_len=640, output_len=300,
                            ttft={"mean": 318.0}, itl={"p50": 62.8}, e2el={"mean": 11457.0, "p99": 14982.0})],
              gpu="NVIDIA L4")
    found = {x.id: x for x in request_account_findings(v)}
    f = found["request-timeout-between"]
    # (15.0 s - 315 ms) / 63 ms = 233 tokens: a longer answer cannot finish before the deadline
    assert "15 s" in f.title and "233 tokens" in f.claim and "envoy" in f.claim
    assert "request-client-cancels" not in found


def test_a_prompt_length_tail_the_mean_hides_makes_the_ttft_tail():
    # SGLang's prompt histogram: 12 of 6,000 prompts between 66,000 and 99,000 tokens; one prefill of 66,000 tokens of
    # a 32 B model is 2 x 32e9 x 66,000 / 989 TFLOPS = 4.27 s
    buckets = [(1000, 3289), (2000, 5680), (5000, 5985), (66000, 5988), (99000, 6000), (132000, 6000)]
    text = "# TYPE sglang:prompt_tokens_histogram histogram\n" + "".join(
        f'sglang:prompt_tokens_histogram_bucket{{le="{le}"}} {n}\n' for le, n in buckets) + (
        'sglang:prompt_tokens_histogram_bucket{le="+Inf"} 6000\nsglang:prompt_tokens_histogram_count 6000\n'
        "sglang:prompt_tokens_histogram_sum 7265238\n"
        "# TYPE sglang:time_to_first_token_seconds histogram\n" + "".join(
            f'sglang:time_to_first_token_seconds_bucket{{le="{le}"}} {n}\n'
            for le, n in ((0.3, 2900), (0.5, 5700), (1.0, 5900), (10.0, 5930), (15.0, 6000))) +
        'sglang:time_to_first_token_seconds_bucket{le="+Inf"} 6000\nsglang:time_to_first_token_seconds_count 6000\n'
        "sglang:time_to_first_token_seconds_sum 3801\n# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 14\n")
    data = {"engines": [{"argv": ["python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen2.5-32B-Instruct"],
                         "kind": "sglang", "pid": 7, "metrics": {"url": "http://127.0.0.1:30000/metrics",
                                                                 "status": 200, "text": text}}], "logs": []}
    v = _view(build_report("gpu-box", data, []), [_client("chat", completed=6000, input_len=1000,
                                                          ttft={"mean": 633.5, "p50": 314.0, "p99": 10594.0})],
              model={"name": "Qwen2.5-32B-Instruct", "quantization": "bf16"}, gpu="NVIDIA H200")
    acct = build_account(v)
    assert acct is not None and acct.engine is not None and acct.engine.prompt_tail == (66000, 99000, 12, 6000)
    assert {"ttft.tail_engine", "ttft.tail_client"} <= {r.shape for r in acct.residuals}
    f = {x.id: x for x in request_account_findings(v)}["request-long-prompt-tail"]
    assert "12 requests of 66,000 to 99,000 tokens" in f.title and "4.27 s" in f.title
    assert any("route" in r.lower() or "queue" in r.lower() for r in f.recommendations)


def test_on_a_mig_slice_the_floors_are_the_slice_s():
    from orchestrator.prongs.request.models import MigDevice

    uuid = "MIG-7d2e9c1b-3a4f-5b6c-8d9e-0f1a2b3c4d5e"
    eng = _engine(_metrics(ttft_s=0.169, itl_s=0.0114, e2e_s=4.5, n=2000, prompt=1200, gen=380, running=8))
    eng.engines[0].env["CUDA_VISIBLE_DEVICES"] = uuid
    files = RequestFiles(host="gpu-box", mig=[MigDevice(profile="3g.40gb", uuid=uuid),
                                              MigDevice(profile="3g.40gb", uuid="MIG-other")])
    v = _view(eng, [_client("chat", max_concurrency=8, completed=2000, input_len=1200, output_len=380,
                            ttft={"mean": 169.0}, itl={"p50": 11.4})], files=files)
    acct = build_account(v)
    assert acct is not None and acct.mig == ("3g.40gb", 0.5, 3 / 7)
    # (16.1 GB + 8 x 1,390 x 128 KiB) / (3,350 GB/s x 4/8) = 11.3 ms: 11.4 ms is at the slice's floor
    assert "4/8 of the memory slices of a MIG 3g.40gb instance = 1,675 GB/s" in acct.floors["itl"].arithmetic
    f = {x.id: x for x in request_account_findings(v)}["request-mig-slice-floor"]
    assert f.contradicts == ["decode"] and "MIG 3g.40gb" in f.title


def test_requests_waiting_while_the_batch_has_room_for_the_other_adapter_are_lora_slots():
    text = _metrics(ttft_s=3.1, itl_s=0.025, e2e_s=8.2, n=3000, prompt=700, gen=190, running=32, waiting=30) + (
        "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.09\n"
        "# TYPE vllm:lora_requests_info gauge\nvllm:lora_requests_info{max_lora=\"1\",running_lora_adapters="
        "\"sql-lora\",waiting_lora_adapters=\"support-lora\"} 1760192631.46\n")
    v = _view(_engine(text), [_client("both apps", max_concurrency=64, completed=3000, input_len=700, output_len=190,
                                      ttft={"mean": 3139.0, "p50": 115.0, "p99": 19365.0})], gpu="NVIDIA L40S")
    acct = build_account(v)
    assert acct is not None and "load.waiting_with_room" in {r.shape for r in acct.residuals}
    f = {x.id: x for x in request_account_findings(v)}["request-lora-slots"]
    assert "--max-loras 1" in f.title and "support-lora" in f.title
    assert any("--max-loras" in r for r in f.recommendations)


def test_prompts_and_answers_counted_high_by_one_factor_are_another_tokenizer():
    """The client counts 1.37x the engine's tokens in the prompts and 1.36x in the answers: one factor on both sides
    is a tokenizer (a benchmark's default), and its per-token time, divided by that many more tokens, reads no decode
    bound. Answers alone off (the prompts agree) is not a tokenizer: the factor must hold on both sides."""
    eng = _engine(_metrics(ttft_s=0.145, itl_s=0.0109, e2e_s=5.58, n=800, prompt=1459, gen=500, running=16))
    both = _view(eng, [_client("genai-perf", max_concurrency=16, completed=800, input_len=1999, output_len=680,
                               ttft={"mean": 147.0}, itl={"p50": 8.02}, e2el={"mean": 5587.0})],
                 model={"name": "Qwen2.5-14B-Instruct-AWQ", "quantization": "awq"})
    found = {f.id: f for f in request_account_findings(both)}
    f = found["request-client-tokenizer-differs"]
    assert "1.37x" in f.title and "1.36x in the answers" in f.claim and "10.9 ms per token in the engine's tokens" in f.claim
    assert any("--tokenizer" in r for r in f.recommendations)
    assert found["request-contradiction-tokens"].contradicts == ["decode"]
    one_side = _view(eng, [_client("genai-perf", max_concurrency=16, completed=800, input_len=1470, output_len=680,
                                   ttft={"mean": 147.0}, itl={"p50": 8.02}, e2el={"mean": 5587.0})],
                     model={"name": "Qwen2.5-14B-Instruct-AWQ", "quantization": "awq"})
    ids = {x.id for x in request_account_findings(one_side)}
    assert "request-client-tokenizer-differs" not in ids and "request-contradiction-tokens" not in ids


def _embedding_metrics() -> str:
    """vLLM serving a pooling model: each input of a request is an engine request, no token generated."""
    return _metrics(ttft_s=0.0086, itl_s=0.0, e2e_s=0.0086, n=2_000_000, prompt=229.4, gen=0.0, running=96)


def test_embedding_answers_that_fill_the_link_are_their_vectors_bytes():
    """An indexing job sends 64 inputs per request: the engine counts each as a request (64x the requests, 1/64 of
    the prompt tokens each), which is no residual. Its answers leave by eno1 at 94 % of 1 Gb/s: 118 MB/s over 222.7
    requests/s is 528 KB per answer, 8.25 KB per vector, at the link's ceiling: the vectors' bytes, as JSON floats,
    are the limit (base64, or the idle 100 Gb/s port). Without a full link nothing is said of bytes."""
    from orchestrator.prongs.resource_account.models import HostAccount, Nic, ResourceAccount

    bench = [_client("indexing job", max_concurrency=16, completed=31250, failed=0, duration_s=140.3,
                     input_len=14720, request_throughput=222.7, e2el={"mean": 71.8})]
    model = {"name": "bge-small-en-v1.5", "quantization": "fp16"}

    def with_nic(tx: float) -> EvidenceView:
        v = _view(_engine(_embedding_metrics(), model="BAAI/bge-small-en-v1.5"), bench, model=model)
        ra = ResourceAccount(host="gpu-box", window_s=1.0, host_account=HostAccount(nics=[
            Nic(name="eno1", rx_bytes_per_s=11.5e6, tx_bytes_per_s=tx, speed_mbit=1000),
            Nic(name="ens1f0np0", rx_bytes_per_s=1.25e5, tx_bytes_per_s=1.25e5, speed_mbit=100000)]))
        return EvidenceView(v.evidence + [ev("ev-5.1", ra, tool="resource_account")], v.observations, v.question)

    full = with_nic(117.6e6)
    acct = build_account(full)
    assert acct is not None and acct.clients[0].inputs == 64
    shapes = {r.shape for r in acct.residuals}
    assert "throughput.at_link_ceiling" in shapes
    assert not shapes & {"tokens_in.client_over_engine", "load.engine_over_client", "requests.engine_over_client"}
    f = {x.id: x for x in request_account_findings(full)}["request-vectors-as-json-floats"]
    assert "8.25 KB per input" in f.title and "JSON floats" in f.claim
    assert f.sets_bound is not None and f.sets_bound.bound == "communication"
    assert any("base64" in r and "ens1f0np0 (100 Gb/s)" in r for r in f.recommendations)
    quiet = with_nic(20e6)
    assert "throughput.at_link_ceiling" not in {r.shape for r in build_account(quiet).residuals}


# --- the orchestrator's allocation, the replicas behind one address -------------------------------------------------

def _with_path(v: EvidenceView, files: dict[str, str]) -> EvidenceView:
    """The view with the whole-path probe's report of these files (as `--path-config` gives them), under an id of
    its own (facts are cached by evidence id)."""
    from orchestrator.prongs.path.probe import report_from

    n = sum(len(t) for t in files.values())
    return EvidenceView([*v.evidence, ev(f"ev-5.{n}", report_from("gpu-box", {}, files), tool="path_layers")],
                        v.observations)


def _pod(gpus: int) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "llm-0"}, "spec": {"containers": [
        {"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}})


def test_gpus_allocated_to_the_pod_beyond_the_engine_s_parallelism_are_held_and_idle():
    """The pod's GPU limit against the engine's tensor x pipeline x data parallel size: the GPUs between are idle,
    and the fix is the parallelism (or the replicas) the allocation is for."""
    eng = _engine(_metrics(ttft_s=0.1, itl_s=0.018, e2e_s=5.5, n=100, prompt=1000, gen=300, running=96),
                  flags=("--tensor-parallel-size", "1"))
    base = _view(eng, [_client(max_concurrency=96, completed=100)], count=4)
    v = _with_path(base, {"/tmp/pod.json": _pod(4)})
    acct = build_account(v)
    assert acct is not None
    r = next(r for r in acct.residuals if r.shape == "gpus.allocated_over_used")
    assert (r.a, r.b) == (4, 1) and "orchestrator" in r.layer
    f = next(x for x in request_account_findings(v) if "allocated" in x.title)
    assert "1 of the 4 GPUs" in f.title and any("tensor_parallel_size) of 4" in x for x in f.recommendations)
    assert "gpus.allocated_over_used" not in _shapes(_with_path(base, {"/tmp/pod.json": _pod(1)}))
    assert "gpus.allocated_over_used" not in _shapes(base)


def _replicas(running: tuple[float, ...], models: tuple[str, ...] = ()):
    engines = [{"argv": ["vllm", "serve", models[i] if models else "Qwen/Qwen2.5-7B-Instruct", "--port", str(8000 + i)],
                "kind": "vllm",
                "pid": 7 + i, "metrics": {"url": f"http://127.0.0.1:{8000 + i}/metrics", "status": 200,
                                          "text": _metrics(ttft_s=4.8, itl_s=0.03, e2e_s=13.8, n=600, prompt=1000,
                                                           gen=300, running=r)}}
               for i, r in enumerate(running)]
    return build_report("gpu-box", {"engines": engines, "logs": []}, [])


LITELLM_ONE = """model_list:
  - model_name: qwen
    litellm_params: {model: hosted_vllm/Qwen/Qwen2.5-7B-Instruct, api_base: "http://qwen.llm.svc.cluster.local:8000/v1"}
"""
LITELLM_THREE = "model_list:\n" + "".join(
    f"  - model_name: qwen\n    litellm_params: {{model: hosted_vllm/Qwen/Qwen2.5-7B-Instruct, "
    f"api_base: \"http://10.0.0.{i}:8000/v1\"}}\n" for i in (1, 2, 3))


def test_one_replica_of_three_loaded_behind_a_gateway_with_one_address_is_per_connection_balancing():
    """Replicas' own running counts disagree (one loaded, the others idle) and the gateway in front names one address
    for the model: the balancing is behind that address, per connection; a gateway that lists each replica is not."""
    base = _view(_replicas((128.0, 0.0, 0.0)), [_client(max_concurrency=128, completed=1800)],
                 model={"name": "Qwen2.5-7B-Instruct"}, count=3)
    v = _with_path(base, {"/etc/litellm/config.yaml": LITELLM_ONE})
    assert "load.engines_unbalanced" in _shapes(v)
    f = next(x for x in request_account_findings(v) if "one address" in x.title)
    assert "3 replicas" in f.title and any("model_name" in r for r in f.recommendations)
    assert "infx" not in f.claim
    listed = request_account_findings(_with_path(base, {"/etc/litellm/config.yaml": LITELLM_THREE}))
    assert not any("one address" in x.title for x in listed)
    # three engines of three models behind one gateway are not replicas: one busy model is not a balancing fault
    models = _view(_replicas((128.0, 0.0, 0.0), ("Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct",
                                                 "mistralai/Mistral-7B-Instruct-v0.3")),
                   [_client(max_concurrency=128, completed=1800)], model={"name": "Qwen2.5-7B-Instruct"}, count=3)
    found = request_account_findings(_with_path(models, {"/etc/litellm/config.yaml": LITELLM_ONE}))
    assert not any(x.id == "request-gateway-one-address-for-replicas" for x in found)


def test_no_template_of_the_table_leaves_a_placeholder_whatever_figure_is_missing():
    """Every title, name, claim, fix and split of residuals.yaml, rendered with each of its figures missing in turn
    (and with all of them missing): no '?' or unknown-figure mark the template did not hold itself, no '{fact}' left,
    no unit stranded where its figure was ("adds a fixed ? ms", "curl -w '%? %? %?'" were seen); curl's own
    '%{time_connect}' fields stay as written."""
    from orchestrator.analysis.facts import Fact, HostFacts
    from orchestrator.prongs.request.table import _FIELD, UNKNOWN

    field = _FIELD
    for mid, m in table().mechanisms.items():
        for part in ("title", "name", "claim", "fix", "split"):
            template = getattr(m, part)
            if not template:
                continue
            keys = [k for k, _ in field.findall(template) if "." in k]
            literal = field.sub("", template).count("?")
            cases = [set(keys)] + [{k} for k in keys]
            for missing in cases:
                hf = HostFacts("", {k: Fact(1.5, "ev-1") for k in keys if k not in missing})
                text, _ = render(template, hf, {"residual": "TTFT 900 ms at the client against 50 ms at the engine",
                                                "residual_note": ""})
                where = f"{mid}.{part} without {sorted(missing)}: {text!r}"
                assert UNKNOWN not in text and text.count("?") <= literal, where
                assert not re.search(r"\{[A-Za-z0-9_]+\.[A-Za-z0-9_.]+(\|\w+)?\}", text), where
                assert not re.search(r"(?:^|[^\d\s.,%x])\s+(?:ms|MB/s|Mb/s|KB|GB)\b", text), where
                if "%{" in template:
                    assert "%{" in text, where


# --- a disaggregated deployment's KV hand-off -----------------------------------------------------------------------

UCX_TCP = ("[1759396451.201934] [decode-0:452  :0]    ucp_context.c:1153 UCX  WARN  network device 'mlx5_0:1' is not "
           "available, please use one or more of: 'eth0'(tcp), 'lo'(tcp)")
NIXL_ARGS = ("(APIServer pid=412) INFO 10-02 09:13:04 [utils.py:233] non-default args: {'model': 'm', "
             "'kv_transfer_config': KVTransferConfig(kv_connector='NixlConnector', engine_id='decode-0', "
             "kv_role='kv_both')}")


def test_the_kv_hand_off_is_the_frontend_s_ttft_less_the_prefill_worker_s_read_against_the_links():
    """Pure: the hand-off's time, bytes and rate; over TCP (UCX's own fallback line, or a rate at the TCP NIC's
    line rate far below the RDMA port's) it is the residual; a small one is not."""
    from types import SimpleNamespace as NS

    from orchestrator.prongs.request.handoff import handoff, rdma_rate

    eth0 = NS(name="eth0", rx_bytes_per_s=1.17e9, tx_bytes_per_s=1.7e7, speed_mbit=10000.0)
    ib = rdma_rate([NS(name="mlx5_0", ports=[NS(state="4: ACTIVE", rate="400 Gb/sec (4X NDR)")])])
    assert ib == ("mlx5_0", 400.0)
    runs = [("frontend", "genai-perf", 2362.0), ("prefill worker", "its own TTFT", 581.0)]
    h = handoff([NIXL_ARGS, UCX_TCP], runs, None, 6000, (327680.0, "config"), [eth0], ib)
    assert h is not None and h.slow and h.transport == "tcp" and h.at_tcp_line_rate
    assert round(h.ms) == 1781 and round(h.bytes / 1e9, 2) == 1.97 and 8 < h.rate_gbit < 9.5
    assert "1.97 GB in 1,781 ms" in h.arithmetic()
    quiet = NS(name="eth0", rx_bytes_per_s=5e6, tx_bytes_per_s=4e6, speed_mbit=10000.0)
    small = handoff([NIXL_ARGS], [("frontend", "", 672.0), ("prefill worker", "", 581.0)], None, 6000,
                    (327680.0, "config"), [quiet], ib)
    assert small is not None and not small.slow and small.transport is None and not small.at_tcp_line_rate
    assert handoff([UCX_TCP], runs, None, 6000, None, [eth0], ib) is None  # no KV connector: not disaggregated
    from orchestrator.prongs.request.handoff import transport_of

    assert transport_of([], {"UCX_TLS": "tcp,cuda_copy,cuda_ipc"})[0] == "tcp"
    assert transport_of([], {"UCX_TLS": "rc,cuda_copy"}) is None and transport_of([], {"UCX_TLS": "^tcp"}) is None
    assert transport_of([], {"NCCL_IB_DISABLE": "1"})[0] == "tcp"
    assert transport_of(["host:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>"])[0] == "tcp"
    assert transport_of(["host:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB"]) is None


def test_a_slow_hand_off_over_tcp_leads_and_a_small_one_is_said_as_the_prefill_s():
    metrics = _metrics(ttft_s=1.78, itl_s=0.0172, e2e_s=6.6, n=1200, prompt=6000, gen=280, running=16)
    model = {"name": "Llama-3.3-70B-Instruct", "quantization": "fp8"}
    for front, logs, want in ((2362.0, [NIXL_ARGS, UCX_TCP], "request-kv-transfer-over-tcp"),
                              (672.0, [NIXL_ARGS], "request-kv-handoff-small")):
        eng = _engine(metrics, logs=logs, model="meta-llama/Llama-3.3-70B-Instruct", flags=("--tensor-parallel-size", "2"))
        v = _view(eng, [_client("frontend", max_concurrency=16, completed=1200, input_len=6000, output_len=280,
                                ttft={"mean": front}), _client("prefill worker", input_len=6000, ttft={"mean": 581.0})],
                  model=model, count=2)
        found = request_account_findings(v)
        assert any(f.id == want for f in found), [f.id for f in found]
        assert not any(r.shape == "ttft.run_over_run" for r in build_account(v).residuals)


def test_an_autoscaler_that_never_scales_explains_the_wait_for_the_first_token():
    """A client TTFT far above its floor, and an autoscaler whose per-pod target is above the most its metric reads:
    the mechanism is confirmed with the autoscaler's figures; with a reachable target it is not."""
    from orchestrator.prongs.path.probe import report_from

    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "llm"},
           "spec": {"minReplicas": 1, "maxReplicas": 4, "metrics": [{"type": "Pods", "pods": {
               "metric": {"name": "llamacpp_requests_processing"},
               "target": {"type": "AverageValue", "averageValue": "2"}}}]}}
    base = _view(None, [_client(max_concurrency=12, completed=261, input_len=812, output_len=600,
                                ttft={"mean": 76120.0, "p50": 75800.0}, itl={"p50": 11.0},
                                e2el={"mean": 82790.0, "p50": 82500.0})])
    for slots, confirmed in (("1", True), ("4", False)):
        rep = report_from("gpu-box", {"processes": [{"pid": 9, "kind": "llamacpp", "argv": [
            "llama-server", "-m", "m.gguf", "-np", slots]}]}, {"hpa.json": json.dumps(hpa)})
        v = EvidenceView([*base.evidence, ev(f"ev-6.{slots}", rep, tool="path_layers")], base.observations)
        titles = [f.title for f in request_account_findings(v) if f.id == "request-autoscaler-target-unreachable"]
        assert bool(titles) == confirmed, titles
        if confirmed:
            assert "target of 2 llamacpp_requests_processing per pod" in titles[0] and "(1)" in titles[0]


def test_an_autoscaler_on_cpu_while_the_engine_queues_never_scales():
    """An autoscaler on its pods' CPU utilisation reading far under its target while the engine's queue holds
    requests: it keeps its replicas whatever waits; with the CPU at its target, or no queue, it is not said."""
    from orchestrator.prongs.path.probe import report_from

    def hpa(cur: int) -> str:
        return json.dumps({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "llm"},
                           "spec": {"metrics": [{"type": "Resource", "resource": {
                               "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]},
                           "status": {"currentMetrics": [{"type": "Resource", "resource": {
                               "name": "cpu", "current": {"averageUtilization": cur}}}]}})

    stats = ("INFO 10-02 10:02:00 [loggers.py:127] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
             "throughput: 861.3 tokens/s, Running: 16 reqs, Waiting: {w} reqs, GPU KV cache usage: 47.0%, Prefix cache "
             "hit rate: 0.0%")
    for cur, waiting, said in ((12, 40, True), (85, 40, False), (12, 0, False)):
        eng = _engine(_metrics(ttft_s=0.3, itl_s=0.02, e2e_s=6.0, n=500, prompt=1000, gen=280, running=16,
                               waiting=waiting), logs=[stats.format(w=waiting)])
        base = _view(eng, [_client(max_concurrency=56, completed=500, input_len=1000, output_len=280,
                                   ttft={"mean": 30000.0}, e2el={"mean": 36000.0})])
        v = EvidenceView([*base.evidence, ev(f"ev-7.{cur}{waiting}", report_from("gpu-box", {}, {"h.json": hpa(cur)}),
                                             tool="path_layers")], base.observations)
        got = [f.title for f in request_account_findings(v) if f.id == "request-autoscaler-watches-idle-resource"]
        assert bool(got) == said, (cur, waiting, got)
        if said:
            assert "cpu (12 % against a 80 % target)" in got[0]


NGINX_ONE = """http {
  upstream llm { server qwen.llm.svc.cluster.local:8000; keepalive 32; }
  server { listen 80; location / { proxy_pass http://llm; proxy_http_version 1.1; proxy_set_header Connection ""; } }
}
"""


def test_one_replica_of_three_loaded_behind_a_proxy_with_one_kept_alive_server_is_per_connection_balancing():
    base = _view(_replicas((128.0, 0.0, 0.0)), [_client(max_concurrency=128, completed=1800)],
                 model={"name": "Qwen2.5-7B-Instruct"}, count=3)
    found = request_account_findings(_with_path(base, {"/etc/nginx/nginx.conf": NGINX_ONE}))
    assert any(f.id == "request-proxy-one-server-for-replicas" for f in found), [f.id for f in found]
    no_keepalive = NGINX_ONE.replace(" keepalive 32;", "")
    found = request_account_findings(_with_path(base, {"/etc/nginx/nginx.conf": no_keepalive}))
    assert not any(f.id == "request-proxy-one-server-for-replicas" for f in found)


def test_a_client_count_that_is_n_times_one_engine_s_behind_n_replicas_is_one_replica_s_share():
    """The client counted three times the requests this engine finished, and the proxy in front spreads them over
    three servers: the engine's counter is one replica's share, not requests lost; behind one server it is not."""
    eng = _engine(_metrics(ttft_s=0.1, itl_s=0.02, e2e_s=6.0, n=1000, prompt=1000, gen=280, running=32))
    base = _view(eng, [_client(max_concurrency=96, completed=3000, failed=0, input_len=1000, output_len=280)])
    servers = "".join(f"    server s{i} 10.0.0.{i}:8000\n" for i in (1, 2, 3))
    for cfg, said in ((f"backend llm\n{servers}", True), ("backend llm\n    server s1 10.0.0.1:8000\n", False)):
        found = request_account_findings(_with_path(base, {"/etc/haproxy/haproxy.cfg": cfg}))
        got = [f for f in found if f.id == "request-other-replicas-serve-the-rest"]
        assert bool(got) == said, [f.id for f in found]
        if said:
            assert "3 replicas" in got[0].title and "3x fewer" in got[0].title


def test_an_engine_killed_at_its_memory_limit_explains_the_counts_that_restarted():
    """Fewer requests at the engine than the client completed, and the pod's container last ended OOMKilled: the
    memory limit is the mechanism; a container that ended otherwise is not said to have been."""
    eng = _engine(_metrics(ttft_s=0.1, itl_s=0.02, e2e_s=6.0, n=300, prompt=1000, gen=280, running=16))
    base = _view(eng, [_client(max_concurrency=48, completed=2000, failed=400, input_len=1000, output_len=280)])

    def pod(reason: str) -> str:
        return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "llm-0"}, "spec": {"containers": [
            {"name": "vllm", "resources": {"limits": {"memory": "64Gi"}}}]}, "status": {"containerStatuses": [
                {"name": "vllm", "restartCount": 2, "lastState": {"terminated": {"exitCode": 137, "reason": reason}}}]}})

    for reason, said in (("OOMKilled", True), ("Error", False)):
        found = request_account_findings(_with_path(base, {f"/tmp/{reason}.json": pod(reason)}))
        got = [f for f in found if f.id == "request-memory-limit-kills-engine"]
        assert bool(got) == said, [f.id for f in found]
        if said:
            assert "68,719,476,736 bytes" in got[0].claim


def test_a_step_between_the_weights_floor_and_the_floor_with_kv_read_less_kv_than_assumed():
    """64 requests of ~4,250 tokens (prompt + half the output) on Llama-3.1-8B: the floor with their KV reads is ~14 ms, the weights alone ~4.8 ms.
    A step of 8 ms cannot be below what the GPU can do: it read fewer KV bytes than the floor took (fewer requests
    per step, or shorter contexts); a step under the weights' own floor is not that."""
    def found(itl_ms: float) -> dict:
        eng = _engine(_metrics(ttft_s=0.3, itl_s=itl_ms / 1e3, e2e_s=4.0, n=640, prompt=4000, gen=500, running=64))
        v = _view(eng, [_client(max_concurrency=64, completed=640, input_len=4000, output_len=500,
                                itl={"p50": itl_ms})], model={"name": "Llama-3.1-8B-Instruct"})
        acct = build_account(v)
        assert acct is not None and acct.floors["itl"].weights_ms > 0
        assert acct.floors["itl"].weights_ms < itl_ms * 0.9 or itl_ms < 4, acct.floors["itl"]
        return {f.id: f for f in request_account_findings(v)}

    got = found(8.0)
    f = got["request-fewer-kv-reads-than-floor"]
    assert "64 requests of 4,250 tokens" in f.title and "weights alone take" in f.claim
    assert "request-fewer-kv-reads-than-floor" not in found(2.0)
