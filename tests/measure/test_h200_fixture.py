"""The GEMM and all-reduce sweeps recorded on a lent 2 x NVIDIA H200 machine, through the project's own parsing,
arithmetic and rules (data/h200/README.md says how they were made)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.prongs.tensor_core_specs.arithmetic import attach_comm_arithmetic, attach_gemm_arithmetic
from orchestrator.prongs.tensor_core_specs.peaks import peaks_for
from orchestrator.prongs.tensor_core_specs.rules import measure_findings
from orchestrator.evidence import Evidence
from orchestrator.observations import parse_observations
from orchestrator.prongs.tensor_core_specs.probe import parse_topology
from orchestrator.prongs.tensor_core_specs.models import CommSweep, GemmSweep

DATA = Path(__file__).parent / "data" / "h200"

# bench/device/h200_obs.yaml, the observations the H200 investigation was asked with.
OBS = {
    "model": {"name": "Qwen3-30B-A3B-FP8", "quantization": "fp8", "num_layers": 48, "num_experts": 128, "top_k": 8,
              "hidden_size": 2048, "moe_intermediate_size": 768},
    "runs": [{"tp": 2, "pp": 1, "ep": 1, "batch": 8, "label": "TP2 decode at batch 8"}],
    "notes": "small-batch decode is the case in question",
}
GEMM_ID, COMM_ID = "ev-3.3", "ev-3.4"


@pytest.fixture(scope="module")
def gemm() -> GemmSweep:
    sweep = GemmSweep.model_validate(json.loads((DATA / "gemm_h200.json").read_text()))
    return attach_gemm_arithmetic(sweep, peaks_for(sweep.gpu_name))


@pytest.fixture(scope="module")
def comm() -> CommSweep:
    return attach_comm_arithmetic(CommSweep.model_validate(json.loads((DATA / "comm_h200.json").read_text())))


@pytest.fixture(scope="module")
def findings(gemm, comm):
    evidence = [
        Evidence(id=GEMM_ID, agent_id="measure", tool="gemm_benchmark", data=gemm.model_dump(mode="json")),
        Evidence(id=COMM_ID, agent_id="measure", tool="allreduce_benchmark", data=comm.model_dump(mode="json")),
    ]
    return measure_findings(evidence, parse_observations(OBS))


def _point(sweep: GemmSweep, shape: str, dtype: str, m: int):
    return next(p for p in sweep.points if (p.shape, p.dtype, p.m) == (shape, dtype, m))


def test_gemm_sweep_ran_in_full_on_an_h200(gemm):
    assert gemm.available and gemm.device == "cuda" and not gemm.stopped_early
    assert gemm.gpu_name == "NVIDIA H200" and gemm.compute_cap == "9.0"
    assert gemm.dtypes == ["bf16", "fp8"] and not gemm.dtypes_skipped
    assert len(gemm.points) == gemm.planned_points == 2 * 2 * 11
    assert {p.timing for p in gemm.points} == {"cuda_graph"}
    assert gemm.peaks is not None
    assert gemm.peaks.dense_tflops["bf16"] == 989 and gemm.peaks.dense_tflops["fp8"] == 1979
    assert gemm.peaks.mem_bw_tbs == pytest.approx(4.8)


def test_large_m_bf16_reaches_a_plausible_fraction_of_dense_peak(gemm):
    big = _point(gemm, "gate_up", "bf16", max(gemm.m_values))
    assert big.m == 16384 and big.bound == "compute"
    assert 0.4 < big.fraction_of_peak < 1.0
    # No point beats its own roofline: the timings and the arithmetic agree with the datasheet.
    assert all(0 < p.fraction_of_roofline <= 1.0 for p in gemm.points)


def test_small_m_is_memory_bound(gemm):
    for shape in ("gate_up", "down"):
        for dtype in ("bf16", "fp8"):
            p = _point(gemm, shape, dtype, 16)
            assert p.bound == "memory"
            assert p.fraction_of_peak < 0.1  # far from the compute peak ...
            assert p.gbps / 1000 > 0.3 * gemm.peaks.mem_bw_tbs  # ... while moving a sizeable share of HBM bandwidth


def test_fp8_beats_bf16_at_large_m(gemm):
    for shape in ("gate_up", "down"):
        for m in (4096, 8192, 16384):
            assert _point(gemm, shape, "fp8", m).tflops > 1.3 * _point(gemm, shape, "bf16", m).tflops


def test_every_allreduce_point_is_correct_over_nvlink(comm):
    assert comm.available and not comm.stopped_early and not comm.rank_errors
    assert comm.backend == "nccl" and comm.world_size == 2 and comm.devices == ["NVIDIA H200"] * 2
    assert comm.env["NCCL_NVLS_ENABLE"] == "0"
    assert len(comm.points) == 2 * len(comm.sizes)
    assert all(p.correct is True for p in comm.points)
    pairs = sorted((p for p in comm.points if p.group_size == 2), key=lambda p: p.bytes)
    assert pairs[-1].busbw_gbps > 100 and pairs[-1].busbw_gbps > 10 * pairs[0].busbw_gbps
    topo = parse_topology(comm.topology_raw)
    assert topo.nvlink and topo.links[0].kind.startswith("NV")


def test_findings_cite_the_evidence(findings):
    ids = [f.id for f in findings]
    assert "comm-allreduce-wrong-sum" not in ids
    assert ids.count("gemm-best-efficiency") == 2 and "gemm-low-peak-efficiency" not in ids
    assert ids.count("comm-allreduce-measured") == 2
    for f in findings:
        assert f.evidence and set(f.evidence) <= {GEMM_ID, COMM_ID}
        assert (COMM_ID if f.id.startswith("comm-") else GEMM_ID) in f.evidence

    decode = next(f for f in findings if f.id == "gemm-at-decode-m")
    assert decode.data["dtype"] == "fp8" and decode.data["m"] == 16 and decode.bound == "memory"
    assert decode.data["tokens_per_expert"] == pytest.approx(8 * 8 / 128)

    vs = next(f for f in findings if f.id == "comm-vs-gemm")
    assert vs.evidence == [COMM_ID, GEMM_ID]
    assert vs.data["message_bytes"] == 2048 * 8 * 2 and vs.data["allreduces_per_step"] == 96
    # ~18 µs net per all-reduce x 96 against a ~1.2 ms GEMM floor: within 2x of each other
    assert vs.data["dominant"] == "comparable" and 0.5 < vs.data["ratio"] < 2


def test_fp8_against_bf16_at_the_decode_m_says_how_much_of_the_byte_advantage_it_delivers(findings):
    f = next(f for f in findings if f.id == "fp8-vs-bf16-at-decode")
    assert f.evidence == [GEMM_ID] and f.data["m"] == 16 and f.data["shape"] == "gate_up"
    # measured on the H200: 19.9 µs bf16 vs 12.9 µs fp8 at M=16 for N=4096 K=7168
    assert f.data["speedup"] == pytest.approx(0.0199 / 0.0129, rel=0.02)
    assert 1.9 < f.data["ideal_speedup"] < 2.0
    assert "delivers" in f.claim and f.recommendations, "1.5x of a possible ~2x is reported as a kernel shortfall"


def test_all_reduce_cost_per_step_discounts_the_harness_overhead_seen_on_groups_of_one(findings):
    f = next(f for f in findings if f.id == "comm-vs-gemm")
    assert f.data["harness_overhead_s"] is not None and f.data["harness_overhead_s"] > 0
    assert f.data["allreduce_s"] == pytest.approx(f.data["allreduce_raw_s"] - f.data["harness_overhead_s"])
    assert "harness's per-call overhead" in f.claim


def test_a_speedup_title_and_its_number_say_the_same_figures(findings):
    """"FP8 is 1.28× bf16 at M=16 (up to 1.98× possible)" stood over the number "1.28 x of 1.99 x": one ratio
    rounded twice."""
    import re

    speedups = [f for f in findings if f.id.startswith("fp8-vs-bf16-at-decode")]
    assert speedups
    for f in speedups:
        got, ideal = re.search(r"is ([\d.]+)× bf16 .*up to ([\d.]+)× possible", f.title).groups()
        (n,) = f.numbers
        assert (n.value, n.peak) == (float(got), float(ideal)), (f.title, n)
