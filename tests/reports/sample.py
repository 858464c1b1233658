"""A realistic Diagnosis (H200, FP8 at small batch) with GEMM numbers, and hostile text for escaping checks."""

from __future__ import annotations

from orchestrator.diagnosis import (
    AgentUsage,
    Cause,
    Diagnosis,
    EvidenceRef,
    Gap,
    Number,
    Recommendation,
    RunUsage,
)
from orchestrator.messages import Usage

HOSTILE = '<script>alert("x")</script><img src="https://evil.example/p.png">'


def sample_diagnosis(*, hostile: bool = False) -> Diagnosis:
    excerpt = "GPU 0: NVIDIA H200, 141 GB, power 312 W / 700 W"
    if hostile:
        excerpt += " " + HOSTILE
    return Diagnosis(
        question="why is FP8 slow at small batch?",
        verdict="Decode GEMMs at batch 8 are deep in the memory-bound region: each step streams all FP8 weights "
        "for 8 rows, so tensor cores idle (see ev-2.1).",
        bound="memory",
        bound_reasoning="arithmetic intensity 16 FLOP/B is far below the H200 ridge point of 412 FLOP/B",
        causes=[
            Cause(title="Small-M GEMMs are weight-bandwidth bound", explanation="At M=8, intensity ~2M/b_w.",
                  confidence=0.85, evidence=["ev-2.1", "ev-4.1"]),
            Cause(title="Autotuner fell back to a default tactic", explanation="tactic=-1 for M<=16 in ev-3.2",
                  confidence=0.55, evidence=["ev-3.2"]),
        ],
        numbers=[
            Number(name="arithmetic intensity (M=8)", value=16, unit="FLOP/B", peak=412, source="ev-4.1"),
            Number(name="ridge point", value=412, unit="FLOP/B", source="knowledge:h200"),
            Number(name="GEMM throughput", value=50, unit="TFLOPS", peak=1979, source="ev-4.1"),
            Number(name="HBM bandwidth", value=3.1, unit="TB/s", peak=4.8, source="ev-4.1"),
            Number(name="power", value=312, unit="W", peak=700, source="ev-2.1"),
        ],
        recommendations=[
            Recommendation(action="Batch more requests per step", why="raises M and intensity",
                           addresses="Small-M GEMMs are weight-bandwidth bound"),
        ],
        gaps=[Gap(what="web research", why="no network" + (" " + HOSTILE if hostile else ""))],
        evidence={
            "ev-2.1": EvidenceRef(agent="node-health-2", tool="nvidia_smi", host="h200-box", excerpt=excerpt),
            "ev-3.2": EvidenceRef(agent="autotune-inspection-3", tool="autotune_cache", host="h200-box",
                                  excerpt="[AutoTuner]: No tuned config covers M=8 tactic=-1"),
            "ev-4.1": EvidenceRef(agent="tensor-core-specs-4", tool="roofline", excerpt="ridge 412 FLOP/B"),
        },
        usage=RunUsage(total=Usage(input_tokens=12000, output_tokens=1500, cost_usd=0.12, calls=9),
                       agents=[AgentUsage(agent_id="lead", usage=Usage(input_tokens=5000, calls=2), duration_s=14)]),
    )
