"""Probes: fixed scripts and commands that turn a host into typed evidence (see `models`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, Callable, TypeVar

from orchestrator.probes.results import ProbeModel

if TYPE_CHECKING:
    from orchestrator.inputs import RunInputs
    from orchestrator.hosts.base import Host
    from orchestrator.settings import Settings

_M = TypeVar("_M", bound=ProbeModel)


async def run_probes(host: "Host", inputs: "RunInputs", settings: "Settings") -> list[ProbeModel]:
    """Every read-only probe once, in a fixed order, for `investigate probe` (a lost host raises HostError).

    They run at the same time (each is its own round trip): the power sample's seconds of watching cover the rest.
    Each model's `probe_s` says how long its probe took."""
    import time

    import anyio

    from orchestrator.prongs.autotune.probe import collect_autotune_caches, expert_shape_from_observations
    from orchestrator.probes.gpu import collect_gpu_inventory
    from orchestrator.prongs.kernel_research.probe import arch_of, collect_kernel_inventory
    from orchestrator.probes.logscan import scan_logs
    from orchestrator.probes.power import sample_power
    from orchestrator.probes.pyenv import collect_python_env
    from orchestrator.knowledge import log_signatures
    from orchestrator.prongs.node_health.probe import collect_node_health

    got: dict[str, ProbeModel] = {}

    async def put(name: str, call: Callable[[], Awaitable[_M]]) -> _M:
        started = time.monotonic()
        model = await call()
        if model.probe_s is None:
            model.probe_s = round(time.monotonic() - started, 4)
        got[name] = model
        return model

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(put, "power", lambda: sample_power(host, duration_s=settings.power_sample_s))
            tg.start_soon(put, "python_env", lambda: collect_python_env(host, inputs.python))
            inventory = await put("gpus", lambda: collect_gpu_inventory(host))
            first = inventory.gpus[0] if inventory.gpus else None
            shape = expert_shape_from_observations(inputs.parsed_observations())
            tg.start_soon(put, "autotune", lambda: collect_autotune_caches(
                host, inputs.python, device_name=first.name if first else None, expert_shape=shape))
            tg.start_soon(put, "kernels", lambda: collect_kernel_inventory(
                host, arch=arch_of(first.compute_cap) if first else None, python=inputs.python))
            if inputs.logs:
                tg.start_soon(put, "logs", lambda: scan_logs(host, inputs.logs, log_signatures()))
            tg.start_soon(put, "node", lambda: collect_node_health(host, list(inputs.logs)))
    except BaseExceptionGroup as group:  # one failure (a lost host) is the error, not the group
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        raise leaf from None
    order = ["gpus", "power", "python_env", "autotune", "kernels", "logs", "node"]
    if not got["gpus"].available:
        order.remove("power")  # no GPU to sample: no power section
    return [got[name] for name in order if name in got]
