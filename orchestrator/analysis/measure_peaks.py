"""Dense peaks and memory bandwidth of a GPU for the measurement arithmetic.

Read from the knowledge base (`orchestrator/knowledge/gpus.yaml`) when it has the GPU; otherwise a small fallback
taken from the same datasheet figures (KNOWLEDGE.md's table), so the measurement code does not depend on it.
"""

from __future__ import annotations

from importlib import resources

import yaml

from orchestrator.probes.measure_models import Peaks

# name -> (dense TFLOPS per dtype, TB/s, source). KNOWLEDGE.md "GPU specs" (vendor sparse figures halved).
_FALLBACK: dict[str, tuple[dict[str, float], float, str]] = {
    "NVIDIA H100 80GB HBM3": ({"bf16": 989, "fp16": 989, "fp8": 1979}, 3.35, "NVIDIA H100 SXM datasheet"),
    "NVIDIA H200": ({"bf16": 989, "fp16": 989, "fp8": 1979}, 4.8, "NVIDIA H200 SXM datasheet"),
    "NVIDIA B200": ({"bf16": 2250, "fp16": 2250, "fp8": 4500, "nvfp4": 9000, "mxfp4": 9000}, 8.0,
                    "glennklockwood.com garden B200"),
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": (
        {"bf16": 500, "fp16": 500, "fp8": 1000, "nvfp4": 2000, "mxfp4": 2000}, 1.792, "topcpu.net / gpu.name"),
}


def _norm(name: str) -> str:
    return " ".join(name.lower().replace("nvidia", "").replace("-", " ").split())


def _from_knowledge(gpu_name: str) -> Peaks | None:
    try:
        text = resources.files("orchestrator.knowledge").joinpath("gpus.yaml").read_text()
        entries = yaml.safe_load(text) or []
    except (FileNotFoundError, ModuleNotFoundError, yaml.YAMLError, OSError):
        return None
    want = _norm(gpu_name)
    for e in entries if isinstance(entries, list) else []:
        names = [e.get("name", "")] + list(e.get("aliases") or [])
        if want not in {_norm(str(n)) for n in names if n}:
            continue
        tf = e.get("tflops") or {}
        dense = {k: float(v) for k, v in tf.items() if v is not None and k in ("bf16", "fp16", "fp8")}
        if tf.get("fp4") is not None:
            dense["nvfp4"] = dense["mxfp4"] = float(tf["fp4"])
        bw = e.get("mem_bw_gbs")
        return Peaks(gpu=e.get("name", gpu_name), dense_tflops=dense,
                     mem_bw_tbs=float(bw) / 1000.0 if bw else None,
                     source="knowledge/gpus.yaml: " + "; ".join(e.get("sources") or []))
    return None


def peaks_for(gpu_name: str | None) -> Peaks | None:
    """The GPU's peaks by its nvidia-smi/torch name (knowledge base first, then the fallback); None if unknown."""
    if not gpu_name:
        return None
    found = _from_knowledge(gpu_name)
    if found is not None:
        return found
    want = _norm(gpu_name)
    for name, (dense, bw, source) in _FALLBACK.items():
        if _norm(name) == want:
            return Peaks(gpu=name, dense_tflops={k: float(v) for k, v in dense.items()}, mem_bw_tbs=bw,
                         source=source)
    return None
