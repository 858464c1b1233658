"""Autotune caches and tuned configs: what exists, what it holds, and whether it fits this host."""

from __future__ import annotations

from typing import Any

from orchestrator.hosts.base import Host
from orchestrator.probes import interpreter
from orchestrator.probes.cache_formats import CacheContext, parse_cache_file
from orchestrator.probes.models import AutotuneReport, CacheLocation
from orchestrator.probes.runner import ProbeUnavailable, run_script

PERSISTED_FORMATS = {
    "flashinfer_autotune", "trtllm_autotuner", "vllm_fused_moe", "sglang_fused_moe", "vllm_flashinfer_autotune",
    "triton_autotune", "inductor", "tunableop",
}
"""Formats that hold autotune results or tuned configs (the FlashInfer JIT cache holds only compiled binaries)."""

MOE_FORMATS = ("vllm_fused_moe", "sglang_fused_moe")


def expert_shape_from_observations(obs: Any) -> dict[str, Any] | None:
    """E and the N values fused-MoE config names would carry (N = moe_intermediate_size / TP) for the runs observed."""
    model = getattr(obs, "model", None)
    if model is None or not model.num_experts or not model.moe_intermediate_size:
        return None
    runs = getattr(obs, "runs", None) or []
    ns = sorted({model.moe_intermediate_size // max(r.tp, 1) for r in runs} | {model.moe_intermediate_size})
    es = sorted({model.num_experts // max(r.ep, 1) for r in runs} | {model.num_experts})
    return {"E": es, "N": ns}


def _as_list(v: Any) -> list[int]:
    if v is None:
        return []
    return [int(x) for x in v] if isinstance(v, (list, tuple)) else [int(v)]


def report_from_output(
    data: dict[str, Any], device_name: str | None = None, compute_cap: str | None = None,
    expert_shape: dict[str, Any] | None = None,
) -> AutotuneReport:
    """Pure: an AutotuneReport from the caches script's output."""
    packages = dict(data.get("packages") or {})
    ctx = CacheContext(device_name=device_name, compute_cap=compute_cap, packages=packages,
                       torch_cuda=packages.get("torch_cuda"))
    env = {k: v for k, v in (data.get("env") or {}).items() if k != "HOME"}
    locations = [
        CacheLocation(format=loc["format"], path=loc["path"], exists=bool(loc.get("exists")),
                      env_var=loc.get("env_var"), files=int(loc.get("files") or 0),
                      devices=list(loc.get("devices") or []), subdirs=list(loc.get("subdirs") or [])[:50])
        for loc in data.get("locations") or []
    ]
    files = []
    for f in data.get("files") or []:
        cf = parse_cache_file(f["format"], f["path"], f.get("content"), ctx)
        if f.get("size") is not None:
            cf.size_bytes = f["size"]
        if f.get("content") is None and f.get("skipped") and f["format"] not in MOE_FORMATS:
            cf.error = f"not read: {f['skipped']}"
        files.append(cf)
    es, ns = _as_list((expert_shape or {}).get("E")), _as_list((expert_shape or {}).get("N"))

    def moe_applies(cf) -> bool:
        shape = cf.expert_shape or {}
        return bool(cf.matches_device) and (not es or shape.get("E") in es) and (not ns or shape.get("N") in ns)

    # A fused-MoE config counts only when it would be used here (this device, this expert shape when known).
    # Any other file counts when it holds at least one result (an empty cache persisted nothing).
    persisted = any(
        cf.format in PERSISTED_FORMATS and cf.error is None and cf.matches_device is not False
        and (moe_applies(cf) if cf.format in MOE_FORMATS else cf.entries > 0)
        for cf in files
    )
    tuned: bool | None = None
    if any(loc.format in MOE_FORMATS and loc.exists for loc in locations):
        tuned = any(cf.format in MOE_FORMATS and moe_applies(cf) for cf in files)
    return AutotuneReport(env=env, locations=locations, files=files, device_name=device_name, persisted_any=persisted,
                          tuned_config_for_device=tuned, expert_shape=expert_shape)


async def gpu_identity(host: Host) -> tuple[str | None, str | None]:
    """Name and compute capability of GPU 0 via one nvidia-smi query (None, None without one)."""
    res = await host.run(["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"], timeout_s=30)
    if not res.ok or not res.stdout.strip():
        return None, None
    first = res.stdout.strip().splitlines()[0]
    name, _, cc = first.rpartition(",")
    return (name.strip() or None), (cc.strip() or None)


async def collect_autotune_caches(
    host: Host, python: str | None = None, device_name: str | None = None,
    expert_shape: dict[str, Any] | None = None, extra_paths: list[str] | None = None,
) -> AutotuneReport:
    """Inventory every cache format in one round trip under the serving interpreter and compare it with this host."""
    compute_cap = None
    if device_name is None:
        device_name, compute_cap = await gpu_identity(host)
    try:
        interp = await interpreter.resolve(host, python)
        params = {"env": interp.server_env, "cwds": interp.server_cwds, "extra": extra_paths or [],
                  "device_names": [device_name] if device_name else []}
        data = await run_script(host, interp.path, "caches", params, timeout_s=120)
    except ProbeUnavailable as exc:
        return AutotuneReport(host=host.name, available=False, reason=str(exc), device_name=device_name)
    report = report_from_output(data, device_name, compute_cap, expert_shape)
    report.host = host.name
    report.commands = [f"{interp.path} - < caches.py ({interp.source})"]
    if not report.persisted_any:
        report.reason = "no persisted autotune result or tuned config for this GPU was found"
    return report
