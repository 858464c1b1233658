"""Findings from a trace's account (the `trace_analysis` evidence): where each steady step's time went and what
explains the idle and the busy time, each with its share of the step as `Finding.explains`.

Pure: reads `orchestrator.traces.model.TraceReport` payloads, cites their evidence ids, and names the trace file and
time window each number comes from.
"""

from __future__ import annotations

from pydantic import ValidationError

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.diagnosis import Number
from orchestrator.evidence import Evidence
from orchestrator.findings import BoundClaim, Finding, Symptom, diagnosis_bound
from orchestrator.ranks import Rank
from orchestrator.traces.classes import LABELS
from orchestrator.traces.model import RankAccount, TraceReport

HOST_BOUND_SHARE = 0.10
"""Host-bound idle above this share of the step is a cause (the GPU waits for launches)."""
OWNER_SHARE = 0.05
"""GPU idle inside one host range above this share of the step names that range."""
SYNC_SHARE = 0.002
"""A synchronizing call per step is named once it costs the host or the GPU this share of the step."""
EXPOSED_COMM_SHARE = 0.05
DOMINANT_KERNEL_SHARE = 0.25
GEMM_LOW_FRACTION = 0.5
"""A GEMM below this fraction of its attainable roofline throughput is named."""
DIFF_SHARE = 0.03
"""A change of at least this share of the baseline step is named in the diff."""
STEP_SYMPTOMS: list[Symptom] = ["itl", "throughput", "ttft"]


def _reports(v: EvidenceView) -> list[tuple[Evidence, TraceReport]]:
    out = []
    for ev in v.of_kind("trace_report"):
        try:
            out.append((ev, TraceReport.model_validate(ev.data)))
        except ValidationError as e:
            v.notice(f"trace evidence {ev.id}", f"does not fit the trace report model ({e.error_count()} errors)")
    return out


def _where(a: RankAccount) -> str:
    name = a.source.rsplit("/", 1)[-1]
    return (f"{name} rank {a.rank}, steady steps {a.steady_steps}/{a.steps_total} "
            f"({a.window_start_us:.0f}-{a.window_end_us:.0f} us)")


def _p(x: float) -> str:
    return f"{100 * x:.1f}%"


def _num(name: str, value: float, unit: str, ev: Evidence, note: str = "", peak: float | None = None) -> Number:
    if unit == "fraction":  # a share reads as a percentage ("7.1 %"), never "0.0714 fraction"
        value, unit = 100 * float(value), "%"
        peak = 100.0 if peak is None else peak
    return Number(name=name, value=round(float(value), 4 if unit != "%" else 1), unit=unit, source=ev.id, note=note,
                  peak=peak)


SMALL_SHARE = 0.05
"""A finding whose cost is below this share of the step cannot be what makes the step slow: said apart, with its
share (the condition under which it would matter), never ranked."""


def _small(share: float) -> str:
    return "if it took a larger share of the step" if share < SMALL_SHARE else ""  # the claim gives the share


def _step_bound(a: RankAccount, host_bound: float, exposed: float) -> str | None:
    """What the steps wait on: the host (launch-bound idle), exposed communication, else — when the GPU is busy —
    the roofline side of the GEMMs that take the time (recorded shapes), or the GEMMs unsettled."""
    if host_bound >= 0.3:
        return "latency"
    if exposed >= 0.2:
        return "communication"
    if a.breakdown.busy_share >= 0.7:
        placed = [g for g in a.gemms if g.bound]
        if placed:
            mem = sum(g.us_per_step for g in placed if g.bound == "memory")
            comp = sum(g.us_per_step for g in placed if g.bound == "compute")
            return "memory" if mem > comp else "compute"
        return "gemm"
    return None


def _short(a: RankAccount, bound: str | None, host_bound: float, exposed: float) -> str:
    b = a.breakdown
    top = LABELS.get(a.classes[0].cls, a.classes[0].cls) if a.classes else "nothing"
    if bound == "latency":
        return (f"the GPU waits for the host {_p(host_bound)} of a {b.step_us / 1e3:.2f} ms step and is busy only "
                f"{_p(b.busy_share)} (trace {_where(a)})")
    if bound == "communication":
        return f"exposed communication takes {_p(exposed)} of a {b.step_us / 1e3:.2f} ms step (trace {_where(a)})"
    return (f"the GPU is busy {_p(b.busy_share)} of a {b.step_us / 1e3:.2f} ms step, mostly {top}"
            + (f", its GEMMs {bound}-bound" if bound in ("memory", "compute") else "") + f" (trace {_where(a)})")


