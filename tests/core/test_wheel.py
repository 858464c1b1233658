"""The built wheel carries agents/, prompts/ and transcripts/ inside the package and runs an offline investigation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_installs_into_a_fresh_venv_and_investigates_offline(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q", "-w", str(dist),
                    str(REPO)], check=True, timeout=300)
    wheel = next(dist.glob("investigate-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "orchestrator/_builtin/agents/lead.md" in names
    assert any(n.startswith("orchestrator/_builtin/prompts/") for n in names)
    assert not any(n.split("/")[0] in {"agents", "prompts", "transcripts"} for n in names)
    assert "orchestrator/knowledge/failure_modes/kernels.yaml" in names  # the failure-mode catalog ships

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, timeout=300)
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    assert (site / "orchestrator").is_dir()
    assert not (site / "agents").exists() and not (site / "prompts").exists()

    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "PYTHONPATH")}
    env["HOME"] = str(tmp_path / "home")
    work = tmp_path / "elsewhere"  # not the repo: nothing may come from the source tree
    work.mkdir()
    where = subprocess.run([str(py), "-c", "import orchestrator, orchestrator.agentdefs as a; "
                            "print(orchestrator.__file__); print(a.builtin_dir('agents'))"],
                           capture_output=True, text=True, check=True, cwd=work, env=env).stdout.split()
    assert all(str(venv) in w for w in where), where
    n = subprocess.run([str(py), "-c", "from orchestrator.knowledge.catalog import catalog; print(len(catalog()))"],
                       capture_output=True, text=True, check=True, cwd=work, env=env).stdout
    assert int(n) > 10  # the catalog loads from the installed package, not the source tree
    proc = subprocess.run([str(venv / "bin" / "investigate"), "why is FP4 slow", "--offline", "--json",
                           "--no-progress", "--transcript", str(tmp_path / "t.jsonl")],
                          capture_output=True, text=True, cwd=work, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    diagnosis = json.loads(proc.stdout)
    assert diagnosis["question"] == "why is FP4 slow" and diagnosis["verdict"]
    assert (tmp_path / "t.jsonl").is_file()
