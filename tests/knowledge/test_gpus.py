"""The GPU catalogue (knowledge/gpus.yaml): the GPUs people serve on, by the names nvidia-smi prints, each peak with a
public source; fuzzy suggestions; `investigate specs --list`; peaks reach the measurements through one lookup."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from orchestrator import knowledge
from orchestrator.prongs.tensor_core_specs.peaks import peaks_for
from orchestrator.render.specs import render_roofline

# nvidia-smi --query-gpu=name prints these (AMD: the product name amd-smi/rocm-smi print)
NAMES = [
    "Tesla T4", "NVIDIA A10G", "NVIDIA L4", "NVIDIA L40", "NVIDIA L40S",
    "NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB",
    "Tesla V100-SXM2-32GB", "Tesla V100-SXM2-16GB", "Tesla V100-PCIE-32GB", "Tesla V100-PCIE-16GB",
    "NVIDIA A800-SXM4-80GB", "NVIDIA A800 80GB PCIe", "NVIDIA H800",
    "NVIDIA H100 PCIe", "NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL", "NVIDIA H20", "NVIDIA H200", "NVIDIA H200 NVL",
    "NVIDIA GH200 480GB", "NVIDIA GH200 144G HBM3e", "NVIDIA B200", "NVIDIA B300 SXM6 AC", "NVIDIA GB200",
    "NVIDIA GB300", "NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 5090",
    "NVIDIA RTX 6000 Ada Generation", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    "NVIDIA GB10", "AMD Instinct MI300X", "AMD Instinct MI325X", "AMD Instinct MI355X",
]
URL = re.compile(r"^https://[a-z0-9.-]+\.[a-z]{2,}/\S*$")


@pytest.mark.parametrize("name", NAMES)
def test_every_gpu_resolves_by_the_name_its_driver_prints(name):
    spec = knowledge.gpu_spec(name)
    assert spec is not None and spec.name == name
    assert spec.mem_bw_gbs and spec.memory_gb and spec.tdp_w and spec.interconnect
    assert any(v for v in spec.tflops.values()), "at least one verified tensor peak"
    if spec.vendor == "nvidia":
        assert knowledge.arch_caps(spec.cc) is not None and spec.smem_per_block_bytes


def test_the_catalogue_is_exactly_the_named_gpus():
    assert sorted(knowledge.gpu_names()) == sorted(NAMES)


def test_every_entry_cites_public_urls():
    for g in knowledge.gpus():
        assert g.sources and all(URL.match(s) for s in g.sources), (g.name, g.sources)
        assert not any("KNOWLEDGE.md" in s for s in g.sources)


def test_no_alias_names_two_gpus_and_ambiguous_families_are_not_guessed():
    seen: dict[str, str] = {}
    for g in knowledge.gpus():
        for a in [g.name, *g.aliases]:
            key = knowledge._norm(a)
            assert seen.setdefault(key, g.name) == g.name, f"{a!r} names {seen[key]} and {g.name}"
    for family in ("h100", "a100", "gh200", "rtx pro 6000 blackwell"):
        assert knowledge.gpu_spec(family) is None, family


@pytest.mark.parametrize("query, expected", [
    ("h100", {"NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL"}),
    ("a100", {"NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB"}),
    ("mi300", {"AMD Instinct MI300X"}),
    ("rtx 6000 pro", {"NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "NVIDIA RTX PRO 6000 Blackwell Server Edition",
                      "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"}),
])
def test_a_family_query_suggests_its_members(query, expected):
    assert set(knowledge.closest_gpu_names(query)) == expected


def test_model_numbers_and_near_spellings():
    assert knowledge.gpu_spec("4090").name == "NVIDIA GeForce RTX 4090"
    assert knowledge.closest_gpu_names("4090")[0] == "NVIDIA GeForce RTX 4090"
    assert knowledge.closest_gpu_names("RTX 5090 Ti")[0] == "NVIDIA GeForce RTX 5090"
    assert {"NVIDIA H200", "NVIDIA H20"} <= set(knowledge.closest_gpu_names("H20O"))
    assert knowledge.gpu_spec("h200").name == "NVIDIA H200"  # nvidia-smi's own name for the SXM part


def test_geforce_rates_are_fp32_accumulate_and_say_so():
    for name, bf16, fp8 in [("NVIDIA GeForce RTX 4090", 165, 330), ("NVIDIA GeForce RTX 5090", 209.5, 419),
                            ("NVIDIA GeForce RTX 3090", 71, None)]:
        g = knowledge.gpu_spec(name)
        assert g.tflops["bf16"] == bf16 and g.tflops.get("fp8") == fp8
        assert "FP32-accumulate" in g.tflops_note and "FP16 accumulate" in g.tflops_note


def test_pinned_datasheet_figures():
    # a changed figure in gpus.yaml must break a test (each from the entry's cited datasheet)
    pins = {
        "NVIDIA H100 80GB HBM3": (1979, 989, 3350, 80, 700), "NVIDIA H100 PCIe": (1513, 756, 2000, 80, 350),
        "NVIDIA H200 NVL": (1670, 835, 4800, 141, 600), "NVIDIA L4": (242.5, 121, 300, 24, 72),
        "NVIDIA A100 80GB PCIe": (None, 312, 1935, 80, 300), "AMD Instinct MI300X": (2614.9, 1307.4, 5300, 192, 750),
        "NVIDIA GB300": (5000, 2500, 8000, 288, 1400), "NVIDIA H20": (296, 148, 4000, 96, 400),
    }
    for name, (fp8, bf16, bw, mem, tdp) in pins.items():
        g = knowledge.gpu_spec(name)
        assert (g.tflops.get("fp8"), g.tflops["bf16"], g.mem_bw_gbs, g.memory_gb, g.tdp_w) == (fp8, bf16, bw, mem, tdp)


def test_measurement_peaks_come_from_the_catalogue_for_every_gpu():
    for g in knowledge.gpus():
        p = peaks_for(g.name)
        assert p.gpu == g.name and p.mem_bw_tbs == g.mem_bw_gbs / 1000
        assert p.dense_tflops.get("bf16") == g.tflops.get("bf16")
        if g.tflops.get("fp4"):
            assert p.dense_tflops["nvfp4"] == p.dense_tflops["mxfp4"] == g.tflops["fp4"]
    assert peaks_for("NVIDIA Quadro RTX 8000") is None


def test_amd_parts_have_a_roofline():
    text = render_roofline("AMD Instinct MI300X", "fp8", 16, 4096, 7168)
    assert "2,615 TFLOPS / 5,300 GB/s" in text and "memory" in text
    assert knowledge.arch_caps(knowledge.gpu_spec("MI355X").cc) is None  # no NVIDIA arch facts for it


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=120)


def test_specs_list_names_every_gpu_and_specs_without_a_name_is_bad_usage():
    proc = _cli("specs", "--list")
    assert proc.returncode == 0, proc.stderr
    for name in NAMES:
        assert name in proc.stdout
    assert "FP32-accumulate" in proc.stdout
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("Tesla T4"))
    assert row.split()[5] == "-"  # no FP4 MMA on Turing: "-" (not n/v)
    bad = _cli("specs")
    assert bad.returncode == 2 and "--list" in bad.stderr and "Traceback" not in bad.stderr


def test_specs_of_a_family_lists_the_variants():
    # issue 30 item 13: the short name is answered (exit 0) with its parts, not refused as an unknown GPU
    proc = _cli("specs", "h100")
    assert proc.returncode == 0 and proc.stderr == ""
    assert all(n in proc.stdout for n in ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL"))


def test_peaks_the_vendor_does_not_publish_are_marked_derived():
    for name in ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "NVIDIA RTX PRO 6000 Blackwell Server Edition"):
        spec = knowledge.gpu_spec(name)
        assert spec is not None and {"fp8", "bf16"} <= set(spec.derived) and "fp4" not in spec.derived
        assert spec.tflops_note and "not published" in spec.tflops_note
    for g in knowledge.gpus():
        assert all(spec_key in g.tflops for spec_key in g.derived), g.name


def test_b200_memory_bandwidth_is_the_hgx_tables_per_gpu_figure():
    spec = knowledge.gpu_spec("NVIDIA B200")
    assert spec is not None and spec.mem_bw_gbs == 7700 and any("7.7 TB/s" in d for d in spec.disputes)


def test_roofline_and_reference_take_a_short_name_as_specs_does():
    from orchestrator.render.specs import render_references, render_roofline

    out = render_roofline("H100", "bf16", 4096, 4096, 4096)
    assert "'H100' stands for 3 GPUs" in out and "NVIDIA H100 PCIe" in out and "NVIDIA H100 NVL" in out
    assert "NVIDIA H100 80GB HBM3" in render_references("H100", "llama-3.1-70b", "fp8")
    assert render_roofline("NVIDIA H200", "bf16", 1, 4096, 4096).startswith("GEMM M=1")


@pytest.mark.parametrize("short, member", [("V100", "Tesla V100-SXM2-32GB"), ("H800", "NVIDIA H800"),
                                           ("A800", "NVIDIA A800-SXM4-80GB")])
def test_export_and_older_parts_are_known(short, member):
    assert member in [g.name for g in knowledge.gpu_family(short)]
