"""The node and interconnect catalog entries over the node probe's facts (no sshd: the probe output is given)."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.analysis.signals import catalog_findings
from orchestrator.evidence import Evidence
from orchestrator.prongs.node_health.probe import health_from_output

DATA = Path(__file__).parent / "data"


def findings(node):
    ev = Evidence(id="ev-1", agent_id="a", tool="node_health", host="h", text="", data=node.model_dump(mode="json"))
    return {f.entry: f for f in catalog_findings(EvidenceView([ev])) if f.category in ("node", "interconnect")}


def test_real_h200_under_load_draws_no_node_finding():
    # SW power cap at the 700 W default, and NCCL_P2P_DISABLE=1 on a single GPU (no peer to disable) are no faults
    for name in ("node-probe-idle.json", "node-probe-load.json"):
        node = health_from_output(json.loads((DATA / "h200" / name).read_text()))
        assert findings(node) == {}, name


def test_real_two_h200_nv18_draws_no_node_finding():
    d = DATA / "h200x2"
    node = health_from_output({"smi_xml": (d / "smi-qx-load.xml").read_text(), "nvlink_s": (d / "nvlink-s.txt").read_text(),
                               "nvlink_e": (d / "nvlink-e.txt").read_text(), "topo": (d / "topo-m.txt").read_text()})
    assert findings(node) == {}


def test_power_limit_claim_names_the_gpu_and_the_fix_the_default():
    xml = (DATA / "h200x2" / "smi-qx-load.xml").read_text().replace(
        "<current_power_limit>700.00 W</current_power_limit>", "<current_power_limit>500.00 W</current_power_limit>", 1)
    f = findings(health_from_output({"smi_xml": xml}))["gpu-power-limit-lowered"]
    assert "GPU 0 (00000000:00:06.0" in f.claim and "500 W" in f.claim and "700 W" in f.claim
    assert f.recommendations[0].startswith("Restore the default limit: `nvidia-smi -i 0 -pl 700`")
    assert f.bound == "compute" and f.severity == "high"


def test_p2p_disabled_on_two_gpus_is_the_interconnect_finding():
    d = DATA / "h200x2"
    data = {"smi_xml": (d / "smi-qx-load.xml").read_text(), "topo": (d / "topo-m.txt").read_text(),
            "processes": [{"pid": 618, "kind": "vllm", "env": {"NCCL_P2P_DISABLE": "1"}, "visible": True,
                           "env_readable": True, "on_gpu": True}]}
    f = findings(health_from_output(data))
    assert set(f) == {"nccl-p2p-disabled"}
    assert f["nccl-p2p-disabled"].bound == "communication" and "NV18" in f["nccl-p2p-disabled"].claim
