"""Each rule with a positive and a negative case; the seed diagnosis; citations only of existing ids."""

from __future__ import annotations

import pytest
from support.evidence import RTX, SEED_OBS, ev, inventory, no_caches, obs_ev, pyenv, seed_evidence

from orchestrator.analysis import agent_findings, synthesize
from orchestrator.analysis import rules as R
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.render.specs import UnknownGpu, render_roofline, render_specs
from orchestrator.findings import AgentResult
from orchestrator.probes.results import AutotuneReport, CacheFile, GpuInventory, LogMatch, LogScan

H200_OBS = {**SEED_OBS, "gpu": {"power_w": 690, "power_limit_w": 700, "utilization_pct": 99}}


def ids(findings):
    return {f.id for f in findings}


def view(*evs):
    return EvidenceView(list(evs))


def h200():
    return [ev("ev-1.1", inventory("NVIDIA H200", "9.0", 8, power=690, limit=700, util=99, nvlink=True)),
            ev("ev-1.2", pyenv()), obs_ev("ev-3.1", H200_OBS)]


@pytest.mark.parametrize("rule,positive,negative", [
    (R.arch_vs_peer, lambda: view(ev("e1", inventory())), lambda: view(ev("e1", inventory("NVIDIA H200", "9.0")))),
    (R.fp4_without_tensor_cores, lambda: view(*h200()), lambda: view(*seed_evidence())),
    (R.autotune_not_persisted, lambda: view(*seed_evidence()),
     lambda: view(ev("e1", no_caches().model_copy(update={"persisted_any": True})), ev("e2", pyenv()))),
    (R.autotune_fallback, lambda: view(ev("e1", AutotuneReport(persisted_any=True, files=[CacheFile(
        format="flashinfer_autotune", path="/c/fi.json", entries=4, fallback_entries=3)]))),
     lambda: view(ev("e1", AutotuneReport(persisted_any=True, files=[CacheFile(format="flashinfer_autotune", path="/c", entries=4)])))),
    (R.autotune_mismatch, lambda: view(ev("e1", AutotuneReport(files=[CacheFile(
        format="flashinfer_autotune", path="/c/fi.json", metadata_mismatch=["flashinfer_version"])]))),
     lambda: view(ev("e1", AutotuneReport()))),
    (R.moe_config_missing, lambda: view(ev("e1", AutotuneReport(tuned_config_for_device=False, device_name=RTX))),
     lambda: view(ev("e1", AutotuneReport(tuned_config_for_device=True)))),
    (R.moe_decode_memory_bound, lambda: view(*seed_evidence()), lambda: view(ev("e1", inventory()))),
    (R.parallelism_scaling, lambda: view(obs_ev("e1")),
     lambda: view(obs_ev("e1", {"runs": [{"tp": 8, "total_tok_s": 100}, {"tp": 4, "pp": 2, "total_tok_s": 95}]}))),
    (R.power_vs_limit, lambda: view(obs_ev("e1")), lambda: view(obs_ev("e1", {"gpu": {"power_w": 400, "power_limit_w": 600}}))),
    (R.catalog_signals, lambda: view(ev("e1", LogScan(files=["/l"], matches=[LogMatch(
        path="/l", line_no=3, line="Using default MoE config. Performance might be sub-optimal!", signature_id="vllm-default-moe-config")]))),
     lambda: view(ev("e1", LogScan(files=["/l"], lines_scanned=10)))),
    (R.catalog_signals, lambda: view(ev("e1", inventory()), ev("e2", pyenv())),
     lambda: view(ev("e1", inventory("NVIDIA H200", "9.0")), ev("e2", pyenv()))),
    (R.pcie_allreduce, lambda: view(ev("e1", inventory())), lambda: view(ev("e1", inventory(nvlink=True)))),
    (R.hardware_peaks, lambda: view(ev("e1", inventory())), lambda: view(ev("e1", GpuInventory(gpus=[])))),
])
def test_rule_fires_on_its_evidence_and_not_without_it(rule, positive, negative):
    found = rule(positive())
    assert found and all(f.evidence and f.recommendations is not None for f in found)
    assert rule(negative()) == []


def test_error_results_are_never_cited():
    bad = ev("ev-9.1", inventory(), is_error=True)
    assert agent_findings([bad], None) == []


