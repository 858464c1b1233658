"""Issue 14 item 9: on a machine without what a test needs (here: torch), the test skips and says why, instead of
failing outside `.ci/run`. Run as a user would: pytest in a subprocess, torch made unimportable."""

from __future__ import annotations

import subprocess
import sys

from support.cli import ROOT, cli_env

TORCH_TESTS = ["tests/measure/test_measure_tools.py::test_gemm_tool_with_measure_records_the_typed_sweep",
               "tests/measure/test_probe_command.py::test_probe_comm_runs_only_the_allreduce_probe_with_gloo_on_a_cpu_host",
               "tests/measure/test_measure_scripts.py"]


def test_torch_tests_skip_with_the_reason_when_torch_is_missing(tmp_path):
    blocker = tmp_path / "notorch" / "torch"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text('raise ImportError("No module named torch (blocked by the test)")\n')
    env = cli_env(tmp_path, PYTHONPATH=f"{blocker.parent}:{ROOT}")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *TORCH_TESTS],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "failed" not in proc.stdout and "error" not in proc.stdout.lower().split("short test summary")[-1]
    skips = [ln for ln in proc.stdout.splitlines() if ln.startswith("SKIPPED")]
    # every test of the three files skips, each on its own line: none passes or fails without torch
    collected = subprocess.run([sys.executable, "-m", "pytest", "-q", "--co", "-p", "no:cacheprovider", *TORCH_TESTS],
                               cwd=ROOT, env=cli_env(tmp_path), capture_output=True, text=True, timeout=600)
    ids = [ln for ln in collected.stdout.splitlines() if "::" in ln]
    assert len(ids) >= 3 and len(skips) == len(ids), proc.stdout[-3000:]
    assert all("needs torch" in ln and "bash .ci/run" in ln for ln in skips)
