"""The host survey: the discover, engine and node scripts in one interpreter start, each result as its probe's own."""

from __future__ import annotations

import anyio

from orchestrator.probes import interpreter, session
from orchestrator.prongs.serving_engine import probe as engine
from orchestrator.prongs.node_health import probe as node
from orchestrator.probes.runner import ProbeUnavailable, run_bundle
from orchestrator.prongs.fleet.survey import run_survey, survey, survey_keys


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
    session.session_of(host).fresh_s = 0.0  # a snapshot's moment ends when it is taken
    await survey(host, [])
    assert len(host.calls) == 1
    first = await node.node_health(host, [])
    report = await engine.engine_report(host, [])
    interp = await interpreter.resolve(host)
    assert len(host.calls) == 1, host.calls  # all three came from the survey
    assert first.available and report.host == host.name and interp.path
    again = await node.node_health(host, [])  # a snapshot past its moment: the next caller looks again
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
    s = session.ProbeSession(fresh_s=0.0)
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


# --- the chained part: the interpreter's check and python_env in the same round trip ------------------------------

def _run_chain(discover_out: dict, host="gpu-1") -> dict:
    """scripts/pyenv_chain.py as the survey bundle runs it (after a discover part that printed `discover_out`)."""
    import contextlib
    import io
    import json
    import sys

    from orchestrator.probes import pyenv, scripts
    buf = io.StringIO()
    argv = sys.argv
    sys.argv = ["-", json.dumps({"host": host, "pyenv": pyenv.PARAMS, "timeout_s": 60})]
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(scripts.load("pyenv_chain"), "<probe pyenv_chain>", "exec"),
                 {"__name__": "__main__", "BUNDLE_RESULTS": {"discover": {"stdout": json.dumps(discover_out)}},
                  "BUNDLE_SOURCES": {"pyenv": scripts.load("pyenv")}})
    finally:
        sys.argv = argv
    return json.loads(buf.getvalue().strip().splitlines()[-1])


def _servers(*exes):
    return {"python3": "/usr/bin/python3", "servers": [
        {"pid": 100 + i, "kind": "vllm", "exe": exe, "env": {}, "cwd": "/srv"} for i, exe in enumerate(exes)]}


async def test_the_survey_reads_python_env_on_the_host_as_the_probe_does(staged):
    from orchestrator.hosts.local import LocalHost
    from orchestrator.probes import pyenv
    from orchestrator.prongs.kernel_research import probe as kernels
    from orchestrator.tools.probes import _python_env

    s, host = staged()
    host = Counting(host)
    await survey(host, [])
    env = await _python_env(host, None)
    interp = await kernels.resolve_interpreter(host, None)
    assert len(host.calls) == 1, host.calls  # one round trip: discover, engine, node, the check and pyenv
    assert env.available and env.packages and interp.source == "python3 on PATH"
    session.forget(host)
    alone = Counting(s.wrap(LocalHost()))
    own = await pyenv.collect_python_env(alone, None)
    assert len(alone.calls) == 2  # discover, then pyenv: what the chain saves
    drop = {"probe_s", "timings"}  # how long each took
    assert env.model_dump(exclude=drop) == own.model_dump(exclude=drop)
    session.forget(alone)


async def test_with_python_given_the_survey_leaves_python_env_to_its_probe(staged):
    from orchestrator.probes import pyenv

    s, host = staged()
    host = Counting(host)
    await survey(host, [], "/usr/bin/python3")
    assert len(host.calls) == 1 and pyenv.pyenv_key(None) not in session.session_of(host).slots
    session.forget(host)


def test_the_chain_checks_every_server_executable_and_runs_pyenv_under_the_first_that_passes(tmp_path):
    import os
    import sys

    fake = tmp_path / "python3"  # a name that passes, for a program that is no python
    fake.symlink_to("/bin/echo")
    real = os.path.realpath(sys.executable)
    out = _run_chain(_servers("/bin/sleep", str(fake), real))
    assert out["interpreter"] == real and out["source"] == "vllm process 102"
    assert set(out["refused"]) == {"/bin/sleep", str(fake)}
    assert "only python, python3 or python3.N" in out["refused"]["/bin/sleep"]
    assert "not a python" in out["refused"][str(fake)] and "gpu-1" in out["refused"][str(fake)]
    assert out["checked"] == {real: real}
    assert out["pyenv"]["rc"] == 0 and '"packages"' in out["pyenv"]["stdout"]


def test_the_chain_falls_back_to_python3_when_no_server_executable_passes():
    out = _run_chain(_servers("/bin/sleep"))
    assert out["interpreter"] == "python3" and out["source"] == "python3 on PATH" and out["checked"] == {}


def test_what_the_chain_found_is_what_resolve_would_choose_and_the_env_it_read(tmp_path):
    import json
    import os
    import sys

    from orchestrator.hosts.local import LocalHost
    from orchestrator.probes import interpreter, pyenv
    from orchestrator.prongs.kernel_research import probe as kernels
    from orchestrator.prongs.fleet.survey import CHAIN_KEYS, _chained

    host = LocalHost()
    real = os.path.realpath(sys.executable)
    disc = _servers("/bin/sleep", real)
    chain = _run_chain(json.loads(json.dumps(disc)), host=host.name)
    got = _chained(host, disc, chain)
    interp, env = got[kernels.interpreter_key(None)], got[pyenv.pyenv_key(None)]
    assert (interp.path, interp.source) == (real, "vllm process 101")
    assert disc["servers"][0].get("exe_refused") == "/bin/sleep" and "exe" not in disc["servers"][0]
    assert env.available and env.interpreter_source == "vllm process 101" and env.commands == [f"{real} -I -S - < pyenv.py"]
    assert interpreter._verified[host][real] == real  # later probes under it are not checked again
    # an answer the chain could not give, or one resolve would not choose, leaves both to their own probes
    assert set(_chained(host, _servers(real), {"error": "no discover output"}).values()) == {session.UNFILLED}
    other = dict(chain, interpreter="python3")
    assert set(_chained(host, _servers("/bin/sleep", real), other)) == set(CHAIN_KEYS)
    assert set(_chained(host, _servers("/bin/sleep", real), other).values()) == {session.UNFILLED}
    unchecked = _servers(real, "/opt/other/python3")
    assert set(_chained(host, unchecked, chain).values()) == {session.UNFILLED}


async def test_an_unfilled_key_is_run_by_its_next_caller():
    s = session.ProbeSession()
    ran = []

    async def combined():
        return {"a": "A", "b": session.UNFILLED}

    async def alone():
        ran.append(1)
        return "own"

    await s.fill(["a", "b"], combined)
    assert await s.shared("a", alone) == "A" and ran == []
    assert await s.shared("b", alone) == "own" and ran == [1]
