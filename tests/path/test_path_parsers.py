"""The path's parsers on configurations in each program's own format (from its documentation and examples), and
their totality: any text gives settings or one ConfigError line."""

from __future__ import annotations

import json
import random

import pytest

from orchestrator.prongs.path import parsers as ps

# nginx: the proxy module's example (nginx.org/en/docs/http/ngx_http_proxy_module.html) inside a distribution's
# layout (http block in nginx.conf, the server in conf.d/ through a glob include)
NGINX_MAIN = """
user www-data;
worker_processes auto;
events { worker_connections 768; }
http {
    sendfile on;
    gzip on;
    gzip_types text/plain application/json text/event-stream;
    include /etc/nginx/conf.d/*.conf;
}
"""
NGINX_SITE = """
upstream backend { server 127.0.0.1:8000 max_conns=16; keepalive 32; }
server {
    listen 80;
    location / { root /var/www; }
    location /v1/ {
        proxy_pass       http://backend;
        proxy_set_header Host      $host;
        proxy_set_header X-Real-IP $remote_addr;
        proxy_read_timeout 600s;  # long generations
    }
}
"""


def test_nginx_location_inherits_from_http_and_follows_includes():
    got = ps.parse_nginx({"/etc/nginx/nginx.conf": NGINX_MAIN, "/etc/nginx/conf.d/llm.conf": NGINX_SITE},
                         "/etc/nginx/nginx.conf")
    s = got.settings
    assert s["proxy_read_timeout"].value == "600s" and "llm.conf:10" in s["proxy_read_timeout"].where
    assert s["gzip"].value == "on" and "(http)" in s["gzip"].where
    assert "text/event-stream" in s["gzip_types"].value.split()
    assert "proxy_buffering" not in s  # unset: the default applies (the probe adds it from nginx.json)
    assert s["pass_to"].value == "http://backend"
    assert s["upstream_server_max_conns"].value == "16" and s["upstream_keepalive"].value == "32"
    assert s["worker_connections"].value == "768"
    assert s["proxy_set_header.host"].value == "$host"


def test_nginx_location_setting_wins_over_http():
    site = NGINX_SITE.replace("proxy_read_timeout 600s;", "proxy_buffering off; gzip off;")
    s = ps.parse_nginx({"/etc/nginx/nginx.conf": NGINX_MAIN, "/etc/nginx/conf.d/x.conf": site}).settings
    assert s["proxy_buffering"].value == "off" and s["gzip"].value == "off" and "location /v1/" in s["gzip"].where


@pytest.mark.parametrize("bad", ["http {", "}", "http { server { listen 80 } }", "a 'unterminated;", "{ x; }"])
def test_nginx_malformed_is_one_error(bad):
    with pytest.raises(ps.ConfigError) as e:
        ps.parse_nginx({"/etc/nginx/nginx.conf": bad})
    assert "\n" not in str(e.value)


def test_nginx_include_loop_is_bounded():
    files = {"/etc/nginx/nginx.conf": "include /etc/nginx/a.conf;", "/etc/nginx/a.conf": "include /etc/nginx/a.conf;"}
    got = ps.parse_nginx(files)
    assert any("deeper" in n for n in got.notes)


