"""The settings audit's environment allowlist (issue 27): 30 secret-looking variables planted beside known settings in a
served process's environment, investigated over a real sshd: the known settings reach the audit, none of the secrets
reach the transcript, the diagnosis JSON or the HTML report."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.api import investigate
from orchestrator.events import ToolResult
from orchestrator.knowledge import settings as kb
from orchestrator.prongs.settings_audit.models import SettingsReport
from orchestrator.settings import Settings
from support.stage_engine import start_engines
from support.staged_host import stage_host

needs_sshd = pytest.mark.skipif(shutil.which("sshd") is None and not os.path.exists("/usr/sbin/sshd"),
                                reason="OpenSSH sshd not installed")

# Names are what deployments really carry; several are known settings (VLLM_API_KEY, S3_SECRET_ACCESS_KEY,
# S3_ACCESS_KEY_ID are in vLLM's envs.py), some known setting names carry a credential in their value.
SECRETS = {
    "HF_TOKEN": "hf_PlantedSecretValue000000000000001",
    "HUGGING_FACE_HUB_TOKEN": "hf_PlantedSecretValue000000000000002",
    "VLLM_API_KEY": "planted-secret-value-03-vllm-api-key",
    "S3_SECRET_ACCESS_KEY": "planted-secret-value-04-s3-secret",
    "S3_ACCESS_KEY_ID": "AKIAPLANTEDSECRET0005",
    "AWS_SECRET_ACCESS_KEY": "planted-secret-value-06-aws-secret",
    "AWS_SESSION_TOKEN": "planted-secret-value-07-aws-session",
    "OPENAI_API_KEY": "sk-plantedSecretValue08openai",
    "ANTHROPIC_API_KEY": "sk-ant-plantedSecretValue09",
    "WANDB_API_KEY": "planted-secret-value-10-wandb",
    "GITHUB_TOKEN": "ghp_plantedSecretValue11github",
    "DB_PASSWORD": "planted-secret-value-12-db",
    "REDIS_PASSWORD": "planted-secret-value-13-redis",
    "POSTGRES_PASSWD": "planted-secret-value-14-pg",
    "SGLANG_API_KEY": "planted-secret-value-15-sglang",
    "SGL_ADMIN_TOKEN": "planted-secret-value-16-sgl",
    "TRTLLM_AUTH_HEADER": "planted-secret-value-17-trtllm",
    "NCCL_IB_PKEY_SECRET": "planted-secret-value-18-nccl",
    "TORCH_PRIVATE_KEY": "planted-secret-value-19-torch",
    "CUDA_CREDENTIALS": "planted-secret-value-20-cuda",
    "SLACK_BOT_TOKEN": "xoxb-planted-secret-value-21",
    "JWT_SIGNING_KEY": "planted-secret-value-22-jwt",
    "SESSION_COOKIE": "planted-secret-value-23-cookie",
    "OAUTH_CLIENT_SECRET": "planted-secret-value-24-oauth",
    "MLFLOW_TRACKING_PASSWORD": "planted-secret-value-25-mlflow",
    "AZURE_OPENAI_KEY": "planted-secret-value-26-azure",
    "GCP_SERVICE_ACCOUNT": "-----BEGIN PRIVATE KEY-----planted27",
    # known setting names whose values are credentials: dropped for the value
    "VLLM_USAGE_STATS_SERVER": "https://user:plantedSecret28@stats.example.com",
    "VLLM_CACHE_ROOT": "hf_PlantedSecretValue000000000000029",
    "NCCL_SOCKET_IFNAME": "eyJplantedSecretValue30xxxxxxx.payload.sig",
}
KNOWN = {"CUDA_LAUNCH_BLOCKING": "1", "NCCL_P2P_DISABLE": "1", "VLLM_BATCH_INVARIANT": "1",
         "TORCH_NCCL_BLOCKING_WAIT": "1"}
UNKNOWN_HARMLESS = {"MY_APP_MODE": "blue-green-rollout-marker"}
CONFIG_SECRETS = ("plantedConfigApiKeyValue31", "plantedConfigHfTokenValue32", "hf_plantedConfigValue33xxxxxx")
"""Not secret-looking and not a known setting: the allowlist drops it all the same."""


def test_thirty_secrets_are_planted_and_the_known_settings_are_in_the_allowlist():
    assert len(SECRETS) == 30
    names = set(kb.env_names())
    assert set(KNOWN) <= names
    assert {"VLLM_API_KEY", "S3_SECRET_ACCESS_KEY", "VLLM_USAGE_STATS_SERVER"} <= names  # known, yet never read
    assert "MY_APP_MODE" not in names


@needs_sshd
async def test_secret_looking_variables_never_leave_the_host(tmp_path, sshd_factory):
    staged = stage_host(tmp_path, variant="h200")
    # the config file the command line names carries credentials too: masked on the host, its settings still read
    cfg = staged.root / "vllm.yaml"
    cfg.write_text(f"cpu-offload-gb: 4\napi-key: {CONFIG_SECRETS[0]}\nhf_token: \"{CONFIG_SECRETS[1]}\"\n"
                   f"served-model-name: {CONFIG_SECRETS[2]}\n")
    started = start_engines(staged, [{"command": f"vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 64 "
                                                 f"--config {cfg}",
                                      "env": {**SECRETS, **KNOWN, **UNKNOWN_HARMLESS}}])
    try:
        sshd = sshd_factory(env=staged.env)
        path = tmp_path / "run.jsonl"
        result = await investigate("why is inter-token latency high?", host=sshd.alias,
                                   ssh_config=str(sshd.ssh_config), offline=True, transcript=path,
                                   settings=Settings(power_sample_s=0.3))
    finally:
        started.stop()
    assert result.status == "ok", result.error
    recorded = [e for e in result.events if isinstance(e, ToolResult) and e.tool == "settings_audit"]
    assert recorded and not recorded[0].is_error
    report = SettingsReport.model_validate(recorded[0].data)
    env = report.processes[0].env
    # the known settings reach the audit; every secret and the unknown variable were dropped on the host (the staged
    # host's own TORCHINDUCTOR_CACHE_DIR, a known setting, comes along)
    assert KNOWN.items() <= env.items() and set(env) <= set(kb.env_names())
    assert not set(env) & (set(SECRETS) | set(UNKNOWN_HARMLESS))
    from orchestrator.render.html import render_html

    page = render_html(result.diagnosis, result.events)
    # the report's table lists every non-default, with its default and the effect where curated
    assert 'id="settings"' in page and "<td>CUDA_LAUNCH_BLOCKING</td><td>1</td><td>0 (13)</td>" in page
    assert "<td>NCCL_P2P_DISABLE</td><td>1</td><td>unset" in page
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    show = subprocess.run([sys.executable, "-m", "orchestrator.cli", "show", str(path)], capture_output=True,
                          text=True, env=env, timeout=60)
    assert show.returncode == 0, show.stderr
    assert "Non-default settings" in show.stdout and "TORCH_NCCL_BLOCKING_WAIT" in show.stdout
    texts = {"transcript": path.read_text(), "diagnosis": result.diagnosis.model_dump_json(), "report": page,
             "show": show.stdout}
    words = texts["diagnosis"]
    assert "CUDA_LAUNCH_BLOCKING=1" in words and "VLLM_BATCH_INVARIANT=1" in words
    assert "--cpu-offload-gb=4" in words  # the config file's setting, read after masking
    for where, text in texts.items():
        for value in CONFIG_SECRETS:
            assert value not in text, f"a config file credential reached the {where}"
        for name, value in {**SECRETS, **UNKNOWN_HARMLESS}.items():
            assert value not in text, f"{name}'s value reached the {where}"
            assert value[:16] not in text, f"part of {name}'s value reached the {where}"
        for name in UNKNOWN_HARMLESS:
            assert name not in text, f"{name} reached the {where}"
