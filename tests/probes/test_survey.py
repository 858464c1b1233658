"""The host survey: the discover, engine and node scripts in one interpreter start, each result as its probe's own."""

from __future__ import annotations

import anyio

from orchestrator.probes import engine, interpreter, node, session
from orchestrator.probes.runner import ProbeUnavailable, run_bundle
from orchestrator.probes.survey import run_survey, survey, survey_keys


class Counting:
    """A host that records every command it runs (and runs it on the wrapped host)."""

    def __init__(self, inner):
        self.inner, self.name, self.calls = inner, inner.name, []

    async def run(self, argv, **kw):
        self.calls.append(list(argv))
        return await self.inner.run(argv, **kw)

    async def read_file(self, path, **kw):
        return await self.inner.read_file(path, **kw)

    async def find(self, *a, **kw):
        return await self.inner.find(*a, **kw)

    async def aclose(self):
        pass


def _same(a, b):
    drop = {"probe_s"}
    return a.model_dump(exclude=drop) == b.model_dump(exclude=drop)


async def test_one_interpreter_start_gives_each_probe_its_own_result(staged):
    s, host = staged()
    host = Counting(host)
    got = await run_survey(host, [])
    assert len(host.calls) == 1 and host.calls[0][:4] == ["python3", "-I", "-S", "-"]
    alone_node = await node.collect_node_health(host, [])
    alone_engine = await engine.collect_engine_report(host, [])
    alone_discover = await interpreter.discover(host)
    n = got[node.node_key([])]
    assert n.available and len(n.gpus) == 8 and _same(n, alone_node)
    assert _same(got[engine.engine_key([])], alone_engine)
    assert got[interpreter.DISCOVER_KEY]["python3"] == alone_discover["python3"]


async def test_a_failing_part_fails_alone(staged):
    s, host = staged()
    got = await run_bundle(host, "python3", [("discover", interpreter.discover_params()), ("node", {"logs": 5}),
                                             ("engine", engine.engine_params([]))])
    assert isinstance(got["node"], ProbeUnavailable) and "TypeError" in str(got["node"])
    assert isinstance(got["discover"], dict) and isinstance(got["engine"], dict)


async def test_the_tools_take_what_the_survey_left_once(staged):
    s, host = staged()
    host = Counting(host)
    await survey(host, [])
    assert len(host.calls) == 1
    first = await node.node_health(host, [])
    report = await engine.engine_report(host, [])
    interp = await interpreter.resolve(host)
    assert len(host.calls) == 1, host.calls  # all three came from the survey
    assert first.available and report.host == host.name and interp.path
    again = await node.node_health(host, [])  # a snapshot goes to one caller: the next one looks again
    assert len(host.calls) == 2 and again.available
    await node.node_health(host, ["/var/log/other.log"])  # other arguments: its own probe
    assert len(host.calls) == 3
    session.forget(host)


async def test_a_caller_waiting_on_the_survey_gets_its_failure(staged):
    class Broken(Counting):
        async def run(self, argv, **kw):
            self.calls.append(list(argv))
            await anyio.sleep(0.05)
            raise OSError("connection lost")

    s, host = staged()
    host = Broken(host)
    results = {}

    async def ask():
        await anyio.sleep(0.01)
        try:
            await node.node_health(host, [])
        except OSError as exc:  # as the node probe alone would raise it (the tool layer makes it a tool error)
            results["error"] = exc

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        tg.start_soon(lambda: _quiet(survey(host, [])))
    assert len(host.calls) == 1  # the waiting caller did not start its own probe
    assert "connection lost" in str(results["error"])
    assert [k for k in survey_keys([])] == [interpreter.DISCOVER_KEY, engine.engine_key([]), node.node_key([])]
    session.forget(host)


async def _quiet(aw):
    try:
        await aw
    except Exception:
        pass


async def test_a_key_the_combined_probe_failed_raises_to_its_caller_only():
    s = session.ProbeSession()
    ran = []

    async def combined():
        return {"a": "A", "b": ProbeUnavailable("b's script failed")}

    async def alone():
        ran.append(1)
        return "fresh"

    await s.fill(["a", "b", "c"], combined, once=True)
    assert await s.shared("a", alone, once=True) == "A"
    try:
        await s.shared("b", alone, once=True)
    except ProbeUnavailable as exc:
        assert "b's script failed" in str(exc)
    else:
        raise AssertionError("the failed part was handed out as a result")
    try:  # a key the combined probe said nothing about is a failure too, never a silent None
        await s.shared("c", alone, once=True)
    except RuntimeError as exc:
        assert "returned nothing" in str(exc)
    else:
        raise AssertionError("a missing part was handed out as a result")
    assert ran == [] and await s.shared("a", alone, once=True) == "fresh" and ran == [1]
