"""Probe scripts started together share one interpreter start (probes/runner.py run_script, scripts/_forks.py): each
still runs as its own process, at the same time as the others, and ends exactly as it would have alone: its output,
its exit code, its error line, its time limit, its output cap."""

from __future__ import annotations

import time

import anyio
import pytest

from orchestrator.hosts.local import LocalHost
from orchestrator.probes import interpreter, runner, scripts
from orchestrator.probes.runner import ProbeUnavailable, run_script, script_stdout, with_params
from orchestrator.prongs.path import probe as path
from orchestrator.prongs.serving_engine import probe as engine
from orchestrator.prongs.settings_audit import probe as settings

SHARED = "import json, os, sys\nLIMIT = 7\n\ndef doubled():\n    return 2 * LIMIT\n"
"""A stand-in prelude: a function that reads a global the part may set (one namespace, as `load`'s one text)."""

PARTS = {
    "prints": "print(json.dumps({'argv': json.loads(sys.argv[1]), 'doubled': doubled()}))\n",
    "sets_a_global": "LIMIT = 50\nprint(json.dumps({'doubled': doubled()}))\n",
    "raises": "print('half', flush=True)\nraise ValueError('no such counter: x')\n",
    "exits_3": "sys.stderr.write('first\\nlast line\\n')\nsys.exit(3)\n",
    "exits_with_text": "sys.exit('refused: not a python')\n",
    "loud": "sys.stdout.write('x' * 50000 + 'END\\n')\n",
    "sleeps": "import time\ntime.sleep(30)\nprint('{}')\n",
    "child_writes": "import subprocess\nsubprocess.run(['echo', 'from a child'])\nprint('{}')\n",
    "killed": "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n",
}


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


async def _alone(host, name, params, timeout_s, cap):
    return await host.run(["python3", "-I", "-S", "-"], stdin=with_params(SHARED + "\n\n" + PARTS[name], params),
                          timeout_s=timeout_s, max_output=cap)


async def _together(host, names, params, timeout_s, cap):
    """The driver run over the stand-in prelude and parts, as runner._run_forked runs it over shipped scripts."""
    argv = ["python3", "-I", "-S", "-"]
    source = scripts.forks_source(SHARED, [PARTS[n] for n in names])
    outer = await host.run(argv, stdin=with_params(source, {"parts": [[params, timeout_s, cap] for _ in names]}),
                           timeout_s=timeout_s + 10, max_output=cap * 6 * len(names))
    assert outer.ok, outer.stderr
    import json

    got = json.loads(outer.stdout.strip().splitlines()[-1])
    return [got[str(i)] for i in range(len(names))], outer


async def test_each_part_ends_as_it_would_alone():
    host = LocalHost()
    names = [n for n in PARTS if n != "sleeps"]
    params, cap = {"logs": ["/var/log/a.log"], "n": 3}, 20000
    together, _ = await _together(host, names, params, 20.0, cap)
    for name, got in zip(names, together):
        alone = await _alone(host, name, params, 20.0, cap)
        assert got["rc"] == alone.exit_code, name
        assert got["stdout"] == alone.stdout, name
        assert got["stdout_truncated"] == alone.stdout_truncated, name
        assert (got["stderr"].strip().splitlines() or [""])[-1] == (alone.stderr.strip().splitlines() or [""])[-1], name
        assert not got["timed_out"] and not alone.timed_out
    by = dict(zip(names, together))
    assert '"doubled": 14' in by["prints"]["stdout"] and '"n": 3' in by["prints"]["stdout"]
    assert '"doubled": 100' in by["sets_a_global"]["stdout"]  # the part's global is the one the prelude reads
    assert by["raises"]["rc"] == 1 and by["raises"]["stderr"].strip().endswith("ValueError: no such counter: x")
    assert by["exits_3"]["rc"] == 3 and by["exits_with_text"]["rc"] == 1
    assert by["loud"]["stdout_truncated"] and "bytes omitted by the output cap" in by["loud"]["stdout"]
    assert by["child_writes"]["stdout"] == "from a child\n{}\n"
    assert by["killed"]["rc"] == -15  # as a local command killed by a signal reads


async def test_parts_run_at_the_same_time_and_a_part_past_its_limit_ends_alone():
    host = LocalHost()
    t0 = time.monotonic()
    together, outer = await _together(host, ["sleeps", "prints", "sleeps"], {}, 1.0, 10000)
    took = time.monotonic() - t0
    assert together[0]["timed_out"] and together[2]["timed_out"] and together[0]["rc"] is None
    assert not together[1]["timed_out"] and together[1]["rc"] == 0 and together[1]["stdout"]
    assert took < 1.9, took  # two 1 s limits side by side, not one after the other
    alone = await _alone(host, "sleeps", {}, 1.0, 10000)
    assert alone.timed_out and alone.exit_code is None


