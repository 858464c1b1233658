"""The fixed measurement scripts run for real on this CPU-only machine, through LocalHost and torch's CPU build."""

from __future__ import annotations

import json
import stat
import subprocess
import sys

import pytest

from orchestrator.hosts.local import LocalHost
from orchestrator.observations import parse_observations
from orchestrator.probes import scripts
from orchestrator.prongs.tensor_core_specs.probe import comm_params, gemm_params, run_comm_probe, run_gemm_probe
from support.machine import needs_torch

pytestmark = needs_torch  # the scripts run under this interpreter; torch is imported by them, not at collection

OBS = parse_observations({
    "model": {"name": "GLM-like", "quantization": "fp8", "num_layers": 4, "num_experts": 256, "top_k": 8,
              "hidden_size": 6144, "moe_intermediate_size": 2048},
    "runs": [{"tp": 2, "concurrency": 64}, {"tp": 1, "pp": 2, "concurrency": 600}],
})


def test_gemm_params_take_expert_shapes_and_decode_m_from_observations():
    p = gemm_params(OBS, 30)
    assert p["shapes"] == [{"name": "gate_up", "n": 4096, "k": 6144}, {"name": "down", "n": 6144, "k": 2048}]
    # 64*8/256 = 2 -> 16 (already swept); 600*8/256 = 18.75 -> 32 (a multiple of 16)
    assert 16 in p["m"] and 32 in p["m"] and p["m"][-1] == 16384 and p["budget_s"] == 30


def test_comm_params_take_message_sizes_and_tp_groups_from_observations():
    p = comm_params(OBS, 20)
    assert p["sizes"] == [6144 * 64 * 2, 6144 * 600 * 2]
    assert p["group_sizes"] == [2, 1]  # groups of one: the per-call overhead baseline
    assert comm_params(None, 20) == {"backend": "auto", "budget_s": 20}


async def test_gemm_probe_on_cpu_says_no_gpu_and_skips_the_gpu_sweep():
    sw = await run_gemm_probe(LocalHost(), python=sys.executable, budget_s=20,
                              params={"shapes": [{"name": "t", "n": 64, "k": 32}], "m": [16]})
    assert sw.available is False and sw.device == "cpu"
    assert "no CUDA GPU" in sw.reason
    import torch

    assert sw.points == [] and sw.torch_version == torch.__version__
    assert sw.commands and "gemm_bench" in sw.commands[0]


async def test_gemm_cpu_sanity_path_times_real_matmuls_with_the_sweep_arithmetic():
    sw = await run_gemm_probe(LocalHost(), python=sys.executable, budget_s=20, params={
        "shapes": [{"name": "t", "n": 128, "k": 64}], "m": [16, 32], "dtypes": ["bf16", "fp8"], "cpu_sanity": True})
    assert sw.available is False  # never a GPU claim from the CPU
    assert {(p.dtype, p.m) for p in sw.points} == {("bf16", 16), ("bf16", 32), ("fp8", 16), ("fp8", 32)}
    for p in sw.points:
        assert p.flops == 2 * p.m * 128 * 64
        assert p.ms > 0 and p.repeats >= 1 and p.ms_min <= p.ms <= p.ms_max
        assert p.tflops == pytest.approx(p.flops / (p.ms / 1e3) / 1e12)
        assert p.intensity == pytest.approx(p.flops / p.bytes)
    assert sw.planned_points == 4 and not sw.stopped_early


async def test_gemm_sweep_stops_at_its_budget_and_says_where():
    sw = await run_gemm_probe(LocalHost(), python=sys.executable, budget_s=0.001, params={
        "shapes": [{"name": "t", "n": 64, "k": 64}], "m": [16, 32, 64], "cpu_sanity": True, "dtypes": ["bf16"]})
    assert sw.stopped_early and "time budget" in sw.reason
    assert len(sw.points) < 3


async def test_gemm_probe_without_torch_is_skipped_with_the_reason(tmp_path):
    # An interpreter that cannot see site-packages (python -S): torch does not import there.
    (tmp_path / "no-site").mkdir()
    wrapper = tmp_path / "no-site" / "python3"  # interpreters are named python* (issue 15)
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    sw = await run_gemm_probe(LocalHost(), python=str(wrapper), budget_s=10)
    assert sw.available is False and "torch does not import" in sw.reason


