"""Issue 25 item 6: `.ci/run` runs the suite in a parallel pass (`-n auto -m "not serial"`) and a serial one
(`-m serial`); tests/conftest.py marks the wall-clock-bound modules serial, and nothing else."""

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


def test_ci_runs_both_passes_with_pytest_as_the_runner():
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'python3 -m pytest -q -n auto --dist loadscope -m "not serial"' in ci
    assert "python3 -m pytest -q -m serial" in ci
