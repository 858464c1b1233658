"""The CLI's main path on this machine: offline notice, plain progress on a non-terminal, one JSON document, the
transcript in the user state directory; and the knowledge commands."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path


def run_cli(*args, tmp_path: Path, timeout=180):
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "INVESTIGATE_AGENTS_DIR")}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=tmp_path)


def test_offline_investigation_of_this_machine_prints_one_json_document_and_records_a_transcript(tmp_path):
    proc = run_cli("why is FP4 slow", "--json", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    diagnosis = json.loads(proc.stdout)  # exactly one JSON document on stdout
    assert diagnosis["question"] == "why is FP4 slow" and diagnosis["verdict"]
    assert all(e in diagnosis["evidence"] for c in diagnosis["causes"] for e in c["evidence"])
    err = proc.stderr.splitlines()
    assert "no API key configured: running the offline backend" in proc.stderr
    # plain progress lines, since stderr is not a terminal
    assert any("kernel-research-1 started" in line for line in err)
    assert any(re.search(r"autotune-inspection-\d+ finished ok", line) for line in err)
    path = Path(next(line for line in err if line.startswith("transcript: ")).split(": ", 1)[1])
    assert path.is_file() and path.parent == tmp_path / "state" / "investigate" / "transcripts"
    assert "why-is-fp4-slow" in path.name


def test_no_progress_keeps_stderr_to_the_notices(tmp_path):
    proc = run_cli("why is FP4 slow", "--no-progress", "--offline", "--transcript", "t.jsonl", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [ln for ln in proc.stderr.splitlines() if ln.strip()] == ["transcript: t.jsonl"]
    assert "Diagnosis: why is FP4 slow" in proc.stdout


def test_specs_prints_the_sheet_with_sources(tmp_path):
    proc = run_cli("specs", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "101,376" in proc.stdout or "101376" in proc.stdout
    assert "source" in proc.stdout.lower()


def test_specs_of_a_family_name_lists_its_parts(tmp_path):
    # issue 30 item 13: a name that stands for several parts is answered with them (exit 0), not refused
    proc = run_cli("specs", "rtx 6000 pro", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "NVIDIA RTX PRO 6000 Blackwell Workstation Edition" in proc.stdout and "Server Edition" in proc.stdout


def test_specs_of_an_unknown_gpu_suggests_close_names_and_exits_2(tmp_path):
    proc = run_cli("specs", "RTX PRO 6000 Blackwel Workstaton", tmp_path=tmp_path)
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "NVIDIA RTX PRO 6000 Blackwell Workstation Edition" in lines[0]


def test_roofline_places_a_gemm(tmp_path):
    proc = run_cli("roofline", "--gpu", "NVIDIA H200", "--dtype", "fp8", "-m", "16", "-n", "4096", "-k", "7168",
                   tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "memory" in proc.stdout.lower() and "ridge" in proc.stdout.lower()