def test_nginx_includes_fanning_out_parse_each_file_once(monkeypatch):
    """64 files that each include `*.conf` (a local user's fake nginx can name them all, 256 kB each): the expansion
    reaches the directive budget after ~10,000 inclusions, and each used to parse its file again (minutes of CPU in
    the event loop); a file is now parsed once and re-charged per inclusion."""
    calls = []
    real = ps.parse_nginx_text
    monkeypatch.setattr(ps, "parse_nginx_text", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    files = {f"/c/{i:02d}.conf": "include /c/*.conf;\n" + " " * 4096 for i in range(64)}
    got = ps.parse_nginx(files, "/c/00.conf")
    assert len(calls) <= 65 and len(set(calls)) == 64, len(calls)  # the main file once more, as an include
    assert len(got.notes) <= 51, len(got.notes)


# HAProxy: configuration.txt's examples of global/defaults/backend with server maxconn
HAPROXY = """
global
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout queue 30s
backend be_llm
    balance leastconn
    server s1 10.0.0.1:8000 check maxconn 8 maxqueue 100
    server s2 10.0.0.2:8000 check maxconn 12
"""


def test_haproxy_server_limits():
    s = ps.parse_haproxy(HAPROXY).settings
    assert s["global_maxconn"].value == 4096 and s["timeout_queue"].value == "30s"
    assert s["server_maxconn"].value == 8 and s["backend_maxconn_total"].value == 20 and s["servers"].value == 2
    assert s["server_maxqueue"].value == 100 and s["balance"].value == "leastconn"


# Istio's circuit-breaking task's DestinationRule (istio.io/latest/docs/tasks/traffic-management/circuit-breaking/)
ISTIO_DR = """
apiVersion: networking.istio.io/v1
kind: DestinationRule
metadata:
  name: httpbin
spec:
  host: httpbin
  trafficPolicy:
    connectionPool:
      tcp:
        maxConnections: 1
      http:
        http1MaxPendingRequests: 1
        maxRequestsPerConnection: 1
    outlierDetection:
      consecutive5xxErrors: 1
      interval: 1s
      baseEjectionTime: 3m
      maxEjectionPercent: 100
"""
ENVOY = {"static_resources": {"clusters": [{"name": "llm", "circuit_breakers": {"thresholds": [
    {"priority": "DEFAULT", "max_connections": 100, "max_pending_requests": 10, "max_requests": 64}]}}]}}


def test_istio_destination_rule_and_envoy_circuit_breakers():
    s = ps.parse_one("envoy", {"dr.yaml": ISTIO_DR}).settings
    assert s["istio_http1MaxPendingRequests"].value == 1 and s["istio_tcp_maxConnections"].value == 1
    assert s["istio_maxRequestsPerConnection"].value == 1 and s["istio_outlier_consecutive5xxErrors"].value == 1
    e = ps.parse_envoy([ENVOY], "envoy.yaml").settings
    assert (e["max_requests"].value, e["max_pending_requests"].value, e["max_connections"].value) == (64, 10, 100)


LITELLM = """
model_list:
  - model_name: llama
    litellm_params:
      model: hosted_vllm/meta-llama/Llama-3.1-8B-Instruct
      api_base: http://vllm:8000/v1
      rpm: 60
      tpm: 100000
router_settings:
  num_retries: 2
litellm_settings:
  request_timeout: 600
  cache: true
"""


def test_litellm_provider_limits_and_retries():
    s = ps.parse_one("litellm", {"config.yaml": LITELLM}).settings
    assert s["provider"].value == "hosted_vllm" and s["rpm_limit"].value == 60 and s["tpm_limit"].value == 100000
    assert s["num_retries"].value == 2 and s["request_timeout"].value == 600 and s["cache"].value is True


# Ray Serve's config file schema (docs.ray.io serve/production-guide/config) and a deployment decorator
RAY = """
applications:
- name: app1
  import_path: serve_app:app
  deployments:
  - name: LLM
    num_replicas: 2
    max_ongoing_requests: 32
"""


def test_ray_serve_config_and_decorator():
    s = ps.parse_ray_serve(ps.load_docs(RAY, "serve.yaml"), "serve.yaml").settings
    assert s["max_ongoing_requests"].value == 32 and s["num_replicas"].value == 2
    mod = ps.parse_ray_serve([], "x", {"serve_app.py": "@serve.deployment(num_replicas=1, max_ongoing_requests=4)\n"})
    assert mod.settings["max_ongoing_requests"].value == 4


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "vllm-0", "namespace": "llm"},
       "spec": {"containers": [
           {"name": "istio-proxy", "image": "istio/proxyv2"},
           {"name": "vllm", "image": "vllm/vllm-openai:v0.11.0", "args": ["--model", "m"],
            "resources": {"limits": {"cpu": "500m", "memory": "64Gi", "nvidia.com/gpu": "1"}},
            "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 5},
            "livenessProbe": {"httpGet": {"path": "/health", "port": 8000}, "timeoutSeconds": 10},
            "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}],
           "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}]},
       "status": {"containerStatuses": [{"name": "vllm", "ready": False, "restartCount": 3,
                                         "lastState": {"terminated": {"exitCode": 137, "reason": "Error"}}}]}}


def test_k8s_pod_probes_defaults_limits_restarts():
    s = ps.parse_k8s([POD], "pod.json").settings
    assert s["container"].value == "vllm" and s["limits_cpu"].value == 0.5 and s["limits_memory_bytes"].value == 64 * 2**30
    assert s["readiness_timeout_s"].value == 1 and "default" in s["readiness_timeout_s"].where
    assert s["readiness_period_s"].value == 5 and s["liveness_timeout_s"].value == 10
    assert s["restarts"].value == 3 and s["last_exit_code"].value == 137 and s["istio_sidecar"].value is True
    assert s["shm_bytes"].value == 16 * 2**30


def test_knative_service_container_concurrency():
    ksvc = {"apiVersion": "serving.knative.dev/v1", "kind": "Service", "metadata": {"name": "llm"},
            "spec": {"template": {"metadata": {"annotations": {"autoscaling.knative.dev/target": "10"}},
                                  "spec": {"containerConcurrency": 4, "containers": [{"image": "vllm/vllm-openai"}]}}}}
    s = ps.parse_k8s([ksvc], "ksvc.yaml").settings
    assert s["container_concurrency"].value == 4 and s["knative_target"].value == "10"


def test_events_table_and_json():
    table = ("LAST SEEN   TYPE      REASON      OBJECT        MESSAGE\n"
             "5m   Warning   Unhealthy   pod/vllm-0   Readiness probe failed: context deadline exceeded\n"
             "4m   Warning   Unhealthy   pod/vllm-0   Liveness probe failed: context deadline exceeded\n"
             "4m   Normal    Killing     pod/vllm-0   Container vllm failed liveness probe, will be restarted\n")
    s = ps.parse_events(table, "events").settings
    assert s["events.readiness_probe_failed"].value == 1 and s["events.Killing"].value == 1
    j = json.dumps({"items": [{"reason": "Unhealthy", "message": "Readiness probe failed: x", "count": 7}]})
    assert ps.parse_events(j, "events").settings["events.readiness_probe_failed"].value == 7


def test_docker_inspect():
    doc = [{"Name": "/vllm", "RestartCount": 2, "HostConfig": {"NanoCpus": 4000000000, "ShmSize": 67108864,
                                                                "IpcMode": "private", "Ulimits": [
                                                                    {"Name": "memlock", "Soft": 8388608,
                                                                     "Hard": 8388608}]}}]
    s = ps.parse_docker([doc], "docker inspect").settings
    assert s["cpus"].value == 4.0 and s["shm_size"].value == 67108864 and s["ulimit_memlock"].value == 8388608
    assert s["restarts"].value == 2


def test_systemd_unit_dropin_and_show():
    unit = ("[Unit]\nDescription=Ollama\n[Service]\nExecStart=/usr/local/bin/ollama serve\n"
            'Environment="OLLAMA_HOST=0.0.0.0"\nCPUQuota=200%\n')
    dropin = '[Service]\nEnvironment="OLLAMA_NUM_PARALLEL=4" "OLLAMA_MAX_QUEUE=64"\n'
    s = ps.parse_systemd({"/etc/systemd/system/ollama.service": unit,
                          "/etc/systemd/system/ollama.service.d/override.conf": dropin},
                         "LimitMEMLOCK=8388608\nEnvironment=OLLAMA_HOST=0.0.0.0 OLLAMA_NUM_PARALLEL=4\n").settings
    assert s["env.OLLAMA_NUM_PARALLEL"].value == "4" and "override.conf" in s["env.OLLAMA_NUM_PARALLEL"].where
    assert s["CPUQuota"].value == "200%" and s["LimitMEMLOCK"].value == "8388608"


# the tensorrtllm_backend's postprocessing model configuration (all_models/inflight_batcher_llm)
PBTXT = """
name: "postprocessing"
backend: "python"
max_batch_size: 64
input [ { name: "TOKENS_BATCH" data_type: TYPE_INT32 dims: [ -1, -1 ] } ]
parameters { key: "tokenizer_dir" value: { string_value: "/models/tok" } }
instance_group [ { count: 1 kind: KIND_CPU } ]
"""


def test_triton_model_config():
    s = ps.parse_pbtxt(PBTXT, "/m/postprocessing/config.pbtxt").settings
    assert (s["model"].value, s["backend"].value, s["instance_count"].value) == ("postprocessing", "python", 1)
    assert s["param.tokenizer_dir"].value == "/models/tok" and s["max_batch_size"].value == 64


def test_sniff_names_each_layer():
    assert ps.sniff(NGINX_SITE, "llm.conf") == "nginx"
    assert ps.sniff(HAPROXY, "lb.cfg") == "haproxy"
    assert ps.sniff(ISTIO_DR, "dr.yaml") == "envoy"
    assert ps.sniff(LITELLM, "config.yaml") == "litellm"
    assert ps.sniff(RAY, "serve.yaml") == "ray_serve"
    assert ps.sniff(json.dumps(POD), "pod.json") == "k8s"
    assert ps.sniff(PBTXT, "config.pbtxt") == "triton"


SAMPLES = [NGINX_MAIN + NGINX_SITE, HAPROXY, ISTIO_DR, LITELLM, RAY, json.dumps(POD), PBTXT]


@pytest.mark.parametrize("layer", ["nginx", "haproxy", "envoy", "litellm", "ray_serve", "k8s", "docker", "systemd",
                                   "triton", "k8s_events"])
def test_every_parser_is_total(layer):
    """Mutated real configurations (bytes dropped, doubled, brackets and quotes inserted): a result or one
    ConfigError line, never another exception."""
    rng = random.Random(layer)
    for _ in range(60):
        text = list(rng.choice(SAMPLES))
        for _ in range(rng.randint(1, 12)):
            i = rng.randrange(len(text))
            op = rng.random()
            if op < 0.3:
                del text[i]
            elif op < 0.6:
                text.insert(i, rng.choice("{}[]\"';:#\n\t-&*!|>"))
            else:
                text[i:i] = text[i:i + rng.randint(1, 40)]
        try:
            ps.parse_one(layer, {"/x/f": "".join(text)})
        except ps.ConfigError as e:
            assert "\n" not in str(e)


def test_size_is_bounded():
    with pytest.raises(ps.ConfigError):
        ps.parse_haproxy("x" * (ps.PATH_CONFIG_MAX_BYTES + 1))


def test_litellm_counts_each_model_names_addresses_and_keeps_its_limits():
    """Each model name's distinct api_bases (the deployments its router balances among, credentials left out) and
    every deployment's limits, whatever the api_bases."""
    from orchestrator.prongs.path import parsers as ps

    text = ("model_list:\n"
            "  - model_name: a\n    litellm_params: {model: hosted_vllm/a, api_base: 'http://u:pw@10.0.0.1:8000/v1',"
            " tpm: 1000}\n"
            "  - model_name: a\n    litellm_params: {model: hosted_vllm/a, api_base: 'http://10.0.0.2:8000/v1'}\n"
            "  - model_name: b\n    litellm_params: {model: hosted_vllm/b, api_base: os.environ/B_URL, rpm: 5}\n")
    got = {k: s.value for k, s in ps.parse_one("litellm", {"c.yaml": text}).settings.items()}
    assert got["deployments.a"] == 2 and got["deployments.b"] == 1 and got["max_deployments"] == 2
    assert got["api_base.a"] == "http://10.0.0.1:8000/v1" and got["api_base.b"] == "os.environ/B_URL"
    assert got["tpm_limit"] == 1000 and got["rpm_limit"] == 5
    assert "pw" not in repr(got)


HPA = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
       "metadata": {"name": "llm", "namespace": "serving"},
       "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "llm"}, "minReplicas": 1,
                "maxReplicas": 4, "metrics": [{"type": "Pods", "pods": {
                    "metric": {"name": "llamacpp_requests_processing"},
                    "target": {"type": "AverageValue", "averageValue": "2"}}}]},
       "status": {"currentReplicas": 1, "desiredReplicas": 1, "currentMetrics": [{"type": "Pods", "pods": {
           "metric": {"name": "llamacpp_requests_processing"}, "current": {"averageValue": "1"}}}]}}