def test_seed_case_diagnosis_says_what_an_expert_would(seed, seed_obs):
    d = synthesize("why is NVFP4 slow on my RTX PRO 6000s?", seed_obs, seed, [])
    text = " ".join([d.verdict, d.bound_reasoning] + [c.title + " " + c.explanation for c in d.causes])
    assert d.bound == "memory"
    assert d.causes[0].title.startswith("The halving") and "rules out all-reduce" in text
    # at most five ranked causes (issue 24): what this host's evidence shows first, the architecture's gaps against
    # its datacenter peer after it (ranked, or under also noticed)
    assert len(d.causes) <= 5
    noticed = " ".join(f"{a.title} {a.note}" for a in d.also_noticed)
    assert "101,376 B" in text + noticed and "232,448 B" in text + noticed
    assert "tcgen05" in text + noticed and "reduced subset" in text + noticed
    # an unpersisted autotune cache costs start-up time on a host that serves: said once under also noticed (issue
    # 24), not ranked for a throughput question, and its cache advice is not the first thing to do
    assert "not persisted" not in text.lower()
    assert "not persisted" in noticed.lower() and "start-up time" in noticed
    assert "memory-bound" in text and "ridge" in text
    assert "55 %" in text
    actions = " ".join(r.action for r in d.recommendations)
    for needle in ("b12x", "marlin", "PR#40082"):
        assert needle.lower() in actions.lower()
    assert "VLLM_FLASHINFER_AUTOTUNE_CACHE_DIR" not in actions
    names = {n.name: n for n in d.numbers}
    assert names["decode tokens per expert (B*k/E)"].value == 16
    assert names["power draw"].value == 330 and names["power draw"].peak == 600


def test_h200_host_gets_a_different_true_diagnosis():
    d = synthesize("why is FP4 slow?", None, h200(), [])
    text = " ".join(c.explanation for c in d.causes)
    assert "no FP4 tensor cores" in text and "101,376" not in text and "tcgen05" not in text.replace("tcgen05=", "")
    # 690 of 700 W: the power cause is there and cites the observations that carry the reading (not vacuous: the
    # title is capitalised, and every cause has evidence, so the old `... not in c.title or c.evidence` always held)
    power = [c for c in d.causes if "near the power limit" in c.title.lower()]
    assert len(power) == 1 and power[0].evidence == ["ev-3.1"]
    assert not any(f.id == "pcie-allreduce" for f in agent_findings(h200(), None))


def test_diagnosis_never_cites_a_nonexistent_id(seed, seed_obs):
    stray = AgentResult(agent_id="a9", name="kernels", status="ok", findings=[
        R.Finding(id="ghost", claim="made up", evidence=["ev-404"])])
    d = synthesize("q", seed_obs, seed, [stray])
    known = {e.id for e in seed}
    assert d.causes and all(e in known for c in d.causes for e in c.evidence)
    assert all(n.source in known for n in d.numbers if n.source.startswith("ev-"))


def test_host_with_no_gpu_gets_no_gpu_claims():
    evs = [ev("ev-1.1", GpuInventory(host="cpu-box", gpus=[])), ev("ev-1.2", pyenv())]
    d = synthesize("why slow?", None, evs, [])
    assert not any(c for c in d.causes if c.evidence and "ev-1.1" in c.evidence)
    assert "GPU" not in " ".join(c.explanation for c in d.causes if "NVIDIA" in c.explanation)


def test_no_evidence_gives_an_honest_unknown_with_gaps():
    failed = AgentResult(agent_id="a2", name="autotune", status="timeout", error="host lost after 30 s")
    d = synthesize("why slow?", None, [], [failed])
    assert d.bound == "unknown" and d.verdict.startswith("Unknown") and d.causes == []
    assert any("autotune" in g.what and "host lost" in g.why for g in d.gaps)


def test_unavailable_probe_becomes_a_gap(seed, seed_obs):
    down = ev("ev-4.1", LogScan(available=False, reason="no such file /var/log/vllm.log"))
    d = synthesize("q", seed_obs, seed + [down], [])
    assert any("log_scan" in g.what and "no such file" in g.why for g in d.gaps)


def test_specs_renderer_shows_sources_and_unknown_gpu_names_closest():
    out = render_specs("NVIDIA RTX PRO 6000 Blackwell Workstation Edition")
    assert "101,376 B" in out and "sources:" in out and "tcgen05=no" in out
    with pytest.raises(UnknownGpu, match="RTX PRO 6000 Blackwell"):
        render_specs("RTX 6000 Pro Blackwall")  # "Blackwel" is a prefix: the family is listed


def test_roofline_renderer_on_h200_runs_fp4_weight_only_at_the_bf16_peak_with_bf16_activations():
    out = render_roofline("NVIDIA H200", "nvfp4", 16, 4096, 7168)
    assert "memory" in out and "BF16 peak" in out and "989" in out and "weight-only" in out
    # NVFP4 weights (0.5625 B/elem) with BF16 activations and output
    assert f"{int(4096 * 7168 * 0.5625 + 16 * 7168 * 2 + 16 * 4096 * 2):,}" in out


def test_roofline_renderer_on_b200_runs_nvfp4_natively():
    out = render_roofline("NVIDIA B200", "nvfp4", 16, 4096, 7168)
    assert "weight-only" not in out and "9,000" in out