async def test_gemm_probe_with_a_broken_interpreter_reports_why(tmp_path):
    sw = await run_gemm_probe(LocalHost(), python="/bin/false", budget_s=5)
    assert sw.available is False and "refused" in sw.reason  # not an interpreter: nothing sent (issue 15)
    (tmp_path / "b").mkdir()
    broken = tmp_path / "b" / "python3"  # passes the version check, then fails on the script
    broken.write_text(f"#!/bin/sh\n[ \"$1\" = -I ] && exec {sys.executable} \"$@\"\nexit 1\n")
    broken.chmod(0o755)
    sw = await run_gemm_probe(LocalHost(), python=str(broken), budget_s=5)
    assert sw.available is False and "exited 1 without a JSON result" in sw.reason


def test_gemm_script_accepts_flags_when_run_as_a_file(tmp_path):
    path = tmp_path / "gemm_bench.py"
    path.write_text(scripts.load("gemm_bench"))
    out = subprocess.run([sys.executable, str(path), "--n", "64", "--k", "32", "--m", "16", "--dtypes", "bf16",
                          "--budget-s", "10", "--cpu-sanity"], capture_output=True, text=True, timeout=60)
    data = json.loads(out.stdout)
    assert data["kind"] == "gemm_sweep" and data["points"][0]["n"] == 64


@pytest.mark.slow
async def test_comm_probe_gloo_two_processes_gives_right_sums_and_sane_latencies():
    sw = await run_comm_probe(LocalHost(), python=sys.executable, budget_s=30, params={
        "backend": "gloo", "world": 2, "sizes": [4096, 262144], "iters": 5, "repeats": 3, "warmup": 1})
    assert sw.available, sw.reason
    assert sw.backend == "gloo" and sw.world_size == 2 and sw.group_sizes == [2, 1]
    assert {(p.group_size, p.bytes) for p in sw.points} == {(2, 4096), (1, 4096), (2, 262144), (1, 262144)}
    for p in sw.points:
        assert p.correct is True
        assert 0 < p.ms < 1000  # loopback gloo: microseconds to milliseconds
        assert p.algbw_gbps == pytest.approx(p.bytes / (p.ms / 1e3) / 1e9)
        assert p.busbw_gbps == pytest.approx(p.algbw_gbps * (1.0 if p.group_size == 2 else 0.0))
    assert sw.env == {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
    assert sw.devices == ["cpu", "cpu"]


async def test_comm_probe_stops_at_its_budget():
    sw = await run_comm_probe(LocalHost(), python=sys.executable, budget_s=0.001, params={
        "backend": "gloo", "world": 2, "sizes": [4096], "iters": 2, "repeats": 1})
    assert sw.stopped_early and "time budget" in sw.reason and sw.points == []


async def test_comm_probe_asking_nccl_without_gpus_is_skipped_with_the_reason():
    sw = await run_comm_probe(LocalHost(), python=sys.executable, budget_s=10, params={"backend": "nccl"})
    assert sw.available is False and "NCCL needs CUDA GPUs" in sw.reason


@pytest.mark.slow
def test_comm_script_gloo_four_ranks_splits_into_concurrent_pairs(tmp_path):
    path = tmp_path / "comm_bench.py"
    path.write_text(scripts.load("comm_bench"))
    out = subprocess.run([sys.executable, str(path), "--backend", "gloo", "--world", "4", "--sizes", "4096",
                          "--group-sizes", "4,2,3", "--iters", "3", "--repeats", "2", "--budget-s", "40"],
                         capture_output=True, text=True, timeout=120)
    data = json.loads(out.stdout)
    assert data["available"], data
    pts = {p["group_size"]: p for p in data["points"]}
    assert set(pts) == {4, 2} and pts[2]["groups"] == 2 and pts[4]["groups"] == 1
    assert all(p["correct"] for p in data["points"])
    assert "do not divide the world of 4" in data["reason"]
