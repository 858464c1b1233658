"""Autotune caches and tuned configs: what exists, what it holds, and whether it fits this host."""

from __future__ import annotations

from typing import Any

from orchestrator import knowledge
from orchestrator.hosts.base import Host
from orchestrator.probes import interpreter
from orchestrator.prongs.autotune.cache_formats import (
    PARSERS,
    CacheContext,
    device_file_name,
    parse_cache_file,
    vllm_device_file_name,
)
from orchestrator.probes.results import AutotuneReport, CacheFile, CacheLocation, CacheState
from orchestrator.probes.runner import ProbeUnavailable, run_script
from orchestrator.probes.session import shared


def _spelling(fmt: str, device_name: str) -> str:
    """How a format's file names spell a GPU (vLLM names every H200-family GPU NVIDIA_H200)."""
    return vllm_device_file_name(device_name) if fmt == "vllm_fused_moe" else device_file_name(device_name)


def script_params(device_names: list[str] | None = None, *, env: dict[str, str] | None = None,
                  cwds: list[str] | None = None, extra: list[str] | None = None,
                  specs: tuple[knowledge.CacheSpec, ...] | None = None) -> dict[str, Any]:
    """The caches script's parameters: every cache of knowledge/caches.yaml (or `specs`) with its candidate
    locations, what to collect and for which device spellings, and the environment variables worth reporting."""
    specs = knowledge.cache_specs() if specs is None else specs
    caches, keys = [], set[str]()
    for c in specs:
        moe = [r.format for r in c.collect if knowledge.cache_formats_table()[r.format].moe]
        caches.append({
            "name": c.name, "format": c.format, "mode": c.mode, "subdirs": c.subdirs,
            "locations": [x.model_dump() for x in c.locations],
            "collect": [{**r.model_dump(), "moe": r.format in moe} for r in c.collect],
            "devices": sorted({_spelling(f, d) for f in moe for d in device_names or []}),
        })
        keys.update(c.env_vars, c.moving_env_vars, [c.size_limit.env] if c.size_limit else [])
    packages = {p for f in knowledge.cache_formats_table().values() for alts in f.compare.values()
                for p in alts if p != "torch_cuda"} | {"torch"}
    return {"caches": caches, "env_keys": sorted(keys), "env": env or {}, "cwds": cwds or [], "extra": extra or [],
            "packages": sorted(packages)}


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


def _int(v: Any) -> int | None:
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


