"""Tool `trace_analysis`: read the profiles the run names (Kineto JSON per rank, nsys SQLite) and account for
where each steady step's time went; the GEMMs with recorded shapes placed on the GPU's roofline."""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
from pydantic import BaseModel, Field

from orchestrator import knowledge
from orchestrator.analysis.roofline import gemm_roofline
from orchestrator.prongs.serving_engine.probe import engine_report
from orchestrator.prongs.trace.host import HostTraces, fetch, profiler_dirs
from orchestrator.tools.base import Tool, ToolContext, ToolFailure, ToolOutput
from orchestrator.traces.analyze import analyze
from orchestrator.traces.inputs import HOST_PREFIX, TraceInputError
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


async def _from_host(paths: list[str], ctx: ToolContext, dest: Path) -> HostTraces:
    """Copy the newest trace per rank from the host's profiler directories (`host:PATH`, or `host:` for the serving
    processes' own: their VLLM_TORCH_PROFILER_DIR / --profiler-config / SGLANG_TORCH_PROFILER_DIR)."""
    host = ctx.host()
    dirs: list[tuple[str, str]] = []
    for p in paths:
        if not p.startswith(HOST_PREFIX):
            continue
        rest = p[len(HOST_PREFIX):]
        if rest:
            dirs.append((rest, "--trace"))
        else:
            engines = (await engine_report(host, [], metrics=False)).engines
            dirs += profiler_dirs(engines)
    found = await fetch(host, dirs, dest)
    if not dirs:
        found.errors.append("no serving process on the host was started with a torch profiler directory "
                            "(VLLM_TORCH_PROFILER_DIR, vLLM --profiler-config torch_profiler_dir, SGLANG_TORCH_PROFILER_DIR)")
    return found


class TraceAnalysis(Tool):
    name = "trace_analysis"
    description = (
        "Read PyTorch-profiler / Kineto traces (.json, .json.gz; one per rank, vLLM and SGLang layouts) and Nsight "
        "Systems SQLite exports as streams and account for each steady step (warm-up and CUDA-graph capture left "
        "out): GPU busy by kernel class (GEMM, attention, MoE, norm/activation, communication, copies) vs idle as "
        "interval unions, idle split into host-bound / back-to-back / other, the host ranges the GPU waited in, "
        "synchronizing calls, launch statistics, top kernels, GEMM TFLOP/s against the roofline, exposed vs "
        "overlapped communication, the straggler rank, and a diff against a baseline trace. Local files; `host:PATH` "
        "a profiler directory on the host, `host:` the serving processes' own (the newest trace per rank is copied "
        "within a byte budget).")
    Input = TraceInput
    timeout_s = 3600.0  # a multi-GB trace takes minutes to stream

    async def run(self, args: TraceInput, ctx: ToolContext) -> ToolOutput:
        paths = args.paths or list(ctx.inputs.traces)
        baseline = args.baseline or list(ctx.inputs.baseline_traces)
        if not paths:
            raise ToolFailure("no trace given: pass paths, or run with --trace FILE")
        with tempfile.TemporaryDirectory(prefix="investigate-traces-") as tmp:
            found = await _from_host(paths, ctx, Path(tmp)) if any(p.startswith(HOST_PREFIX) for p in paths) else None
            local = [p for p in paths if not p.startswith(HOST_PREFIX)] + (found.copied if found else [])
            base_found = None
            if any(p.startswith(HOST_PREFIX) for p in baseline):
                base_found = await _from_host(baseline, ctx, Path(tmp) / "baseline")
                baseline = [p for p in baseline if not p.startswith(HOST_PREFIX)] + base_found.copied
                if not baseline:
                    raise ToolFailure("no baseline trace found on the host: " + base_found.summary())
            if not local:
                raise ToolFailure("no trace found on the host: " + (found.summary() if found else "")
                                  + "\nstart the engine with its torch profiler directory set and call /start_profile "
                                    "and /stop_profile, or name the directory with --trace host:PATH")
            try:
                report = await anyio.to_thread.run_sync(lambda: analyze(local, baseline or None, args.include_host),
                                                        abandon_on_cancel=True)
            except (TraceInputError, TraceFormatError, NsysFormatError) as e:
                raise ToolFailure(str(e)) from None
        where = {t.local: f"{f.host}:{t.path}" for f in (found, base_found) if f for t in f.traces if t.local}
        if where:  # cite the host's files, not the copies (removed by now)
            for a in [*report.ranks, *report.baseline]:
                a.source = where.get(a.source, a.source)
            report.files = [where.get(f, f) for f in report.files]
            if report.diff is not None:
                report.diff.baseline = where.get(report.diff.baseline, report.diff.baseline)
                report.diff.current = where.get(report.diff.current, report.diff.current)
        report.notes += [f.summary() for f in (found, base_found) if f]
        place_on_roofline(report)
        for a in report.ranks:
            a.steps = a.steps[:MAX_STEP_ROWS]
        return ToolOutput(text=report_text(report), data=report.model_dump(mode="json"), untrusted=True)
