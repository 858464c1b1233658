"""Prefetch: a run starts its host's read-only probes as soon as the host is connected (`probes.session` shares them).

In a multi-host run every host also gets its survey (node, engine and interpreter discovery in one round trip,
`probes.survey`), bounded by the run's host gate like any other command on the host.

What the prongs ask for is then already under way; each tool call takes the shared result (docs/performance.md).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from orchestrator.context import RunContext


SURVEYED = {"node_health", "engine_config", "python_env"}
"""Tools whose default calls the host survey of a multi-host run answers (python_env through its discovery)."""


def _prefetchable(run: "RunContext") -> set[str]:
    """The probe tools some agent of this run may call, when the run's registry has them."""
    names: set[str] = set()
    for defn in run.agents.values():
        names.update(getattr(defn, "tools", None) or [])
    return {n for n in names if n in run.registry.names()} if hasattr(run.registry, "names") else names


@asynccontextmanager
async def prefetch(run: "RunContext") -> AsyncIterator[None]:
    """Start the read-only probes of the run's host now (each with the arguments its tool's default call uses) and
    cancel what is still running when the body ends. Errors stay with the probe: whoever asks for it gets them."""
    host = run.host
    if host is None or not run.settings.prefetch_probes:
        yield
        return
    from orchestrator.tools.probes import default_probe_calls  # the default call of each probe tool

    tools = _prefetchable(run)
    calls = default_probe_calls(run.inputs, run.settings, host, tools)
    if run.hosts and tools & SURVEYED:
        # a multi-host run probes every host the same way (the fleet prong): one round trip per host for the
        # node, engine and interpreter-discovery probes instead of three (probes.survey)
        from orchestrator.prongs.fleet.survey import survey

        logs = list(run.inputs.logs)
        calls += [functools.partial(survey, h, logs, run.inputs.python) for h in run.hosts.values()]
    if not calls:
        yield
        return
    error: BaseException | None = None
    async with anyio.create_task_group() as tg:
        for call in calls:
            tg.start_soon(_quietly, call)
        try:
            yield
        except BaseException as exc:  # re-raised below, outside the task group, unwrapped
            error = exc
        finally:
            tg.cancel_scope.cancel()
    if error is not None:
        raise error


async def _quietly(call: Callable[[], Awaitable[Any]]) -> None:
    try:
        await call()
    except Exception:  # kept in the shared slot for the tool that asks
        pass
