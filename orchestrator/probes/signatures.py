"""Known-issue log signatures the log scan matches (until `orchestrator.knowledge` carries them).

Each entry: id, a regex over one log line, what it means, and the source named in KNOWLEDGE.md.
"""

from __future__ import annotations

from pydantic import BaseModel


class Signature(BaseModel):
    id: str
    pattern: str
    meaning: str
    source: str


SIGNATURES: list[Signature] = [
    Signature(id="vllm-default-moe-config",
              pattern=r"Using default MoE config\. Performance might be sub-optimal!",
              meaning="vLLM found no tuned fused-MoE config for this E, N and device name",
              source="vllm model_executor/layers/fused_moe/fused_moe.py get_moe_configs"),
    Signature(id="sglang-default-moe-config",
              pattern=r"Using default MoE kernel config\. Performance might be sub-optimal!",
              meaning="SGLang found no tuned fused-MoE config for this shape and device",
              source="sglang srt/layers/moe/fused_moe_triton"),
    Signature(id="flashinfer-autotuner-fallback",
              pattern=r"\[AutoTuner\]:? No tuned config covers .*tactic=-1|\[AutoTuner\].*fall(?:ing)? ?back.*tactic",
              meaning="FlashInfer's autotuner had no result for this shape and used the fallback tactic -1",
              source="flashinfer autotuner.py"),
    Signature(id="flashinfer-skipped-tactics",
              pattern=r"Skipped \d+ unsupported tactic\(s\)|Skipping tactic",
              meaning="FlashInfer skipped tactics that do not run on this GPU (flashinfer#2077, #3031)",
              source="flashinfer autotuner.py; flashinfer#2077"),
    Signature(id="fp4-marlin-fallback",
              pattern=r"GPU does not have native support for FP4",
              meaning="vLLM falls back to Marlin weight-only FP4 (backend check only accepts CC 10.0)",
              source="vllm#31085, vllm#30135"),
    Signature(id="cutlass-tma-ws-grouped-gemm-init",
              pattern=r"Failed to initialize cutlass TMA WS grouped gemm",
              meaning="FlashInfer's bundled CUTLASS grouped GEMM failed to initialize on this GPU",
              source="vllm PR#38423 (FlashInfer 0.6.6, CUTLASS 4.2.1)"),
    Signature(id="illegal-instruction",
              pattern=r"[Ii]llegal ?[Ii]nstruction|cudaErrorIllegalInstruction",
              meaning="a kernel used an instruction this GPU lacks (small-M tiles on SM120)",
              source="vllm PR#38423"),
    Signature(id="custom-allreduce-disabled",
              pattern=r"[Cc]ustom allreduce is disabled|Custom all-?reduce.*disabled",
              meaning="vLLM's custom all-reduce is off (more than 2 PCIe-only GPUs): TP all-reduce goes through NCCL",
              source="rtx6kpro#25"),
    Signature(id="symm-mem-unavailable",
              pattern=r"[Ss]ymm(?:etric)?[ _-]?[Mm]em.*(?:not (?:available|supported)|unavailable|disabled)",
              meaning="symmetric-memory all-reduce is unavailable on this GPU (CC 12.0)",
              source="rtx6kpro#25"),
]


def log_signatures() -> list[dict[str, str]]:
    """Signatures for the log scan: the knowledge base's known issues (case-insensitive), else the list above."""
    try:
        from orchestrator.knowledge import known_issues

        issues = known_issues()
    except Exception:  # the knowledge base is optional for probing: fall back to the built-in list
        issues = ()
    sigs = [{"id": i.id, "pattern": "(?i)" + p} for i in issues for p in i.patterns]
    return sigs or [{"id": s.id, "pattern": s.pattern} for s in SIGNATURES]
