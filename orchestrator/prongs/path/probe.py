"""The path probe: scripts/path.py on the host (one round trip), its files and command outputs read into layers by
prongs/path/parsers.py, each setting set beside its documented default (prongs/path/knowledge.py)."""

from __future__ import annotations

import json
import re
from typing import Any

from orchestrator.hosts.base import Host
from orchestrator.knowledge import settings as kb
from orchestrator.probes.runner import ProbeUnavailable, run_script
from orchestrator.probes.session import shared
from orchestrator.prongs.path import knowledge as pk
from orchestrator.prongs.path import parsers as ps
from orchestrator.prongs.path.models import Layer, LayerValue, PathProcess, PathReport

TIMEOUT_S = 60.0
MAX_FILE_BYTES = 262144

RUNTIME_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TOKENIZERS_PARALLELISM",
               "RAYON_NUM_THREADS", "RAYON_RS_NUM_CPUS", "MALLOC_ARENA_MAX", "MALLOC_TRIM_THRESHOLD_",
               "MALLOC_MMAP_THRESHOLD_", "MALLOC_CONF", "LD_PRELOAD", "PYTHONMALLOC", "PYTHONDEVMODE",
               "PYTHONTRACEMALLOC", "PYTHONASYNCIODEBUG", "PYTHONOPTIMIZE", "PYTHONUNBUFFERED", "UVICORN_WORKERS",
               "WEB_CONCURRENCY", "CONFIG_FILE_PATH", "CONTAINER_CONCURRENCY", "REVISION_TIMEOUT_SECONDS",
               "QUEUE_SERVING_PORT", "USER_PORT", "HOSTNAME", "POD_NAME", "POD_NAMESPACE", "SLURM_JOB_ID",
               "SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE", "VLLM_GC_DEBUG", "CUDA_VISIBLE_DEVICES", "UCX_TLS",
               "UCX_NET_DEVICES", "NCCL_IB_DISABLE", "NCCL_NET", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA")
"""Variables of a process's environment that may leave the host (runtime settings and the layers' own); secret-
looking names and values are dropped on the host whatever the list says."""
ENV_PREFIXES = ("OLLAMA_", "RAY_SERVE_", "LITELLM_", "KSERVE_", "TRITON_")
ENGINE_KINDS = {"vllm", "sglang", "tensorrt_llm", "trtllm", "tgi", "llamacpp", "ollama", "triton", "ray_serve"}
PROXY_LAYER = {"nginx": "nginx", "haproxy": "haproxy", "envoy": "envoy", "traefik": "traefik", "caddy": "caddy",
               "litellm": "litellm", "queue_proxy": "knative", "triton_python": "triton", "triton": "triton",
               "ray_serve": "ray_serve", "istio_agent": "envoy"}


LOG_PATTERNS = (
    # vLLM's gc_utils with VLLM_GC_DEBUG=1: "GC took 128.400ms to complete. Collected 200 objects (out of 2882843) in
    # GC generation 2." (vllm/utils/gc_utils.py)
    {"layer": "runtime", "name": "gc_gen2",
     "regex": r"GC took (?P<ms>[0-9.]+) ?ms to complete\. Collected (?P<collected>[0-9]+) objects \(out of "
              r"(?P<tracked>[0-9]+)\) in GC generation 2\b"},
    # LiteLLM's parallel request limiter: "429: LiteLLM Rate Limit Handler for rate limit type = team. Crossed TPM /
    # RPM / Max Parallel Request Limit. current rpm: 3, rpm limit: 15, current tpm: 14691, tpm limit: 5000, ..."
    # (litellm/proxy/hooks/parallel_request_limiter.py)
    {"layer": "litellm", "name": "rate_limited",
     "regex": r"Rate Limit Handler for rate limit type = \w+\. Crossed TPM / RPM.{0,200}?current rpm: (?P<current_rpm>[0-9]+), "
              r"rpm limit: (?P<rpm>[0-9]+), current tpm: (?P<current_tpm>[0-9]+), tpm limit: (?P<tpm>[0-9]+)"},
)
"""Lines a layer prints about itself, counted in the run's --log files on the host (numeric groups: largest and last
value kept): each pattern is the program's own message, from its source."""


