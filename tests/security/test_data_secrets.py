"""Issue 23: planted secrets of 35+ formats, in every place the tool reads, reach no output.

Places read: a server log (read_file, log_scan, engine_config's log lines), a running process's command line (`ps
auxww`, `/proc/PID/cmdline` with its NUL separators, engine_config's flags) and its environment under allowlisted
names (VLLM_*, TORCH_*: engine_config). The process is real (a script named `vllm`, so the engine probe finds it);
the host is this machine. The model is a double that echoes everything it was shown into its diagnosis (the worst
case). Outputs counted: every prompt to the model, the transcript, the diagnosis (JSON, terminal, Markdown, HTML),
and the CLI's stdout for `replay --json`, `show` and `report -o .md/.html`. Target: 0 everywhere.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from orchestrator.api import investigate
from orchestrator.models.doubles import DoublesBackend, FunctionModel, call, respond
from orchestrator.redact import redact
from orchestrator.render.diagnosis import render_terminal, to_markdown
from orchestrator.render.html import render_html
from orchestrator.tools.registry import default_registry
from security_corpus import SAMPLES
from support.cli import investigate as cli
from support.core import write_agents

# --*-password / --*-secret / --*-token / --*-key flag spellings, each as `--x value` and `--x=value`
FLAGS = ["--password", "--db-password", "--redis-password", "--admin-token", "--auth-token", "--api-key",
         "--client-secret", "--secret", "--token", "--private-key", "--access-key", "--ldap-passwd", "--license-key",
         "--hf-token", "--webhook-secret", "--ssl-keyfile-password", "--passphrase"]
FLAG_SECRETS = {f"{flag}{sep}": f"Fl{i}{j}gS3cr3tV{'al' * (i % 3)}ue{j}" for i, flag in enumerate(FLAGS)
                for j, sep in enumerate((" ", "="))}
# secret values under environment names the probe allowlists (formats that have no name to give them away)
ENV = {"VLLM_EXTRA_REDIS": "redis://:EnvRedisPw0rd@cache:6379/0",
       "VLLM_NOTIFY": "https://hooks.slack.com/services/T024BE7LD/B01ABCDEF23/EnvSlackHook9Secret",
       "VLLM_MAIL": "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",
       "TORCH_BOT": "123456789:AAEnvTelegramCH1vGWJxfSeofSAs0K5PAL",
       "TORCH_AGE": "AGE-SECRET-KEY-1QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE",
       "VLLM_DBX": "dapi0123456789abcdef0123456789abcdef",
       "TORCH_HEXTOKEN": "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a3928",
       "VLLM_RANDOM": "q8Xz2LmN4vB7kR1tY9wE3uI6oP0aSdFgHj"}
ENV_SECRETS = {"EnvRedisPw0rd", "EnvSlackHook9Secret", "EnvGridL2iGABf9DHoTf09kqeF8tAmbihYzrnopKc1s",
               "AAEnvTelegramCH1vGWJxfSeofSAs0K5PAL", "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE",
               "0123456789abcdef0123456789abcdef", "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a3928",
               "q8Xz2LmN4vB7kR1tY9wE3uI6oP0aSdFgHj"}
LOG_SECRETS = {secret for _, _, secret in SAMPLES}
SECRETS = LOG_SECRETS | set(FLAG_SECRETS.values()) | ENV_SECRETS


def test_the_plant_has_at_least_35_formats_and_each_is_redacted_alone():
    formats = {name for name, _, _ in SAMPLES}
    assert len(SAMPLES) >= 35 and len(formats) >= 25
    for name, text, secret in SAMPLES:
        assert secret not in redact(text), name
    for flag, value in FLAG_SECRETS.items():
        assert value not in redact(f"server {flag}{value} --port 8000"), flag
        assert value not in redact(f"server\0{flag.strip().rstrip('=')}\0{value}\0--port"), flag
    for name, value in ENV.items():
        assert not [s for s in ENV_SECRETS if s in redact(f"{name}={value}")], name


def _leaks(text: str) -> list[str]:
    return sorted(s for s in SECRETS if s in text)


@pytest.fixture
def engine(tmp_path):
    """A running process named like vLLM, its command line full of secret flags, its environment of secret values."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "vllm"
    script.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(300)\n")
    script.chmod(0o755)
    argv = [str(script), "serve", "/models/llama", "--port", "18765"]
    for flag, value in FLAG_SECRETS.items():
        argv += [flag.strip() + "=" + value] if flag.endswith("=") else [flag.strip(), value]
    proc = subprocess.Popen(argv, env={"PATH": os.environ["PATH"], **ENV,
                                                 # the probe of this test session sees only its own processes
                                                 "INVESTIGATE_STAGED_TAG": os.environ["INVESTIGATE_STAGED_TAG"]}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    cmdline = Path(f"/proc/{proc.pid}/cmdline")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and b"serve" not in cmdline.read_bytes():
        time.sleep(0.05)
    yield proc
    proc.kill()
    proc.wait()


async def test_planted_secrets_reach_no_prompt_transcript_diagnosis_or_report(tmp_path, engine):
    log = tmp_path / "server.log"
    log.write_text("".join(f"2026-11-30 12:00:{i % 60:02d} ERROR request failed: {text}\n"
                           for i, (_, text, _) in enumerate(SAMPLES))
                   + f"INFO non-default args: {json.dumps({k.strip('-= '): v for k, v in FLAG_SECRETS.items()})}\n")
    agents = write_agents(tmp_path / "agents", {}, lead_tools=("read_file", "log_scan", "shell", "engine_config"))
    requests: list[str] = []

    def lead(req):
        requests.append(json.dumps(req.model_dump(mode="json")))
        if not any(m.role == "assistant" for m in req.messages):
            return respond(call("read_file", path=str(log)), call("log_scan", paths=[str(log)]),
                           call("shell", command="ps auxww"), call("read_file", path=f"/proc/{engine.pid}/cmdline"),
                           call("engine_config", metrics=False))
        seen = "\n".join(b.content for b in req.messages[-1].content)  # it echoes all it was shown
        cause = {"title": "what I saw", "explanation": seen, "confidence": 0.5, "evidence": ["ev-0.1"]}
        return respond(call("submit_diagnosis", verdict=seen[:4000], causes=[cause]))

    path = tmp_path / "run.jsonl"
    result = await investigate("why slow?", backend=DoublesBackend({"lead": FunctionModel(lead)}),
                               agents_dirs=[agents], registry=default_registry(), transcript=path)
    assert result.status == "ok", result.error
    transcript = path.read_text()
    # the plant reached the tools: each place was read (else a 0 below would prove nothing)
    assert f"{engine.pid}" in transcript and "hooks.slack.com" in transcript and "--admin-token" in transcript
    assert "VLLM_RANDOM" in transcript, "engine_config did not return the allowlisted environment"
    buf = io.StringIO()
    render_terminal(result.diagnosis, Console(file=buf, width=200, no_color=True))
    outputs = {"prompts": "\n".join(requests), "transcript": transcript,
               "diagnosis": result.diagnosis.model_dump_json(), "terminal": buf.getvalue(),
               "markdown": to_markdown(result.diagnosis), "html": render_html(result.diagnosis, result.events)}
    for cmd in (("replay", path, "--json"), ("show", path), ("report", path, "-o", tmp_path / "r.md"),
                ("report", path, "-o", tmp_path / "r.html")):
        proc = cli(*cmd, tmp_path=tmp_path)
        assert proc.returncode == 0, proc.stderr[-1500:]
        outputs[" ".join(map(str, cmd[:1] + cmd[2:3]))] = proc.stdout + proc.stderr
    outputs["report md file"] = (tmp_path / "r.md").read_text()
    outputs["report html file"] = (tmp_path / "r.html").read_text()
    leaked = {where: _leaks(text) for where, text in outputs.items()}
    assert all(not v for v in leaked.values()), {w: (len(v), v[:5]) for w, v in leaked.items() if v}
