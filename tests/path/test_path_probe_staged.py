"""The path probe end to end over a real sshd on a staged host: processes found by their command lines (a real
LiteLLM-looking service, engines and proxies in the staged /proc with a Kubernetes cgroup), their config files at
the standard places, the systemd unit, and the orchestrator's own tools (fake kubectl, docker, systemctl on PATH,
answering from staged files) read into layers and facts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from orchestrator.hosts.ssh import SshHost
from orchestrator.prongs.path.probe import collect_path
from orchestrator.settings import Settings
from support.sshd import start_sshd
from support.stagers import stage

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")

POD = {"kind": "List", "items": [{
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "vllm-0", "namespace": "llm", "uid": "u-1"},
    "spec": {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.11.0",
                             "env": [{"name": "HF_TOKEN", "value": "hf_abcdefghijklmnop"},
                                     {"name": "OMP_NUM_THREADS", "value": "1"}],
                             "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}}}]},
    "status": {"containerStatuses": [{"name": "vllm", "containerID": "containerd://9f2c4e1a7b3d", "restartCount": 2,
                                      "ready": True}]}}]}
UNIT = "[Service]\nExecStart=/usr/local/bin/ollama serve\nEnvironment=\"OLLAMA_NUM_PARALLEL=2\"\n"
SPEC = {
    "gpu": {"model": "h100", "count": 1},
    "packages": {},
    "files": {"/etc/haproxy/haproxy.cfg": "backend b\n    server s1 127.0.0.1:8000 maxconn 4\n",
              "/etc/litellm/config.yaml": "model_list:\n  - model_name: m\n    litellm_params:\n"
                                          "      model: hosted_vllm/m\n      tpm: 1000\ngeneral_settings:\n"
                                          "  master_key: sk-stagedMasterKey123456\n",
              "/etc/systemd/system/ollama.service": UNIT},
    "commands": {"kubectl": [{"args": r"get (pod|pods)\b.*-o json", "stdout": json.dumps(POD)},
                             {"args": "get events", "stdout": "LAST SEEN TYPE REASON OBJECT MESSAGE\n1m Warning "
                                                              "Unhealthy pod/vllm-0 Readiness probe failed: timeout\n"}],
                 "systemctl": [{"args": "show ollama", "stdout": "LoadState=loaded\nNRestarts=5\n"}]},
    "services": [{"command": "litellm --config /etc/litellm/config.yaml --port {port}", "paths": {"/health": "ok"}}],
    "account": {"cpus": 8, "gpus": [{"busy": [50]}],
                "cgroup": {"version": 2, "path": "/kubepods.slice/kubepods-podu_1.slice/cri-containerd-9f2c4e1a7b3d.scope"},
                "processes": [{"argv": ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"],
                               "gpus": [0]},
                              {"argv": ["/usr/sbin/haproxy", "-f", "/etc/haproxy/haproxy.cfg"], "comm": "haproxy"},
                              {"argv": ["/usr/local/bin/ollama", "serve"], "comm": "ollama"}]},
}


async def test_layers_found_over_sshd(tmp_path: Path):
    ctx = stage(Path(__file__).parent, tmp_path, SPEC)
    try:
        sshd = start_sshd(tmp_path, env=ctx.env)
        try:
            host = await SshHost(sshd.target(), Settings()).connect()
            try:
                rep = await collect_path(host, timeout_s=60)
            finally:
                await host.aclose()
        finally:
            sshd.stop()
    finally:
        ctx.close()
    assert rep.available, rep.reason
    facts = rep.facts()
    dumped = rep.model_dump_json()
    assert "hf_abcdefghijklmnop" not in dumped and "sk-stagedMasterKey123456" not in dumped
    assert {"vllm", "haproxy", "ollama", "litellm"} <= set(str(facts["path.processes"]).split(","))
    assert facts["path.haproxy.server_maxconn"] == 4
    assert facts["path.haproxy.server_maxconn_source"].startswith("/etc/haproxy/haproxy.cfg:2")
    assert facts["path.litellm.tpm_limit"] == 1000 and facts["path.litellm.provider"] == "hosted_vllm"
    assert facts["path.systemd.env.OLLAMA_NUM_PARALLEL"] == 2
    assert facts["path.systemd.NRestarts"] == 5
    # the pod is found by the container id in the engine's cgroup, its events by the pod's name
    assert facts["path.k8s.pod"] == "vllm-0" and facts["path.k8s.restarts"] == 2
    assert facts["path.k8s.readiness_timeout_s"] == 1 and facts["path.k8s.readiness_timeout_s_default"] == 1
    assert facts["path.k8s.events.readiness_probe_failed"] == 1
    assert facts["path.k8s.env.OMP_NUM_THREADS"] == 1 and "path.k8s.env.HF_TOKEN" not in facts
