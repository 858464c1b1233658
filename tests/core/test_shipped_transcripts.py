"""Every transcript shipped in transcripts/ replays, with no host and no network, to its recorded diagnosis."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.api import replay
from orchestrator.events import DiagnosisSubmitted, RunFinished
from orchestrator.transcript import read_transcript

SHIPPED = sorted((Path(__file__).resolve().parents[2] / "transcripts").glob("*.jsonl"))


def test_the_seed_case_and_an_h200_investigation_are_shipped():
    names = {p.name for p in SHIPPED}
    assert "seed-rtx-pro-6000-fp4.jsonl" in names
    assert "h200-fp8-small-batch.jsonl" in names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
async def test_shipped_transcript_replays_to_its_recorded_diagnosis(path):
    recorded = read_transcript(path)
    assert recorded.of_type(RunFinished)[-1].status == "ok"
    want = recorded.of_type(DiagnosisSubmitted)[-1].diagnosis
    result = await replay(path)
    assert result.status == "ok", result.error
    got = result.diagnosis.model_dump(mode="json")
    assert {k: v for k, v in got.items() if k != "usage"} == {k: v for k, v in want.items() if k != "usage"}


def test_replay_command_prints_the_recorded_diagnosis_as_json():
    path = next(p for p in SHIPPED if p.name.startswith("seed"))
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    proc = subprocess.run([sys.executable, "-m", "orchestrator.cli", "replay", str(path), "--json"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    want = read_transcript(path).of_type(DiagnosisSubmitted)[-1].diagnosis
    assert got["verdict"] == want["verdict"] and got["causes"] == want["causes"]
