"""Probes: fixed scripts and commands that turn a host into typed evidence (see `models`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.probes.models import ProbeModel

if TYPE_CHECKING:
    from orchestrator.context import RunInputs
    from orchestrator.hosts.base import Host
    from orchestrator.settings import Settings


async def run_probes(host: "Host", inputs: "RunInputs", settings: "Settings") -> list[ProbeModel]:
    """Every read-only probe once, in a fixed order, for `investigate probe` (a lost host raises HostError)."""
    from orchestrator.probes.autotune import collect_autotune_caches, expert_shape_from_observations
    from orchestrator.probes.gpu import collect_gpu_inventory
    from orchestrator.probes.kernels import arch_of, collect_kernel_inventory
    from orchestrator.probes.logscan import scan_logs
    from orchestrator.probes.power import sample_power
    from orchestrator.probes.pyenv import collect_python_env
    from orchestrator.knowledge import log_signatures

    gpus = await collect_gpu_inventory(host)
    first = gpus.gpus[0] if gpus.gpus else None
    out: list[ProbeModel] = [gpus]
    if gpus.available:
        out.append(await sample_power(host, duration_s=settings.power_sample_s))
    out.append(await collect_python_env(host, inputs.python))
    out.append(
        await collect_autotune_caches(
            host, inputs.python, device_name=first.name if first else None,
            expert_shape=expert_shape_from_observations(inputs.parsed_observations()),
        )
    )
    out.append(await collect_kernel_inventory(host, arch=arch_of(first.compute_cap) if first else None,
                                              python=inputs.python))
    if inputs.logs:
        out.append(await scan_logs(host, inputs.logs, log_signatures()))
    from orchestrator.probes.node import collect_node_health

    out.append(await collect_node_health(host, list(inputs.logs)))
    return out
