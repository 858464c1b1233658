"""The serving-engine probe: run scripts/engine.py on the host (one round trip) and build the EngineReport.

The script finds the engines (process list, else launch scripts and logs), filters their environment on the host,
reads the config file their command line names and their /metrics over loopback; here we turn command lines into
effective configurations (`engine_cmdline`), metrics text into summaries (`engine_metrics`) and log lines into
state (`engine_logs`).
"""

from __future__ import annotations

from typing import Any, Callable

from orchestrator.hosts.base import Host
from orchestrator.prongs.serving_engine.cmdline import Setting, effective_config, engine_kind, split_command
from orchestrator.prongs.serving_engine.logs import parse_log_lines
from orchestrator.prongs.serving_engine.metrics import parse_metrics
from orchestrator.prongs.serving_engine.models import (
    EngineInstance, EngineLogLine, EngineMetricsScrape, EngineReport, LogState, SettingValue,
)
from orchestrator.probes.results import MAX_LOG_BYTES, LogSkip
from orchestrator.probes.runner import ProbeUnavailable, run_script
from orchestrator.probes.session import shared

MAX_LINES = 6000

def _merge_log(settings: dict[str, Setting], logged: dict[str, Setting], f: LogState) -> None:
    for k, s in logged.items():
        cur = settings.get(k)
        if cur is None or cur.default:
            settings[k] = s
    if f.selected_backend:
        settings["attention_backend_selected"] = Setting(f.selected_backend, (f.selected_line or "log").split(": ")[0])
    if f.kv_cache_tokens is not None:
        settings["kv_cache_tokens"] = Setting(f.kv_cache_tokens, "engine log (KV cache size)")
    if f.num_gpu_blocks is not None:
        settings["num_gpu_blocks"] = Setting(f.num_gpu_blocks, "engine log (# GPU blocks)")
    if f.graphs_captured and "cuda_graphs" in settings and settings["cuda_graphs"].default:
        settings["cuda_graphs"] = Setting(True, "engine log (graph capture finished)")
    if f.eager_line and ("cuda_graphs" not in settings or settings["cuda_graphs"].default):
        settings["cuda_graphs"] = Setting(False, f.eager_line.split(": ")[0])
        settings["enforce_eager"] = Setting(True, f.eager_line.split(": ")[0])


_CACHE_INFO: dict[str, tuple[str, Callable[[str], Any]]] = {
    "enable_prefix_caching": ("prefix_caching", lambda v: v == "True"),
    "gpu_memory_utilization": ("gpu_memory_utilization", float), "cache_dtype": ("kv_cache_dtype", str),
    "num_gpu_blocks": ("num_gpu_blocks", int), "block_size": ("block_size", int)}


def _merge_cache_info(settings: dict[str, Setting], scrape: EngineMetricsScrape) -> None:
    """vLLM's `vllm:cache_config_info` labels carry the cache config the engine runs with: they beat defaults."""
    info = scrape.metrics.get("vllm:cache_config_info")
    if info is None:
        return
    for label, (key, conv) in _CACHE_INFO.items():
        raw = info.labels.get(label)
        if raw in (None, "None", ""):
            continue
        cur = settings.get(key)
        if cur is None or cur.default:
            try:
                settings[key] = Setting(conv(raw), f"/metrics vllm:cache_config_info {label}={raw}")
            except ValueError:
                continue