def path_params(logs: list[str] | None = None) -> dict[str, Any]:
    return {"logs": list(logs or []), "max_file_bytes": MAX_FILE_BYTES, "max_files": 64,
            "max_output_bytes": 8 << 20, "command_timeout_s": 8.0, "env_names": list(RUNTIME_ENV),
            "env_prefixes": list(ENV_PREFIXES), "log_patterns": list(LOG_PATTERNS), "max_log_bytes": 32 << 20}


class _Builder:
    """Layers as they are found: one per layer name, the first value of a setting kept (host evidence before the
    user's files, a layer's own file before a default)."""

    def __init__(self) -> None:
        self.layers: dict[str, Layer] = {}
        self.read: set[str] = set()
        self.gaps: list[str] = []
        """Layers whose configuration was read (only their unset settings are given their defaults)."""

    def layer(self, name: str, found_by: str | None = None) -> Layer:
        x = self.layers.get(name)
        if x is None:
            x = self.layers[name] = Layer(layer=name, label=pk.labels().get(name, name))
        if found_by and found_by not in x.found_by:
            x.found_by.append(found_by)
        return x

    def add(self, parsed: ps.Parsed, found_by: str) -> None:
        x = self.layer(parsed.layer, found_by)
        self.read.add(parsed.layer)
        x.notes += [n for n in parsed.notes if n not in x.notes][:20]
        for k, s in parsed.settings.items():
            if k in x.settings or len(x.settings) >= 2000:
                continue
            d = pk.doc(parsed.layer, k)
            x.settings[k] = LayerValue(value=_secret_kept(k, _scalar(s.value)),
                                       default=_scalar(pk.default(parsed.layer, k)), where=s.where,
                                       url=d.url if d else "")

    def error(self, layer: str, found_by: str, why: str) -> None:
        x = self.layer(layer, found_by)
        if why not in x.errors:
            x.errors.append(why[:300])

    def defaults(self) -> None:
        ray = self.layers.get("ray_serve")
        if ray is not None and "llm_app" in ray.settings and "max_ongoing_requests" not in ray.settings:
            # ray.serve.llm's deployments carry their own default, not Serve's
            d = pk.doc("ray_serve", "llm_max_ongoing_requests")
            if d is not None and d.defaults:
                changed = pk.default_words("ray_serve", "llm_max_ongoing_requests")
                ray.settings["max_ongoing_requests"] = LayerValue(
                    value=_scalar(d.defaults[-1][1]), default=_scalar(d.defaults[-1][1]), url=d.url,
                    where=f"default (ray.serve.llm: {changed})" if changed else "default (ray.serve.llm)")
        for (layer, name), d in pk.docs().items():
            if layer in self.read and name not in self.layers[layer].settings and d.defaults \
                    and d.defaults[-1][1] is not None and (layer != "nginx" or name in _NGINX_SHOWN) \
                    and all(r in self.layers[layer].settings for r in d.requires):
                changed = pk.default_words(layer, name)
                self.layers[layer].settings[name] = LayerValue(
                    value=_scalar(d.defaults[-1][1]), default=_scalar(d.defaults[-1][1]), url=d.url,
                    where=f"default ({changed})" if changed else "default")


_NGINX_SHOWN = {"proxy_buffering", "proxy_request_buffering", "proxy_read_timeout", "proxy_send_timeout",
                "proxy_connect_timeout", "proxy_http_version", "proxy_buffer_size", "proxy_buffers", "gzip",
                "gzip_types", "gzip_proxied", "chunked_transfer_encoding", "proxy_cache", "keepalive_timeout",
                "client_max_body_size", "proxy_next_upstream", "proxy_next_upstream_tries", "tcp_nodelay",
                "postpone_output"}
"""The nginx directives on a streamed LLM response's path given with their defaults when unset (the rest of the
harvested directives are shown only when the configuration sets them)."""


