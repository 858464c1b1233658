"""Probes share one run per host and arguments, start early, and share a live reading among the callers of one
moment only."""

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


async def test_a_live_reading_serves_the_callers_of_its_moment_each_with_its_own_copy():
    s = ProbeSession(fresh_s=5.0)
    calls, factory = _counting()
    got = []

    async def ask():
        got.append(await s.shared(("gpu_inventory",), factory, once=True))

    async with anyio.create_task_group() as tg:  # four prongs at once
        for _ in range(4):
            tg.start_soon(ask)
    got.append(await s.shared(("gpu_inventory",), factory, once=True))  # one just after: the same moment
    assert len(calls) == 1 and {g.python_version for g in got} == {"3.1"}
    got[0].packages["x"] = "1"
    assert all(g.packages == {} for g in got[1:])


async def test_a_live_reading_older_than_its_moment_is_taken_again():
    s = ProbeSession(fresh_s=0.05)
    calls, factory = _counting(delay=0.01)
    first = await s.shared(("power",), factory, once=True)
    await anyio.sleep(0.1)
    second = await s.shared(("power",), factory, once=True)
    assert (first.python_version, second.python_version) == ("3.1", "3.2")
    assert len(calls) == 2


async def test_an_untaken_prefetch_serves_its_first_caller_however_old_and_then_ages():
    s = ProbeSession(fresh_s=0.05)
    calls, factory = _counting(delay=0.01)
    await s.shared(("power",), factory, once=True, prefetch=True)
    await anyio.sleep(0.1)  # a model turn later
    assert (await s.shared(("power",), factory, once=True)).python_version == "3.1"
    await anyio.sleep(0.1)
    assert (await s.shared(("power",), factory, once=True)).python_version == "3.2"


async def test_a_failed_reading_is_tried_again_once_its_moment_is_over():
    s = ProbeSession(fresh_s=0.3)
    tries = []

    async def flaky():
        tries.append(1)
        if len(tries) == 1:
            raise RuntimeError("nvidia-smi timed out")
        return PythonEnv(python_version="3.9")

    with pytest.raises(RuntimeError):
        await s.shared(("gpu_inventory",), flaky, once=True)
    with pytest.raises(RuntimeError):  # the same moment: the same answer
        await s.shared(("gpu_inventory",), flaky, once=True)
    await anyio.sleep(0.4)
    assert (await s.shared(("gpu_inventory",), flaky, once=True)).python_version == "3.9"


async def test_a_prefetched_reading_waits_for_its_first_caller():
    host = Host()
    calls, factory = _counting(delay=0.1)
    session_of(host).fresh_s = 0.0  # every later caller takes a new reading
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
