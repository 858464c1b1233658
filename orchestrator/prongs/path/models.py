"""What the path probe returns: the layers between the user and the engine, each with the settings it was given
(or its documented default), where each came from, and the processes that run them.

Facts (`PathReport.facts`, the names prongs/path/__init__.py lists): `path.layers`, `path.<layer>.present`,
`path.<layer>.<setting>` with `path.<layer>.<setting>_default` and `path.<layer>.<setting>_source` (the file and
line, or `default`), `path.processes`, `path.runtime.*`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from orchestrator.probes.results import ProbeModel

Scalar = str | int | float | bool | None


class LayerValue(BaseModel):
    value: Scalar = None
    default: Scalar = None
    where: str = "default"
    """`file:line (context)`, `kubectl get pod`, ..., or `default` when the layer does not set it."""
    url: str = ""


class Layer(BaseModel):
    layer: str
    """nginx | haproxy | envoy | litellm | ray_serve | knative | k8s | docker | systemd | slurm | triton | runtime"""
    label: str = ""
    found_by: list[str] = Field(default_factory=list)
    """What showed the layer: `process 1234 (nginx)`, `file /etc/nginx/nginx.conf`, `--path-config F`, ..."""
    settings: dict[str, LayerValue] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)


class PathProcess(BaseModel):
    pid: int
    kind: str
    argv: list[str] = Field(default_factory=list)
    unit: str | None = None
    container_id: str | None = None
    pod_uid: str | None = None
    threads: int | None = None
    interpreter: dict[str, Any] | None = None
    env: dict[str, str] = Field(default_factory=dict)


class PathReport(ProbeModel):
    kind: Literal["path_layers"] = "path_layers"
    processes: list[PathProcess] = Field(default_factory=list)
    layers: list[Layer] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    gaps: list[str] = Field(default_factory=list)

    def layer(self, name: str) -> Layer | None:
        return next((x for x in self.layers if x.layer == name), None)

    def facts(self) -> dict[str, str | int | float | bool]:
        out: dict[str, str | int | float | bool] = {}
        if self.layers:
            out["path.layers"] = ",".join(x.layer for x in self.layers)
        if self.processes:
            out["path.processes"] = ",".join(sorted({p.kind for p in self.processes}))
        for x in self.layers:
            out[f"path.{x.layer}.present"] = True
            for name, s in x.settings.items():
                key = f"path.{x.layer}.{name}"
                if s.value is not None:
                    out[key] = s.value
                if s.default is not None:
                    out[f"{key}_default"] = s.default
                out[f"{key}_source"] = s.where
        return out