def _secret_kept(name: str, v: Any) -> Any:
    """v, or the redaction marker where the setting's own name says it holds a secret (`master_key`, `env.HF_TOKEN`,
    `proxy_set_header.x-api-key`) and v is not a path, number or placeholder: the host masks each such value, and
    this holds whatever a file's shape carried past it (a value on the line below its name)."""
    from orchestrator.redact import REDACTED, benign_value, secret_name

    last = name.rsplit(".", 1)[-1]
    if isinstance(v, str) and secret_name(last) and not _NOT_SECRET.fullmatch(last) and not benign_value(v):
        return REDACTED
    return v


_NOT_SECRET = re.compile(r"(?:proxy|grpc|fastcgi|uwsgi|scgi|memcached)_pass(?:_\w+)?|pass_to|auth_delay")
"""Settings whose name has a secret's word in it but not a secret's value: nginx's `*_pass` directives (where
requests go), the upstream they name, the delay of a refused authentication."""


def _scalar(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, str):
        return int(v) if v.isdigit() and len(v) < 18 else v[:500]
    return json.dumps(v)[:500]


def report_from(host_name: str, data: dict[str, Any], user_files: dict[str, str] | None = None) -> PathReport:
    """Pure: the PathReport that the script's output (and the user's `--path-config` files) describe."""
    b = _Builder()
    procs = []
    for p in (data.get("processes") or [])[:64]:
        try:
            procs.append(PathProcess.model_validate(p))
        except Exception:  # a process the model cannot hold is left out, not the report
            continue
    for p in procs:
        layer = PROXY_LAYER.get(p.kind)
        if layer:
            b.layer(layer, f"process {p.pid} ({p.kind})")
    files = [f for f in data.get("files") or [] if isinstance(f, dict)]
    by_layer: dict[str, dict[str, str]] = {}
    read_ok = {str(f.get("path")) for f in files if f.get("text") is not None}
    for f in files:
        if f.get("text") is None and str(f.get("path")) in read_ok:
            continue  # refused as the process that named it, read at its standard place
        if f.get("text") is None:
            if f.get("error") and f.get("error") != "not present":
                b.error(str(f.get("layer")), f"file {f.get('path')}", f"{f.get('path')}: {f.get('error')}")
            continue
        by_layer.setdefault(f"{f.get('layer')}:{f.get('role')}", {})[str(f.get("path"))] = str(f["text"])
    _parse_files(b, by_layer, procs)
    for c in data.get("commands") or []:
        if isinstance(c, dict):
            _parse_command(b, c, by_layer)
    for path, text in (user_files or {}).items():
        layer = ps.sniff(text, path)
        if layer is None:
            b.error("path", f"--path-config {path}", f"{path}: not a configuration of a known layer")
            continue
        try:
            b.add(ps.parse_one(layer, {path: text}), f"--path-config {path}")
        except ps.ConfigError as exc:
            b.error(layer, f"--path-config {path}", str(exc))
    _triton_metrics(b, data.get("triton_metrics") or [])
    _log_facts(b, data.get("log_facts") or [])
    _runtime(b, procs)
    _engine_env(b, procs)
    b.defaults()
    report = PathReport(host=host_name, processes=procs, layers=list(b.layers.values()),
                        files=[str(f.get("path")) for f in files if f.get("text") is not None],
                        gaps=[f"{g.get('what')}: {g.get('why')}" for g in data.get("gaps") or [] if isinstance(g, dict)]
                        + b.gaps[:20],
                        commands=["python3 -I -S - < path.py (processes, their configs, units, containers, pods)"]
                        + [" ".join(c.get("argv") or []) for c in data.get("commands") or [] if isinstance(c, dict)])
    if not report.layers:
        report.reason = "no layer in front of or around the engine was found (no proxy, gateway, unit, container or pod)"
    return report


