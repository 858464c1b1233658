"""Dense peaks and memory bandwidth of a GPU for the measurement arithmetic.

An adapter only: the figures come from `orchestrator/knowledge/gpus.yaml` through `knowledge.gpu_spec` (the one GPU
table), keyed by the dtypes the GEMM micro-benchmark times (`measurable` in knowledge/dtypes.yaml).
"""

from __future__ import annotations

from orchestrator import knowledge
from orchestrator.prongs.tensor_core_specs.models import Peaks


def peaks_for(gpu_name: str | None) -> Peaks | None:
    """The GPU's peaks by its nvidia-smi/torch name; None if the knowledge base does not know it."""
    spec = knowledge.gpu_spec(gpu_name)
    if spec is None:
        return None
    dense: dict[str, float] = {}
    for d in knowledge.dtypes():
        value = spec.tflops.get(d.tensor_peak) if d.measurable and d.tensor_peak else None
        if value is not None:
            dense[d.name] = float(value)
    return Peaks(gpu=spec.name, dense_tflops=dense,
                 mem_bw_tbs=spec.mem_bw_gbs / 1000.0 if spec.mem_bw_gbs else None,
                 source="knowledge/gpus.yaml: " + spec.source)