def build_report(host_name: str, data: dict[str, Any], log_paths: list[str]) -> EngineReport:
    """Pure: the probe script's JSON -> EngineReport."""
    gpu = data.get("gpu") or {}
    gpu_name, gpu_mem = gpu.get("name"), gpu.get("memory_mib")
    lines: list[EngineLogLine] = []
    missing, files, truncated = [], [], False
    skipped: list[LogSkip] = []
    for lg in data.get("logs") or []:
        if lg.get("missing"):
            missing.append(lg["path"])
            continue
        files.append(lg["path"])
        truncated = truncated or bool(lg.get("truncated"))
        if isinstance(lg.get("skipped"), dict):
            skipped.append(LogSkip(path=lg["path"], **lg["skipped"]))
        for no, text in lg.get("lines") or []:
            if len(lines) < MAX_LINES:
                lines.append(EngineLogLine(path=lg["path"], line_no=int(no), line=str(text)))
    log_state, log_version, log_settings = parse_log_lines((ln.path, ln.line_no, ln.line) for ln in lines)
    engines: list[tuple[EngineInstance, dict[str, Setting]]] = []
    for e in data.get("engines") or []:
        argv = [str(a) for a in e.get("argv") or []]
        kind = e.get("kind") or engine_kind(argv)
        if kind not in ("vllm", "sglang", "trtllm", "tgi"):
            continue
        configs = {p: (c or {}).get("text") for p, c in (e.get("config_files") or {}).items()}
        env = {str(k): str(v) for k, v in (e.get("env") or {}).items()}
        settings, model = effective_config(kind, argv, env=env, config_files=configs, gpu_name=gpu_name,
                                           gpu_mem_mib=gpu_mem, version=log_version)
        inst = EngineInstance(name=kind, origin="process", where=f"pid {e.get('pid')}", pid=e.get("pid"),
                              port=e.get("port"), model=model, command=" ".join(argv)[:2000], env=env,
                              env_readable=bool(e.get("env_readable", True)))
        m = e.get("metrics")
        if m is not None:
            scrape = EngineMetricsScrape(url=m.get("url"), status=m.get("status"), error=m.get("error"),
                                         truncated=bool(m.get("truncated")))
            if m.get("text") and (m.get("status") in (None, 200)):
                scrape.metrics, scrape.parse_error = parse_metrics(m["text"])
            inst.metrics = scrape
            _merge_cache_info(settings, scrape)
        engines.append((inst, settings))
    if not engines:
        for launch in data.get("launches") or []:
            argv = split_command(launch.get("command") or "")
            kind = engine_kind(argv)
            if kind is None:
                continue
            settings, model = effective_config(kind, argv, gpu_name=gpu_name, gpu_mem_mib=gpu_mem,
                                               version=log_version)
            inst = EngineInstance(name=kind, origin="launch", where=f"{launch.get('path')}:{launch.get('line_no')}",
                                  model=model, command=" ".join(argv)[:2000])
            engines.append((inst, settings))
            break
    if not engines and log_settings:
        kind = "sglang" if any("ServerArgs" in ln.line or "server_args={" in ln.line or "Decode batch" in ln.line
                               for ln in lines) else (
            "tgi" if any("Using attention" in ln.line for ln in lines) else "vllm")
        settings, model = effective_config(kind, ["x", "-m", "x"], gpu_name=gpu_name, gpu_mem_mib=gpu_mem)
        inst = EngineInstance(name=kind, origin="log", where=f"log {files[0] if files else '?'}", model=model)
        engines.append((inst, settings))
    out: list[EngineInstance] = []
    for i, (inst, settings) in enumerate(engines):
        if i == 0 and (lines or log_settings):
            # The logs given are the primary engine's (one engine per --log set is the common case).
            _merge_log(settings, log_settings, log_state)
            if log_settings.get("model") and not inst.model:
                inst.model = log_settings["model"].value
            inst.version = log_version
            inst.log = log_state
        inst.settings = {k: SettingValue(value=s.value, source=s.source, default=s.default)
                         for k, s in settings.items()}
        out.append(inst)
    report = EngineReport(host=host_name, engines=out, log_files=files, missing_logs=missing, lines=lines,
                          truncated_logs=truncated, skipped_logs=skipped, commands=["python3 - < engine.py (/proc, /metrics on loopback)"]
                          + [f"read {p}" for p in log_paths])
    if not out:
        report.reason = ("no serving engine found: no vLLM, SGLang, TensorRT-LLM or TGI process on the host"
                         + (", and no engine command line or configuration in the given logs" if log_paths
                            else "; pass its log or launch script with --log"))
    return report


TIMEOUT_S = 60.0


def engine_params(log_paths: list[str], metrics: bool = True) -> dict[str, Any]:
    """The engine script's parameters (the same whether it runs alone or in the host survey)."""
    return {"logs": list(log_paths), "metrics": metrics, "timeout_s": 2.0, "max_metrics_bytes": 2_000_000,
            "max_log_lines": 4000, "max_config_bytes": 65536, "max_log_bytes": MAX_LOG_BYTES}


def engine_key(log_paths: list[str], metrics: bool = True) -> tuple[Any, ...]:
    """The probe session's key of an engine probe (probes.session; the host survey fills it)."""
    return ("engine_config", tuple(log_paths), bool(metrics))


def engine_from(host_name: str, data: dict[str, Any] | ProbeUnavailable, log_paths: list[str]) -> EngineReport:
    if isinstance(data, ProbeUnavailable):
        return EngineReport(host=host_name, available=False, reason=str(data))
    return build_report(host_name, data, log_paths)


async def collect_engine_report(host: Host, log_paths: list[str], *, metrics: bool = True,
                                timeout_s: float = TIMEOUT_S) -> EngineReport:
    try:
        data: dict[str, Any] | ProbeUnavailable = await run_script(
            host, "python3", "engine", engine_params(log_paths, metrics), timeout_s=timeout_s, isolated=True)
    except ProbeUnavailable as exc:
        data = exc
    return engine_from(host.name, data, log_paths)


async def engine_report(host: Host, log_paths: list[str], *, metrics: bool = True) -> EngineReport:
    """collect_engine_report, or what the host survey already read for the same arguments (for one caller)."""
    return await shared(host, engine_key(log_paths, metrics),
                        lambda: collect_engine_report(host, log_paths, metrics=metrics), once=True)
