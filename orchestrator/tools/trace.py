"""Tool `trace_analysis`: read the profiles the run names (Kineto JSON per rank, nsys SQLite) and account for
where each steady step's time went; the GEMMs with recorded shapes placed on the GPU's roofline."""

from __future__ import annotations

import anyio
from pydantic import BaseModel, Field

from orchestrator import knowledge
from orchestrator.analysis.roofline import gemm_roofline
from orchestrator.tools.base import Tool, ToolContext, ToolFailure, ToolOutput, ToolRegistry
from orchestrator.traces.analyze import analyze
from orchestrator.traces.inputs import TraceInputError
from orchestrator.traces.kineto import TraceFormatError
from orchestrator.traces.model import TraceReport
from orchestrator.traces.nsys import NsysFormatError
from orchestrator.traces.text import report_text

MAX_STEP_ROWS = 256
"""Per-step rows kept in the evidence (the report's bar chart); the account itself covers every step."""


class TraceInput(BaseModel):
    paths: list[str] = Field(default_factory=list, description="Trace files, directories of per-rank traces or "
                             "globs (default: the run's --trace paths).")
    baseline: list[str] = Field(default_factory=list, description="Baseline trace(s) to diff against (default: the "
                                "run's --baseline-trace paths).")
    include_host: bool = Field(False, description="Keep python_function events as host ranges (slower).")


def place_on_roofline(report: TraceReport) -> None:
    """Fill each recorded GEMM's roofline from the GPU the trace names (knowledge/gpus.yaml)."""
    for a in [*report.ranks, *report.baseline]:
        spec = knowledge.gpu_spec(a.gpu_name)
        if spec is None or not spec.mem_bw_gbs:
            continue
        for g in a.gemms:
            peak = spec.tflops.get(g.dtype)  # type: ignore[call-overload]
            if not peak:
                continue
            r = gemm_roofline(g.m, g.n, g.k, g.dtype, peak, spec.mem_bw_gbs)
            g.peak_tflops, g.bandwidth_gbs = peak, spec.mem_bw_gbs
            g.attainable_tflops = round(r.attainable_tflops, 3)
            g.fraction_of_attainable = round(g.achieved_tflops / r.attainable_tflops, 4)
            g.bound = r.bound


class TraceAnalysis(Tool):
    name = "trace_analysis"
    description = (
        "Read PyTorch-profiler / Kineto traces (.json, .json.gz; one per rank, vLLM and SGLang layouts) and Nsight "
        "Systems SQLite exports as streams and account for each steady step (warm-up and CUDA-graph capture left "
        "out): GPU busy by kernel class (GEMM, attention, MoE, norm/activation, communication, copies) vs idle as "
        "interval unions, idle split into host-bound / back-to-back / other, the host ranges the GPU waited in, "
        "synchronizing calls, launch statistics, top kernels, GEMM TFLOP/s against the roofline, exposed vs "
        "overlapped communication, the straggler rank, and a diff against a baseline trace. Local files only.")
    Input = TraceInput
    timeout_s = 3600.0  # a multi-GB trace takes minutes to stream

    async def run(self, args: TraceInput, ctx: ToolContext) -> ToolOutput:
        paths = args.paths or list(ctx.inputs.traces)
        baseline = args.baseline or list(ctx.inputs.baseline_traces)
        if not paths:
            raise ToolFailure("no trace given: pass paths, or run with --trace FILE")
        try:
            report = await anyio.to_thread.run_sync(lambda: analyze(paths, baseline or None, args.include_host),
                                                    abandon_on_cancel=True)
        except (TraceInputError, TraceFormatError, NsysFormatError) as e:
            raise ToolFailure(str(e)) from None
        place_on_roofline(report)
        for a in report.ranks:
            a.steps = a.steps[:MAX_STEP_ROWS]
        return ToolOutput(text=report_text(report), data=report.model_dump(mode="json"), untrusted=True)


def register(registry: ToolRegistry) -> None:
    registry.add(TraceAnalysis())
