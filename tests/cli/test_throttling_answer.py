"""Issue 30 item 10: "Is my GPU throttling?" is answered in the verdict: which clocks-event reasons were read, which
are active and what each means, the clocks; or that they could not be read, and why. The staged twins (a thermal
slowdown, none active) are scenario cases: tests/scenarios/node/throttling-asked-*; here the reasons that could not
be read (this machine has no nvidia-smi) and the question detection."""

from __future__ import annotations

import json
import shutil

import pytest

from orchestrator.prongs.node_health.clock_events import asks_about_clocks
from orchestrator.knowledge import clock_event_reasons
from support.cli import investigate


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_without_nvidia_smi_the_answer_says_the_reasons_could_not_be_read_and_why(tmp_path):
    proc = investigate("Is my GPU throttling?", "--offline", "--json", "--transcript", tmp_path / "t.jsonl",
                       tmp_path=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout)["verdict"]
    assert "Throttling: the clocks-event reasons could not be read" in verdict
    assert "nvidia-smi" in verdict.split("Throttling:", 1)[1]


def test_questions_about_clocks_are_recognised_and_others_are_not():
    for q in ("Is my GPU throttling?", "are the clocks held down?", "thermal slowdown on node 4?",
              "is it power capped", "Why is the GPU throttled"):
        assert asks_about_clocks(q), q
    for q in ("why is TTFT high?", "why is FP4 slow?", "startup takes minutes"):
        assert not asks_about_clocks(q), q


def test_every_reason_the_probe_reads_from_a_real_h200_has_a_meaning_and_a_source():
    import xml.etree.ElementTree as ET

    from orchestrator.probes.scripts._smi import smi_gpu, smi_strip_doctype
    from support.stage_node import NODE_DATA

    root = ET.fromstring(smi_strip_doctype((NODE_DATA / "h200" / "smi-qx-load.xml").read_text()))
    read = smi_gpu(0, root.find("gpu"))["clocks_event"]
    known = clock_event_reasons()
    assert len(read) == 9 and set(read) <= set(known)
    assert read["sw_power_cap"] is True and not any(v for k, v in read.items() if k != "sw_power_cap")
    for r in known.values():
        assert r.meaning and r.source.startswith("https://docs.nvidia.com/")


def test_utilization_gpu_is_said_as_the_time_a_kernel_ran_not_as_sm_occupancy():
    from orchestrator.analysis.evidence_view import EvidenceView
    from orchestrator.analysis.observation_rules import read_gpu_observation
    from orchestrator.analysis.rules import power_vs_limit
    from orchestrator.observations import parse_observations

    util = parse_observations({"gpu": {"power_w": 300, "power_limit_w": 700, "utilization_pct": 98}})
    reading = read_gpu_observation(util.gpu)
    assert reading is not None and reading.pattern == "stall"
    assert "a kernel ran 98 % of the time" in reading.reasoning and "not SM occupancy" in reading.reasoning
    assert "occupied" not in reading.reasoning and "at 98 % utilization" not in reading.reasoning
    from support.evidence import obs_ev

    def view(raw: dict) -> EvidenceView:
        return EvidenceView([obs_ev("ev-0.1", raw)], parse_observations(raw))

    [f] = power_vs_limit(view({"gpu": {"power_w": 300, "power_limit_w": 700, "utilization_pct": 98}}))
    title = f.title
    assert "while a kernel ran 98 % of the time" in title and "occupancy" not in title
    # an SM occupancy the user measured is still called that
    occ = view({"gpu": {"power_w": 300, "power_limit_w": 700, "sm_occupancy": 0.98}})
    assert "at high occupancy" in power_vs_limit(occ)[0].title
