"""Whose a GPU process is (prongs/node_health/view.py, knowledge/workloads.yaml): the user's own engine, framework or
container is never "another workload"; a second workload needs evidence that there are two (the user's engine
beside a process not part of it, or the tool's own measurement sharing the GPU), and the finding names it."""

from __future__ import annotations

from typing import Any

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.prongs.node_health.view import namespace_gaps, other_workloads, owner
from orchestrator.analysis.rules import other_workloads as other_workload_findings
from orchestrator.evidence import Evidence
from orchestrator.knowledge.workloads import engine_of
from orchestrator.prongs.node_health.models import GpuHealth, GpuProcess, NodeHealth, ServingProcess

HOST = "root@gpu-node"


def _node(gpu_procs: dict[int, list[tuple[int, str]]], procs: list[dict[str, Any]]) -> NodeHealth:
    gpus = [GpuHealth(index=i, name="NVIDIA H100 80GB HBM3", bus_id=f"00000000:{0x18 + i:02X}:00.0",
                      utilization_pct=95.0, power_draw_w=640.0, power_enforced_w=700.0,
                      processes=[GpuProcess(pid=pid, name=name, used_memory_mib=70000) for pid, name in ps])
            for i, ps in sorted(gpu_procs.items())]
    return NodeHealth(host=HOST, gpus=gpus, processes=[ServingProcess.model_validate(p) for p in procs])


def _view(node: NodeHealth, *more: Evidence) -> EvidenceView:
    return EvidenceView([Evidence(id="ev-3.1", agent_id="node", tool="node_health", host=HOST, text="",
                                  data=node.model_dump(mode="json")), *more], None)


def test_engine_and_framework_titles_are_read_from_the_engines_own_names():
    for name in ("VLLM::EngineCore", "VLLM::Worker_TP0", "VLLM::EngineCor", "sglang::scheduler_DP0_TP0",
                 "ray::RayWorkerWrapper", "/usr/local/bin/llama-server", "/usr/bin/ollama", "text-generation",
                 "/opt/tritonserver/backends/tensorrtllm/trtllmExecutorWorker", "trtllm-serve"):
        assert engine_of(name) is not None, name
    for name in ("python3", "/usr/bin/python3.11", "train.py", "jupyter-kernel", None):
        assert engine_of(name) is None, name


def test_only_the_users_engine_on_the_gpus_is_never_another_workload():
    # a Ray executor: the API server is the engine the probe found, its GPU workers are Ray actors (not its children)
    ray = _node({0: [(11, "ray::RayWorkerWrapper")], 1: [(12, "ray::RayWorkerWrapper")]},
                [{"pid": 10, "kind": "vllm", "comm": "vllm"},
                 {"pid": 11, "comm": "ray::RayWorkerW", "on_gpu": True}, {"pid": 12, "comm": "ray::RayWorkerW",
                                                                         "on_gpu": True}])
    # a container: nvidia-smi lists host PIDs that this host's ps cannot see, whatever their names
    hidden = _node({0: [(4195304, "VLLM::EngineCore")], 1: [(4195305, "")]},
                   [{"pid": 4195304, "visible": False, "on_gpu": True}, {"pid": 4195305, "visible": False,
                                                                       "on_gpu": True}])
    # a python3 running the user's transformers job, alone on the host: nothing says there is a second workload
    alone = _node({0: [(21, "python3")]}, [{"pid": 21, "comm": "python3", "on_gpu": True}])
    for node in (ray, hidden, alone):
        assert other_workloads(_view(node)) == []
        assert other_workload_findings(_view(node)) == []
    assert owner(hidden.gpus[1].processes[0], hidden)[0] == "namespace"
    assert owner(hidden.gpus[0].processes[0], hidden) == ("engine", "vLLM")


def test_a_pid_this_host_cannot_see_is_said_to_be_in_another_pid_namespace():
    node = _node({0: [(4195304, "/opt/conda/bin/python3.11")], 1: [(4195305, "/opt/conda/bin/python3.11")]},
                 [{"pid": 4195304, "visible": False, "on_gpu": True}, {"pid": 4195305, "visible": False,
                                                                     "on_gpu": True}])
    (what, why), = namespace_gaps(_view(node))
    assert "pids 4195304, 4195305 on GPUs 0, 1" in what and "python3.11" in what
    assert "another PID namespace (a container)" in why and "taken as the deployment's own" in why
    facts = node.facts()
    assert facts["gpu.0.processes.other_count"] == 0  # not "other processes share a serving GPU"


def test_a_process_beside_the_users_engine_is_another_workload_and_the_finding_says_why():
    node = _node({0: [(31, "VLLM::Worker_TP0")], 1: [(32, "VLLM::Worker_TP1")], 2: [(41, "python3")]},
                 [{"pid": 30, "kind": "vllm", "comm": "vllm"}, {"pid": 31, "kind": "vllm", "on_gpu": True},
                  {"pid": 32, "kind": "vllm", "on_gpu": True}, {"pid": 41, "comm": "python3", "on_gpu": True}])
    (f,) = other_workload_findings(_view(node))
    assert f.title == "Another workload holds GPU 2: python3"
    assert "the serving deployment (vLLM on GPUs 0, 1) runs on this host and none of these processes is part of " \
           "it" in f.claim
    assert node.facts()["gpu.2.processes.other_count"] == 0  # held alone: not "beside the serving engine"


def test_a_process_on_the_gpu_while_the_tools_own_measurement_ran_is_another_workload():
    node = _node({0: [(21, "python3")]}, [{"pid": 21, "comm": "python3", "on_gpu": True}])
    sweep = Evidence(id="ev-4.3", agent_id="tc", tool="gemm_benchmark", host=HOST, text="", data={
        "kind": "gemm_sweep", "host": HOST, "available": False, "reason": "no GPU", "shared_gpu": True,
        "gpu_activity": {"others": [{"gpu_index": 0, "pid": 21, "name": "python3", "used_memory_mib": 1002}],
                         "shared_gpu": True}})
    (f,) = other_workload_findings(_view(node, sweep))
    assert "it held the GPU while this tool's own measurement ran (ev-4.3)" in f.claim
    assert f.evidence[:2] == ["ev-3.1", "ev-4.3"]


def test_a_measurement_beside_the_users_engine_says_so_and_not_another_workload():
    from orchestrator.prongs.tensor_core_specs.models import GemmSweep
    from orchestrator.prongs.tensor_core_specs.rules import shared_gpu_finding

    def sweep(name: str) -> GemmSweep:
        return GemmSweep.model_validate({"host": HOST, "available": False, "shared_gpu": True, "gpu_activity": {
            "others": [{"gpu_index": 0, "pid": 11, "name": name, "used_memory_mib": 70000}], "shared_gpu": True}})

    (own,) = shared_gpu_finding("ev-4.3", sweep("VLLM::Worker_TP0"), "GEMM sweep")
    (other,) = shared_gpu_finding("ev-4.3", sweep("python3"), "GEMM sweep")
    assert own.title == "The GEMM sweep shared the GPU with the serving engine"
    assert other.title == "The GEMM sweep shared the GPU with another workload"
