"""Engine work that returns nothing (prongs/resource_account/engine_work_rules.py): speculative decoding whose drafts are rejected and
a prefix cache that never hits, each from the engine's own counters or log lines, with its negative twin."""

from __future__ import annotations

from support.evidence import ev

from orchestrator.prongs.resource_account.engine_work_rules import engine_work_findings
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.prongs.serving_engine.logs import parse_log_lines
from orchestrator.prongs.serving_engine.metrics import MetricSummary
from orchestrator.prongs.serving_engine.models import EngineInstance, EngineMetricsScrape, EngineReport, SettingValue


def _report(name: str = "vllm", metrics: dict[str, float] | None = None, log: list[str] | None = None,
            settings: dict[str, object] | None = None) -> EngineReport:
    inst = EngineInstance(name=name, origin="process", pid=1, settings={
        k: SettingValue(value=v, source="flag") for k, v in (settings or {}).items()})
    if metrics:
        inst.metrics = EngineMetricsScrape(metrics={k: MetricSummary(name=k, type="counter", value=v)
                                                    for k, v in metrics.items()})
    if log:
        inst.log = parse_log_lines(("/var/log/e.log", i + 1, ln) for i, ln in enumerate(log)).state
    return EngineReport(host="gpu-box", engines=[inst])


def _found(rep: EngineReport) -> dict[str, object]:
    return {f.id: f for f in engine_work_findings(EvidenceView([ev("ev-1.1", rep, tool="engine_config")]))}


def _spec_metrics(accepted: float) -> dict[str, float]:
    return {"vllm:spec_decode_num_drafts_total": 1000.0, "vllm:spec_decode_num_draft_tokens_total": 5000.0,
            "vllm:spec_decode_num_accepted_tokens_total": accepted}


def test_rejected_drafts_are_overhead_from_vllm_counters():
    f = _found(_report(metrics=_spec_metrics(90.0)))["engine-speculation-overhead"]
    assert "1.09 tokens per target step" in f.claim and "speculates 5 tokens" in f.claim
    assert "target pass over 6 positions" in f.claim and "90 of 5000 drafted tokens accepted" in f.claim
    assert f.symptoms == ["itl", "throughput"] and f.evidence == ["ev-1.1"]
    assert any("--speculative-config" in r for r in f.recommendations)


def test_accepted_drafts_are_ruled_out_not_blamed():
    found = _found(_report(metrics=_spec_metrics(2200.0)))
    assert "engine-speculation-overhead" not in found
    pays = found["engine-speculation-pays"]
    assert pays.informational and "3.20 of a possible 6 tokens per target step" in pays.claim


def test_between_the_thresholds_says_nothing_and_too_few_drafts_count_for_nothing():
    assert _found(_report(metrics=_spec_metrics(700.0))) == {}  # 1.7 tokens per step: neither
    few = {**_spec_metrics(5.0), "vllm:spec_decode_num_drafts_total": 10.0}
    assert _found(_report(metrics=few)) == {}


VLLM_SPEC = ("INFO 08-14 10:08:30 [metrics.py:96] SpecDecoding metrics: Mean acceptance length: {L}, Accepted "
             "throughput: 3.10 tokens/s, Drafted throughput: 150.00 tokens/s, Accepted: {a} tokens, Drafted: 1500 "
             "tokens, Per-position acceptance rate: 0.060, 0.013, 0.005, Avg Draft acceptance rate: 2.1%")


def test_vllm_spec_log_lines_weighted_by_drafted_tokens():
    rep = _report(log=[VLLM_SPEC.format(L="1.08", a=40), VLLM_SPEC.format(L="1.10", a=50)])
    lg = rep.engines[0].log
    assert lg is not None and lg.spec_lines == 2 and lg.spec_positions == 3
    assert lg.spec_accepted_tokens == 90 and lg.spec_drafted_tokens == 3000 and lg.spec_accept_len_mean == 1.09
    f = _found(rep)["engine-speculation-overhead"]
    assert "speculates 3 tokens" in f.claim and "2 'SpecDecoding metrics' log lines" in f.claim


def test_sglang_accept_len_with_its_draft_settings():
    line = ("[2025-05-30 09:10:55 TP0] Decode batch. #running-req: 4, #token: 19240, token usage: 0.04, accept len: "
            "{x}, cuda graph: True, gen throughput (token/s): 69.05, #queue-req: 0")
    rep = _report("sglang", log=[line.format(x="1.03"), line.format(x="1.07")],
                  settings={"speculative_num_draft_tokens": 4, "speculative_num_steps": 3})
    f = _found(rep)["engine-speculation-overhead"]
    assert "1.05 tokens per target step" in f.claim and "speculates 3 tokens" in f.claim
    assert any("--speculative-algorithm" in r for r in f.recommendations)
    idle = _report("sglang", log=[line.format(x="1.03").replace("#running-req: 4", "#running-req: 0")] * 2)
    assert _found(idle) == {}  # lines of an idle engine say nothing of acceptance


