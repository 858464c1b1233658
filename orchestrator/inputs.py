"""`RunInputs`: what a run was given (the question, the host or hosts, observations, logs, traces...), as its
transcript records them and an offline plan names them (`{run.FIELD}`).

A leaf below the run's engine: the context, the tools, the probes and the models read the inputs without importing
one another.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from orchestrator.hosts.entry import HostEntry
from orchestrator.observations import Observations


class RunInputs(BaseModel):
    """Inputs an offline plan may refer to as `{run.FIELD}`."""

    question: str
    host: str = "local"
    observations: dict[str, Any] | None = None
    logs: list[str] = Field(default_factory=list)
    python: str | None = None
    measure: bool = False
    ssh_config: str | None = None
    hosts: list[HostEntry] = Field(default_factory=list)
    """Every host of a multi-host run (several `--host`, `--hosts`, `--slurm`, `--k8s`), in order, with the error of
    each one that could not be used; empty for a one-host run. `host` is then the first usable one (the primary)."""
    slurm: str | None = None
    """The `--slurm` nodelist or partition, when Slurm is the host source."""
    traces: list[str] = Field(default_factory=list)
    """`--trace` paths on this machine (files, directories of per-rank traces, globs): the trace prong reads them."""
    baseline_traces: list[str] = Field(default_factory=list)
    """`--baseline-trace` paths: the trace the `--trace` ones are diffed against."""
    path_configs: list[str] = Field(default_factory=list)
    """`--path-config` files on this machine: configs of the layers in front of the engine that the host cannot show
    (a proxy's config, a Kubernetes manifest); the path prong reads them."""

    @property
    def usable_hosts(self) -> list[str]:
        """Names of the hosts a plan step with `foreach: hosts` fans out over (the unusable ones are gaps)."""
        return [h.name for h in self.hosts if not h.error]

    def parsed_observations(self) -> Observations | None:
        return Observations.model_validate(self.observations) if self.observations else None
