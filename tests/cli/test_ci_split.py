"""Issue 25 item 6: `.ci/run` runs the suite in a parallel pass (`-n <cores + 1> --dist loadgroup -m "not serial"`), the
scenario corpus with three workers per core (its staged cases wait on their probes' windows most of the time), and a
serial pass (`-m serial`); tests/conftest.py marks the wall-clock-bound modules serial, and nothing else, and keeps
every module on one worker except the scenario modules, whose cases spread."""

from __future__ import annotations

import subprocess
import sys

from support.cli import ROOT, cli_env


def _collected(*args: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *args],
                          capture_output=True, text=True, cwd=ROOT, env=cli_env(), timeout=300)
    assert proc.returncode in (0, 5), proc.stdout[-2000:] + proc.stderr[-2000:]
    return {ln.split("::")[0] for ln in proc.stdout.splitlines() if "::" in ln}


def test_the_wall_clock_bound_modules_run_in_the_serial_pass_and_the_others_in_the_parallel_one():
    files = ["tests/hosts/test_local.py", "tests/cli/test_specs_short_names.py"]
    assert _collected("-m", "serial", *files) == {"tests/hosts/test_local.py"}
    assert _collected("-m", "not serial", *files) == {"tests/cli/test_specs_short_names.py"}


def test_ci_runs_the_three_passes_with_pytest_as_the_runner():
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'python3 -m pytest -q -n "$workers" --dist loadgroup -m "not serial" --ignore=tests/scenarios "$@"' in ci
    assert "workers=$(( $(nproc) + 1 ))" in ci
    assert 'python3 -m pytest -q -n "$case_workers" --dist loadgroup -m "not serial" tests/scenarios "$@"' in ci
    assert "case_workers=$(( $(nproc) * 3 ))" in ci
    assert 'python3 -m pytest -q -m serial "$@"' in ci
    assert ci.index("--ignore=tests/scenarios") < ci.index("tests/scenarios \"$@\"") < ci.index("-m serial")



def test_every_module_is_one_xdist_group_except_the_scenario_cases_which_spread():
    import importlib.util

    spec = importlib.util.spec_from_file_location("_ci_conftest", ROOT / "tests" / "conftest.py")
    assert spec and spec.loader
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)

    class Item:
        def __init__(self, rel: str) -> None:
            self.fspath = ROOT / rel
            self.marks: list = []

        def add_marker(self, mark) -> None:
            self.marks.append(mark)

    items = [Item(r) for r in ("tests/hosts_multi/test_slurm.py", "tests/scenarios/test_scenarios.py",
                               "tests/scenarios/test_heldout_planted.py", "tests/hosts/test_local.py",
                               "tests/scenarios/test_residual_planted.py")]
    conftest.pytest_collection_modifyitems(None, items)
    groups = {it.fspath.name: [m.args[0] for m in it.marks if m.name == "xdist_group"] for it in items}
    assert groups == {"test_slurm.py": ["tests/hosts_multi/test_slurm.py"], "test_scenarios.py": [],
                      "test_heldout_planted.py": [], "test_local.py": [], "test_residual_planted.py": []}
    assert [m.name for m in items[3].marks] == ["serial"]