async def test_scripts_started_together_take_one_interpreter_start_and_give_each_its_own_result(monkeypatch, tmp_path):
    host = Counting(LocalHost())
    calls = [("discover", interpreter.discover_params(), interpreter.DISCOVER_TIMEOUT_S),
             ("engine", engine.engine_params([]), 60.0),
             ("settings", settings.settings_params([]) if _takes_logs(settings.settings_params) else
              settings.settings_params(), 60.0),
             ("path", path.path_params([]), 60.0)]
    got: dict[str, object] = {}

    async def one(name, params, timeout_s):
        got[name] = await run_script(host, "python3", name, params, timeout_s=timeout_s, isolated=True)

    async with anyio.create_task_group() as tg:
        for c in calls:
            tg.start_soon(one, *c)
    assert len(host.calls) == 1 and host.calls[0] == ["python3", "-I", "-S", "-"], host.calls
    monkeypatch.setattr(runner, "TOGETHER", {})  # each alone, as before
    for name, params, timeout_s in calls:
        alone = await run_script(host, "python3", name, params, timeout_s=timeout_s, isolated=True)
        assert _stable(got[name]) == _stable(alone), name
    assert len(host.calls) == 1 + len(calls)


async def test_only_scripts_of_a_kind_go_together():
    host = Counting(LocalHost())
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run_script(host, "python3", "discover", interpreter.discover_params(), isolated=True))
        tg.start_soon(lambda: run_script(host, "python3", "sampler", {"duration_s": 0.1, "interval_s": 0.05},
                                         isolated=True))
        tg.start_soon(lambda: run_script(host, "python3", "engine", engine.engine_params([]), isolated=True))
    assert len(host.calls) == 2  # the quick readings together; the power window apart (discover is never held back)


async def test_a_script_joining_one_whose_caller_is_cancelled_still_gets_its_result(monkeypatch):
    monkeypatch.setattr(runner, "GATHER_YIELDS", 50)
    host = Counting(LocalHost())
    got = {}

    async def leader(scope):
        with scope:
            await run_script(host, "python3", "discover", interpreter.discover_params(), isolated=True)
        got["leader"] = "cancelled" if scope.cancel_called else "ran"

    async def joiner():
        got["engine"] = await run_script(host, "python3", "engine", engine.engine_params([]), isolated=True)

    scope = anyio.CancelScope()
    with anyio.fail_after(60):  # a joiner left waiting on a cancelled gathering would wait for ever
        async with anyio.create_task_group() as tg:
            tg.start_soon(leader, scope)
            await anyio.sleep(0)  # the leader is gathering
            tg.start_soon(joiner)
            for _ in range(5):
                await anyio.sleep(0)  # the joiner has joined
            scope.cancel()
    assert got["leader"] == "cancelled"
    assert isinstance(got["engine"], dict) and "engines" in got["engine"], got
    assert len(host.calls) == 1  # the joiner's script, run alone


async def test_when_the_driver_cannot_run_every_part_says_why_as_alone():
    host = LocalHost()
    calls = [("discover", interpreter.discover_params()), ("engine", engine.engine_params([]))]
    errors = []

    async def one(name, params):
        try:
            await run_script(host, "no-such-python3", name, params, isolated=True)
        except ProbeUnavailable as exc:
            errors.append(str(exc))

    async with anyio.create_task_group() as tg:
        for c in calls:
            tg.start_soon(one, *c)
    assert sorted(errors) == ["interpreter no-such-python3 not found on local"] * 2


def test_a_failed_part_reads_as_its_command_would():
    from orchestrator.hosts.base import CommandResult

    r = CommandResult(argv=["python3", "-"], exit_code=1, stderr="Traceback ...\nValueError: bad\n")
    with pytest.raises(ProbeUnavailable, match=r"engine probe failed under python3 \(exit 1\): ValueError: bad"):
        script_stdout(r, "engine probe", LocalHost(), "python3", 60.0)


def _takes_logs(fn) -> bool:
    import inspect

    return bool(inspect.signature(fn).parameters)


def _stable(doc):
    """A probe's JSON without what moves between two runs (timings, this test process's own pids)."""
    if isinstance(doc, dict):
        return {k: _stable(v) for k, v in doc.items() if not k.endswith("_s") and k not in ("pid", "ppid", "t")}
    if isinstance(doc, list):
        return [_stable(v) for v in doc]
    return doc
