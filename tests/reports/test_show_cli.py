"""`investigate show` and `investigate report` on a transcript file, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from orchestrator.render.timeline import Timeline
from reports.sample import sample_diagnosis
from reports.synth import fanout_run, write_jsonl


def investigate(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1"}
    main = "import sys; from orchestrator.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", main, *args], capture_output=True, text=True, timeout=60, env=env)


def test_show_prints_a_timeline_row_per_agent(tmp_path):
    path = write_jsonl(tmp_path / "run.jsonl", fanout_run(n_sub=3, statuses={1: "timeout"}))
    out = investigate("show", str(path))
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if "█" in line]
    assert [r.split()[0] for r in rows] == ["lead", "sub1-1", "sub2-2", "sub3-3"]
    assert "timeout" in rows[2] and "peak 4 concurrent" in out.stdout
    assert max(len(line) for line in out.stdout.splitlines()) <= 100


def test_show_json_is_one_timeline_document(tmp_path):
    path = write_jsonl(tmp_path / "run.jsonl", fanout_run(n_sub=2))
    out = investigate("show", str(path), "--json")
    assert out.returncode == 0, out.stderr
    tl = Timeline.model_validate(json.loads(out.stdout))
    assert tl.max_concurrency == 3 and [a.agent_id for a in tl.agents] == ["lead", "sub1-1", "sub2-2"]


def test_report_writes_one_self_contained_html_file(tmp_path):
    d = sample_diagnosis()
    path = write_jsonl(tmp_path / "run.jsonl", fanout_run(n_sub=2, diagnosis=d.model_dump()))
    html = tmp_path / "report.html"
    out = investigate("report", str(path), "-o", str(html))
    assert out.returncode == 0, out.stderr
    text = html.read_text(encoding="utf-8")
    assert "Decode GEMMs at batch 8 are deep in the memory-bound region" in text
    assert text.count('class="agent-bar"') == 3
    assert "http://" not in text and "https://" not in text


def test_show_on_a_missing_file_is_one_line_and_exit_2(tmp_path):
    out = investigate("show", str(tmp_path / "nope.jsonl"))
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