def test_an_autoscaler_is_read_for_what_it_scales_on_and_where_it_stands():
    import json

    from orchestrator.prongs.path import parsers as ps

    text = json.dumps({"kind": "List", "items": [HPA]})
    assert ps.sniff(text, "hpa.json") == "hpa"
    got = {k: s.value for k, s in ps.parse_one("hpa", {"hpa.json": text}).settings.items()}
    assert got["metric"] == "llamacpp_requests_processing" and got["metric_type"] == "Pods"
    assert got["target_type"] == "AverageValue" and got["target_value"] == 2.0 and got["current_value"] == 1.0
    assert got["target"] == "Deployment/llm" and got["max_replicas"] == 4 and got["current_replicas"] == 1


def _hpa_report(argv: list[str], hpa: dict):
    import json

    from orchestrator.prongs.path.probe import report_from

    return report_from("gpu-box", {"processes": [{"pid": 9, "kind": "llamacpp", "argv": argv}]},
                       {"hpa.json": json.dumps(hpa)})


def test_an_autoscaler_target_above_the_most_its_metric_reads_never_scales():
    """requests_processing counts llama-server's busy slots: with one slot (-np 1) a per-pod target of 2 is never
    reached (desired = ceil(1 x 1 / 2) = 1); with four slots it is."""
    from orchestrator.analysis.evidence_view import EvidenceView
    from orchestrator.prongs.path.rules import autoscaler_never_scales, path_findings

    from support.evidence import ev

    one = _hpa_report(["llama-server", "-m", "m.gguf", "-np", "1"], HPA)
    got = autoscaler_never_scales(one, EvidenceView([]))
    assert got is not None and (got["ceiling"], got["target"]) == (1.0, 2.0) and "-np" in got["how"]
    f = next(x for x in path_findings(EvidenceView([ev("ev-1", one, tool="path_layers")]))
             if x.id == "path-hpa-target-unreachable")
    assert "ceil(1 x 1 / 2) = 1" in f.claim and "requests_deferred" in f.recommendations[0]
    assert autoscaler_never_scales(_hpa_report(["llama-server", "-np", "4"], HPA), EvidenceView([])) is None
    assert autoscaler_never_scales(_hpa_report(["llama-server"], HPA), EvidenceView([])) is None  # bound unread


