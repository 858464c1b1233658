"""The one dtype table (knowledge/dtypes.yaml): spellings, bytes, native MMA per compute capability, and that the
modules which used to keep their own copies now read it."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from orchestrator import knowledge
from orchestrator.prongs.tensor_core_specs import arithmetic as measure
from orchestrator.prongs.tensor_core_specs import peaks as measure_peaks
from orchestrator.analysis import moe_inputs, roofline, rules


@pytest.mark.parametrize("spelling, name", [
    ("NVFP4", "nvfp4"), ("modelopt_fp4", "nvfp4"), ("w4a4", "nvfp4"), ("MXFP4", "mxfp4"), ("e2m1", "fp4"),
    ("fp8_w8a8", "fp8"), ("float8_e4m3fn", "fp8"), ("e5m2", "fp8"), ("bfloat16", "bf16"), ("half", "fp16"),
    ("AWQ", "w4a16"), ("gptq_marlin", "w4a16"), ("float32", "fp32"), (" bf16 ", "bf16"),
])
def test_every_spelling_resolves_to_one_entry(spelling, name):
    assert knowledge.dtype_info(spelling).name == name
    assert knowledge.canonical_dtype(spelling) == name


def test_unknown_dtype_is_none_and_bytes_raise_naming_the_known_ones():
    assert knowledge.dtype_info("fp12") is None and knowledge.dtype_info(None) is None
    with pytest.raises(knowledge.UnknownDtype, match="nvfp4.*bf16"):
        knowledge.bytes_per_element("fp12")


def test_bytes_include_block_scales():
    # NVFP4: E2M1 + one E4M3 byte per 16; MXFP4: + one UE8M0 byte per 32 (OCP MX v1.0); W4A16: FP16 scale + 4-bit
    # zero per 128
    assert knowledge.bytes_per_element("nvfp4") == 0.5 + 1 / 16
    assert knowledge.bytes_per_element("mxfp4") == 0.5 + 1 / 32
    assert knowledge.bytes_per_element("mxfp8") == 1 + 1 / 32
    assert knowledge.bytes_per_element("w4a16") == 0.5 + 2.5 / 128
    assert knowledge.bytes_per_element("fp8") == 1 and knowledge.bytes_per_element("bf16") == 2
    assert knowledge.bytes_per_element("fp32") == 4


@pytest.mark.parametrize("dtype, cc, native", [
    ("nvfp4", "12.0", True), ("mxfp4", "10.0", True), ("nvfp4", "9.0", False), ("fp4", "8.9", False),
    ("fp8", "8.9", True), ("fp8", "8.0", False), ("e4m3", "sm_90", True), ("fp8", "8.6", False),
    ("bf16", "7.5", False), ("fp16", "7.5", True), ("bf16", "8.6", True), ("w4a16", "9.0", False),
    ("nvfp4", "gfx942", None), ("fp12", "9.0", None),
])
def test_native_mma_per_compute_capability(dtype, cc, native):
    assert knowledge.native_mma(dtype, cc) is native


def test_tensor_peak_and_low_precision_class():
    assert knowledge.tensor_dtype("NVFP4") == knowledge.tensor_dtype("mxfp4") == "fp4"
    assert knowledge.tensor_dtype("mxfp8") == "fp8" and knowledge.tensor_dtype("awq") == "bf16"
    assert knowledge.lowp_class("w4a4") == "fp4" and knowledge.lowp_class("fp8_w8a8") == "fp8"
    assert knowledge.lowp_class("w4a16") is None and knowledge.lowp_class("bf16") is None
    assert knowledge.dtype_info("w4a16").weight_only and not knowledge.dtype_info("nvfp4").weight_only
    assert knowledge.activation_dtype("awq") == "bf16" and knowledge.activation_dtype("nvfp4") == "nvfp4"


def test_arch_capabilities_are_derived_from_the_dtype_table():
    a100, ada, sm120 = knowledge.arch_caps("8.0"), knowledge.arch_caps("8.9"), knowledge.arch_caps("12.0")
    assert not a100.fp8_tensor_cores and not a100.fp4_tensor_cores and a100.tensor_dtypes[:2] == ["fp16", "bf16"]
    assert ada.fp8_tensor_cores and not ada.fp4_tensor_cores
    assert sm120.fp4_tensor_cores and "nvfp4" in sm120.tensor_dtypes
    assert "fp4_tensor_cores" in sm120.model_dump()  # spec payloads and transcripts keep the derived fields
    arch_yaml = yaml.safe_load(
        (knowledge.resources.files("orchestrator.knowledge") / "arch.yaml").read_text(encoding="utf-8"))
    assert not any({"tensor_dtypes", "fp4_tensor_cores", "fp8_tensor_cores"} & set(a) for a in arch_yaml)


def test_a_spelling_claimed_twice_is_a_load_error():
    raw = yaml.safe_load((knowledge.resources.files("orchestrator.knowledge") / "dtypes.yaml").read_text("utf-8"))
    raw[0]["aliases"].append("bfloat16")
    with pytest.raises(ValueError, match="'bfloat16' names both"):
        knowledge.parse_dtypes(raw)


def test_no_module_keeps_its_own_dtype_table():
    for mod, name in [(rules, "FP4_DTYPES"), (rules, "FP8_DTYPES"), (roofline, "BYTES_PER_ELEM"),
                      (measure, "BYTES_PER_ELEM"), (measure, "QUANT_DTYPE"), (moe_inputs, "FP4"),
                      (measure_peaks, "_FALLBACK")]:
        assert not hasattr(mod, name), f"{mod.__name__}.{name} is a second copy of the dtype/GPU table"
    assert roofline.bytes_per_elem("nvfp4") == knowledge.bytes_per_element("nvfp4")
    assert measure.gemm_bytes(1, 1, 16, "nvfp4", out_bytes=0) == 32 * knowledge.bytes_per_element("nvfp4")
    assert measure.dtype_of_quantization("NVFP4") == "nvfp4"
    assert measure.dtype_of_quantization("awq") == "bf16"  # weight-only: its GEMMs run BF16


def test_weight_only_and_compute_peak_follow_the_table():
    h200, a100 = knowledge.gpu_spec("NVIDIA H200"), knowledge.gpu_spec("NVIDIA A100-SXM4-80GB")
    assert moe_inputs.compute_peak(h200, knowledge.arch_caps("9.0"), "nvfp4") == (1979, "fp8")
    assert moe_inputs.compute_peak(a100, knowledge.arch_caps("8.0"), "fp8") == (312, "bf16")
    assert moe_inputs.weight_only(knowledge.arch_caps("8.0"), "fp8")
    assert not moe_inputs.weight_only(knowledge.arch_caps("9.0"), "fp8")
    assert moe_inputs.weight_only(knowledge.arch_caps("9.0"), "w4a16")


def test_roofline_cli_rejects_an_unknown_dtype_with_one_line_naming_the_table():
    proc = subprocess.run([sys.executable, "-m", "orchestrator.cli", "roofline", "--gpu", "NVIDIA H200", "--dtype",
                           "fp12", "-m", "1", "-n", "1", "-k", "1"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "unknown dtype 'fp12'" in lines[0] and "nvfp4" in lines[0]
