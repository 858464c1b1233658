"""Issue 30 item 8: a diagnosis says each thing once and in words: one gap for a probe two prongs ran
(gpu_inventory was listed twice) and one for every probe a missing nvidia-smi stopped, one warning line counted once when two probes read the same log (a vLLM 0.6
'enforce-eager' warning was '2 unclassified (x2)'), and no Python value ('None', a dict repr) in any rendering.
The same checks run on every scenario case's diagnosis (tests/scenarios/harness.py, support.hygiene)."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest

from orchestrator.diagnosis import Diagnosis
from support.cli import investigate
from support.hygiene import noise_problems

QUIET = {"PATH": "/usr/bin:/bin", "INVESTIGATE_STAGED_TAG": f"none-{uuid.uuid4().hex}"}
"""No nvidia-smi, and no serving process of this machine counts (the probes keep only processes carrying the tag:
other tests start staged engines here meanwhile)."""

EAGER_LOG = Path(__file__).with_name("vllm-0.6.3-enforce-eager.log")
"""A vLLM 0.6.3 start-up: its `args: Namespace(...)` line and the one warning vllm/config.py:380 prints when
enforce_eager is set ("To see benefits of async output processing, enable CUDA graph. Since, enforce-eager is
enabled, async output processor cannot be used")."""

no_gpu_here = pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")


def _run(tmp_path, *args: str) -> tuple[Diagnosis, str, str]:
    """The diagnosis (JSON), the terminal rendering and the Markdown report of one offline run on this machine."""
    transcript, md = tmp_path / "t.jsonl", tmp_path / "r.md"
    proc = investigate("why is decode slow?", "--offline", "--json", "--transcript", transcript, *args,
                       tmp_path=tmp_path, env=QUIET)
    assert proc.returncode == 0, proc.stderr
    d = Diagnosis.model_validate(json.loads(proc.stdout))
    shown = investigate("replay", transcript, tmp_path=tmp_path)
    assert shown.returncode == 0, shown.stderr
    proc = investigate("report", transcript, "-o", md, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return d, shown.stdout, md.read_text()


@no_gpu_here
def test_a_probe_two_prongs_ran_is_one_gap_and_one_warning_line_is_counted_once(tmp_path):
    d, shown, md = _run(tmp_path, "--log", str(EAGER_LOG))
    inventory = [g for g in d.gaps if "gpu_inventory" in g.what]
    assert len(inventory) == 1, [g.what for g in d.gaps]
    # one missing driver is one gap: it named gpu_inventory (both prongs' results), node_health, power_sampling and
    # the gpu_specs tool in four gaps, each worded its own way
    assert [g for g in d.gaps if "nvidia-smi" in g.why] == inventory, [g.what for g in d.gaps]
    assert all(k in inventory[0].what for k in ("node_health", "power_sampling", "gpu_specs"))
    assert inventory[0].what.count("ev-") == 5
    text = " ".join([c.title + " " + c.explanation for c in d.causes]
                    + [n.title + " " + n.note for n in d.also_noticed])
    assert "1 unclassified warning/error line(s)" in text and "(x2)" not in text, text
    assert noise_problems(d, shown) == [] and noise_problems(d, md) == []


@no_gpu_here
def test_observations_with_values_left_out_render_without_python_values(tmp_path):
    obs = tmp_path / "obs.yaml"
    obs.write_text("model: {name: Qwen2.5-7B-Instruct, hidden_size: 3584, num_layers: 28}\n"
                   "runs:\n  - {tp: 1, concurrency: 16}\n  - {tp: 2, concurrency: 16, output_tok_s: 900}\n"
                   "gpu: {name: H100 SXM}\n")
    d, shown, md = _run(tmp_path, "--observations", str(obs))
    assert noise_problems(d, shown) == [] and noise_problems(d, md) == []
    assert "None" not in md.replace("None of", "") and "{'" not in md


def test_the_noise_check_finds_a_repeated_gap_and_python_values():
    from orchestrator.diagnosis import Gap
    d = Diagnosis(question="q", verdict="total None tok/s", bound="unknown", bound_reasoning="r",
                  gaps=[Gap(what="probe gpu_inventory on local (ev-2.1)", why="no nvidia-smi")] * 2)
    found = noise_problems(d, "model: {'name': 'x'}")
    assert len(found) == 3
