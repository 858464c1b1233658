"""The trace prong: where each steady step's time went, from the profiles the user gave (`--trace`) or the host's
profiler directories (`--trace host:`). The readers themselves are `orchestrator.traces` (no import of the rest of
the package); here are the tool that runs them, the host-side fetch, the rules over the report and its HTML section.
"""

from orchestrator.ranks import Rank
from orchestrator.prong import Prong

PRONG = Prong(
    name="trace",
    agent="trace-analysis",
    tools=("orchestrator.prongs.trace.tool:TraceAnalysis",),
    rules=("orchestrator.prongs.trace.rules:trace_findings",),
    bound_tiers=(Rank.TRACE,),
    html="orchestrator.prongs.trace.report:trace_html",
    inputs=("traces", "baseline_traces"),
    check="orchestrator.prongs.trace.inputs:check",
)
