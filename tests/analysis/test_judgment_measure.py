"""Measurement hygiene (issue 24): the measurement scripts read what else runs on their GPUs before loading them,
wait for it (bounded) or mark their figures as shared; shared figures are never set against the roofline."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from orchestrator.prongs.tensor_core_specs.rules import measure_findings
from orchestrator.analysis.synthesis import synthesize
from orchestrator.evidence import Evidence
from orchestrator.probes import scripts
from orchestrator.prongs.tensor_core_specs.models import GemmSweep
from orchestrator.prongs.tensor_core_specs.peaks import peaks_for
from orchestrator.prongs.tensor_core_specs.arithmetic import attach_gemm_arithmetic
from support.stage_node import stage_node
from support.staged_host import stage_host


def _run_quiet_check(staged, wait_s: float) -> tuple[dict, float]:
    """The GEMM script as it is sent to a host, run there with the staged nvidia-smi first on PATH (no torch GPU
    here: it reads the GPU's activity, then says it cannot time GEMMs)."""
    env = {**os.environ, **staged.env, "PATH": f"{staged.bin}:{os.environ['PATH']}"}
    t0 = time.monotonic()
    out = subprocess.run(["python3", "-", json.dumps({"measure_wait_s": wait_s, "budget_s": 1, "m": [16],
                                                        "dtypes": ["bf16"]})],
                         input=scripts.load("gemm_bench"), capture_output=True, text=True, env=env, timeout=120)
    return json.loads(out.stdout), time.monotonic() - t0


def test_gemm_probe_names_the_other_process_and_waits_only_as_long_as_allowed(tmp_path):
    staged = stage_host(tmp_path / "h", variant="h200")
    try:
        pids = stage_node(staged, {"model": "h200", "count": 1, "load": True,
                                   "processes": [{"gpus": [0], "kind": "other", "name": "python3", "memory_mib": 1002}]})
        (pid, _name, _mib), = pids[0]
        res, took = _run_quiet_check(staged, 0)
        act = res["gpu_activity"]
        assert res["shared_gpu"] is True and act["busy"] == [0] and act["wait_s"] == 0
        assert act["others"] == [{"gpu_index": 0, "pid": pid, "name": "python3", "used_memory_mib": 1002.0}]
        assert act["gpus"][0]["utilization_pct"] == 100.0
        res, took = _run_quiet_check(staged, 3)
        # bounded: at most the allowed wait plus one last reading
        assert res["shared_gpu"] is True and 1.9 <= res["gpu_activity"]["waited_s"] <= 4.5 and 1.9 < took < 60
    finally:
        staged.cleanup()


def test_gemm_probe_on_a_quiet_gpu_is_not_shared(tmp_path):
    staged = stage_host(tmp_path / "h", variant="h200")
    try:
        stage_node(staged, {"model": "h200", "count": 1, "load": False})
        res, _ = _run_quiet_check(staged, 30)
        act = res["gpu_activity"]
        assert res["shared_gpu"] is False and act["others"] == [] and act["busy"] == []
        assert act["waited_s"] < 2.0  # one reading: nothing to wait for
    finally:
        staged.cleanup()


GEMM_H200 = Path(__file__).parent.parent / "measure" / "data" / "h200" / "gemm_h200.json"
"""A real GEMM sweep of an H200 (tests/measure/data/h200/README.md)."""


def test_figures_from_a_shared_gpu_are_never_compared_with_the_roofline():
    sweep = GemmSweep.model_validate({**json.loads(GEMM_H200.read_text()), "host": "h"})
    real = attach_gemm_arithmetic(sweep, peaks_for(sweep.gpu_name)).model_dump(mode="json")
    shared = {**real, "shared_gpu": True, "gpu_activity": {
        "read": True, "shared_gpu": True, "busy": [0], "gpus": [{"index": 0, "utilization_pct": 100.0, "power_w": 690.0}],
        "others": [{"gpu_index": 0, "pid": 1297, "name": "python3", "used_memory_mib": 1002.0}]}}
    GemmSweep.model_validate(shared)
    own = measure_findings([Evidence(id="ev-1", agent_id="a", tool="gemm_benchmark", text="", data=real)], None)
    assert own and not any(f.id.startswith("measured-on-shared") for f in own)  # quiet: the GPU's own figures
    found = measure_findings([Evidence(id="ev-1", agent_id="a", tool="gemm_benchmark", text="", data=shared)], None)
    assert [f.id for f in found] == ["measured-on-shared-gpu-gemm_sweep"]
    assert "python3 (pid 1297, 1002 MiB, GPU 0)" in found[0].claim
    d = synthesize("why is my FP8 GEMM slower than the spec sheet?", None,
                   [Evidence(id="ev-1", agent_id="a", tool="gemm_benchmark", text="", data=shared)], [])
    assert not any("roofline" in c.title.lower() for c in d.causes)
    assert any("shared the GPU" in g.what and "not compared with the roofline" in g.why for g in d.gaps)