def _launch_fixes(phase: str | None) -> list[str]:
    """What shortens a launch-bound step, for the phase the question is about: decode steps are captured in CUDA
    graphs; a prefill step carries more tokens per launch and fewer, fused kernels."""
    if phase == "prefill":
        return ["Launch fewer, larger kernels per prefill step: keep torch.compile on (vLLM compiles unless "
                "--enforce-eager) and give each step more tokens (a larger --max-num-batched-tokens / SGLang "
                "--chunked-prefill-size) so the launch cost is paid over more work"]
    return ["Capture the decode step in CUDA graphs (vLLM: drop --enforce-eager and cover the batch sizes with the "
            "cudagraph capture sizes; SGLang: keep CUDA graphs on, raise --cuda-graph-max-bs)"]


def _rank_findings(ev: Evidence, a: RankAccount, multi: bool, phase: str | None = None) -> list[Finding]:
    out: list[Finding] = []
    b = a.breakdown
    step = b.step_us
    if step <= 0:
        return out
    where = _where(a)
    tag = f"r{a.rank}" if multi else ""
    host_bound = b.idle_by_cause_us.get("host_bound", 0.0) / step
    exposed = b.comm_exposed_us / step
    busy_txt = ", ".join(f"{LABELS.get(c.cls, c.cls)} {_p(c.share_of_step)}" for c in a.classes[:5])
    idle_txt = ", ".join(f"{k.replace('_', '-')} {_p(v / step)}" for k, v in b.idle_by_cause_us.items() if v)
    bound = _step_bound(a, host_bound, exposed)
    out.append(Finding(
        id=f"trace-step-account{tag}", title="Where a step's time goes (trace)", category="trace",
        claim=(f"In {where}, a steady step takes {step / 1e3:.3f} ms: the GPU is busy {_p(b.busy_share)} "
               f"({busy_txt}) and idle {_p(b.idle_share)}" + (f" ({idle_txt})" if idle_txt else "") + "."),
        # the account itself is context: what it shows is named by the findings below (it still sets the bound)
        evidence=[ev.id], confidence=0.9, informational=True, bound=bound,  # type: ignore[arg-type]
        numbers=[_num("trace step time", step, "us", ev, where), _num("GPU busy share", b.busy_share, "fraction", ev),
                 _num("GPU idle share", b.idle_share, "fraction", ev)],
        matched=[where], short=_short(a, bound, host_bound, exposed)))
    if bound:  # a profile is the ground truth of where a step's time went: it sets the bound
        step_account = out[-1]
        step_account.sets_bound = BoundClaim(rank=Rank.TRACE, bound=diagnosis_bound(bound, "unknown"),  # type: ignore[arg-type]
                                             words=step_account.short or step_account.claim)
    if host_bound >= HOST_BOUND_SHARE:
        ln = a.launch
        out.append(Finding(
            id=f"trace-host-bound{tag}", title="The GPU waits for the host (launch-bound steps)", category="trace",
            claim=(f"In {where}, the GPU sits idle waiting for the host {_p(host_bound)} of each step: the next "
                   f"launch was issued only after the previous work had finished. {_p(ln.kernels_shorter_than_launch_share)}"
                   f" of kernels run shorter than their launch call; launch calls take "
                   f"{ln.launch_overhead_us_per_step / 1e3:.2f} ms of host time per step."),
            evidence=[ev.id], confidence=0.85, bound="latency", symptoms=STEP_SYMPTOMS, explains=round(host_bound, 4),
            recommendations=_launch_fixes(phase) + ["Move per-step host work (sampling, scheduling, tensor "
                                                    "preparation) off the critical path or fuse small kernels"],
            numbers=[_num("host-bound idle share", host_bound, "fraction", ev, where),
                     _num("kernels shorter than their launch", ln.kernels_shorter_than_launch_share, "fraction", ev)],
            matched=[where], short=f"host-bound idle {_p(host_bound)} of the step"))
    for o in a.idle_owners:
        if o.share_of_step < OWNER_SHARE:
            continue
        out.append(Finding(
            id=f"trace-host-range-{o.name[:40]}{tag}", title=f"GPU idle while the host is in '{o.name}'",
            category="trace",
            claim=(f"In {where}, the GPU is idle {_p(o.share_of_step)} of each step ({o.us_per_step / 1e3:.3f} ms) "
                   f"while the launching thread is inside the host range '{o.name}' ({o.gaps} gaps)."),
            evidence=[ev.id], confidence=0.8, bound="latency", symptoms=STEP_SYMPTOMS,
            explains=round(o.share_of_step, 4), numbers=[_num(f"GPU idle in '{o.name}'", o.share_of_step, "fraction",
                                                              ev, where)],
            recommendations=[f"Look at what '{o.name}' does on the host between launches: a blocking call, a sleep, "
                             "a copy to pageable memory or Python work; overlap it with GPU work or remove it"],
            matched=[where], short=f"'{o.name}' starves the GPU {_p(o.share_of_step)} of the step"))
    for s in a.sync_calls:
        gpu_cost = s.idle_after_us_per_step / step
        if s.count_per_step <= 0 or max(s.share_of_step, gpu_cost) < SYNC_SHARE:
            continue
        out.append(Finding(
            id=f"trace-sync-{s.name.split(' ')[0]}{tag}", title=f"Synchronizing call {s.name} in every step",
            category="trace",
            claim=(f"In {where}, {s.name} is called {s.count_per_step:g} times per step; the host blocks in it "
                   f"{_p(s.share_of_step)} of the step and the GPU is idle {_p(gpu_cost)} of the step after it returns."),
            evidence=[ev.id], confidence=0.8, bound="latency" if gpu_cost >= 0.05 else None,
            secondary=gpu_cost < SMALL_SHARE, unmet=_small(gpu_cost), symptoms=STEP_SYMPTOMS,
            explains=round(gpu_cost, 4),
            recommendations=["Remove the per-step synchronization (.item(), .cpu(), torch.cuda.synchronize(), copies "
                             "to pageable memory); copy to pinned memory with non_blocking=True and wait on an event"],
            numbers=[_num(f"{s.name} host share", s.share_of_step, "fraction", ev, where),
                     _num(f"GPU idle after {s.name}", gpu_cost, "fraction", ev, where)],
            matched=[where], short=(f"{s.name} {s.count_per_step:.3g}x per step, the GPU idle {_p(gpu_cost)} of the "
                                    "step after it returns")))
    if b.comm_us:
        out.append(Finding(
            id=f"trace-communication{tag}", title="Communication exposed on the critical path", category="trace",
            claim=(f"In {where}, communication kernels run {_p(b.comm_us / step)} of each step; "
                   f"{_p(b.comm_overlapped_us / b.comm_us)} of that overlaps compute and {_p(exposed)} of the step "
                   "is exposed (nothing else runs)."),
            evidence=[ev.id], confidence=0.8, bound="communication" if exposed >= EXPOSED_COMM_SHARE else None,
            informational=exposed < EXPOSED_COMM_SHARE, symptoms=STEP_SYMPTOMS if exposed >= EXPOSED_COMM_SHARE else [],
            explains=round(exposed, 4),
            numbers=[_num("exposed communication share", exposed, "fraction", ev, where),
                     _num("communication overlapped", b.comm_overlapped_us / b.comm_us, "fraction", ev)],
            matched=[where], short=f"exposed communication {_p(exposed)} of the step"))
    if a.collective_wait_share:
        out.append(Finding(
            id=f"trace-collective-wait{tag}", title="Collectives waiting for another rank", category="trace",
            claim=(f"In {where}, collective kernels spend {_p(a.collective_wait_share)} of each step waiting for the "
                   "slowest rank to arrive (their time beyond the fastest rank's run of the same collective)."),
            evidence=[ev.id], confidence=0.75, bound="communication", symptoms=STEP_SYMPTOMS,
            explains=round(a.collective_wait_share, 4), secondary=a.collective_wait_share < SMALL_SHARE,
            unmet=_small(a.collective_wait_share),
            numbers=[_num("collective wait share", a.collective_wait_share, "fraction", ev, where)], matched=[where]))
    if a.top_kernels and a.top_kernels[0].share_of_step >= DOMINANT_KERNEL_SHARE:
        k = a.top_kernels[0]
        out.append(Finding(
            id=f"trace-dominant-kernel{tag}", title="One kernel dominates the step", category="trace",
            claim=(f"In {where}, {LABELS.get(k.cls, k.cls)} kernel {k.name[:120]} takes {_p(k.share_of_step)} of each "
                   f"step ({k.count_per_step:g} calls, mean {k.mean_us:.1f} us, p99 {k.p99_us:.1f} us)."),
            evidence=[ev.id], confidence=0.8, bound="gemm" if k.cls == "gemm" else None, symptoms=STEP_SYMPTOMS,
            explains=round(k.share_of_step, 4),
            numbers=[_num("dominant kernel share", k.share_of_step, "fraction", ev, k.name[:80])], matched=[where]))
    for g in a.gemms[:5]:
        if g.fraction_of_attainable is None or g.fraction_of_attainable >= GEMM_LOW_FRACTION or not g.us_per_step:
            continue
        share = g.us_per_step / step
        out.append(Finding(
            id=f"trace-gemm-{g.m}x{g.n}x{g.k}{tag}", title="GEMM far below its roofline (trace)", category="roofline",
            claim=(f"In {where}, {g.op} M={g.m} N={g.n} K={g.k} ({g.dtype}) runs at {g.achieved_tflops:.1f} TFLOP/s, "
                   f"{_p(g.fraction_of_attainable)} of the {g.attainable_tflops:.0f} TFLOP/s its {g.bound}-bound "
                   f"roofline allows on {a.gpu_name}; it takes {_p(share)} of the step."),
            evidence=[ev.id], confidence=0.7, bound="memory" if g.bound == "memory" else "compute",
            secondary=share < SMALL_SHARE, unmet=_small(share), symptoms=STEP_SYMPTOMS,
            explains=round(share * (1 - g.fraction_of_attainable), 4),
            numbers=[_num(f"GEMM {g.m}x{g.n}x{g.k} TFLOP/s", g.achieved_tflops, "TFLOP/s", ev,
                          peak=g.attainable_tflops)], matched=[where]))
    return out


