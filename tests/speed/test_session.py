"""Probes share one run per host and arguments, start early, and never hand a live reading to two callers."""

from __future__ import annotations

import anyio
import pytest

from orchestrator.probes.results import PythonEnv
from orchestrator.probes.session import ProbeSession, forget, session_of, shared, start


class Host:
    name = "h"


def _counting(result_of=lambda n: PythonEnv(python_version=f"3.{n}"), delay: float = 0.05):
    calls = []

    async def factory():
        calls.append(1)
        await anyio.sleep(delay)
        return result_of(len(calls))

    return calls, factory


async def test_concurrent_callers_share_one_run_and_get_copies():
    s = ProbeSession()
    calls, factory = _counting()
    got = []

    async def ask():
        got.append(await s.shared(("python_env", None), factory))

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(ask)
    assert len(calls) == 1
    assert [g.python_version for g in got] == ["3.1"] * 3
    assert got[0].probe_s is not None and got[0].probe_s >= 0.04
    got[0].packages["x"] = "1"  # one caller's copy is its own
    assert (await s.shared(("python_env", None), factory)).packages == {}
    assert len(calls) == 1
    other = await s.shared(("python_env", "/opt/venv/bin/python"), factory)  # other arguments: another run
    assert other.python_version == "3.2"


async def test_a_live_reading_goes_to_one_caller():
    s = ProbeSession()
    calls, factory = _counting()
    first = await s.shared(("power",), factory, once=True)
    second = await s.shared(("power",), factory, once=True)
    assert (first.python_version, second.python_version) == ("3.1", "3.2")


async def test_a_prefetched_reading_waits_for_its_first_caller():
    host = Host()
    calls, factory = _counting(delay=0.1)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: start(host, ("power",), factory, once=True))
            await anyio.sleep(0.01)
            got = await shared(host, ("power",), factory, once=True)  # arrives while the prefetch runs
        assert len(calls) == 1 and got.python_version == "3.1"
        again = await shared(host, ("power",), factory, once=True)
        assert len(calls) == 2 and again.python_version == "3.2"
        await start(host, ("power",), factory, once=True)  # a finished, untaken prefetch is left for its caller
        assert (await shared(host, ("power",), factory, once=True)).python_version == "3.3"
    finally:
        forget(host)


async def test_an_error_reaches_whoever_asks():
    s = ProbeSession()

    async def boom():
        raise RuntimeError("host lost")

    with pytest.raises(RuntimeError, match="host lost"):
        await s.shared(("gpu",), boom)
    with pytest.raises(RuntimeError, match="host lost"):
        await s.shared(("gpu",), boom)


async def test_a_cancelled_prefetch_is_started_again_by_the_next_caller():
    s = ProbeSession()
    calls, factory = _counting(delay=10)
    with anyio.move_on_after(0.05):
        await s.shared(("kernels",), factory, prefetch=True)
    assert len(calls) == 1 and ("kernels",) not in s.slots
    _, quick = _counting(delay=0)
    assert (await s.shared(("kernels",), quick)).python_version == "3.1"


def test_sessions_are_per_host_object():
    a, b = Host(), Host()
    assert session_of(a) is session_of(a) and session_of(a) is not session_of(b)
    forget(a)
    forget(b)
