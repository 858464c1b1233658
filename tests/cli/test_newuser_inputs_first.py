"""Issue 14 item 2: inputs are checked before the run (an unwritable --report costs nothing); a missing --log file is
a warning up front and a gap in the diagnosis."""

from __future__ import annotations

import json

import pytest

from support.cli import ROOT, investigate, one_line

SEED = ROOT / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl"


def _bad_report_paths(tmp_path):
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "a-file").write_text("x")
    return [
        (tmp_path / "a-dir", "it is a directory"),
        (tmp_path / "a-file" / "r.html", "is not a directory"),
        (tmp_path / "no-such-folder" / "r.html", "does not exist"),
    ]


def test_unwritable_report_is_refused_before_the_run(tmp_path):
    for report, why in _bad_report_paths(tmp_path):
        transcript = tmp_path / "t.jsonl"
        proc = investigate("why slow", "--offline", "--no-progress", "--report", report, "--transcript", transcript,
                           tmp_path=tmp_path)
        one_line(proc, 2, f"cannot write the report {report}", why, "--report")
        assert not transcript.exists(), "the run started although its report cannot be written"


def test_unwritable_report_is_refused_before_a_replay_or_resume(tmp_path):
    report = tmp_path / "a-dir"
    report.mkdir()
    for cmd in ("replay", "resume"):
        one_line(investigate(cmd, SEED, "--report", report, tmp_path=tmp_path), 2, "it is a directory", "--report")
    one_line(investigate("report", SEED, "-o", report, tmp_path=tmp_path), 2, "it is a directory", "-o")


def test_transcript_that_is_a_directory_is_refused_up_front(tmp_path):
    one_line(investigate("why slow", "--offline", "--transcript", tmp_path, tmp_path=tmp_path), 2,
             "cannot write the transcript", "it is a directory", "--transcript")


def test_observations_directory_is_refused(tmp_path):
    one_line(investigate("why slow", "--offline", "--observations", tmp_path, tmp_path=tmp_path), 2,
             "is a directory")


@pytest.mark.slow
def test_missing_log_is_warned_up_front_and_listed_under_gaps(tmp_path):
    log = tmp_path / "vllm.log"  # not created
    report = tmp_path / "r.html"
    proc = investigate("why slow", "--offline", "--no-progress", "--json", "--log", log, "--report", report,
                       "--transcript", tmp_path / "t.jsonl", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first == f"warning: --log {log} not found on this machine; it is listed under the diagnosis's gaps"
    gaps = json.loads(proc.stdout)["gaps"]
    assert {"what": f"--log {log}", "why": "not found on local; nothing in it was read"} in gaps
    assert f"--log {log}" in report.read_text()
