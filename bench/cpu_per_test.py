"""CPU seconds per test, counting every process a test starts: a pytest plugin for measuring the suite's cost.

    BENCH_CPU_OUT=/tmp/cpu python -m pytest -p bench.cpu_per_test tests/scenarios/test_scenarios.py -k ...
    python -m bench.cpu_per_test /tmp/cpu            # the sums: per test, per module, per directory

On a shared machine wall-clock time is noise; CPU time is not. Each test's cost is the growth of the pytest process's
own CPU time plus its children's (`RUSAGE_SELF` + `RUSAGE_CHILDREN`) across its setup, call and teardown. A child's
CPU time reaches `RUSAGE_CHILDREN` only once the child is waited for, and so do its own waited-for children; a
process whose parent dies first (sshd's sessions, killed with sshd; a daemon that forks away) would be reaped by init
and lost. So the pytest process makes itself a child subreaper (prctl PR_SET_CHILD_SUBREAPER): orphans of its
descendants become its children, and after each test the plugin reaps the ones that have exited (never a child this
process started itself, which its own `Popen` still waits for). Works under pytest-xdist (each worker writes its
own file; the controller's collection is counted there too).

Written per process to `$BENCH_CPU_OUT/<worker>.json`: {"tests": {nodeid: [cpu_s, wall_s]}, "collect": cpu_s,
"total": cpu_s, "children": cpu_s, "controller": bool,
"orphans_left": n}. The process's own exit (interpreter finalization, ~1.4 CPU-s with the whole suite imported) comes
after and is not counted.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

_PR_SET_CHILD_SUBREAPER = 36
_started: set[int] = set()
_tests: dict[str, list[float]] = {}
_state: dict[str, float] = {}


def cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _record_spawns() -> None:
    """Remember the pids this process starts itself, so reaping takes only adopted orphans."""
    orig_exec = subprocess.Popen._execute_child  # type: ignore[attr-defined]

    def execute_child(self, *a, **kw):
        try:
            return orig_exec(self, *a, **kw)
        finally:
            if getattr(self, "pid", None):
                _started.add(self.pid)

    subprocess.Popen._execute_child = execute_child  # type: ignore[attr-defined]
    orig_fork = os.fork

    def fork():
        pid = orig_fork()
        if pid:
            _started.add(pid)
        return pid

    os.fork = fork
    for name in ("posix_spawn", "posix_spawnp"):
        orig = getattr(os, name, None)
        if orig is not None:
            def spawn(*a, _orig=orig, **kw):
                pid = _orig(*a, **kw)
                _started.add(pid)
                return pid
            setattr(os, name, spawn)


def _children() -> list[int]:
    out: list[int] = []
    for task in Path("/proc/self/task").iterdir():
        try:
            out += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def reap_orphans() -> int:
    """Reap adopted orphans that have exited; return how many adopted ones are still running."""
    running = 0
    for pid in _children():
        if pid in _started:
            continue
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z":
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        else:
            running += 1
    return running


def pytest_configure(config):
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _record_spawns()


def pytest_collection_finish(session):
    _state["collect"] = cpu()
    _state["collect_children"] = _children_cpu()


def _children_cpu() -> float:
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return c.ru_utime + c.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    c0, t0 = cpu(), time.monotonic()
    yield
    reap_orphans()
    _tests[item.nodeid] = [round(cpu() - c0, 3), round(time.monotonic() - t0, 3)]


def pytest_sessionfinish(session):
    out = os.environ.get("BENCH_CPU_OUT")
    if not out:
        return
    deadline = time.monotonic() + 2
    left = reap_orphans()
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = reap_orphans()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    Path(out).mkdir(parents=True, exist_ok=True)
    doc = {"tests": _tests, "collect": round(_state.get("collect", 0.0), 3), "total": round(cpu(), 3),
           "children": round(_children_cpu(), 3), "collect_children": round(_state.get("collect_children", 0.0), 3),
           "controller": hasattr(session.config, "workerinput") is False and worker == "main"
           and bool(getattr(session.config.option, "numprocesses", None)),
           "orphans_left": left}
    (Path(out) / f"{worker}-{os.getpid()}.json").write_text(json.dumps(doc))


def summarize(folder: Path, top: int = 40) -> str:
    tests: dict[str, list[float]] = {}
    collect = total = 0.0
    for f in sorted(Path(folder).glob("*.json")):
        doc = json.loads(f.read_text())
        tests.update(doc["tests"])
        collect += doc["collect"]
        # an xdist controller's children are its workers, whose own files count them: only its own CPU here
        total += doc["total"] - (doc.get("children", 0.0) if doc.get("controller") else 0.0)
    by_mod: dict[str, float] = defaultdict(float)
    by_dir: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for nodeid, (c, _w) in tests.items():
        mod = nodeid.split("::")[0]
        by_mod[mod] += c
        by_dir[mod.rsplit("/", 1)[0]] += c
        count[mod] += 1
    lines = [f"total {total:.1f} CPU-s (collection {collect:.1f}, tests {sum(c for c, _ in tests.values()):.1f}, "
             f"{len(tests)} tests)", "", "per directory:"]
    lines += [f"  {c:8.1f}  {d}" for d, c in sorted(by_dir.items(), key=lambda x: -x[1])]
    lines += ["", f"per module (top {top}):"]
    lines += [f"  {c:8.1f}  {count[m]:4d}  {m}" for m, c in sorted(by_mod.items(), key=lambda x: -x[1])[:top]]
    lines += ["", f"per test (top {top}):"]
    lines += [f"  {c:8.2f}  {w:7.2f}  {n}" for n, (c, w) in sorted(tests.items(), key=lambda x: -x[1][0])[:top]]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summarize(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 40))
