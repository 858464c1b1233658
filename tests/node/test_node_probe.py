"""The node probe end to end on staged hosts (real LocalHost; real processes; the staged commands and host files)."""

from __future__ import annotations

import json

from orchestrator.prongs.node_health.probe import collect_node_health, health_from_output, node_params
from orchestrator.probes.runner import run_script
from orchestrator.render.summaries import summarize_node

SECRETS = {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz012345", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
           "VLLM_API_KEY": "token-abc123-serving", "NCCL_SECRET_SAUCE": "s3cr3t-value-xyz"}


async def test_healthy_h200x8_under_load(node_host):
    staged, host = node_host({"count": 8, "nvlink": {"links": 18}, "topo": {"cpus": ["0-47", "48-95"]},
                              "processes": [{"gpus": list(range(8)), "kind": "vllm",
                                             "env": {"NCCL_DEBUG": "INFO", "CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}}]})
    node = await collect_node_health(host)
    assert node.available, node.reason
    assert len(node.gpus) == 8 and node.gpus[3].bus_id == "00000000:5D:00.0"
    assert node.kernel_log_source == "dmesg" and node.xids == []
    f = node.facts()
    assert f["host.gpu_count"] == 8 and f["host.nvlink"] is True and f["host.nvswitch"] is True
    assert all(f[f"gpu.{i}.processes.other_count"] == 0 for i in range(8))
    assert f["env.NCCL_DEBUG"] == "INFO" and f["host.serving_processes"] == 8  # a worker per GPU
    assert f["gpu.5.nvlink.links_down"] == 0 and f["gpu.5.power.enforced_vs_default"] == 1.0
    assert {g.what for g in node.gaps} == {"lspci -vv", "systemctl is-active nvidia-fabricmanager"}


async def test_restricted_dmesg_is_a_gap_and_journalctl_is_the_fallback(node_host):
    staged, host = node_host({"count": 2, "kernel": {"restricted": True, "journal": True,
                                                     "lines": ["NVRM: Xid (PCI:0000:2a:00): 79, pid=2811, name=python3, GPU has fallen off the bus."]}})
    node = await collect_node_health(host)
    assert node.available
    gap = next(g for g in node.gaps if g.what == "dmesg")
    assert "Operation not permitted" in gap.why and "dmesg_restrict" in gap.why
    assert node.kernel_log_source == "journalctl -k"
    assert [(x.code, x.gpu_index) for x in node.xids] == [(79, 1)]
    assert "kernel:" in node.xids[0].line


async def test_no_readable_kernel_log_at_all_is_gaps_not_an_error(node_host):
    staged, host = node_host({"count": 1, "kernel": {"restricted": True}})
    node = await collect_node_health(host)
    assert node.available and node.kernel_log_source is None
    whats = {g.what for g in node.gaps}
    assert {"dmesg", "journalctl -k -b --no-pager -q", "/var/log/kern.log"} <= whats
    assert node.facts()["host.kernel_log.readable"] is False
    assert "kernel log: not readable" in summarize_node(node)


async def test_kern_log_fallback(node_host):
    staged, host = node_host({"count": 1, "kernel": {"restricted": True, "kern_log": True,
                                                     "lines": ["NVRM: Xid (PCI:0000:18:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0."]}})
    node = await collect_node_health(host)
    assert node.kernel_log_source == "/var/log/kern.log"
    assert [(x.code, x.gpu_index, x.klass) for x in node.xids] == [(48, 0, "memory")]


async def test_serving_env_is_filtered_on_the_host_and_secrets_never_leave(node_host):
    env = {"NCCL_P2P_DISABLE": "1", "NCCL_IB_HCA": "mlx5_0,mlx5_1", "VLLM_ATTENTION_BACKEND": "FLASHINFER",
           "HOME": "/home/svc", "PATH": "/usr/bin:/bin", **SECRETS}
    staged, host = node_host({"count": 2, "processes": [{"gpus": [0, 1], "kind": "vllm", "env": env}]})
    from orchestrator.probes.runner import run_script

    raw = await run_script(host, "python3", "node", {"logs": []})
    text = json.dumps(raw)
    for name, value in SECRETS.items():
        assert value not in text, name
        assert name not in text, name
    assert "/home/svc" not in text  # not allowlisted either
    node = await collect_node_health(host)
    proc = node.processes[0]
    assert proc.kind == "vllm" and proc.comm and proc.env == {"NCCL_P2P_DISABLE": "1", "NCCL_IB_HCA": "mlx5_0,mlx5_1",
                                                "VLLM_ATTENTION_BACKEND": "FLASHINFER"}
    assert proc.env_dropped >= 6
    f = node.facts()
    assert f["env.NCCL_P2P_DISABLE"] == "1"
    dumped = json.dumps(node.model_dump(mode="json")) + summarize_node(node) + json.dumps(f)
    assert not any(v in dumped for v in SECRETS.values())


async def test_faults_show_as_facts(node_host):
    spec = {
        "count": 8, "model": "h100", "driver": "570.172.08", "nvlink": {"gpus": {5: {"down": [2, 7], "crc": {3: 2400}}}},
        "topo": {"cpus": ["0-47", "48-95"]}, "numa_cpus": ["0-47", "48-95"],
        "gpus": {3: {"power_limit_w": 450, "clocks_event": ["sw_power_cap"], "sm_clock_mhz": 1110},
                 1: {"clocks_event": ["hw_slowdown", "hw_thermal_slowdown"], "temperature_c": 91},
                 2: {"ecc": {"volatile_dbe": 2, "aggregate_dbe": 2}, "remapped_rows": {"uncorrectable": 3, "pending": True}},
                 4: {"pcie": {"gen": 1, "width": 4}}, 6: {"persistence": False, "mig": True},
                 7: {"fabric": {"state": "In Progress", "status": "N/A"}}},
        "lspci": {"gpus": {4: {"speed": 2.5, "width": 4}}, "acs": True},
        "rdma": [{"name": "mlx5_0"}], "libibverbs": False, "cmdline": "BOOT_IMAGE=/vmlinuz ro intel_iommu=on",
        "iommu_devices": ["dmar0"], "fabricmanager": "inactive",
        "processes": [{"gpus": list(range(8)), "kind": "vllm", "env": {"NCCL_IB_DISABLE": "1"}},
                      {"gpus": [0], "kind": "other", "name": "python3", "memory_mib": 20480}],
    }
    staged, host = node_host(spec)
    node = await collect_node_health(host)
    f = node.facts()
    assert f["host.driver_version"] == "570.172.08" and f["gpu.0.name"] == "NVIDIA H100 80GB HBM3"
    assert f["gpu.3.power.enforced_limit_w"] == 450 and f["gpu.3.power.default_limit_w"] == 700
    assert f["gpu.3.clocks_event.sw_power_cap"] is True and f["gpu.3.clocks.sm_mhz"] == 1110
    assert f["gpu.1.clocks_event.throttled"] is True and f["gpu.1.temperature_c"] == 91
    assert f["gpu.2.ecc.volatile.dbe"] == 2 and f["gpu.2.remapped_rows.pending"] is True
    assert f["gpu.4.pcie.width_downtrained"] is True and f["gpu.4.pcie.gen_downtrained"] is True
    assert f["gpu.4.pcie.lspci_downgraded"] is True and f["gpu.4.pcie.lspci_gen"] == 1
    assert f["gpu.6.persistence_mode"] is False and f["gpu.6.mig_mode"] == "enabled"
    assert f["gpu.7.fabric.state"] == "In Progress" and f["host.fabricmanager"] == "inactive"
    assert f["gpu.5.nvlink.links_down"] == 2 and f["gpu.5.nvlink.crc_errors"] == 2400
    assert f["gpu.0.processes.other_count"] == 1 and f["gpu.1.processes.other_count"] == 0
    assert "python3" in str(f["gpu.0.processes.other_names"])
    assert f["host.acs_enabled"] is True and f["host.iommu"] == "on" and f["host.rdma_devices"] == 1
    assert f["host.libibverbs"] is False and f["env.NCCL_IB_DISABLE"] == "1"


async def test_numa_misaligned_serving_process(node_host):
    import os

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        import pytest

        pytest.skip("needs two CPUs")
    a, b = str(cpus[0]), str(cpus[-1])
    staged, host = node_host({"count": 2, "topo": {"cpus": [a, b]}, "numa_cpus": [a, b],
                              "processes": [{"gpus": [0], "kind": "sglang", "cpus": [cpus[-1]]},
                                            {"gpus": [1], "kind": "sglang", "cpus": [cpus[-1]]}]})
    node = await collect_node_health(host)
    f = node.facts()
    assert f["gpu.0.numa.process_cpu_overlap"] == 0.0
    assert f["gpu.1.numa.process_cpu_overlap"] == 1.0


def test_node_health_agent_and_the_leads_task():
    from orchestrator.agentdefs import load_agents
    from orchestrator.tools.registry import default_registry

    agents = load_agents()
    node = agents["node-health"]
    assert [s.tool for s in node.plan] == ["node_health"] and "node_health" in node.tools
    default_registry().select(node.tools)  # every tool it names is registered
    lead_tasks = [s.args.get("agent") for s in agents["lead"].plan if s.tool == "task"]
    assert "node-health" in lead_tasks
    assert "node-health" in agents["lead"].prompt


async def test_the_host_reads_nvidia_smi_and_sends_its_health_fields_not_the_xml(node_host):
    """The XML stays on the host (~12 KB per GPU, which a 64-host fleet would parse under one lock here); what it
    sends reads as the XML itself does, read here by the same code."""
    staged, host = node_host({"count": 8, "gpus": {"3": {"power_limit_w": 450}}})
    data = await run_script(host, "python3", "node", node_params(None), isolated=True)
    assert "smi_xml" not in data and "<nvidia_smi_log" not in json.dumps(data)
    assert len(data["smi"]["gpus"]) == 8
    xml = (staged.root / "nodedata" / "nvidia-smi-q.xml")
    from_xml = health_from_output({**data, "smi": None, "smi_xml": xml.read_text()})
    sent = health_from_output(data)
    assert sent.model_dump() == from_xml.model_dump()
    assert sent.gpus[3].power_limit_w == 450 and sent.gpus[2].power_limit_w == 700


async def test_xml_the_host_cannot_read_is_a_gap_naming_why(node_host):
    staged, host = node_host({"count": 1})
    xml = staged.root / "nodedata" / "nvidia-smi-q.xml"
    xml.write_text("<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n\t<gpu id=\"0\">\n\t\t<product_name>NVIDIA H200")
    node = await collect_node_health(host)
    assert not node.available
    gap = next(g for g in node.gaps if g.what == "nvidia-smi -q -x")
    assert "not XML" in gap.why