def _prefix_metrics(hits: float, prompt: float = 2_000_000.0) -> dict[str, float]:
    return {"vllm:prefix_cache_queries_total": prompt, "vllm:prefix_cache_hits_total": hits,
            "vllm:prompt_tokens_total": prompt, "vllm:generation_tokens_total": 100_000.0}


def test_prefix_cache_that_never_hits_on_a_prompt_heavy_load():
    f = _found(_report(metrics=_prefix_metrics(0.0)))["engine-prefix-cache-never-hits"]
    assert "hit rate of 0.0 %" in f.claim and "20 to 1" in f.claim and f.symptoms == ["ttft", "throughput"]
    assert any("timestamps" in r for r in f.recommendations)


def test_prefix_cache_negative_twins():
    reused = _found(_report(metrics=_prefix_metrics(1_200_000.0)))  # it hits 60 %: ruled out, not blamed
    assert set(reused) == {"engine-prefix-cache-reused"} and reused["engine-prefix-cache-reused"].informational
    assert _found(_report(metrics=_prefix_metrics(200_000.0))) == {}  # 10 %: neither
    # outputs outweigh prompts: prefill is not where the time goes
    assert _found(_report(metrics={**_prefix_metrics(0.0), "vllm:generation_tokens_total": 1_000_000.0})) == {}
    # caching off: the catalog's prefix-caching-off entry says so, not this rule
    rep = _report(metrics=_prefix_metrics(0.0))
    rep.engines[0].settings["prefix_caching"] = SettingValue(value=False, source="flag")
    assert _found(rep) == {}


def test_sglang_prefill_lines_and_counters():
    lines = [f"[2026-03-23 09:20:0{i} TP0] Prefill batch, #new-seq: 1, #new-token: 2176, #cached-token: 0, full token "
             "usage: 0.03, mamba usage: 0.04, #running-req: 2, #queue-req: 0, " for i in range(3)]
    rep = _report("sglang", log=lines, metrics={"sglang:prompt_tokens_total": 600_000.0,
                                                "sglang:generation_tokens_total": 70_000.0})
    assert rep.engines[0].log is not None and rep.engines[0].log.prefix_hit_rate_pct == 0.0
    assert "engine-prefix-cache-never-hits" in _found(rep)
    hit = _report("sglang", metrics={"sglang:prompt_tokens_total": 600_000.0, "sglang:cached_tokens_total": 400_000.0,
                                     "sglang:generation_tokens_total": 70_000.0})
    assert set(_found(hit)) == {"engine-prefix-cache-reused"}


START = ["(APIServer pid=1) INFO 02-12 14:20:02 [api_server.py:1351] vLLM API server version 0.15.1",
         "(EngineCore_DP0 pid=6) INFO 02-12 14:21:19 [default_loader.py:291] Loading weights took {w} seconds",
         "(EngineCore_DP0 pid=6) INFO 02-12 14:21:24 [gpu_model_runner.py:3659] Model loading took 31.62 GiB memory "
         "and {m} seconds",
         "(EngineCore_DP0 pid=6) INFO 02-12 15:00:36 [monitor.py:34] torch.compile takes {c} s in total",
         "(EngineCore_DP0 pid=6) INFO 02-12 15:01:23 [gpu_model_runner.py:4587] Graph capturing finished in {g} secs, "
         "took 1.04 GiB",
         "(EngineCore_DP0 pid=6) INFO 02-12 15:01:23 [core.py:259] init engine (profile, create kv cache, warmup "
         "model) took {i} seconds",
         "(APIServer pid=1) INFO 02-12 15:01:30 [api_server.py:1247] Starting vLLM API server 0 on http://0.0.0.0:8000"]


def _start(**kw: object) -> list[str]:
    vals = {"w": 44.87, "m": 51.28, "c": 2222.52, "g": 42, "i": 2398.96, **kw}
    return [ln.format(**vals) for ln in START]


def test_start_goes_to_its_largest_logged_phase():
    rep = _report(log=_start())
    lg = rep.engines[0].log
    assert lg is not None and lg.start_span_s == 2488.0 and lg.init_engine_s == 2398.96 and lg.weights_load_s == 44.87
    f = _found(rep)["engine-startup-phase"]
    assert f.title == "The start goes to torch.compile: 2223 s" and f.symptoms == ["startup"]
    assert "89 % of the start" in f.claim and any("-O0" in r for r in f.recommendations)
    graphs = _found(_report(log=_start(c=20.5, g=410, i=480.0)))["engine-startup-phase"]
    assert "CUDA graph capture" in graphs.title and any("capture" in r for r in graphs.recommendations)
    weights = _found(_report(log=_start(w=600.2, m=610.0, c=8.0, g=9, i=30.0)))["engine-startup-phase"]
    assert "loading the weights" in weights.title


def test_an_ordinary_start_says_nothing():
    assert _found(_report(log=_start(w=6.1, m=9.8, c=11.0, g=9, i=31.6))) == {}
