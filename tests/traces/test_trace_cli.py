"""`investigate --trace`: the trace prong joins the fan-out, its account sets the bound and names the planted
problem by its share, the HTML report carries the per-step bars; bad trace input is one line, exit 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600, check=False)


def test_offline_run_with_a_trace_names_the_host_sleep_by_its_share_and_draws_the_steps(tmp_path):
    proc = _cli("why is decode slow?", "--offline", "--trace", str(DATA / "decode_eager_sleep.json.gz"), "--json",
                "--no-progress", "--transcript", str(tmp_path / "t.jsonl"), "--report", str(tmp_path / "r.html"),
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    d = json.loads(proc.stdout)
    assert d["bound"] == "latency"
    assert "waits for the host" in d["bound_reasoning"]
    sleep = [c for c in d["causes"] if "planted_host_sleep" in c["title"]]
    assert sleep, [c["title"] for c in d["causes"]]
    share = float(re.search(r"idle ([0-9.]+)% of each step", sleep[0]["explanation"]).group(1))
    assert 23.0 <= share <= 28.0  # 4.15 ms of host sleep in a 16.4 ms step
    assert "decode_eager_sleep.json.gz" in sleep[0]["explanation"]  # the citation names the file and window
    page = (tmp_path / "r.html").read_text()
    assert 'id="trace"' in page and page.count('class="trace-steps"') == 1
    assert page.count("<rect") >= 3 * 10  # a stacked bar per step: busy classes and idle causes


def test_a_trace_that_is_not_a_profile_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "notes.json"
    bad.write_text('{"model": "x"}')
    proc = _cli("why?", "--offline", "--trace", str(bad), cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no traceEvents" in lines[0] and "Traceback" not in proc.stderr
    proc = _cli("why?", "--offline", "--baseline-trace", str(DATA / "prefill_eager.json.gz"), cwd=tmp_path)
    assert proc.returncode == 2 and "needs --trace" in proc.stderr
