"""The CLI contract for bad input: one clear line on stderr, exit code 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def investigate(*args, cwd=None, env=None):
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    full_env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=full_env, timeout=60)


def assert_one_line_exit_2(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]
    assert proc.stdout == ""


def test_unknown_option_is_one_line_exit_2():
    assert_one_line_exit_2(investigate("why slow", "--frobnicate"), "No such option", "--frobnicate")


def test_missing_observations_file_is_one_line_exit_2(tmp_path):
    proc = investigate("why slow", "--observations", str(tmp_path / "nope.yaml"), "--offline")
    assert_one_line_exit_2(proc, "observations file", "nope.yaml", "not found")


def test_malformed_observations_yaml_names_the_line(tmp_path):
    bad = tmp_path / "obs.yaml"
    bad.write_text("model: {name: x\nruns: [\n")
    assert_one_line_exit_2(investigate("why slow", "--observations", str(bad), "--offline"), "not valid YAML", "line")


def test_unknown_observations_key_is_named(tmp_path):
    bad = tmp_path / "obs.yaml"
    bad.write_text("runs:\n  - {tp: 8, tok_per_sec: 100}\n")
    assert_one_line_exit_2(investigate("why slow", "--observations", str(bad), "--offline"),
                           "unknown key", "runs.0.tok_per_sec")


@pytest.mark.parametrize("command", ["replay", "show", "resume"])
def test_missing_transcript_is_one_line_exit_2(tmp_path, command):
    assert_one_line_exit_2(investigate(command, str(tmp_path / "gone.jsonl")), "gone.jsonl", "not found")


def test_report_of_missing_transcript_is_one_line_exit_2(tmp_path):
    proc = investigate("report", str(tmp_path / "gone.jsonl"), "-o", str(tmp_path / "r.html"))
    assert_one_line_exit_2(proc, "gone.jsonl", "not found")
    assert not (tmp_path / "r.html").exists()


def test_malformed_transcript_names_the_line(tmp_path):
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"type":"header","schema_version":2,"tool_version":"0","run_id":"x"}\n{"type": oops}\n')
    assert_one_line_exit_2(investigate("replay", str(bad)), "line 2 is not valid JSON")


def test_model_and_offline_together_is_bad_usage():
    assert_one_line_exit_2(investigate("why slow", "--model", "opus", "--offline"), "--model", "--offline")


def test_model_without_api_key_is_bad_input():
    assert_one_line_exit_2(investigate("why slow", "--model", "opus", "--no-progress"), "needs an API key")


def test_bad_agent_definition_names_the_file(tmp_path):
    d = tmp_path / "agents"
    d.mkdir()
    (d / "broken.md").write_text("---\nname: broken\n---\nbody\n")
    assert_one_line_exit_2(investigate("why slow", "--agents", str(d), "--offline"), "broken.md", "description")


def test_unwritable_transcript_path_is_one_line_exit_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = investigate("why slow", "--offline", "--no-progress", "--transcript", str(blocker / "t.jsonl"))
    assert_one_line_exit_2(proc, "cannot write the transcript", "--transcript")


def test_unwritable_report_path_is_one_line_exit_2(tmp_path):
    shipped = os.path.join(os.path.dirname(__file__), "..", "..", "transcripts", "seed-rtx-pro-6000-fp4.jsonl")
    proc = investigate("report", shipped, "-o", str(tmp_path / "missing-dir" / "r.html"))
    assert_one_line_exit_2(proc, "cannot write", "r.html")


def test_unreachable_host_is_one_line_exit_2_and_no_transcript(tmp_path):
    from support.sshd import free_port

    proc = investigate("why slow", "--offline", "--no-progress", "--host", f"nobody@127.0.0.1:{free_port()}",
                       "--transcript", str(tmp_path / "t.jsonl"))
    assert_one_line_exit_2(proc, "127.0.0.1")
    assert not (tmp_path / "t.jsonl").exists()


def test_report_of_an_interrupted_run_shows_what_ran_and_show_reads_past_a_damaged_line(tmp_path):
    shipped = os.path.join(os.path.dirname(__file__), "..", "..", "transcripts", "seed-rtx-pro-6000-fp4.jsonl")
    lines = Path(shipped).read_text().splitlines()
    cut = [ln for ln in lines if '"type":"diagnosis_submitted"' not in ln and '"type":"run_finished"' not in ln]
    cut[5] = cut[5][:-30]  # and one damaged line in the middle
    path = tmp_path / "interrupted.jsonl"
    path.write_text("\n".join(cut) + "\n")

    show = investigate("show", str(path))
    assert show.returncode == 0 and "line 6 is not valid JSON" in show.stderr and "kernel-research-1" in show.stdout

    path.write_text("\n".join(ln for i, ln in enumerate(cut) if i != 5) + "\n")
    out = tmp_path / "r.html"
    rep = investigate("report", str(path), "-o", str(out))
    assert rep.returncode == 0, rep.stderr
    assert "holds no diagnosis" in rep.stderr and out.is_file()
    assert "unfinished" in out.read_text() or "did not" in out.read_text()
