"""Knowledge lookups and roofline numbers against hand-computed values."""

from __future__ import annotations

import pytest

from orchestrator import knowledge
from orchestrator.knowledge.catalog import catalog
from orchestrator.analysis.observation_rules import analyze_observations, read_power
from orchestrator.analysis.roofline import experts_touched, gemm_roofline, moe_decode_roofline, tile_waste
from orchestrator.observations import Observations

NVIDIA_SMI_NAMES = [
    "NVIDIA A100-SXM4-80GB", "NVIDIA L40S", "NVIDIA GeForce RTX 4090", "NVIDIA H100 80GB HBM3", "NVIDIA H200",
    "NVIDIA B200", "NVIDIA GB200", "NVIDIA B300 SXM6 AC", "NVIDIA GeForce RTX 5090",
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "NVIDIA GB10",
]


@pytest.mark.parametrize("name", NVIDIA_SMI_NAMES)
def test_every_knowledge_gpu_resolves_by_its_nvidia_smi_name(name):
    spec = knowledge.gpu_spec(name)
    assert spec is not None and spec.name == name and spec.sources
    assert knowledge.arch_caps(spec.cc) is not None


def test_max_q_never_matches_the_600w_part():
    assert knowledge.gpu_spec("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition").tdp_w == 300
    assert knowledge.gpu_spec("nvidia rtx pro 6000 blackwell max-q workstation edition").tdp_w == 300
    assert knowledge.gpu_spec("NVIDIA RTX PRO 6000 Blackwell Workstation Edition").tdp_w == 600


def test_unknown_gpu_gets_closest_names_not_a_guess():
    assert knowledge.gpu_spec("Quadro RTX 8000") is None
    assert "NVIDIA H200" in knowledge.closest_gpu_names("H20O")


def test_every_knowledge_entry_carries_a_source():
    assert all(g.sources for g in knowledge.gpus())
    assert all(a.sources and all(f.source for f in a.notes + a.missing_vs_peer) for a in knowledge.archs())
    assert all(b.source for b in knowledge.backends())
    assert all(f.sources for f in knowledge.cache_formats_table().values())
    assert all(d.sources for d in knowledge.dtypes())
    assert all(e.sources and (e.fix or e.rule) for e in catalog())


def test_disputed_figures_keep_both_sources():
    assert any("1,597" in d for d in knowledge.gpu_spec("NVIDIA RTX PRO 6000 Blackwell Server Edition").disputes)
    assert any("15,000" in d for d in knowledge.gpu_spec("NVIDIA B300 SXM6 AC").disputes)
    assert any("2897" in d for d in knowledge.arch_caps("12.0").disputes)


def test_sm120_smem_and_tcgen05_facts_come_from_cutlass():
    sm120, sm100 = knowledge.arch_caps("12.0"), knowledge.arch_caps("sm_100a")
    assert sm120.max_smem_per_block_bytes == 101376 and sm100.max_smem_per_block_bytes == 232448
    assert not sm120.tcgen05 and not sm120.tmem and not sm120.two_sm_mma and sm100.tcgen05
    assert {b.backend for b in knowledge.backends_for("12.0", "flashinfer", "mm_fp4")} == {"cudnn", "cutlass", "b12x"}
    assert "b12x" not in {b.backend for b in knowledge.backends_for("10.0", "flashinfer", "mm_fp4")}


def test_known_issue_patterns_match_real_log_lines():
    def matches(entry_id: str, line: str) -> bool:
        return any(s.compiled().search(line) for s in catalog().get(entry_id).signals if s.log)

    line = "[AutoTuner]: No tuned config covers shape (1, 7168) for op fp4_gemm, using tactic=-1"
    assert matches("flashinfer-autotuner-no-tuned-config", line)
    assert matches("vllm-default-moe-config",
                   "WARNING fused_moe.py:727] Using default MoE config. Performance might be sub-optimal! Config file not found at x.json")
    assert not matches("vllm-default-moe-config", "Using tuned MoE config")


def test_knowledge_search_finds_facts_with_sources():
    hits = knowledge.search("sm120 shared memory")
    assert hits and all(h["source"] for h in hits)
    assert knowledge.search("no such thing zzz") == []


def test_gemm_roofline_matches_hand_computed_nvfp4_numbers():
    r = gemm_roofline(16, 4096, 7168, "nvfp4", 2000, 1792)
    assert r.flops == 939_524_096
    assert r.bytes == pytest.approx(4096 * 7168 * 0.5625 + 16 * 7168 * 0.5625 + 16 * 4096 * 2)
    assert r.ridge == pytest.approx(1116.07, rel=1e-4)
    assert r.intensity == pytest.approx(56.223, rel=1e-4) and r.bound == "memory"
    assert r.time_floor_us == pytest.approx(16_710_656 / 1792e9 * 1e6)


def test_gemm_roofline_large_bf16_is_compute_bound():
    r = gemm_roofline(8192, 8192, 8192, "bf16", 989, 4800)
    assert r.bound == "compute" and r.attainable_tflops == 989
    assert r.time_floor_us == pytest.approx(2 * 8192**3 / 989e12 * 1e6)


def test_mxfp4_and_nvfp4_scale_overheads():
    assert gemm_roofline(1, 32, 32, "mxfp4", 1, 1).bytes == pytest.approx(32 * 32 * 0.53125 * 1 + 32 * 0.53125 + 32 * 2)
    assert gemm_roofline(1, 16, 16, "nvfp4", 1, 1).bytes == pytest.approx(16 * 16 * 0.5625 + 16 * 0.5625 + 16 * 2)


def test_moe_decode_tokens_per_expert_and_experts_touched():
    assert experts_touched(4, 256, 8) == pytest.approx(256 * (1 - (1 - 8 / 256) ** 4))
    r = moe_decode_roofline(batch=512, num_experts=256, top_k=8, hidden=6144, intermediate=2048, dtype="nvfp4",
                            peak_tflops=2000, bandwidth_gbs=1792, tp=8, layers=78)
    assert r.tokens_per_expert == 16
    assert r.weight_bytes_per_layer == pytest.approx(r.experts_touched * 3 * 6144 * 2048 / 8 * 0.5625)
    assert r.bound == "memory" and r.intensity < r.ridge / 10


def test_small_m_tile_waste():
    assert tile_waste(2, 16) == pytest.approx(0.875)
    assert tile_waste(4, 16) == pytest.approx(0.75)
    assert tile_waste(16, 16) == 0


def test_tp8_vs_tp4pp2_halving_rules_out_allreduce_but_not_memory_vs_compute(seed_obs):
    a = analyze_observations(seed_obs)
    (c,) = a.comparisons
    assert c.verdict == "gemm" and c.ratio == pytest.approx(2800 / 1318)
    assert any("all-reduce" in x for x in c.rules_out)
    assert any("memory-bound" in x for x in c.cannot_separate)
    assert a.power.pattern == "stall" and a.power.fraction == pytest.approx(0.55)


def test_opposite_pattern_points_at_communication():
    obs = Observations.model_validate({"runs": [{"tp": 8, "total_tok_s": 40}, {"tp": 4, "pp": 2, "total_tok_s": 88}],
                                       "gpu": {"power_w": 140, "power_limit_w": 600, "utilization_pct": 100}})
    a = analyze_observations(obs)
    assert a.comparisons[0].verdict == "communication" and a.notes


def test_power_near_limit_is_compute_not_stall():
    assert read_power(690, 700, 0.99).pattern == "compute"
    assert read_power(100, 700, None).pattern == "unclear"
