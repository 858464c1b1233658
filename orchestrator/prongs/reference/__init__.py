"""Reference throughput: the user's figure against the closest published rows (TensorRT-LLM perf overview, MLPerf),
every difference stated. Its tool is called by the tensor-core-specs agent; it has no agent of its own."""

from orchestrator.prong import Prong

PRONG = Prong(
    name="reference",
    tools=("orchestrator.prongs.reference.tool:ReferenceThroughput",),
    rules=("orchestrator.prongs.reference.rules:reference_rule",),
)
