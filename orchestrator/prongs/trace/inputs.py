"""The trace prong's inputs (`--trace`, `--baseline-trace`), checked before any work."""

from __future__ import annotations

from orchestrator.errors import InputError


def check(traces: list[str] | None = None, baseline_traces: list[str] | None = None) -> None:
    """The paths name readable traces, and a baseline comes with a trace to compare (`InputError`: one line)."""
    traces, baseline_traces = list(traces or ()), list(baseline_traces or ())
    if baseline_traces and not traces:
        raise InputError("--baseline-trace needs --trace: pass the trace to compare with the baseline")
    if not traces:
        return
    from orchestrator.traces.inputs import TraceInputError, expand

    try:
        expand(traces + baseline_traces)
    except TraceInputError as e:
        raise InputError(str(e)) from None
