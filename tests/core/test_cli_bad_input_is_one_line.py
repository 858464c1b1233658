"""The `investigate` command, run as real subprocesses: bad input is one line and exit 2,
help text and host names are shown as written (rich markup must not eat "[user@]" or "[fe80::1]")."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

from rich.console import Console


def investigate(*args, env=None):
    full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
    full_env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          env=full_env, timeout=120)


def assert_one_line_exit_2(proc, *needles):
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    for n in needles:
        assert n in lines[0], lines[0]
    assert proc.stdout == ""


def test_help_shows_user_at_host_as_written():
    out = investigate("ask", "--help")
    assert out.returncode == 0
    assert "[user@]host[:port]" in out.stdout


def test_observations_file_that_is_not_utf8_is_bad_input(tmp_path):
    bad = tmp_path / "obs.yaml"
    bad.write_bytes(b"\xff\xfe\x00model: x")
    assert_one_line_exit_2(investigate("why slow", "--offline", "--no-progress", "--observations", str(bad)),
                           "obs.yaml")
    assert_one_line_exit_2(investigate("probe", "--observations", str(bad)), "obs.yaml")


def test_agent_definition_that_is_not_utf8_is_bad_input(tmp_path):
    (tmp_path / "a.md").write_bytes(b"\xff\xfe---\nname: x\n---\n")
    assert_one_line_exit_2(investigate("why slow", "--offline", "--no-progress", "--agents", str(tmp_path)), "a.md")


def test_probe_with_a_broken_config_file_is_bad_input(tmp_path):
    cfg = tmp_path / "investigate"
    cfg.mkdir()
    (cfg / "config.toml").write_text("x = [\n")
    assert_one_line_exit_2(investigate("probe", env={"XDG_CONFIG_HOME": str(tmp_path)}), "config.toml")


def test_probe_with_a_missing_ssh_config_is_bad_input(tmp_path):
    assert_one_line_exit_2(investigate("probe", "--ssh-config", str(tmp_path / "nope")), "nope")


def test_report_on_a_transcript_with_a_malformed_diagnosis_is_bad_input(tmp_path):
    from reports.sample import sample_diagnosis
    from reports.synth import fanout_run, write_jsonl

    d = sample_diagnosis().model_dump()
    d["numbers"][0]["value"] = None  # what a NaN becomes in JSON
    path = write_jsonl(tmp_path / "run.jsonl", fanout_run(n_sub=1, diagnosis=d))
    assert_one_line_exit_2(investigate("report", str(path), "-o", str(tmp_path / "r.html")), "run.jsonl")


def test_replay_json_is_exactly_one_document_on_stdout():
    out = investigate("replay", "transcripts/seed-rtx-pro-6000-fp4.jsonl", "--json", "--progress")
    assert out.returncode == 0, out.stderr
    json.loads(out.stdout)


def test_probe_titles_show_host_names_literally():
    from orchestrator.probes.results import ProbeModel
    from orchestrator.render import summaries

    class P:  # duck-typed probe result: kind, host, and what summarize() reads
        kind, host = "gemm_sweep", "root@[fe80::1]:22"

    buf = io.StringIO()
    orig = summaries.gemm_text
    summaries.gemm_text = lambda p: "text"
    try:
        summaries.render_probes([P()], Console(file=buf, width=100, color_system=None))
    finally:
        summaries.gemm_text = orig
    assert "root@[fe80::1]:22" in buf.getvalue()
    assert ProbeModel  # the real model type exists


def test_progress_table_shows_agent_ids_and_tool_names_literally():
    from datetime import datetime, timezone

    from orchestrator.events import AgentStarted, ToolCall
    from orchestrator.render.progress import Progress

    buf = io.StringIO()
    p = Progress(buf, live=True)
    ts = datetime.now(timezone.utc)
    p(AgentStarted(run_id="r", seq=1, ts=ts, agent_id="sub-[red]x", name="sub", model="m"))
    p(ToolCall(run_id="r", seq=2, ts=ts, agent_id="sub-[red]x", turn=1, call_id="c", tool="[bold]shell", args={}))
    p.close()
    assert "sub-[red]x" in buf.getvalue() and "[bold]shell" in buf.getvalue()