def trace_findings(v: EvidenceView) -> list[Finding]:
    from orchestrator.prongs.serving_engine.floors import question_phase

    out: list[Finding] = []
    phase = question_phase(v.question) if v.question else None
    for ev, r in _reports(v):
        multi = len(r.ranks) > 1
        for a in r.ranks:
            out += _rank_findings(ev, a, multi, phase)
        if r.straggler:
            s = r.straggler
            out.append(Finding(
                id="trace-straggler", title=f"Rank {s.rank} is the straggler", category="trace",
                claim=(f"Rank {s.rank} ({s.source.rsplit('/', 1)[-1]}) holds the others back: {s.reason}. The other "
                       f"ranks spend {_p(s.wait_caused_share)} of each step in collectives waiting for it."),
                evidence=[ev.id], confidence=0.8, bound="communication", symptoms=STEP_SYMPTOMS,
                explains=round(s.wait_caused_share, 4),
                recommendations=[f"Look at what rank {s.rank}'s host does before each step (its GPU, its CPU "
                                 "affinity, a slow dataloader or scheduler thread, a throttled GPU)"],
                numbers=[_num("straggler lateness per step", s.late_us_per_step, "us", ev),
                         _num("collective wait it causes", s.wait_caused_share, "fraction", ev)]))
        if r.diff:
            d = r.diff
            base = d.base_step_us or 1.0
            moved = [x for x in d.by_class if abs(x.delta_us_per_step) >= DIFF_SHARE * base]
            idle = {k: x for k, x in d.idle_delta_us_per_step.items() if abs(x) >= DIFF_SHARE * base}
            new = [k for k in d.kernels if k.status == "new" and k.cur_us_per_step >= DIFF_SHARE * base]
            lost = (d.base_comm_overlapped_share or 0.0) - (d.cur_comm_overlapped_share or 0.0)
            parts = [f"{LABELS.get(x.name, x.name)} {x.delta_us_per_step / 1e3:+.3f} ms" for x in moved]
            parts += [f"{k.replace('_', '-')} idle {x / 1e3:+.3f} ms" for k, x in idle.items()]
            parts += [f"new kernel {k.name[:80]} {k.cur_us_per_step / 1e3:.3f} ms" for k in new[:3]]
            if lost > 0.05:
                parts.append(f"communication overlap {_p(d.base_comm_overlapped_share or 0)} -> "
                             f"{_p(d.cur_comm_overlapped_share or 0)}")
            delta = d.cur_step_us - d.base_step_us
            out.append(Finding(
                id="trace-diff", title="What changed against the baseline trace", category="trace",
                claim=(f"Against the baseline {d.baseline.rsplit('/', 1)[-1]}, a steady step went from "
                       f"{d.base_step_us / 1e3:.3f} to {d.cur_step_us / 1e3:.3f} ms ({delta / base:+.1%}): "
                       + ("; ".join(parts) if parts else "no class, idle cause or kernel moved by 3% of the step")
                       + "."),
                evidence=[ev.id], confidence=0.8, symptoms=["regression"],
                explains=round(max(0.0, delta) / d.cur_step_us, 4) if d.cur_step_us else None,
                numbers=[_num("baseline step", d.base_step_us, "us", ev), _num("current step", d.cur_step_us, "us", ev)]))
    return out
