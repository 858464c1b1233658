"""`investigate probe`: run the probes on a host without any agent (`orchestrator.render.summaries.render_probes`
prints what they found)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.inputs import RunInputs
from orchestrator.observations import load_observations
from orchestrator.probes.results import ProbeModel
from orchestrator.settings import load_settings


async def probe_main(*, host: str | None, ssh_config: str | None, python: str | None, observations: Path | None,
                     logs: list[str], gemm: bool, comm: bool, settings: Any = None) -> list[ProbeModel]:
    """The read-only probes, or only the GEMM / all-reduce measurements when asked (they load the GPU)."""
    from orchestrator.hosts import open_host
    from orchestrator.probes import run_probes
    from orchestrator.prongs.tensor_core_specs.probe import run_comm_probe, run_gemm_probe

    settings = settings if settings is not None else load_settings()
    obs = load_observations(observations) if observations else None
    h = await open_host(host, ssh_config=ssh_config, settings=settings)
    try:
        if gemm or comm:
            out: list[ProbeModel] = []
            if gemm:
                out.append(await run_gemm_probe(h, python=python, observations=obs, budget_s=settings.gemm_budget_s,
                                                measure_wait_s=settings.measure_wait_s))
            if comm:
                out.append(await run_comm_probe(h, python=python, observations=obs, budget_s=settings.comm_budget_s,
                                                measure_wait_s=settings.measure_wait_s))
            return out
        inputs = RunInputs(question="probe", host=host or "local", python=python, logs=logs,
                           observations=obs.model_dump(mode="json", exclude_none=True) if obs else None)
        return await run_probes(h, inputs, settings)
    finally:
        await h.aclose()

