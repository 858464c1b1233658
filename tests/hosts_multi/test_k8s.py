"""Kubernetes behind the Host seam, tested as far as a machine without a cluster allows: the kubectl command lines,
the parsing of `kubectl get pods -o json` (data/kubectl-get-pods.json, see data/README.md), and a whole
investigation through a stand-in `kubectl` (data/kubectl) that runs `exec`'s argv on this machine. No real
cluster, kubelet or container runtime is exercised here (said in the README)."""

from __future__ import annotations

import dataclasses
import json
import uuid
from pathlib import Path

import pytest
from support.fleet import SICK
from support.staged_host import VARIANTS, stage_host

from orchestrator.api import InputError, investigate
from orchestrator.events import ToolResult
from orchestrator.hosts.errors import HostConfigError
from orchestrator.hosts.k8s import K8sHost, get_pods_argv, parse_pods, pod_problem
from orchestrator.settings import Settings

DATA = Path(__file__).parent / "data"
PODS = (DATA / "kubectl-get-pods.json").read_text()


def test_kubectl_command_lines():
    assert get_pods_argv("app=vllm,tier in (decode)", "inference") == [
        "kubectl", "get", "pods", "-n", "inference", "-l", "app=vllm,tier in (decode)", "-o", "json"]
    assert get_pods_argv("app=vllm", None, "prod")[:3] == ["kubectl", "--context", "prod"]
    h = K8sHost("vllm-decode-0", namespace="inference", container="vllm", context="prod")
    assert h.exec_argv(["nvidia-smi", "-q", "-x"], 60) == [
        "kubectl", "--context", "prod", "exec", "-n", "inference", "vllm-decode-0", "-c", "vllm", "--",
        "timeout", "-k", "2", "60", "nvidia-smi", "-q", "-x"]
    assert "-i" in K8sHost("p").exec_argv(["python3", "-"], 10, stdin=True)
    for bad in ("--all-namespaces", "app=vllm;rm -rf /", "$(id)"):
        with pytest.raises(HostConfigError):
            get_pods_argv(bad)
    with pytest.raises(HostConfigError):
        K8sHost("Pod_With_Caps")
    with pytest.raises(HostConfigError):
        get_pods_argv("app=vllm", "--kubeconfig=/x")


def test_parse_kubectl_get_pods_json():
    pods = {p["name"]: p for p in parse_pods(PODS)}
    assert list(pods) == [f"vllm-decode-{i}" for i in range(5)]
    p0 = pods["vllm-decode-0"]
    assert (p0["namespace"], p0["node"], p0["container"], p0["role"], p0["gpus"], p0["ready"]) == (
        "inference", "gpu-node-00", "vllm", "decode", 8, True)
    assert pod_problem(p0) is None
    assert "CrashLoopBackOff" in pod_problem(pods["vllm-decode-3"])
    assert "Pending" in pod_problem(pods["vllm-decode-4"]) and pods["vllm-decode-4"]["node"] is None
    metrics = {p["name"]: p for p in parse_pods(PODS, container="metrics")}
    assert metrics["vllm-decode-3"]["ready"] is True and metrics["vllm-decode-3"]["gpus"] == 0
    assert "no container 'nope'" in pod_problem(parse_pods(PODS, container="nope")[0])
    one = json.loads(PODS)["items"][0]  # `kubectl get pod NAME -o json` prints the Pod itself
    assert [p["name"] for p in parse_pods(json.dumps(one))] == ["vllm-decode-0"]


@pytest.fixture
def cluster_standin(tmp_path, monkeypatch):
    monkeypatch.setitem(VARIANTS, SICK, dataclasses.replace(VARIANTS["rtx-pro-6000x8"], power_limit_w=450.0))
    healthy = stage_host(tmp_path / "healthy")
    sick = stage_host(tmp_path / "sick", variant=SICK)
    healthy.env["INVESTIGATE_STAGED_TAG"] = f"k8s-{uuid.uuid4().hex}"
    disp = tmp_path / "dispatch"
    disp.mkdir()
    (disp / "nvidia-smi").write_text(f'#!/bin/sh\ncase "$KUBE_POD" in vllm-decode-1) exec {sick.bin}/nvidia-smi "$@";; '
                                     f'*) exec {healthy.bin}/nvidia-smi "$@";; esac\n')
    (disp / "nvidia-smi").chmod(0o755)
    for k, v in healthy.env.items():
        monkeypatch.setenv(k, f"{DATA}:{disp}:{v}" if k == "PATH" else v)
    log = tmp_path / "kubectl.log"
    monkeypatch.setenv("FAKE_KUBECTL_LOG", str(log))
    return log


async def test_investigation_through_kubectl_exec_names_the_odd_pod(cluster_standin, tmp_path):
    result = await investigate("why is one decode replica slower?", k8s="app.kubernetes.io/name=vllm",
                               k8s_namespace="inference", k8s_container="vllm", offline=True, transcript=False,
                               settings=Settings(power_sample_s=0.3))
    assert result.status == "ok", result.error
    d = result.diagnosis
    probed = {e.host for e in result.events if isinstance(e, ToolResult) and e.tool == "node_health" and not e.is_error}
    assert probed == {"vllm-decode-0", "vllm-decode-1", "vllm-decode-2"}
    gaps = {g.what: g.why for g in d.gaps}
    assert "CrashLoopBackOff" in gaps["host vllm-decode-3 (decode)"] and "Pending" in gaps["host vllm-decode-4 (decode)"]
    (t,) = d.fleet
    assert t.group == "decode" and [o.host for o in t.outliers] == ["vllm-decode-1"]
    calls = [json.loads(line) for line in cluster_standin.read_text().splitlines()]
    execs = [c for c in calls if c[0] == "exec"]
    assert execs and all(c[1:3] == ["-n", "inference"] and c[4:6] == ["-c", "vllm"] and "--" in c for c in execs)
    assert {c[3] for c in execs} == {"vllm-decode-0", "vllm-decode-1", "vllm-decode-2"}


async def test_no_matching_pod_is_bad_input(cluster_standin):
    with pytest.raises(InputError, match="no pod matches"):
        await investigate("q", k8s="app=vllm", k8s_namespace="elsewhere", offline=True, transcript=False)
