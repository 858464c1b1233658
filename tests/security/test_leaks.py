"""Items 4 and 5 of issue 15 end to end: planted secrets and terminal control sequences in a host log and in the
question never reach a model request, the transcript, the diagnosis, stdout, or a Markdown/HTML/JSON report."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from orchestrator.api import investigate
from orchestrator.render.diagnosis import render_terminal, to_markdown
from orchestrator.models.doubles import DoublesBackend, FunctionModel, call, respond
from orchestrator.render.html import render_html
from orchestrator.tools.registry import default_registry
from security_corpus import SAMPLES
from support.core import write_agents

REPO = Path(__file__).resolve().parents[2]
SECRETS = [secret for _, _, secret in SAMPLES]
CONTROLS = ["\x1b]0;pwned-title\x07", "\x1b[2J", "\x1b]8;;http://evil.example/\x1b\\", "\x9b31m", "\x07", "\r"]
QUESTION_SECRET = "sk-ant-api03-QuestionTypedSecret0123456789"


def _log(path: Path) -> Path:
    lines = [f"2026-11-30 12:00:{i:02d} ERROR request failed: {text}" for i, (_, text, _) in enumerate(SAMPLES)]
    lines += [f"2026-11-30 12:01:00 ERROR terminal {c}junk" for c in CONTROLS]
    path.write_text("\n".join(lines) + "\n")
    return path


def _leaks(text: str) -> list[str]:
    found = [s for s in SECRETS + [QUESTION_SECRET.split("-", 3)[-1]] if s in text]
    found += [repr(c) for c in ("\x1b", "\x07", "\x9b") if c in text]
    return found


async def test_secrets_reach_no_model_request_transcript_diagnosis_or_renderer(tmp_path):
    log = _log(tmp_path / "server.log")
    agents = write_agents(tmp_path / "agents", {}, lead_tools=("read_file",))
    requests: list[str] = []

    def lead(req):
        requests.append(json.dumps(req.model_dump(mode="json")))
        turn = sum(1 for m in req.messages if m.role == "assistant")
        if turn == 0:
            return respond(call("read_file", path=str(log)))
        seen = req.messages[-1].content[0].content  # what the model was shown: it echoes all of it, and worse
        cause = {"title": "log says " + seen[:3000], "explanation": seen + " " + SAMPLES[0][1] + " " + QUESTION_SECRET,
                 "confidence": 0.5, "evidence": ["ev-0.1"]}
        return respond(call("submit_diagnosis", verdict="verdict " + SAMPLES[8][1] + CONTROLS[0], causes=[cause]))

    path = tmp_path / "run.jsonl"
    result = await investigate(f"why slow? my key is {QUESTION_SECRET} \x1b]0;t\x07", backend=DoublesBackend({"lead": FunctionModel(lead)}),
                               agents_dirs=[agents], registry=default_registry(), transcript=path)
    assert result.status == "ok", result.error
    assert len(requests) == 2, requests[2][-1500:]
    for req in requests:
        assert not _leaks(req), _leaks(req)
    assert not _leaks(path.read_text())
    d = result.diagnosis
    assert not _leaks(d.model_dump_json())
    buf = io.StringIO()
    render_terminal(d, Console(file=buf, width=200, no_color=True))
    for out in (buf.getvalue(), to_markdown(d), render_html(d, result.events)):
        assert not _leaks(out), _leaks(out)
    assert "[REDACTED]" in d.model_dump_json()


def _cli(*args, cwd):
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO), "XDG_STATE_HOME": str(cwd / "state")}
    env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          errors="surrogateescape", cwd=cwd, env=env, timeout=300)


@pytest.mark.slow
def test_offline_investigation_cli_prints_and_writes_no_secret(tmp_path):
    log = _log(tmp_path / "server.log")
    t = tmp_path / "run.jsonl"
    proc = _cli(f"why is decode slow {QUESTION_SECRET}", "--offline", "--no-progress", "--log", str(log),
                "--transcript", str(t), "--report", str(tmp_path / "r.html"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for text in (proc.stdout, proc.stderr, t.read_text(), (tmp_path / "r.html").read_text()):
        assert not _leaks(text), _leaks(text)
    j = _cli("replay", str(t), "--json", cwd=tmp_path)
    assert j.returncode == 0 and not _leaks(j.stdout)
    json.loads(j.stdout)
    md = _cli("report", str(t), "-o", str(tmp_path / "r.md"), cwd=tmp_path)
    assert md.returncode == 0 and not _leaks((tmp_path / "r.md").read_text())
    shown = _cli("show", str(t), cwd=tmp_path)
    assert shown.returncode == 0 and not _leaks(shown.stdout)
    probe = _cli("probe", "--log", str(log), cwd=tmp_path)
    assert not _leaks(probe.stdout + probe.stderr), _leaks(probe.stdout)
