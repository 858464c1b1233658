"""The node-health prong end to end: staged hosts behind a real sshd, investigated offline.

- a planted secret in a serving process's environment reaches no transcript, no prompt and no report;
- a host where dmesg is restricted (kernel.dmesg_restrict=1, no journal) gives a gap, not an error;
- a healthy node is said to be healthy in one line, with what was checked.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from orchestrator.api import investigate
from orchestrator.render.diagnosis import to_markdown
from orchestrator.events import ToolResult
from orchestrator.models.offline import OfflineBackend, OfflineModel
from orchestrator.render.html import render_html
from orchestrator.settings import Settings
from support.stage_node import stage_node
from support.staged_host import stage_host

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(shutil.which("sshd") is None and not os.path.exists("/usr/sbin/sshd"),
                                                   reason="OpenSSH sshd not installed")]

SECRETS = {"HF_TOKEN": "hf_PlantedSecretAbCdEfGhIjKlMnOpQrStUv", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMIK7MDENGbPxRfiCYPLANTED",
           "VLLM_API_KEY": "planted-api-key-7f3a9c", "NCCL_IB_TOKEN": "planted-nccl-token-51e2",
           # not secret-shaped, so only the probe's allowlist (not the redaction behind it) keeps it on the host
           "BILLING_ACCOUNT": "acct-7731-planted-cleartext"}


class RecordingBackend(OfflineBackend):
    """The offline backend, keeping every request (system prompt, tool results: what a model would be sent)."""

    def __init__(self):
        self.requests: list[str] = []

    def model_for(self, defn, agent_id, run):
        outer = self
        model = OfflineModel(defn, agent_id, run)
        complete = model.complete

        async def recorded(request):
            outer.requests.append(request.model_dump_json())
            return await complete(request)

        model.complete = recorded  # type: ignore[method-assign]
        return model


@pytest.fixture
def staged_node(tmp_path):
    made = []

    def make(spec, variant="h200"):
        s = stage_host(tmp_path / f"h{len(made)}", variant=variant)
        stage_node(s, spec)
        made.append(s)
        return s

    yield make
    for s in made:
        s.cleanup()


async def test_planted_secret_never_reaches_transcript_prompt_or_report(tmp_path, staged_node, sshd_factory):  # noqa: F811
    env = {"NCCL_P2P_DISABLE": "1", "NCCL_DEBUG": "WARN", **SECRETS}
    s = staged_node({"count": 8, "nvlink": {}, "processes": [{"gpus": list(range(8)), "kind": "vllm", "env": env}]})
    sshd = sshd_factory(env=s.env)
    backend = RecordingBackend()
    path = tmp_path / "run.jsonl"
    result = await investigate("why is all-reduce slow on this H200 box?", host=sshd.alias,
                               ssh_config=str(sshd.ssh_config), backend=backend, transcript=path,
                               settings=Settings(power_sample_s=0.3))
    assert result.status == "ok", result.error
    node = [e for e in result.events if isinstance(e, ToolResult) and e.tool == "node_health"]
    assert node and not node[0].is_error
    assert "NCCL_P2P_DISABLE=1" in node[0].content  # the allowlisted variable is there ...
    words = "\n".join(c.explanation for c in result.diagnosis.causes)
    assert "NCCL_P2P_DISABLE" in words
    places = {"transcript": path.read_text(), "prompts": "\n".join(backend.requests),
              "report (markdown)": to_markdown(result.diagnosis),
              "report (html)": render_html(result.diagnosis, result.events),
              "events": "\n".join(e.model_dump_json() for e in result.events)}
    assert backend.requests, "the backend saw the agents' requests"
    for where, text in places.items():
        for name, value in SECRETS.items():
            assert value not in text, f"{name}'s value reached the {where}"  # ... the secrets are not


async def test_restricted_dmesg_is_a_gap_not_an_error(tmp_path, staged_node, sshd_factory):  # noqa: F811
    s = staged_node({"count": 2, "kernel": {"restricted": True}})
    sshd = sshd_factory(env=s.env)
    result = await investigate("is this node healthy?", host=sshd.alias, ssh_config=str(sshd.ssh_config),
                               offline=True, transcript=False, settings=Settings(power_sample_s=0.3))
    assert result.status == "ok", result.error
    node = [e for e in result.events if isinstance(e, ToolResult) and e.tool == "node_health"]
    assert node and not node[0].is_error
    assert "Operation not permitted" in node[0].content
    gaps = {g.what: g.why for g in result.diagnosis.gaps}
    kernel = [why for what, why in gaps.items() if what.startswith("kernel log")]
    assert kernel and "Operation not permitted" in kernel[0] and "dmesg_restrict" in kernel[0]
    assert not any(g.what.startswith("tool node_health") for g in result.diagnosis.gaps)


async def test_healthy_node_is_one_line_with_what_was_checked(tmp_path, staged_node, sshd_factory):  # noqa: F811
    s = staged_node({"count": 8, "nvlink": {}, "processes": [{"gpus": list(range(8)), "kind": "vllm"}]})
    sshd = sshd_factory(env=s.env)
    result = await investigate("anything wrong with this node?", host=sshd.alias, ssh_config=str(sshd.ssh_config),
                               offline=True, transcript=False, settings=Settings(power_sample_s=0.3))
    assert result.status == "ok", result.error
    d = result.diagnosis
    lines = [ln for ln in d.verdict.split(". ") if "Node healthy" in ln]
    assert len(lines) == 1, d.verdict
    assert "8 x NVIDIA H200" in lines[0] and "ECC" in lines[0] and "NVLink" in lines[0] and "Xid" in lines[0]
    assert not any(c.title.startswith(("GPU ", "NVLink", "NCCL")) for c in d.causes)


async def test_node_fault_outranks_kernel_findings_on_the_seed_host(tmp_path, sshd_factory):  # noqa: F811
    # the seed host (8 x RTX PRO 6000, FlashInfer without persisted autotune results) with one GPU power-capped
    s = stage_host(tmp_path)
    stage_node(s, {"model": "rtx-pro-6000", "count": 8,
                   "gpus": {5: {"power_limit_w": 400, "clocks_event": ["sw_power_cap"], "sm_clock_mhz": 1650}}})
    sshd = sshd_factory(env=s.env)
    result = await investigate("why is FP4 decode slow?", host=sshd.alias, ssh_config=str(sshd.ssh_config),
                               offline=True, transcript=False, settings=Settings(power_sample_s=0.3))
    assert result.status == "ok", result.error
    titles = [c.title for c in result.diagnosis.causes]
    assert titles and titles[0] == "GPU power limit set below its default", titles
    assert "GPU 5 (00000000:AB:00.0" in result.diagnosis.causes[0].explanation
    assert json.dumps(result.diagnosis.model_dump(mode="json")).count("nvidia-smi -i 5 -pl 600") >= 1
