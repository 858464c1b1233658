"""The `path_layers` tool: the layers between the user and the engine and how each was told to behave."""

from __future__ import annotations

from pydantic import BaseModel, Field

from orchestrator.prongs.path.models import PathReport
from orchestrator.prongs.path.probe import path_report
from orchestrator.tools.base import Tool, ToolContext, ToolOutput


class PathInput(BaseModel):
    layer: str | None = Field(None, description="Only this layer in the text answer (nginx, haproxy, envoy, litellm, "
                              "ray_serve, knative, k8s, docker, systemd, slurm, triton, runtime); the data has all.")


def summarize_path(r: PathReport, only: str | None = None) -> str:
    if not r.available:
        return f"path probe unavailable on {r.host}: {r.reason}"
    lines = [f"the path on {r.host}: " + (", ".join(f"{x.label}" for x in r.layers) or "no layer found")]
    for p in r.processes[:16]:
        lines.append(f"process {p.pid} {p.kind}: {' '.join(p.argv)[:200]}" + (f" unit {p.unit}" if p.unit else "")
                     + (f" container {p.container_id[:12]}" if p.container_id else "")
                     + (f" pod {p.pod_uid}" if p.pod_uid else "") + (f" threads {p.threads}" if p.threads else ""))
    for x in r.layers:
        if only and x.layer != only:
            continue
        lines.append(f"{x.label} [{x.layer}] found by {', '.join(x.found_by[:4])}")
        for k, s in list(x.settings.items())[:80]:
            d = f" (default {s.default})" if s.default is not None and str(s.default) != str(s.value) else ""
            lines.append(f"  {k} = {s.value}{d}  [{s.where}]")
        for n in x.notes[:5]:
            lines.append(f"  note: {n}")
        for e in x.errors[:5]:
            lines.append(f"  not read: {e}")
    for g in r.gaps[:10]:
        lines.append(f"gap: {g}")
    return "\n".join(lines)


class PathLayersTool(Tool):
    name = "path_layers"
    on_host = True
    description = (
        "Read the whole path between the user and the GPU (read-only): reverse proxies and gateways in front of the "
        "engine (nginx with its includes, HAProxy, Envoy/Istio DestinationRules, LiteLLM, Knative queue-proxy, Ray "
        "Serve, Triton's Python models) and their config files, the engine's systemd unit and drop-ins, its docker "
        "container, Kubernetes pod (limits, probes, restarts) and events, Slurm job, and its process runtime "
        "(interpreter, threads, thread-pool and allocator variables). Each setting with its value, its documented "
        "default and where it was set; files given with --path-config are read too."
    )
    Input = PathInput
    timeout_s = 120.0

    async def run(self, args: PathInput, ctx: ToolContext) -> ToolOutput:
        host = ctx.host()
        r = await path_report(host, list(ctx.inputs.logs), user_files(ctx))
        return ToolOutput(text=summarize_path(r, args.layer), data=r.model_dump(mode="json"), untrusted=True,
                          host=host.name)


def user_files(ctx: ToolContext) -> dict[str, str]:
    """The text of the files the user gave with --path-config (read on this machine, bounded)."""
    from orchestrator.limits import PATH_CONFIG_MAX_BYTES
    from orchestrator.safeload import SafeLoadError, read_capped

    out: dict[str, str] = {}
    for p in getattr(ctx.inputs, "path_configs", None) or []:
        try:
            out[str(p)] = read_capped(p, what="--path-config file", max_bytes=PATH_CONFIG_MAX_BYTES)
        except SafeLoadError:
            continue
    return out