def test_a_container_s_gpu_request_is_read_as_a_count():
    """`docker inspect`'s DeviceRequests: `--gpus 4` (Count 4) and `--gpus device=0,1` (two DeviceIDs) are GPU
    counts; `--gpus all` (Count -1) names none."""
    from orchestrator.prongs.path import parsers as ps

    def gpus(req: dict) -> object:
        doc = [{"Name": "/llm", "HostConfig": {"DeviceRequests": [{"Driver": "", "Capabilities": [["gpu"]], **req}]}}]
        got = ps.parse_docker(doc, "docker inspect").settings.get("gpus")
        return got.value if got else None

    assert gpus({"Count": 4}) == 4 and gpus({"Count": 0, "DeviceIDs": ["0", "1"]}) == 2
    assert gpus({"Count": -1}) is None


def _pod_with(probes: dict) -> str:
    import json

    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "llm-0", "namespace": "llm"},
                       "spec": {"containers": [{"name": "vllm", **probes}]},
                       "status": {"containerStatuses": [{"name": "vllm", "restartCount": 5}]}})


EVENTS = ("LAST SEEN   TYPE      REASON      OBJECT      MESSAGE\n"
          "2m   Warning   Unhealthy   pod/llm-0   Liveness probe failed: Get \"http://10.0.0.9:8000/health\": dial tcp "
          "10.0.0.9:8000: connect: connection refused\n"
          "2m   Normal    Killing     pod/llm-0   Container vllm failed liveness probe, will be restarted\n")


