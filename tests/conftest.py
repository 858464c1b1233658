"""Shared test setup: `tests/` on sys.path so `support.*` helpers import; no network beyond loopback."""

from __future__ import annotations

import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

# Fixtures every test directory may use without importing them (a test module never imports another's fixtures).
pytest_plugins = ["support.sshd", "support.web", "support.scorecard"]

# Tests never talk to the real API: a stray key in the environment must not select the anthropic backend.
os.environ.pop("ANTHROPIC_API_KEY", None)
os.environ.pop("ANTHROPIC_AUTH_TOKEN", None)
os.environ.pop("ANTHROPIC_BASE_URL", None)
# ...and the package's kill switch refuses any model request that is not to a loopback fake (subprocesses inherit it).
os.environ["INVESTIGATE_ALLOW_MODEL_REQUESTS"] = "0"

# A rule or catalog signal that raises re-raises under test (in use it becomes a gap naming it): no silent failures.
os.environ["INVESTIGATE_STRICT_RULES"] = "1"

# The engine probe on this machine (`--host` local) sees only serving engines carrying this session's tag: none but
# those a test stages, never the staged engines of another test session running on the same machine.
os.environ.setdefault("INVESTIGATE_STAGED_TAG", f"test-session-{os.getpid()}")


# --- parallel and serial passes (.ci/run) -----------------------------------------------------------------------------
# `.ci/run` runs the suite twice: `pytest -n N --dist loadgroup -m "not serial"` (pytest-xdist; every module is its own
# xdist group, kept on one worker so a module-scoped fixture such as the Slurm cluster or an sshd starts once, except
# the scenario modules in SPREAD, whose cases go to whichever worker is free), then
# `pytest -m serial`. Every fixture is parallel-safe (free ports, per-worker temp dirs, per-session staged tags); what
# runs serially are tests that bound wall-clock time, which other workers' load on a small machine would break.
SERIAL = (
    "tests/speed/",                      # timing of the probe session, listing cache and GEMM holds
    "tests/hosts/test_local.py",         # a timeout must fire within 1-5 s
    "tests/hosts/test_ssh.py",           # timeouts and "no second attempt" within 0.5-6 s
    "tests/hosts/test_conformance.py",   # a command's timeout within 10 s on every host kind
    "tests/core/test_fanout.py",         # subagents run at the same time (elapsed vs the sum of their sleeps)
    "tests/anthropic/test_fetch_tool.py",  # fetch timeouts
    "tests/cli/test_not_ssh_port.py",    # a silent port is given up on within the connect timeout
)


# Modules whose tests are each a whole staged case with nothing shared (a function-scoped sshd and staged root per
# case): spread one by one over the workers instead of kept together, since a module of 190 cases on one worker was
# the parallel pass's long pole. Every module of the scenario corpus is one (the cases, their planted-evidence twins,
# the residual ones): a new module there keeps nothing module-scoped.
SPREAD = (
    "tests/scenarios/",
)


def pytest_configure(config):
    # Test modules import by basename (rootdir-relative, no packages): two `test_x.py` in different directories
    # break collection of the whole suite ("import file mismatch"), which a run of one directory never shows.
    seen: dict[str, list[str]] = {}
    for p in TESTS.rglob("test_*.py"):
        seen.setdefault(p.name, []).append(p.relative_to(TESTS.parent).as_posix())
    dup = {k: v for k, v in seen.items() if len(v) > 1}
    if dup:
        import pytest

        raise pytest.UsageError("test modules share a basename (rename one; the whole suite cannot collect both): "
                                + "; ".join(" and ".join(sorted(v)) for v in dup.values()))


def pytest_collection_finish(session):
    # What collection built (every test module, the package, the SDKs they import: millions of objects) lives until
    # the process ends. Frozen, the collector stops walking it: each full collection during the tests, the 5
    # collections pytest runs at exit to surface unraisable exceptions and the interpreter's own at exit were 0.3 s
    # each. What the tests create is collected as before.
    import gc

    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    import pytest

    root = Path(__file__).resolve().parent.parent
    for item in items:
        rel = Path(str(item.fspath)).resolve().relative_to(root).as_posix()
        if rel.startswith(SERIAL):
            item.add_marker(pytest.mark.serial)
        elif not rel.startswith(SPREAD):
            item.add_marker(pytest.mark.xdist_group(rel))  # the module on one worker (`--dist loadgroup`)