def _parse_files(b: _Builder, by_layer: dict[str, dict[str, str]], procs: list[PathProcess]) -> None:
    nginx = {**by_layer.get("nginx:config", {}), **by_layer.get("nginx:include", {})}
    if nginx:
        _try(b, "nginx", lambda: ps.parse_nginx(nginx, next(iter(by_layer.get("nginx:config") or nginx))),
             "file " + next(iter(nginx)))
    for layer in ("haproxy", "envoy", "litellm", "traefik", "caddy"):
        for path, text in by_layer.get(f"{layer}:config", {}).items():
            if layer in ("traefik", "caddy"):
                b.layer(layer, f"file {path}").notes.append(f"{path} read; its settings are not interpreted here")
                continue
            _try(b, layer, lambda t=text, p=path, l=layer: ps.parse_one(l, {p: t}), f"file {path}")
    ray = by_layer.get("ray_serve:config", {})
    if ray:
        mods = by_layer.get("ray_serve:deployment", {})
        for path, text in ray.items():
            _try(b, "ray_serve", lambda t=text, p=path: ps.parse_ray_serve(ps.load_docs(t, p), p, mods),
                 f"file {path}")
    models = by_layer.get("triton:model_config", {})
    if models:
        running = {p.argv[1].rsplit("/", 2)[0] for p in procs if p.kind == "triton_python" and len(p.argv) > 1}
        parsed = []
        for path, text in models.items():
            try:
                parsed.append((path, ps.parse_pbtxt(text, path)))
            except ps.ConfigError as exc:
                b.error("triton", f"file {path}", str(exc))
        # the model whose Python stub runs (a Python model on the streaming path) speaks for the layer first
        parsed.sort(key=lambda t: (t[0].rsplit("/", 1)[0] not in running,
                                   t[1].settings.get("backend", ps.Setting("", "")).value != "python"))
        for path, got in parsed:
            model = got.settings["model"].value if "model" in got.settings else path
            per = ps.Parsed("triton", {f"model.{model}.{k}": s for k, s in got.settings.items()})
            b.add(got, f"file {path}")
            b.add(per, f"file {path}")


def _try(b: _Builder, layer: str, fn: Any, found_by: str) -> None:
    try:
        b.add(fn(), found_by)
    except ps.ConfigError as exc:
        b.error(layer, found_by, str(exc))


def _parse_command(b: _Builder, c: dict[str, Any], by_layer: dict[str, dict[str, str]]) -> None:
    argv = " ".join(str(a) for a in c.get("argv") or [])
    layer = str(c.get("layer") or "")
    if c.get("error") or (c.get("rc") not in (0, None)):
        if layer in ("hpa", "keda") and "k8s" not in b.layers:
            return  # asked of any host with kubectl and an engine: no cluster to read is no gap where no pod was seen
        why = c.get("error") or (str(c.get("stderr") or "").strip().splitlines() or ["exit " + str(c.get("rc"))])[-1]
        b.gaps.append(f"{argv}: {why}"[:300])
        return
    payload = c.get("json")
    text = json.dumps(payload) if payload is not None else str(c.get("stdout") or "")
    try:
        if layer == "systemd":
            units = {**by_layer.get("systemd:unit", {}), **by_layer.get("systemd:dropin", {})}
            if "LoadState=not-found" in text:
                return
            if argv.startswith("systemctl cat"):
                units = units or {argv: text}
                b.add(ps.parse_systemd(units), argv)
            else:
                b.add(ps.parse_systemd(units, text), argv)
        elif layer == "k8s" and payload is not None:
            b.add(ps.parse_k8s([payload], "kubectl get pod"), argv)
        elif layer == "k8s_events":
            b.add(ps.parse_events(text, "kubectl get events"), argv)
        elif layer == "istio" and payload is not None:
            b.add(ps.parse_envoy([payload], "kubectl get destinationrules"), argv)
        elif layer in ("hpa", "keda") and payload is not None:
            items = _engine_autoscalers(payload, b)
            if items:
                doc = {"kind": "List", "items": items}
                b.add(ps.parse_hpa([doc], "kubectl get hpa") if layer == "hpa" else
                      ps.parse_scaledobjects([doc], "kubectl get scaledobjects"), argv)
        elif layer == "docker" and payload is not None:
            b.add(ps.parse_docker([payload], "docker inspect"), argv)
        elif layer == "slurm":
            b.add(_scontrol(text), argv)
    except ps.ConfigError as exc:
        b.error(layer, argv, str(exc))


