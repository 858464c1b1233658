"""The items of the knowledge audit of 2026-12-05 (second round, docs/knowledge-audit-2026-12-05b.md) found wrong or
partly right, each read against the program's own source at a release: which default applies at which version, what
a setting does on the code path that reads it, what a name says about a model. Pure functions and data only."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.knowledge import moe_by_name
from orchestrator.knowledge.workloads import engine_of
from orchestrator.prongs.path import knowledge as pk
from orchestrator.prongs.path import parsers as ps
from orchestrator.prongs.path import probe as pr
from orchestrator.prongs.path.models import PathReport
from orchestrator.prongs.path import rules as path_rules
from support.evidence import ev

ROOT = Path(__file__).resolve().parents[2]


def _effect(eid: str) -> pk.PathEffect:
    return next(e for e in pk.effects() if e.id == eid)


def _layers(*parsed: ps.Parsed) -> PathReport:
    b = pr._Builder()
    for p in parsed:
        b.add(p, "test")
    b.defaults()
    return PathReport(host="gpu-box", layers=list(b.layers.values()))


def _ids(report: PathReport) -> set[str]:
    view = EvidenceView([ev("ev-5.1", report, tool="path_layers")])
    return {f.id for f in path_rules.path_findings(view)}


# --- nginx: defaults that changed between releases (#1) ---------------------------------------------------------

@pytest.mark.parametrize("setting,version,expected", [
    ("proxy_http_version", "1.26.2", "1.0"), ("proxy_http_version", "1.29.7", "1.1"),
    ("keepalive_requests", "1.18.0", "100"), ("keepalive_requests", "1.24.0", "1000"),
    ("keepalive", "1.28.0", None), ("keepalive", "1.30.0", "32 local"),
    ("sendfile_max_chunk", "1.20.0", "0"), ("output_buffers", "1.9.4", "1 32k"),
])
def test_nginx_default_at_the_release_that_runs(setting: str, version: str, expected: str | None) -> None:
    assert pk.default("nginx", setting, version) == expected


def test_nginx_harvest_reads_the_default_notes() -> None:
    spec = importlib.util.spec_from_file_location("harvest_path_settings", ROOT / "scripts/harvest_path_settings.py")
    assert spec and spec.loader
    h = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(h)
    body = ("Sets the HTTP protocol version for proxying. Since 1.29.7, version 1.1 is used by default. Before 1.29.7, "
            "version 1.0 was used by default.")
    assert h.default_changes(body, "1.1.4", "1.1") == [["1.1.4", "1.0"], ["1.29.7", "1.1"]]
    assert h.default_changes("Prior to version 1.19.10, the default value was 100.", "0.8.0", "1000") == \
        [["0.8.0", "100"], ["1.19.10", "1000"]]
    assert h.default_changes("Sets the maximum number of requests.", None, "1000") is None


def test_nginx_unset_version_dependent_default_says_both() -> None:
    rep = _layers(ps.parse_nginx({"/etc/nginx/nginx.conf": "http { server { location /v1 { proxy_pass "
                                                            "http://127.0.0.1:8000; } } }"}))
    v = rep.layer("nginx").settings["proxy_http_version"]  # type: ignore[union-attr]
    assert v.where.startswith("default (") and "1.0" in v.where and "1.29.7" in v.where


# --- nginx: proxy_read_timeout as nginx reads a time (#2), gzip and buffering (#4) -----------------------------

@pytest.mark.parametrize("value,holds", [("60", True), ("60s", True), ("1m", True), ("60000ms", True),
                                         ("30s", True), ("90s", False), ("1m30s", False), ("10m", False),
                                         ("1h", False), ("forever", False)])
def test_nginx_read_timeout_effect_reads_nginx_time(value: str, holds: bool) -> None:
    assert path_rules._holds(_effect("path-nginx-read-timeout").when, value) is holds


def test_nginx_time_syntax() -> None:
    t = path_rules.time_seconds
    assert t("1m30s") == 90 and t("2h") == 7200 and t("500ms") == 0.5
    assert t("30s1m") is None and t("60 s") is None


def _nginx(extra: str) -> ps.Parsed:
    return ps.parse_nginx({"/etc/nginx/nginx.conf": "http { gzip on; gzip_types text/event-stream; server { "
                                                    f"location /v1 {{ {extra} proxy_pass http://127.0.0.1:8000; }} }} }}"})


def test_gzip_on_event_stream_holds_tokens_only_with_proxy_buffering() -> None:
    assert "path-nginx-gzip-event-stream" in _ids(_layers(_nginx("")))  # proxy_buffering on by default
    off = _ids(_layers(_nginx("proxy_buffering off;")))
    assert "path-nginx-gzip-event-stream" not in off  # each upstream read is a flush through gzip
    assert "path-nginx-proxy-buffering" not in off


# --- defaults that hold only where the thing they belong to exists (#5, #11) ----------------------------------

def test_k8s_probe_defaults_only_for_a_probe_that_exists() -> None:
    pod = {"kind": "Pod", "metadata": {"name": "vllm-0"},
           "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai"}]},
           "status": {"containerStatuses": [{"name": "vllm", "restartCount": 0, "ready": True}]}}
    rep = _layers(ps.parse_k8s([pod], "pod.yaml"))
    assert "readiness_timeout_s" not in rep.layer("k8s").settings  # type: ignore[union-attr]
    assert "path-k8s-probe-timeout" not in _ids(rep)
    pod["spec"]["containers"][0]["readinessProbe"] = {"httpGet": {"path": "/health", "port": 8000}}  # type: ignore[index]
    rep = _layers(ps.parse_k8s([pod], "pod.yaml"))
    assert rep.layer("k8s").settings["readiness_timeout_s"].value == 1  # type: ignore[union-attr]
    assert "path-k8s-probe-timeout" in _ids(rep)


def test_istio_resources_get_no_envoy_defaults() -> None:
    dr = {"kind": "DestinationRule", "metadata": {"name": "vllm"},
          "spec": {"trafficPolicy": {"connectionPool": {"http": {"http2MaxRequests": 64}}}}}
    envoy = _layers(ps.parse_envoy([dr], "dr.yaml")).layer("envoy")
    assert envoy is not None and "route_timeout" not in envoy.settings and "max_requests" not in envoy.settings
    assert envoy.settings["istio_http2MaxRequests"].value == 64
    boot = {"static_resources": {"clusters": [{"name": "vllm"}]}}
    envoy = _layers(ps.parse_envoy([boot], "envoy.yaml")).layer("envoy")
    assert envoy is not None and envoy.settings["route_timeout"].value == "15s"
    assert "istio_http2MaxRequests" not in envoy.settings


# --- Ray Serve: ray.serve.llm's deployments carry their own default (#9) --------------------------------------

def test_ray_serve_llm_app_is_not_capped_at_serves_default() -> None:
    llm = {"applications": [{"name": "llm", "import_path": "ray.serve.llm:build_openai_app",
                             "args": {"llm_configs": [{"model_loading_config": {"model_id": "m"}}]}}]}
    rep = _layers(ps.parse_ray_serve([llm], "serve.yaml"))
    v = rep.layer("ray_serve").settings["max_ongoing_requests"]  # type: ignore[union-attr]
    assert v.value == 1_000_000_000 and "ray.serve.llm" in v.where
    plain = {"applications": [{"name": "app", "import_path": "app:deployment",
                               "deployments": [{"name": "Model"}]}]}
    assert _layers(ps.parse_ray_serve([plain], "serve.yaml")).layer("ray_serve").settings[  # type: ignore[union-attr]
        "max_ongoing_requests"].value == 5
    llm["applications"][0]["args"]["llm_configs"][0]["deployment_config"] = {"max_ongoing_requests": 8}  # type: ignore[index]
    assert _layers(ps.parse_ray_serve([llm], "serve.yaml")).layer("ray_serve").settings[  # type: ignore[union-attr]
        "max_ongoing_requests"].value == 8
    assert pk.default("ray_serve", "llm_max_ongoing_requests", "2.48.0") == 20


# --- defaults of the host's runtime that changed with the release (#12, #13) ----------------------------------

def test_systemd_memlock_default_by_version() -> None:
    assert pk.default("systemd", "LimitMEMLOCK", "249") == "64K"
    assert pk.default("systemd", "LimitMEMLOCK", "252") == "8M"


def test_cpython_gc_threshold_by_version() -> None:
    assert pk.default("runtime", "gc_threshold", "3.12") == "700,10,10"
    assert pk.default("runtime", "gc_threshold", "3.13") == "2000,10,10"


def test_ollama_parallel_effect_names_the_architectures_ollama_keeps_at_one() -> None:
    e = _effect("path-systemd-ollama-parallel")
    assert "qwen3next" in e.effect and "0.9.7" in e.effect


# --- names: model families (#34, #35) and process titles (#37) ------------------------------------------------

@pytest.mark.parametrize("name,moe", [
    ("mistralai/Mistral-Large-3-675B-Instruct-2512", True), ("mistralai/Mistral-Large-Instruct-2411", False),
    ("zai-org/GLM-4.6V-Flash", False), ("zai-org/GLM-4.6V", True), ("zai-org/GLM-4.5-Air", True),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", False),
])
def test_moe_by_name(name: str, moe: bool) -> None:
    got = moe_by_name(name)
    assert got is not None and got[0] is moe


@pytest.mark.parametrize("title", ["VLLM::EngineCore_DP0", "VLLM::Worker_PP0_TP1", "sglang::scheduler_DP0_TP0",
                                   "ray::RayWorkerWrapper", "ollama_llama_server", "text-generation-launcher",
                                   "trtllmExecutorWorker", "trtllm-llmapi-launch", "tritonserver", "llama-server"])
def test_every_title_and_its_comm_are_the_users(title: str) -> None:
    assert engine_of(title) is not None
    assert engine_of(title[:15]) is not None  # /proc/PID/comm keeps 15 characters


# --- MLA on SGLang's Triton backend at the releases the project harvests (#25) ---------------------------------

def _sglang(model: str, backend: str | None):
    from orchestrator.prongs.serving_engine.probe import build_report

    argv = ["python3", "-m", "sglang.launch_server", "--model-path", model, "--tp", "8"]
    argv += ["--attention-backend", backend] if backend else []
    return build_report("gpu-box", {"engines": [{"argv": argv, "kind": "sglang", "pid": 7}], "logs": []}, [])


@pytest.mark.parametrize("model,backend,fires", [("deepseek-ai/DeepSeek-V3", "triton", True),
                                                 ("deepseek-ai/DeepSeek-V3", "fa3", False),
                                                 ("deepseek-ai/DeepSeek-V3", None, False),
                                                 ("deepseek-ai/deepseek-moe-16b-chat", "triton", False),
                                                 ("Qwen/Qwen3-235B-A22B", "triton", False)])
def test_sglang_triton_mla_from_its_attention_backend(model: str, backend: str | None, fires: bool) -> None:
    from orchestrator.prongs.serving_engine.attention_rules import mla_triton_long_context
    from support.evidence import inventory

    view = EvidenceView([ev("ev-1.1", inventory("NVIDIA H200", "9.0", 8), tool="gpu_inventory"),
                         ev("ev-3.1", _sglang(model, backend), tool="engine_config")],
                        question="DeepSeek-V3 decode is slow with 30k-token prompts")
    found = mla_triton_long_context(view)
    assert bool(found) is fires
    if fires:
        assert "--attention-backend" in found[0].claim


def test_one_device_connection_is_false_dependencies_not_serial_streams() -> None:
    from orchestrator.knowledge import settings as kb

    doc = kb.find("CUDA_DEVICE_MAX_CONNECTIONS", "cuda")[0]
    eff = kb.effect_of(doc)
    assert eff is not None and "false dependencies" in eff.effect and "serialize" not in eff.effect