def report_from_output(
    data: dict[str, Any], device_name: str | None = None, compute_cap: str | None = None,
    expert_shape: dict[str, Any] | None = None, specs: tuple[knowledge.CacheSpec, ...] | None = None,
) -> AutotuneReport:
    """Pure: an AutotuneReport from the caches script's output (every file through the parser of its format)."""
    specs = knowledge.cache_specs() if specs is None else specs
    persisted_formats, moe_formats = knowledge.persisted_formats(), knowledge.moe_formats()
    packages = dict(data.get("packages") or {})
    ctx = CacheContext(device_name=device_name, compute_cap=compute_cap, packages=packages,
                       torch_cuda=packages.get("torch_cuda"))
    env = {k: v for k, v in (data.get("env") or {}).items() if k != "HOME"}
    locations = [
        CacheLocation(format=loc["format"], path=loc["path"], exists=bool(loc.get("exists")),
                      env_var=loc.get("env_var"), files=int(loc.get("files") or 0),
                      devices=list(loc.get("devices") or []), subdirs=list(loc.get("subdirs") or [])[:50],
                      cache=loc.get("cache"), bytes=loc.get("bytes"), fstype=loc.get("fstype"),
                      in_tmp=loc.get("in_tmp"), truncated=bool(loc.get("truncated")))
        for loc in data.get("locations") or []
    ]
    files: list[CacheFile] = []
    for f in data.get("files") or []:
        cf = parse_cache_file(f["format"], f["path"], f.get("content"), ctx)
        cf.cache = f.get("cache")
        if f.get("size") is not None:
            cf.size_bytes = f["size"]
        if f.get("content") is None and f.get("skipped") and (PARSERS.get(f["format"]) is None
                                                               or PARSERS[f["format"]].needs_text):
            cf.error = f"not read: {f['skipped']}"
        files.append(cf)
    es, ns = _as_list((expert_shape or {}).get("E")), _as_list((expert_shape or {}).get("N"))

    def moe_applies(cf: CacheFile) -> bool:
        shape = cf.expert_shape or {}
        return bool(cf.matches_device) and (not es or shape.get("E") in es) and (not ns or shape.get("N") in ns)

    def usable(cf: CacheFile) -> bool:
        """A persisted result the library would use here: parsed, for this device, not skipped on a metadata
        mismatch, and (fused-MoE) for this expert shape or (others) holding at least one entry."""
        if cf.format not in persisted_formats or cf.error is not None or cf.matches_device is False:
            return False
        info = knowledge.cache_format(cf.format)
        if cf.metadata_mismatch and info is not None and info.skip_on_mismatch:
            return False
        return moe_applies(cf) if cf.format in moe_formats else cf.entries > 0

    # A fused-MoE config counts only when it would be used here (this device, this expert shape when known).
    # Any other file counts when it holds at least one result (an empty cache persisted nothing).
    persisted = any(
        cf.format in persisted_formats and cf.error is None and cf.matches_device is not False
        and (moe_applies(cf) if cf.format in moe_formats else cf.entries > 0)
        for cf in files
    )
    tuned: bool | None = None
    if any(loc.format in moe_formats and loc.exists for loc in locations):
        tuned = any(cf.format in moe_formats and moe_applies(cf) for cf in files)
    states = []
    for spec in specs:
        locs = [loc for loc in locations if loc.cache == spec.name]
        if not locs:
            continue
        here = [loc for loc in locs if loc.exists] or locs
        mine = [cf for cf in files if cf.cache == spec.name]
        present = any(loc.exists and loc.files > 0 for loc in locs)
        in_tmp = any(bool(loc.in_tmp) for loc in here)
        results = [cf for cf in mine if cf.format in persisted_formats]
        good = [cf for cf in results if usable(cf)]
        limit = None
        if spec.size_limit is not None:
            limit = _int(env.get(spec.size_limit.env)) or spec.size_limit.default_bytes
        states.append(CacheState(
            name=spec.name, library=spec.library, kind=spec.kind, format=spec.format, path=here[0].path,
            present=present, files=sum(loc.files for loc in locs), bytes=sum(loc.bytes or 0 for loc in locs),
            env_set=any(v in env for v in spec.moving_env_vars), in_tmp=in_tmp,
            persisted=present and not in_tmp and (spec.kind == "jit" or bool(good)),
            result_files=len(results), usable_files=len(good),
            mismatched_files=sum(1 for cf in results if cf.metadata_mismatch or cf.matches_device is False),
            limit_bytes=limit))
    return AutotuneReport(env=env, locations=locations, files=files, device_name=device_name, persisted_any=persisted,
                          tuned_config_for_device=tuned, expert_shape=expert_shape, caches=states)


async def gpu_identity(host: Host) -> tuple[str | None, str | None]:
    """Name and compute capability of GPU 0 via one nvidia-smi query (None, None without one); static facts, so
    the kernel and autotune inventories of a run share one query (probes/session.py)."""

    async def query() -> tuple[str | None, str | None]:
        res = await host.run(["nvidia-smi", "--query-gpu=name,compute_cap", "--format=csv,noheader"], timeout_s=30)
        if not res.ok or not res.stdout.strip():
            return None, None
        first = res.stdout.strip().splitlines()[0]
        name, _, cc = first.rpartition(",")
        return (name.strip() or None), (cc.strip() or None)

    return await shared(host, ("gpu_identity",), query)


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
        params = script_params([device_name] if device_name else [], env=interp.server_env,
                               cwds=interp.server_cwds, extra=extra_paths)
        params["server_pids"] = interp.server_pids
        data = await run_script(host, interp.path, "caches", interp.script_params(params), timeout_s=120,
                                isolated=True)
    except ProbeUnavailable as exc:
        return AutotuneReport(host=host.name, available=False, reason=str(exc), device_name=device_name)
    report = report_from_output(data, device_name, compute_cap, expert_shape)
    report.host = host.name
    report.commands = [f"{interp.path} -I -S - < caches.py ({interp.source})"]
    if not report.persisted_any:
        report.reason = "no persisted autotune result or tuned config for this GPU was found"
    if interp.gap:
        report.reason = "; ".join(filter(None, [report.reason, interp.gap]))
    return report