def test_a_liveness_probe_without_a_startup_probe_kills_the_loading_engine():
    """Liveness failures refused (nothing listens yet), restarts, and no startup probe: the grace the probe allows is
    said with its arithmetic and the fix is a startup probe; with a startup probe it is not said."""
    from orchestrator.analysis.evidence_view import EvidenceView
    from orchestrator.prongs.path.probe import report_from
    from orchestrator.prongs.path.rules import path_findings

    from support.evidence import ev

    live = {"livenessProbe": {"httpGet": {"path": "/health", "port": 8000}, "initialDelaySeconds": 60,
                              "periodSeconds": 10, "failureThreshold": 3}}
    for probes, said in ((live, True), ({**live, "startupProbe": {"httpGet": {"path": "/health", "port": 8000},
                                                                    "failureThreshold": 60, "periodSeconds": 10}},
                                        False)):
        rep = report_from("gpu-box", {}, {"pod.json": _pod_with(probes), "events.txt": EVENTS})
        found = [f for f in path_findings(EvidenceView([ev(f"ev-{len(probes)}", rep, tool="path_layers")]))
                 if f.id == "path-k8s-liveness-kills-start"]
        assert bool(found) == said
        if said:
            assert "allows 90 s" in found[0].claim and "startupProbe" in found[0].recommendations[0]


