"""The request probe: the served model's files (scripts/request_files.py), one round trip, under the host's python3.

The models looked up are the ones the engines name: each engine's `--model` (or positional model) from the serving-
engine probe's report, which this probe shares with the serving-engine prong (probes.session). Each reference carries
the engine process that names it: the host reads its files only as that process could (a local user's engine that
names root's directory gets nothing of it); a reference no running process names is read only by an unprivileged
probe, and is a gap for a root one.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple

from orchestrator.hosts.base import Host
from orchestrator.probes.runner import ProbeUnavailable, run_script
from orchestrator.probes.session import shared
from orchestrator.prongs.request.models import MigDevice, ModelFiles, RequestFiles, ServerMetrics, ServerModel
from orchestrator.prongs.serving_engine.models import EngineReport

TIMEOUT_S = 30.0


class ModelRef(NamedTuple):
    ref: str
    """How it is named: a directory or a hub id."""
    pid: int | None = None
    """The running engine process whose command line names it (None: a launch script's, a log's, a request's)."""


def model_refs(rep: EngineReport | None, extra: list[str] | None = None) -> list[ModelRef]:
    """The models the engines serve, as they name them (a directory or a hub id) with the process that names each,
    first the primary engine's; then `extra` (no process names them)."""
    refs: dict[str, ModelRef] = {}
    for e in (rep.engines if rep is not None else []):
        m = e.value("model") or e.model
        if isinstance(m, str) and m and (m not in refs or refs[m].pid is None):
            refs[m] = ModelRef(m, e.pid if e.origin == "process" else None)
    for x in extra or []:
        if x and x not in refs:
            refs[x] = ModelRef(x)
    return list(refs.values())[:4]


def server_models(text: str) -> list[ServerModel]:
    """Triton's per-model counters (nv_inference_*: counters summed over versions, durations in microseconds)."""
    from orchestrator.prongs.serving_engine.metrics import parse_metrics

    m, _ = parse_metrics(text)

    def by(name: str) -> dict[str, float]:
        # Triton declares these as counters without `_total`; the text parser exposes them with it
        s = m.get(name) or m.get(name + "_total")
        return dict(s.by) if s is not None else {}

    success, execs = by("nv_inference_request_success"), by("nv_inference_exec_count")
    dur, queue = by("nv_inference_request_duration_us"), by("nv_inference_queue_duration_us")
    comp, pend = by("nv_inference_compute_infer_duration_us"), by("nv_inference_pending_request_count")
    llm = set(by("nv_trt_llm_request_metrics")) | set(by("nv_trt_llm_general_metrics"))
    out = []
    for name in sorted(set(success) | set(execs)):
        n, x = success.get(name, 0.0), execs.get(name, 0.0)
        out.append(ServerModel(
            name=name, requests=n, executions=x, request_ms=dur[name] / n / 1e3 if n and name in dur else None,
            queue_ms=queue[name] / n / 1e3 if n and name in queue else None,
            compute_ms=comp[name] / x / 1e3 if x and comp.get(name) else None, pending=pend.get(name),
            llm=name in llm or any(k in name.lower() for k in ("tensorrt_llm", "vllm", "llm"))
            and "ensemble" not in name.lower()))
    return out


def build(host_name: str, data: dict[str, Any]) -> RequestFiles:
    models = []
    for m in data.get("models") or []:
        try:
            models.append(ModelFiles.model_validate(m))
        except ValueError:
            continue
    servers = []
    for srv in data.get("servers") or []:
        if not isinstance(srv, dict):
            continue
        sm = ServerMetrics(kind=str(srv.get("kind") or "server"), pid=srv.get("pid"), url=srv.get("url"),
                           status=srv.get("status"), error=srv.get("error"))
        if srv.get("text") and srv.get("status") in (None, 200):
            sm.models = server_models(str(srv["text"]))
        servers.append(sm)
    mig = []
    for d in data.get("mig") or []:
        try:
            mig.append(MigDevice.model_validate(d))
        except ValueError:
            continue
    refused = data.get("refused")
    refused = refused if isinstance(refused, dict) else {}
    return RequestFiles(host=host_name, models=models, looked=[str(x) for x in data.get("looked") or []][:4],
                        refused={str(k): str(v)[:300] for k, v in list(refused.items())[:4]}, servers=servers,
                        mig=mig[:64],
                        commands=["python3 - < request_files.py (the served model's config, generation, tokenizer "
                                  "and preprocessor files; inference servers' /metrics on loopback)"])


def on_mig(rep: EngineReport | None) -> bool:
    """Whether an engine runs on a MIG device (its CUDA_VISIBLE_DEVICES or NVIDIA_VISIBLE_DEVICES names one)."""
    return any("MIG-" in (e.env.get("CUDA_VISIBLE_DEVICES") or "") + (e.env.get("NVIDIA_VISIBLE_DEVICES") or "")
               for e in (rep.engines if rep is not None else []))


async def collect_request_files(host: Host, refs: list[ModelRef], mig: bool = False) -> RequestFiles:
    t0 = time.monotonic()
    names = [r.ref for r in refs]
    try:
        data = await run_script(host, "python3", "request_files", {
            "models": [{"ref": r.ref, "pid": r.pid} for r in refs], "max_file_bytes": 4_000_000, "mig": mig},
            timeout_s=TIMEOUT_S, isolated=True)
    except ProbeUnavailable as exc:
        return RequestFiles(host=host.name, available=False, reason=str(exc), looked=names)
    out = build(host.name, data)
    out.probe_s = round(time.monotonic() - t0, 4)
    if out.refused:
        out.reason = "not read: " + "; ".join(f"{k} ({v})" for k, v in out.refused.items())
    elif not out.models and refs:
        out.reason = "none of the served models' files were found on the host: " + ", ".join(names)
    return out


async def request_files(host: Host, refs: list[ModelRef], mig: bool = False) -> RequestFiles:
    return await shared(host, ("request_files", tuple(refs), mig), lambda: collect_request_files(host, refs, mig))
