"""Offline investigations of staged hosts other than the seed case, end to end through the real probes.

The staged host (fake nvidia-smi from real captures, caches and site-packages in real formats) runs on this machine
under its own environment; the run goes through the same agents, tools, rules and synthesis as `investigate`.
"""

from __future__ import annotations

import re

from support.staged_host import stage_host

from orchestrator.api import normalize_observations
from orchestrator.agentdefs import load_agents
from orchestrator.inputs import RunInputs
from orchestrator.events import ToolResult
from orchestrator.hosts.local import LocalHost
from orchestrator.models.offline import OfflineBackend
from orchestrator.settings import Settings
from orchestrator.run import Run

GLM = {"name": "GLM-5-NVFP4", "quantization": "nvfp4", "num_layers": 78, "num_experts": 256, "top_k": 8,
       "hidden_size": 6144, "moe_intermediate_size": 2048}
KNOWN_ISSUE_LOG = """INFO GPU does not have native support for FP4 computation, using Marlin for MoE
WARNING Using default MoE config. Performance might be sub-optimal! Config file not found at /x/E=256,N=256,device_name=NVIDIA_B200.json
[AutoTuner]: No tuned config covers shape (16, 6144) for op fp4_gemm; using tactic=-1
[AutoTuner]: Skipped 12 unsupported tactic(s) for fused_moe
"""


async def run_staged(tmp_path, variant, question, observations, log_text=None):
    staged = stage_host(tmp_path, variant=variant)
    logs = []
    if log_text:
        p = tmp_path / "server.log"
        p.write_text(log_text)
        logs = [str(p)]
    inputs = RunInputs(question=question, host="local", observations=normalize_observations(observations), logs=logs,
                       python=staged.python)

    async with Run(inputs=inputs, settings=Settings(power_sample_s=0.2), backend=OfflineBackend(),
                   agents=load_agents([]), transcript=False, host=staged.wrap(LocalHost())) as run:
        await run.investigate()
    result = run.result
    assert result.status == "ok", result.error
    d = result.diagnosis
    recorded = {e.evidence_id: e for e in result.events if isinstance(e, ToolResult)}
    assert all(e in recorded and not recorded[e].is_error for c in d.causes for e in c.evidence)
    return d


def everything(d) -> str:
    return " ".join([d.verdict, d.bound_reasoning] + [c.title + " " + c.explanation for c in d.causes]
                    + [r.action for r in d.recommendations])


async def test_b200_nvfp4_moe_with_known_issue_logs(tmp_path):
    obs = {"model": GLM, "runs": [{"tp": 8, "concurrency": 512, "total_tok_s": 9000},
                                  {"tp": 4, "pp": 2, "concurrency": 512, "total_tok_s": 4500}],
           "gpu": {"power_w": 600, "power_limit_w": 1000, "sm_occupancy": 0.97}}
    d = await run_staged(tmp_path, "b200x8", "why is FP4 slow?", obs, KNOWN_ISSUE_LOG)
    text = everything(d)
    assert d.bound == "memory" and d.causes[0].title.startswith("The halving")
    assert re.search(r"ridge of ~1,169 FLOP/B", d.bound_reasoning)  # 9,000 TFLOPS dense FP4 / 7.7 TB/s (HGX B200)
    # SM120-only facts and advice never appear on SM100 (the SM120 issue is named only to say it does not apply)
    for wrong in ("sm_120", "101,376", "b12x", "SM12x"):
        assert wrong not in text, wrong
    titles_and_actions = " ".join([c.title for c in d.causes] + [r.action for r in d.recommendations])
    assert "SM120" not in titles_and_actions
    assert "trtllm-gen" in text and "weight-only Marlin" in text and "does not apply to CC 10.0" in text
    assert "no tuned config for a shape" in text


async def test_a100_fp8_moe_runs_weight_only(tmp_path):
    obs = {"model": {**GLM, "name": "GLM-FP8", "quantization": "fp8"},
           "runs": [{"tp": 4, "concurrency": 256, "total_tok_s": 1200}]}
    d = await run_staged(tmp_path, "a100x4", "why is FP8 slow?", obs)
    text = everything(d)
    assert d.bound == "memory" and "ridge of ~153 FLOP/B" in d.bound_reasoning  # 312 TFLOPS BF16 / 2.039 TB/s
    assert "no FP8 tensor cores" in text and "Marlin FP8" in text
    for wrong in ("b12x", "tcgen05", "trtllm-gen", "DeepGEMM", "101,376"):
        assert wrong not in text, wrong
    tuned = next(c for c in d.causes if "fused-MoE config" in c.title)
    assert tuned.confidence < 0.5 and d.causes.index(tuned) > 1


async def test_rtx_5090_single_gpu_nvfp4(tmp_path):
    obs = {"model": {"name": "Qwen3-30B-A3B-NVFP4", "quantization": "nvfp4", "num_layers": 48, "num_experts": 128,
                     "top_k": 8, "hidden_size": 2048, "moe_intermediate_size": 768},
           "runs": [{"tp": 1, "concurrency": 64, "total_tok_s": 3000}]}
    d = await run_staged(tmp_path, "rtx-5090", "why is FP4 slow?", obs)
    text = everything(d)
    assert d.bound == "memory" and "ridge of ~935 FLOP/B" in d.bound_reasoning  # 1,676 TFLOPS / 1.792 TB/s
    assert "101,376" in text and "tcgen05" in text and "b12x" in text
    assert "expert-parallel" not in text  # one GPU: no EP advice
    assert "fp8xfp4" not in text.lower()  # the FP8xFP4 (W4A8) MoE issue is not an NVFP4 W4A4 one


async def test_opposite_pattern_points_at_communication(tmp_path):
    obs = {"model": GLM, "runs": [{"tp": 8, "concurrency": 512, "total_tok_s": 40},
                                  {"tp": 4, "pp": 2, "concurrency": 512, "total_tok_s": 88}],
           "gpu": {"power_w": 140, "power_limit_w": 600, "utilization_pct": 100}}
    d = await run_staged(tmp_path, "rtx-pro-6000x8", "why does TP8 scale badly?", obs)
    assert d.bound == "communication"
    top = " ".join(c.title for c in d.causes[:3]).lower()
    assert "communication" in top and "pcie" in top and "memory-bound" not in top
    assert "nsys" in " ".join(r.action for r in d.recommendations)
    assert d.recommendations[0].action.startswith("Reduce the TP degree across PCIe")
