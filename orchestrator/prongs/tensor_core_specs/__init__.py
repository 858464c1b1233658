"""Tensor-core specs: what the hardware can do at best (peaks per dtype from the spec database, the roofline of the
workload's GEMMs) and, when measurements are allowed (`--measure`), what it does (GEMM and all-reduce sweeps)."""

from orchestrator.ranks import Rank
from orchestrator.prong import Prong

PRONG = Prong(
    name="tensor_core_specs",
    agent="tensor-core-specs",
    tools=("orchestrator.prongs.tensor_core_specs.tool:GemmBenchmark",
           "orchestrator.prongs.tensor_core_specs.tool:CommBenchmark"),
    probe_models=("orchestrator.prongs.tensor_core_specs.models:MEASURE_MODELS",),
    rules=("orchestrator.prongs.tensor_core_specs.rules:measurements",),
    bound_tiers=(Rank.COMM_MEASURED,),
)
