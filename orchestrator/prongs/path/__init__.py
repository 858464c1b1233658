"""The whole path: the layers between the user and the GPU, read where they run or as the user gives them
(`--path-config`), each setting against its documented default (knowledge/settings/path/), with the findings its
documented effect supports.

Layers: reverse proxies and gateways (nginx with its includes, HAProxy, Envoy and Istio's DestinationRules, LiteLLM,
Knative's queue-proxy and KServe, Ray Serve, Triton's Python models), the orchestrator (the Kubernetes pod and its
events, `docker inspect`, the systemd unit and drop-ins, the Slurm job) and the engine process's runtime.

Facts (the probe model's `facts()`, prongs/path/models.py), flat, each setting also as `<name>_default` and
`<name>_source` (`file:line (context)`, `kubectl get pod`, or `default`):

- `path.layers` (e.g. `nginx,k8s,runtime`), `path.processes` (the kinds seen), `path.<layer>.present`
- nginx (at the location that passes requests on, inherited from server/http): `path.nginx.proxy_buffering`,
  `path.nginx.proxy_request_buffering`, `path.nginx.gzip`, `path.nginx.gzip_types`, `path.nginx.gzip_proxied`,
  `path.nginx.proxy_read_timeout`, `path.nginx.proxy_http_version`, `path.nginx.pass_to`,
  `path.nginx.upstream_keepalive`, `path.nginx.add_header.<name>`, any other directive the configuration sets
- haproxy: `path.haproxy.server_maxconn` (the smallest), `path.haproxy.backend_maxconn_total`,
  `path.haproxy.servers`, `path.haproxy.global_maxconn`, `path.haproxy.defaults_maxconn`,
  `path.haproxy.timeout_queue`, `path.haproxy.timeout_server`, `path.haproxy.server_maxqueue`
- envoy (and Istio): `path.envoy.max_connections`, `path.envoy.max_pending_requests`, `path.envoy.max_requests`,
  `path.envoy.max_retries`, `path.envoy.route_timeout`, `path.envoy.istio_http2MaxRequests`,
  `path.envoy.istio_http1MaxPendingRequests`, `path.envoy.istio_maxRequestsPerConnection`,
  `path.envoy.istio_tcp_maxConnections`, `path.envoy.istio_outlier_<field>`, `path.envoy.istio_route_timeout`
- litellm: `path.litellm.provider` (and `provider.<model_name>`), `path.litellm.providers`,
  `path.litellm.tpm_limit`, `path.litellm.rpm_limit`, `path.litellm.max_parallel_requests`,
  `path.litellm.timeout`, `path.litellm.stream_timeout`, `path.litellm.num_retries`, `path.litellm.request_timeout`,
  `path.litellm.cache`, `path.litellm.api_base` (and `api_base.<model_name>`, credentials left out),
  `path.litellm.deployments.<model_name>` (its distinct api_bases), `path.litellm.max_deployments`
- ray_serve: `path.ray_serve.max_ongoing_requests`, `path.ray_serve.num_replicas`,
  `path.ray_serve.max_queued_requests`, `path.ray_serve.autoscaling_<field>`, `path.ray_serve.decorator`
- knative / kserve: `path.k8s.container_concurrency`, `path.k8s.knative_<annotation>`, `path.k8s.queue_proxy`
- k8s (the serving container of the pod): `path.k8s.pod`, `path.k8s.namespace`, `path.k8s.owner`,
  `path.k8s.limits_cpu`, `path.k8s.requests_cpu`, `path.k8s.limits_memory_bytes`, `path.k8s.readiness_timeout_s`,
  `path.k8s.readiness_period_s`, `path.k8s.readiness_failure_threshold`, `path.k8s.liveness_timeout_s`,
  `path.k8s.liveness_period_s`, `path.k8s.liveness_failure_threshold`, `path.k8s.startup_probe`,
  `path.k8s.restarts`, `path.k8s.ready`, `path.k8s.last_exit_code`, `path.k8s.last_exit_reason`,
  `path.k8s.shm_bytes`, `path.k8s.istio_sidecar`, `path.k8s.env.<NAME>`,
  events by reason: `path.k8s.events.readiness_probe_failed`, `path.k8s.events.liveness_probe_failed`,
  `path.k8s.events.Killing`, `path.k8s.events.BackOff`, `path.k8s.events.OOMKilling`, ...
- hpa (the HorizontalPodAutoscalers, `kubectl get hpa` or a manifest; the first one unprefixed, each as `<name>.*`):
  `path.hpa.target` (Kind/name), `path.hpa.min_replicas`, `path.hpa.max_replicas`, `path.hpa.current_replicas`,
  `path.hpa.desired_replicas`, `path.hpa.metric`, `path.hpa.metric_type`, `path.hpa.target_type`,
  `path.hpa.target_value`, `path.hpa.current_value` (`metric.<i>.*` per metric), `path.hpa.condition.<Type>`
- keda (KEDA's ScaledObjects, where the CRD exists; the first one unprefixed, each as `<name>.*`): `path.keda.target`,
  `path.keda.min_replicas`, `path.keda.max_replicas`, `path.keda.trigger_type`, `path.keda.metric_type`
  (AverageValue unless set), `path.keda.query` (a Prometheus trigger's PromQL), `path.keda.threshold`
- docker: `path.docker.cpus`, `path.docker.cpuset_cpus`, `path.docker.shm_size`, `path.docker.ipc_mode`,
  `path.docker.ulimit_memlock`, `path.docker.memory_bytes`, `path.docker.restarts`, `path.docker.gpus` (`--gpus N` or its device list), `path.docker.env.<NAME>`
- systemd: `path.systemd.env.<NAME>` (e.g. `path.systemd.env.OLLAMA_NUM_PARALLEL`: set in the unit, else the
  engine's default with `_source` `default (...)`), `path.systemd.CPUQuota`, `path.systemd.LimitMEMLOCK`,
  `path.systemd.Nice`, `path.systemd.CPUAffinity`, `path.systemd.NRestarts`, any other [Service] key
- slurm: `path.slurm.numcpus`, `path.slurm.cpus_per_task`, `path.slurm.timelimit`, `path.slurm.tres`, ...
- triton: `path.triton.instance_count`, `path.triton.backend`, `path.triton.max_batch_size`,
  `path.triton.dynamic_batching`, `path.triton.max_queue_delay_us`, `path.triton.model`,
  `path.triton.model.<name>.<setting>`
- runtime (the engine process): `path.runtime.threads`, `path.runtime.python`, `path.runtime.interpreter`,
  `path.runtime.OMP_NUM_THREADS`, `path.runtime.TOKENIZERS_PARALLELISM`, `path.runtime.MALLOC_ARENA_MAX`, ...

Each finding (rules.py) carries `data.residuals`: the request account's residual shapes it can explain
(`ttft_client_over_engine`, `itl_client_bursty`, `e2e_client_over_engine`, `offered_over_running`,
`requests_refused`, `engine_restarts`, `itl_tail_over_median`).
"""

from orchestrator.prong import Prong

PRONG = Prong(
    name="path",
    agent="path",
    tools=("orchestrator.prongs.path.tool:PathLayersTool",),
    probe_models=("orchestrator.prongs.path.models:PathReport",),
    rules=("orchestrator.prongs.path.rules:path_findings",),
    html="orchestrator.prongs.path.report:path_html",
    markdown="orchestrator.prongs.path.report:path_markdown",
    terminal="orchestrator.prongs.path.report:path_terminal",
    inputs=("path_configs",),
    check="orchestrator.prongs.path.inputs:check",
)
