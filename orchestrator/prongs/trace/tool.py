"""Tool `trace_analysis`: read the profiles the run names (Kineto JSON per rank, nsys SQLite) and account for
where each steady step's time went; the GEMMs with recorded shapes placed on the GPU's roofline."""

from __future__ import annotations

import json
import signal
import sys
import tempfile
from pathlib import Path

import anyio
from pydantic import BaseModel, Field, ValidationError

import orchestrator
from orchestrator import knowledge, limits
from orchestrator.analysis.roofline import gemm_roofline
from orchestrator.prongs.serving_engine.probe import engine_report
from orchestrator.prongs.trace.host import HostTraces, TraceDir, copy_error, fetch, profiler_dirs
from orchestrator.tools.base import Tool, ToolContext, ToolFailure, ToolOutput
from orchestrator.traces import worker
from orchestrator.traces.inputs import HOST_PREFIX
from orchestrator.traces.model import TraceReport
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


_PACKAGE_ROOT = str(Path(orchestrator.__file__).resolve().parents[1])
_WORKER = ("import sys; sys.path.insert(0, sys.argv[1]); from orchestrator.traces.worker import main; "
           "sys.exit(main())")


async def analyze_in_child(paths: list[str], baseline: list[str] | None, include_host: bool) -> TraceReport:
    """`traces.analyze.analyze` in a child process (orchestrator/traces/worker.py) under limits.py's memory and CPU
    bounds; the child is killed when this call is cancelled (the tool's deadline, Ctrl-C). ToolFailure with one line
    when the traces cannot be used or the child ran past a bound."""
    request = {"paths": paths, "baseline": baseline or [], "include_host": include_host,
               "memory_bytes": limits.TRACE_ANALYSIS_MEMORY_BYTES, "cpu_s": limits.TRACE_ANALYSIS_CPU_S,
               "timeout_s": limits.TRACE_ANALYSIS_TIMEOUT_S, "max_step_rows": MAX_STEP_ROWS}
    out: list[bytes] = []
    err: list[bytes] = []

    async def drain(stream: anyio.abc.ByteReceiveStream, into: list[bytes]) -> None:
        async for chunk in stream:
            into.append(chunk)

    # -I: no user site, no current directory on the path; the package is found where this one was imported from
    async with await anyio.open_process([sys.executable, "-I", "-c", _WORKER, _PACKAGE_ROOT]) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        async with anyio.create_task_group() as tg:
            tg.start_soon(drain, proc.stdout, out)
            tg.start_soon(drain, proc.stderr, err)
            await proc.stdin.send(json.dumps(request).encode() + b"\n")  # stdin stays open: its end ends the child
            await proc.wait()
    rc = proc.returncode
    if rc == 0:
        try:
            return TraceReport.model_validate_json(b"".join(out))
        except ValidationError as e:
            raise ToolFailure(f"trace analysis returned an unreadable report ({e.errors()[0]['msg']})") from None
    last = next((ln for ln in reversed(b"".join(err).decode("utf-8", "replace").splitlines()) if ln.strip()), "")
    if rc == worker.EXIT_INPUT:
        raise ToolFailure(last[:600])
    gib = limits.TRACE_ANALYSIS_MEMORY_BYTES / 2**30
    if rc == worker.EXIT_MEMORY or "MemoryError" in last:
        raise ToolFailure(f"trace analysis needed more than its {gib:g} GiB of memory (limits.py "
                          "TRACE_ANALYSIS_MEMORY_BYTES); analyze fewer ranks or a shorter profile")
    if rc is not None and rc < 0 and -rc in (signal.SIGXCPU, signal.SIGKILL):
        raise ToolFailure(f"trace analysis ran past its {limits.TRACE_ANALYSIS_CPU_S:,} s of CPU time (limits.py "
                          "TRACE_ANALYSIS_CPU_S); analyze fewer ranks or a shorter profile")
    raise ToolFailure(f"trace analysis failed (exit {rc}): {last[:300]}")


async def _from_host(paths: list[str], ctx: ToolContext, dest: Path) -> HostTraces:
    """Copy the newest trace per rank from the host's profiler directories (`host:PATH`, or `host:` for the serving
    processes' own: their VLLM_TORCH_PROFILER_DIR / --profiler-config / SGLANG_TORCH_PROFILER_DIR)."""
    host = ctx.host()
    dirs: list[TraceDir] = []
    for p in paths:
        if not p.startswith(HOST_PREFIX):
            continue
        rest = p[len(HOST_PREFIX):]
        if rest:
            dirs.append(TraceDir(rest, "--trace"))
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
    timeout_s = limits.TRACE_ANALYSIS_TIMEOUT_S  # a multi-GB trace takes minutes to stream

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
                named = [p[len(HOST_PREFIX):] for p in paths if p.startswith(HOST_PREFIX) and p != HOST_PREFIX]
                fix = (f"Check that {', '.join(named)} is a directory on the host holding .json, .json.gz or .sqlite "
                       "traces" if named else "Start the engine with its torch profiler directory set and call "
                       "/start_profile and /stop_profile, or name the directory with --trace host:PATH")
                raise ToolFailure("no trace found on the host: " + (found.summary() + ". " if found else "") + fix)
            where = {t.local: f"{f.host}:{t.path}" for f in (found, base_found) if f for t in f.traces if t.local}
            try:
                report = await analyze_in_child(local, baseline or None, args.include_host)
            except ToolFailure as e:  # the host's file named, not the temporary copy; no quote of another's file
                raise ToolFailure(copy_error(str(e), (found, base_found))) from None
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
