"""A benchmark result with no GPU to set it against: the first use from a laptop (`--bench FILE`, no `--host`, no
`gpu:` in the observations). The rules that judge a bench's latency need the GPU's peaks for the floors (prefill
compute, decode memory); without them the bench was dropped in silence. Here its figures are said, as numbers and in
the answer, with the one thing missing to go further and how to give it."""

from __future__ import annotations

from orchestrator import knowledge
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.diagnosis import Number
from orchestrator.findings import Finding
from orchestrator.observations import BenchResult, Latency


def _ms(x: float) -> str:
    return f"{x:,.0f} ms" if x >= 100 else f"{x:,.1f} ms"


def _pair(name: str, lat: Latency | None) -> str | None:
    """`TTFT p50 388 ms / p99 902 ms` (the median, else the mean), or None when not measured."""
    if lat is None or lat.empty:
        return None
    mid, which = (lat.p50, "p50") if lat.p50 is not None else (lat.mean, "mean")
    if mid is None:
        return None
    tail = f" / p99 {_ms(lat.p99)}" if lat.p99 is not None else ""
    return f"{name} {which} {_ms(mid)}{tail}"


def _numbers(b: BenchResult, ev_id: str) -> list[Number]:
    out: list[Number] = []
    for label, lat in (("TTFT", b.ttft), ("ITL", b.itl if b.itl and not b.itl.empty else None), ("TPOT", b.tpot)):
        if lat is None or lat.empty:
            continue
        if lat.p50 is not None:
            out.append(Number(name=f"bench {label} p50", value=lat.p50, unit="ms", source=ev_id, note=b.name))
        if lat.p99 is not None:
            out.append(Number(name=f"bench {label} p99", value=lat.p99, unit="ms", source=ev_id, note=b.name))
        if label == "ITL":
            break  # ITL measured: TPOT (the same step, averaged per request) adds nothing
    if b.output_throughput:
        out.append(Number(name="bench output throughput", value=b.output_throughput, unit="tok/s", source=ev_id,
                          note=b.name))
    return out


def bench_without_gpu(v: EvidenceView) -> list[Finding]:
    """The bench's figures in the answer, and the GPU (and the model, when neither the bench nor the observations
    name it) asked for, when no GPU is known to judge them against."""
    oe = v.observations_evidence
    if oe is None or v.gpu is not None or v.observed_gpu is not None:
        return []
    ev, obs = oe
    runs = [b for b in obs.bench if b.label != "baseline"] or obs.bench
    if not runs:
        return []
    b = runs[0]
    model = (obs.model.name if obs.model and obs.model.name else None) or b.model
    shape = [f"concurrency {b.max_concurrency}" if b.max_concurrency else
             f"{b.request_rate} req/s offered" if b.request_rate is not None else ""]
    if b.completed:
        shape.append(f"{b.completed:,} requests")
    if b.input_len and b.output_len:
        shape.append(f"{b.input_len:,.0f} in / {b.output_len:,.0f} out tokens each")
    measured = [x for x in (_pair("TTFT", b.ttft), _pair("ITL", b.itl) or _pair("TPOT", b.tpot)) if x]
    if b.output_throughput:
        measured.append(f"{b.output_throughput:,.0f} output tok/s")
    if not measured:
        return []
    what = f"{b.format} run ({', '.join(s for s in shape if s)}{', ' + model if model else ''})"
    more = f" ({len(runs) - 1} more run{'s' if len(runs) > 2 else ''} in the numbers)" if len(runs) > 1 else ""
    missing = "the GPU the bench ran on" + ("" if model else " and the model")
    # the example names a GPU the way the catalogue does: a short name ("H100") stands for several parts and is
    # refused, so advice that wrote one would send the user round in a circle
    example = "gpu: {name: NVIDIA H100 80GB HBM3, count: 1}" + ("" if model else "\nmodel: {name: MODEL}")
    named = obs.gpu.name if obs.gpu and obs.gpu.name else None
    how = ("as `investigate specs --list` names it (closest to "
           f"{named!r}: {', '.join(knowledge.closest_gpu_names(named))})") if named else "as nvidia-smi names it"
    ask = (f"Name {missing} {how} so these figures can be set against their floors: "
           f"`printf '{example.replace(chr(10), chr(92) + 'n')}\\n' > obs.yaml` and add `--observations obs.yaml` "
           "(or run investigate on the server itself with --host)")
    unknown = (f"the observations' gpu.name {named!r} is not a GPU this tool knows" if named
               else "none on this host, no gpu.name in the observations")
    claim = (f"The bench's {what} measured {', '.join(measured)}{more}. The GPU it ran on is not known ({unknown}), "
             "so none of them can be set against the floors of prefill compute and decode memory bandwidth, and no "
             "cause can be ranked.")
    return [Finding(
        id="bench-without-gpu", category="workload", confidence=0.9, evidence=[ev.id], informational=True,
        title=f"What the bench measured ({', '.join(measured[:2])})", claim=claim, short=claim.split(". ")[0] + ".",
        numbers=[n for r in runs[:3] for n in _numbers(r, ev.id)], recommendations=[ask],
        symptoms=["ttft", "itl", "throughput", "regression"])]