def test_a_keda_trigger_averaging_a_bounded_engine_gauge_above_its_bound_never_scales():
    """KEDA's prometheus trigger (AverageValue by default): the query's engine gauge per replica is capped by the
    engine's flag; a threshold above the cap never scales, one below it does, and a rate() is not the gauge."""
    import json

    from orchestrator.analysis.evidence_view import EvidenceView
    from orchestrator.prongs.path.probe import report_from
    from orchestrator.prongs.path.rules import autoscaler_never_scales

    def so(query: str, threshold: str) -> str:
        return json.dumps({"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "llm"},
                           "spec": {"scaleTargetRef": {"name": "llm"}, "minReplicaCount": 1, "maxReplicaCount": 8,
                                    "triggers": [{"type": "prometheus", "metadata": {
                                        "serverAddress": "http://prometheus:9090", "query": query,
                                        "threshold": threshold}}]}})

    procs = {"processes": [{"pid": 7, "kind": "vllm", "argv": ["vllm", "serve", "m", "--max-num-seqs", "64"]}]}
    running = 'sum(vllm:num_requests_running{model_name="m"})'
    for query, threshold, never in ((running, "80", True), (running, "50", False),
                                    ('sum(rate(vllm:num_requests_running[1m]))', "80", False)):
        rep = report_from("gpu-box", procs, {"so.json": so(query, threshold)})
        got = autoscaler_never_scales(rep, EvidenceView([]))
        assert (got is not None) == never, (query, threshold)
        if never:
            assert got["ceiling"] == 64 and got["target"] == 80 and "--max-num-seqs" in got["how"]


def test_of_a_cluster_s_autoscalers_the_engine_s_is_read():
    """`kubectl get hpa -A` lists every autoscaler: the one whose target owns the engine's pod, else one on an engine
    metric, else the only one; several unrelated ones are none."""
    import copy

    from orchestrator.prongs.path.probe import report_from

    web = copy.deepcopy(HPA)
    web["metadata"]["name"] = "web"
    web["spec"]["scaleTargetRef"]["name"] = "web"
    web["spec"]["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 80}}}]

    def hpa_of(items: list, pod: dict | None = None) -> str | None:
        cmds = [{"argv": ["kubectl", "get", "hpa"], "layer": "hpa", "rc": 0, "json": {"kind": "List", "items": items}}]
        if pod:
            cmds.insert(0, {"argv": ["kubectl", "get", "pod"], "layer": "k8s", "rc": 0, "json": pod})
        x = report_from("gpu-box", {"commands": cmds}).layer("hpa")
        return None if x is None else x.settings["name"].value

    assert hpa_of([web, HPA]) == "llm"  # the engine metric's
    other = copy.deepcopy(web)
    other["metadata"]["name"] = "api"
    assert hpa_of([web, other]) is None and hpa_of([web]) == "web"
    pod = {"kind": "Pod", "metadata": {"name": "api-7f6d8b9c5d-kx2lm", "ownerReferences": [
        {"kind": "ReplicaSet", "name": "api-7f6d8b9c5d"}]}, "spec": {"containers": [{"name": "c"}]}}
    other["spec"]["scaleTargetRef"]["name"] = "api"
    assert hpa_of([web, HPA, other], pod) == "api"  # the pod's own workload first