def _engine_autoscalers(payload: Any, b: _Builder) -> list[dict[str, Any]]:
    """Of a cluster's autoscalers (HPAs or ScaledObjects), the ones that are the engine's: those whose target is the
    workload that owns the engine's pod (its ReplicaSet's Deployment, its StatefulSet), else those that scale on an
    engine's own metric, else the only one listed; none when several unrelated ones cannot be told apart."""
    items = [i for i in (payload.get("items") if isinstance(payload, dict) else None) or [] if isinstance(i, dict)]
    k8s = b.layers.get("k8s")
    owner = str(k8s.settings["owner"].value) if k8s is not None and "owner" in k8s.settings else ""
    kind, _, name = owner.partition("/")
    if kind == "ReplicaSet":
        kind, name = "Deployment", name.rsplit("-", 1)[0]

    def target(i: dict[str, Any]) -> str:
        ref = (i.get("spec") or {}).get("scaleTargetRef") or {}
        return str(ref.get("name") or "") if isinstance(ref, dict) else ""

    if name:
        mine = [i for i in items if target(i) == name]
        if mine:
            return mine
    engine = [i for i in items if any(re.search(m.metric, json.dumps(i.get("spec") or {}))
                                      for m in pk.autoscale_metrics())]
    if engine:
        return engine
    return items if len(items) == 1 else []


def _scontrol(text: str) -> ps.Parsed:
    """`scontrol show job`: its `Key=Value` pairs (NumCPUs, NumTasks, CPUs/Task, TimeLimit, Partition, ...)."""
    out = ps.Parsed("slurm")
    for word in text.split()[:5000]:
        k, eq, v = word.partition("=")
        if eq and k in ("JobId", "Partition", "NumNodes", "NumCPUs", "NumTasks", "CPUs/Task", "TimeLimit",
                        "RunTime", "TRES", "Gres", "TresPerNode", "MinMemoryNode", "Shared", "OverSubscribe"):
            out.set(k.replace("/", "_per_").lower(), v, "scontrol show job")
    return out


def _triton_metrics(b: _Builder, items: list[Any]) -> None:
    """Triton's per-model counters: time per execution and queued per request (nv_inference_compute_infer_duration_us
    over nv_inference_exec_count, nv_inference_queue_duration_us over nv_inference_request_success)."""
    for item in items[:4]:
        if not isinstance(item, dict) or not isinstance(item.get("models"), dict):
            continue
        got = ps.Parsed("triton")
        where = f"Triton metrics (127.0.0.1:{item.get('port')}/metrics)"
        for model, c in list(item["models"].items())[:64]:
            if not isinstance(c, dict):
                continue
            execs, reqs = c.get("nv_inference_exec_count") or 0, c.get("nv_inference_request_success") or 0
            if execs and c.get("nv_inference_compute_infer_duration_us") is not None:
                got.set(f"model.{model}.compute_ms_per_exec",
                        round(c["nv_inference_compute_infer_duration_us"] / execs / 1000, 2), where)
            if reqs and c.get("nv_inference_queue_duration_us") is not None:
                got.set(f"model.{model}.queue_ms_per_request",
                        round(c["nv_inference_queue_duration_us"] / reqs / 1000, 2), where)
            if reqs:
                got.set(f"model.{model}.requests", int(reqs), where)
        lead = b.layers.get("triton")
        model = lead.settings["model"].value if lead is not None and "model" in lead.settings else None
        for k in ("compute_ms_per_exec", "queue_ms_per_request"):
            if model is not None and f"model.{model}.{k}" in got.settings:
                got.set(k, got.settings[f"model.{model}.{k}"].value, where)
        b.add(got, where)


def _log_facts(b: _Builder, items: list[Any]) -> None:
    for f in items[:64]:
        if not isinstance(f, dict) or not f.get("name"):
            continue
        where = f"{f.get('log')}: {f.get('count')} lines like \"{str(f.get('example') or '')[:200]}\""
        got = ps.Parsed(str(f.get("layer")))
        mx, last = f.get("max") or {}, f.get("last") or {}
        if f["name"] == "gc_gen2":
            got.set("gc_gen2_collections", int(f.get("count") or 0), where)
            if "ms" in mx:
                got.set("gc_gen2_pause_ms_max", round(float(mx["ms"]), 1), where)
            if "tracked" in last:
                got.set("gc_tracked_objects", int(last["tracked"]), where)
        elif f["name"] == "rate_limited":
            got.set("rate_limited_429", int(f.get("count") or 0), where)
            if last.get("current_tpm", 0) >= last.get("tpm", float("inf")):
                got.set("tpm_limit", int(last["tpm"]), where)
            if last.get("current_rpm", 0) >= last.get("rpm", float("inf")):
                got.set("rpm_limit", int(last["rpm"]), where)
        if got.settings:
            b.add(got, f"log {f.get('log')}")


def _runtime(b: _Builder, procs: list[PathProcess]) -> None:
    engines = [p for p in procs if p.kind in ENGINE_KINDS and p.kind != "ray_serve"] or \
        [p for p in procs if p.kind == "ray_serve"]
    if not engines:
        return
    p = engines[0]
    got = ps.Parsed("runtime")
    where = f"process {p.pid} ({p.kind})"
    if p.threads is not None:
        got.set("threads", p.threads, f"{where} /proc status")
    if p.interpreter:
        if p.interpreter.get("python"):
            got.set("python", str(p.interpreter["python"]), f"{where} exe")
        got.set("interpreter", str(p.interpreter.get("exe")), f"{where} exe")
    for k, v in sorted(p.env.items()):
        if k in RUNTIME_ENV:
            got.set(k, v, f"{where} environment")
    b.add(got, where)


def _engine_env(b: _Builder, procs: list[PathProcess]) -> None:
    """The environment a service unit gives an engine, for the engine's own settings that have a documented effect
    (knowledge/settings/effects.yaml): set, or the engine's default where the unit does not set it."""
    unit = b.layers.get("systemd")
    if unit is None or "systemd" not in b.read:
        return
    projects = {kb.ENGINE_PROJECT.get(p.kind) for p in procs} & set(kb.projects())
    for project in sorted(p for p in projects if p):
        for key in sorted(kb.effects()):
            proj, _, name = key.partition(":")
            docs = [d for d in kb.find(name, project) if d.kind == "env"] if proj == project else []
            if not docs or f"env.{name}" in unit.settings:
                continue
            default, _at = kb.default_at(docs[0], None)
            unit.settings[f"env.{name}"] = LayerValue(value=_scalar(default), default=_scalar(default),
                                                      where="default (the unit's environment does not set it)",
                                                      url=docs[0].url)
    for name, s in list(unit.settings.items()):
        if name.startswith("env.") and s.where != "default" and not s.where.startswith("default ("):
            docs = [d for d in kb.find(name[4:]) if d.kind == "env"]
            if docs and s.default is None:
                s.default = _scalar(kb.default_at(docs[0], None)[0])
                s.url = s.url or docs[0].url


async def collect_path(host: Host, logs: list[str] | None = None, user_files: dict[str, str] | None = None,
                       *, timeout_s: float = TIMEOUT_S) -> PathReport:
    try:
        data = await run_script(host, "python3", "path", path_params(logs), timeout_s=timeout_s, isolated=True)
    except ProbeUnavailable as exc:
        if user_files:
            rep = report_from(host.name, {}, user_files)
            rep.gaps.append(f"host probe: {exc}")
            return rep
        return PathReport(host=host.name, available=False, reason=str(exc))
    return report_from(host.name, data, user_files)


async def path_report(host: Host, logs: list[str] | None = None,
                      user_files: dict[str, str] | None = None) -> PathReport:
    """collect_path, once per host and run."""
    return await shared(host, ("path_layers",), lambda: collect_path(host, logs, user_files))
