"""Rules that turn measured GEMM and all-reduce sweeps into findings, each citing the measurement's evidence id.

Pure: evidence and observations in, findings out. A sweep that did not run yields no finding (the tool's error or
`reason` is the gap); a number the sweep does not carry (unknown peaks, unmeasured group size) is never claimed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from orchestrator import knowledge
from orchestrator.prongs.tensor_core_specs.arithmetic import (
    allreduce_seconds,
    dtype_of_quantization,
    ridge,
    step_cost,
    tokens_per_expert,
    tp_message_bytes,
)
from orchestrator.prongs.tensor_core_specs.peaks import peaks_for
from orchestrator.evidence import Evidence
from orchestrator.analysis.templates import entry_words
from orchestrator.findings import Agreement, BoundClaim, Finding
from orchestrator.ranks import Rank
from orchestrator.knowledge.workloads import engine_of
from orchestrator.observations import Observations, RunObservation
from orchestrator.prongs.tensor_core_specs.models import CommSweep, GemmPoint, GemmSweep, Peaks

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView

COMPARABLE = 2.0
"""All-reduce and GEMM time per step within this factor of each other are reported as comparable."""
FAR_FROM_ROOFLINE = 0.5
"""Below this fraction of its roofline a GEMM leaves at least half of what the hardware allows."""
NEAR_ROOFLINE = 0.7
LARGE_M_GOOD = 0.6
"""Fraction of dense peak that well-tuned large GEMMs reach on datacenter GPUs (cuBLAS bf16 ~0.6-0.8)."""


def _decode_m(run: RunObservation, obs: Observations) -> tuple[float, str] | None:
    """Tokens each expert GEMM sees per decode step (dense models: the batch), with how it was computed."""
    b = run.decode_batch
    m = obs.model
    if not b:
        return None
    if m and m.num_experts and m.top_k:
        return tokens_per_expert(b, m.top_k, m.num_experts), f"batch {b} × top-{m.top_k} / {m.num_experts} experts"
    return float(b), f"batch {b} (dense)"


def _nearest(points: list[GemmPoint], m: float) -> GemmPoint | None:
    return min(points, key=lambda p: abs(math.log(p.m) - math.log(max(m, 1e-9))), default=None)


def _pick_dtype(sweep: GemmSweep, obs: Observations | None) -> str | None:
    measured = {p.dtype for p in sweep.points}
    want = dtype_of_quantization(obs.model.quantization if obs and obs.model else None)
    narrow_first = [d.name for d in knowledge.dtypes() if d.measurable and d.lowp]  # nvfp4, mxfp4, fp8 (dtypes.yaml)
    for d in (want, *narrow_first, "bf16"):
        if d in measured:
            return d
    return next(iter(sorted(measured)), None)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.0%}" if x >= 0.1 else f"{x:.1%}"


def _point_data(p: GemmPoint) -> dict[str, Any]:
    return p.model_dump(include={"dtype", "m", "n", "k", "ms", "tflops", "gbps", "intensity", "peak_tflops",
                                 "roofline_tflops", "fraction_of_peak", "fraction_of_roofline", "bound",
                                 "mean_power_w", "mean_sm_clock_mhz"})


def gemm_findings(eid: str, sweep: GemmSweep, obs: Observations | None) -> list[Finding]:
    if not sweep.available or sweep.device != "cuda" or not sweep.points:
        return []
    out: list[Finding] = []
    dtype = _pick_dtype(sweep, obs)
    partial = " (the sweep stopped early at its time budget)" if sweep.stopped_early else ""
    conf_cut = 0.1 if sweep.stopped_early else 0.0
    peaks = sweep.peaks
    gpu = sweep.gpu_name or "the GPU"
    for run in (obs.runs if obs else []):
        dm = _decode_m(run, obs) if obs else None
        if dm is None:
            continue
        m_dec, how = dm
        pts = [p for p in sweep.points if p.dtype == dtype]
        first_shape = pts[0].shape if pts else None
        p = _nearest([q for q in pts if q.shape == first_shape], m_dec)
        if p is None:
            continue
        exact = abs(p.m - m_dec) / m_dec < 0.25
        where = f"M={p.m}" + ("" if exact else f" (nearest measured to {m_dec:.1f})")
        data = {"run": run.name, "tokens_per_expert": m_dec, **_point_data(p)}
        claim = (f"{run.name}: at {m_dec:.1f} tokens per expert ({how}), the {dtype} GEMM {p.shape} {where} N={p.n} "
                 f"K={p.k} measured {p.tflops:.1f} TFLOPS and {p.gbps / 1000:.2f} TB/s on {gpu}")
        if p.fraction_of_roofline is not None and peaks and peaks.mem_bw_tbs and p.peak_tflops:
            r = ridge(p.peak_tflops, peaks.mem_bw_tbs)
            data["ridge"] = r
            claim += (f", {_pct(p.fraction_of_peak)} of the {p.peak_tflops:.0f} TFLOPS dense peak; it is {p.bound}-"
                      f"bound (intensity {p.intensity:.0f} FLOP/B vs ridge {r:.0f}) and reaches "
                      f"{_pct(p.fraction_of_roofline)} of its roofline ({p.roofline_tflops:.0f} TFLOPS){partial}.")
        else:
            claim += f"; the dtype's peak on this GPU is not known, so no fraction is claimed{partial}."
        data["title"] = f"{dtype} GEMM at decode M={p.m}: {_pct(p.fraction_of_roofline)} of its roofline"
        out.append(Finding(id="gemm-at-decode-m", claim=claim, confidence=(0.85 if exact else 0.7) - conf_cut,
                           evidence=[eid], category="roofline", data=data))
        if p.fraction_of_roofline is None:
            continue
        values = {"run": run.name, "dtype": dtype, "m": p.m, "pct": _pct(p.fraction_of_roofline), "bound": p.bound,
                  "m_dec": max(1, round(m_dec)), "gpu": gpu}
        if p.fraction_of_roofline < FAR_FROM_ROOFLINE or (p.fraction_of_roofline >= NEAR_ROOFLINE
                                                          and p.bound == "memory"):
            # the verdict below is about this same measured point: the measurement is its context, said once
            out[-1] = out[-1].model_copy(update={"informational": True})
        if p.fraction_of_roofline < FAR_FROM_ROOFLINE:
            w = entry_words("gemm-far-below-roofline", values)
            out.append(Finding(
                id="gemm-far-below-roofline", claim=w["words"]["claim"], confidence=w["confidence"] - conf_cut,
                evidence=[eid], category="kernel", data={**data, "title": w["title"]},
                recommendations=w["recommendations"], entry=w["entry"]))
        elif p.fraction_of_roofline >= NEAR_ROOFLINE and p.bound == "memory":
            w = entry_words("gemm-memory-bound-near-roofline",
                            {**values, "gain": f"{1 / p.fraction_of_roofline - 1:.0%}"})
            out.append(Finding(
                id="gemm-memory-bound-near-roofline", claim=w["words"]["claim"],
                confidence=w["confidence"] - conf_cut, evidence=[eid], category="roofline",
                data={**data, "title": w["title"]}, recommendations=w["recommendations"], entry=w["entry"]))
    out.extend(_dtype_speedup_findings(eid, sweep, obs, partial, conf_cut))
    out.extend(_large_m_findings(eid, sweep, partial, conf_cut))
    return out


def _dtype_speedup_findings(eid: str, sweep: GemmSweep, obs: Observations | None, partial: str,
                            conf_cut: float) -> list[Finding]:
    """The narrower dtype against bf16 at the decode M: how much of its byte (and FLOP) advantage it delivers."""
    from orchestrator.prongs.tensor_core_specs.arithmetic import gemm_bytes

    narrow = next((d.name for d in knowledge.dtypes() if d.measurable and d.lowp
                   and any(p.dtype == d.name for p in sweep.points)), None)
    if narrow is None or not any(p.dtype == "bf16" for p in sweep.points) or not obs:
        return []
    out = []
    for run in obs.runs:
        dm = _decode_m(run, obs)
        if dm is None:
            continue
        m_dec, how = dm
        for shape in dict.fromkeys(p.shape for p in sweep.points):
            pts = [p for p in sweep.points if p.shape == shape]
            lo = _nearest([p for p in pts if p.dtype == narrow], m_dec)
            hi = _nearest([p for p in pts if p.dtype == "bf16" and lo and p.m == lo.m], m_dec) if lo else None
            if lo is None or hi is None or lo.ms <= 0:
                continue
            speedup = hi.ms / lo.ms
            ideal = gemm_bytes(lo.m, lo.n, lo.k, "bf16") / gemm_bytes(lo.m, lo.n, lo.k, narrow)
            share = speedup / ideal
            claim = (f"{run.name}: at M={lo.m} ({m_dec:.1f} tokens per expert, {how}) the {narrow} GEMM {shape} "
                     f"N={lo.n} K={lo.k} takes {lo.ms * 1e3:.1f} µs against {hi.ms * 1e3:.1f} µs in bf16: "
                     f"{speedup:.2f}× faster, where halving the weight bytes allows up to {ideal:.2f}× for a "
                     f"memory-bound GEMM ({lo.gbps:.0f} GB/s achieved in {narrow} vs {hi.gbps:.0f} GB/s in bf16)"
                     f"{partial}.")
            weak = share < 0.8
            w = entry_words("narrow-dtype-vs-bf16-at-decode", {"narrow": narrow, "narrow_upper": narrow.upper(),
                                                               "share": f"{share:.0%}"})
            if weak:
                claim += " " + w["words"]["weak"]
            out.append(Finding(
                id=f"{narrow}-vs-bf16-at-decode" + ("" if shape == sweep.points[0].shape else f"-{shape}"),
                category="kernel", confidence=w["confidence"] - conf_cut, evidence=[eid], claim=claim,
                data={"title": f"{narrow.upper()} is {speedup:.2f}× bf16 at M={lo.m} (up to {ideal:.2f}× possible)",
                      "speedup": speedup, "ideal_speedup": ideal, "m": lo.m, "shape": shape,
                      "secondary": not weak,
                      "numbers": [{"name": f"{narrow} speedup over bf16 at M={lo.m} ({shape})",
                                   # the figures as the title says them: "up to 1.98×" above and "of 1.99 x"
                                   # here was one ratio rounded twice
                                   "value": round(speedup, 2), "unit": "x", "peak": round(ideal, 2), "source": eid,
                                   "note": "peak = bf16/narrow byte ratio (memory-bound limit)"}]},
                recommendations=w["recommendations"] if weak else [], entry=w["entry"] if weak else ""))
    return out


def _large_m_findings(eid: str, sweep: GemmSweep, partial: str, conf_cut: float) -> list[Finding]:
    out = []
    for dtype in sweep.dtypes or sorted({p.dtype for p in sweep.points}):
        pts = [p for p in sweep.points if p.dtype == dtype and p.fraction_of_peak is not None]
        if not pts:
            continue
        best = max(pts, key=lambda p: p.fraction_of_peak or 0.0)
        power = (f" while drawing {best.mean_power_w:.0f} W at {best.mean_sm_clock_mhz:.0f} MHz SM clock"
                 if best.mean_power_w is not None and best.mean_sm_clock_mhz is not None else "")
        good = (best.fraction_of_peak or 0.0) >= LARGE_M_GOOD
        w = entry_words("gemm-low-peak-efficiency")
        out.append(Finding(
            id="gemm-best-efficiency" if good else "gemm-low-peak-efficiency",
            claim=(f"The best {dtype} GEMM of the sweep (M={best.m} N={best.n} K={best.k}) reached "
                   f"{best.tflops:.0f} TFLOPS, {_pct(best.fraction_of_peak)} of the {best.peak_tflops:.0f} TFLOPS "
                   f"dense peak{power}{partial}." + ("" if good else " " + w["words"]["far_from_peak"])),
            confidence=w["confidence"] - conf_cut, evidence=[eid], category="hardware",
            data={**_point_data(best), "informational": good,
                  "title": f"Best {dtype} GEMM: {_pct(best.fraction_of_peak)} of dense peak"},
            recommendations=[] if good else w["recommendations"], entry="" if good else w["entry"]))
    return out


def comm_findings(eid: str, sweep: CommSweep, obs: Observations | None,
                  gemm: tuple[str, GemmSweep] | None = None) -> list[Finding]:
    if not sweep.available or not sweep.points:
        return []
    out: list[Finding] = []
    bad = [p for p in sweep.points if p.correct is False]
    if bad:
        out.append(Finding(
            id="comm-allreduce-wrong-sum", category="communication", confidence=0.9, evidence=[eid],
            claim=(f"The {sweep.backend} all-reduce returned a wrong sum for {len(bad)} of {len(sweep.points)} "
                   "measured points: the interconnect or the collective library misbehaves on this host."),
            data={"wrong": [p.model_dump() for p in bad[:5]], "title": "All-reduce returned wrong sums"}))
    for g in sorted({p.group_size for p in sweep.points}, reverse=True):
        pts = sorted((p for p in sweep.points if p.group_size == g), key=lambda p: p.bytes)
        small, large = pts[0], pts[-1]
        busbw = f", {large.busbw_gbps:.1f} GB/s bus bandwidth" if large.busbw_gbps and g > 1 else ""
        out.append(Finding(
            id="comm-allreduce-measured", category="communication", confidence=0.9, evidence=[eid],
            claim=(f"All-reduce in {small.groups} group(s) of {g} ({sweep.backend}, {small.dtype}): "
                   f"{small.ms * 1e3:.1f} µs at {small.bytes / 1024:.0f} KiB"
                   + (f" and {large.ms * 1e3:.1f} µs at {large.bytes / 1024:.0f} KiB" if large is not small else "")
                   + busbw + (" (stopped early at its time budget)." if sweep.stopped_early else ".")),
            data={"group_size": g, "small": small.model_dump(), "large": large.model_dump(), "informational": True,
                  "title": f"All-reduce in groups of {g}: {small.ms * 1e3:.0f} µs at {small.bytes / 1024:.0f} KiB"}))
    out.extend(_comm_vs_gemm(eid, sweep, obs, gemm))
    return out


def _comm_vs_gemm(eid: str, sweep: CommSweep, obs: Observations | None,
                  gemm: tuple[str, GemmSweep] | None) -> list[Finding]:
    model = obs.model if obs else None
    if not obs or not model or not model.hidden_size or not model.num_layers:
        return []
    peaks: Peaks | None = gemm[1].peaks if gemm and gemm[1].peaks else None
    if peaks is None:
        peaks = next((pk for pk in (peaks_for(d) for d in sweep.devices) if pk), None)
    dtype = dtype_of_quantization(model.quantization)
    if peaks is None or not peaks.mem_bw_tbs or dtype not in peaks.dense_tflops:
        return []
    measured_groups = {p.group_size for p in sweep.points}
    out = []
    for run in obs.runs:
        b = run.decode_batch
        if run.tp < 2 or not b or run.tp not in measured_groups:
            continue
        msg = tp_message_bytes(model.hidden_size, b)
        t_raw = allreduce_seconds(sweep.points, run.tp, msg)
        if t_raw is None:
            continue
        # The same harness on groups of one moves no data: its time is per-call overhead (dispatch, launch,
        # timing) that a serving engine's CUDA graphs mostly avoid. Count only what the transfer adds.
        base = allreduce_seconds(sweep.points, 1, msg) if run.tp > 1 else None
        t_ar = max(t_raw - base, 0.0) if base is not None and base < t_raw else t_raw
        overhead = "" if t_ar == t_raw or base is None else (  # t_ar differs from t_raw only with a base
            f" (measured {t_raw * 1e6:.1f} µs per call, of which {base * 1e6:.1f} µs is the harness's per-call "
            f"overhead seen on groups of one; counted: {t_ar * 1e6:.1f} µs)")
        cost = step_cost(batch=b, tp=run.tp, num_layers=model.num_layers, hidden=model.hidden_size, allreduce_s=t_ar,
                         dtype=dtype, peak_tflops=peaks.dense_tflops[dtype], bw_tbs=peaks.mem_bw_tbs,
                         num_experts=model.num_experts, top_k=model.top_k,
                         moe_intermediate=model.moe_intermediate_size, intermediate=model.intermediate_size,
                         num_moe_layers=model.num_moe_layers, ep=run.ep)
        if cost is None:
            continue
        ratio = cost.comm_s_per_step / cost.gemm_s_per_step if cost.gemm_s_per_step else float("inf")
        # The GEMM side is a roofline floor and the all-reduce side one measurement: within 2x either way the two
        # are comparable, and only a wider margin says which one dominates.
        verdict = ("communication" if ratio > COMPARABLE else "gemm" if ratio < 1 / COMPARABLE else "comparable")
        comm_dom = verdict != "gemm"
        evidence = [eid] + ([gemm[0]] if gemm and gemm[1].peaks is peaks else [])
        tail = {
            "communication": f"communication exceeds the GEMMs' best case {ratio:.1f}×.",
            "comparable": (f"communication is {ratio:.0%} of the GEMMs' best case: comparable, so at this batch the "
                           "all-reduce latency costs about as much as the expert GEMMs' memory floor."),
            "gemm": f"GEMMs dominate; communication is {ratio:.0%} of their best case.",
        }[verdict]
        out.append(Finding(
            id="comm-vs-gemm", category="communication", evidence=evidence,
            confidence={"communication": 0.6, "comparable": 0.6, "gemm": 0.75}[verdict],
            claim=(f"{run.name}: per decode step, {cost.allreduces_per_step} all-reduces of {msg / 1024:.0f} KiB in "
                   f"groups of {run.tp}{overhead} take {cost.comm_s_per_step * 1e3:.2f} ms ({cost.comm_s_per_token * 1e6:.2f} µs "
                   f"per token) against at least {cost.gemm_s_per_step * 1e3:.2f} ms of {dtype} GEMM time at the "
                   f"roofline ({cost.gemm_scope}; {cost.gemm_s_per_token * 1e6:.2f} µs per token): " + tail),
            data={"title": f"{run.name}: all-reduce vs GEMM time per decode step", "run": run.name,
                  "message_bytes": msg, "allreduce_s": t_ar, "allreduce_raw_s": t_raw, "harness_overhead_s": base,
                  **cost.model_dump(),
                  "comm_s_per_token": cost.comm_s_per_token, "gemm_s_per_token": cost.gemm_s_per_token,
                  "dominant": verdict, "ratio": ratio,
                  "bound": "communication" if verdict == "communication" else None, "peaks_source": peaks.source},
            recommendations=entry_words("comm-vs-gemm", {"tp_half": max(run.tp // 2, 1)})["recommendations"]
            if comm_dom else [], entry="comm-vs-gemm"))  # the claim is the measurement itself: numbers throughout
        measured = out[-1]
        if verdict == "communication":  # states the bound, without being a cause of its own
            measured.sets_bound = BoundClaim(rank=Rank.COMM_MEASURED, bound="communication", leads=False,
                                             words="Measured all-reduce time exceeds the GEMMs' roofline time: "
                                                   + measured.claim)
        elif verdict == "gemm":
            measured.rules_out = ["communication"]
        else:
            measured.agrees = [Agreement(tier=Rank.MOE_ROOFLINE, order=3, words=(
                f"The measured all-reduce latency is comparable ({ratio:.0%}) to this memory floor, so TP "
                "communication is a second limiter of the same size."))]
    return out


def measure_findings(evidence: list[Evidence], observations: Observations | None) -> list[Finding]:
    """Findings from every recorded gemm_sweep / comm_sweep evidence (errors and other kinds are ignored)."""
    gemms: list[tuple[str, GemmSweep]] = []
    comms: list[tuple[str, CommSweep]] = []
    for ev in evidence:
        if ev.is_error or not ev.data:
            continue
        if ev.kind == "gemm_sweep":
            gemms.append((ev.id, GemmSweep.model_validate(ev.data)))
        elif ev.kind == "comm_sweep":
            comms.append((ev.id, CommSweep.model_validate(ev.data)))
    out: list[Finding] = []
    for eid, sw in gemms:
        # figures measured while another process used the GPU are not the GPU's own: never set against its roofline
        out.extend(shared_gpu_finding(eid, sw, "GEMM sweep") if sw.shared_gpu else gemm_findings(eid, sw, observations))
    usable = next(((eid, sw) for eid, sw in gemms if sw.available and sw.peaks and not sw.shared_gpu), None)
    for eid, csw in comms:
        out.extend(shared_gpu_finding(eid, csw, "all-reduce sweep") if csw.shared_gpu
                   else comm_findings(eid, csw, observations, usable))
    return out


def _others(sw: GemmSweep | CommSweep) -> str:
    act = sw.gpu_activity
    if act is None:
        return "another process"
    procs = [f"{o.get('name') or '?'} (pid {o.get('pid')}, {o.get('used_memory_mib') or 0:g} MiB, GPU {o.get('gpu_index')})"
             for o in act.others]
    busy = [f"GPU {g.get('index')} at {g.get('utilization_pct') or 0:g} % utilization, {g.get('power_w') or 0:g} W"
            for g in act.gpus if g.get("index") in act.busy]
    return ", ".join(procs) or "a process not visible here" + (f" ({'; '.join(busy)})" if busy else "")


def shared_gpu_finding(eid: str, sw: GemmSweep | CommSweep, what: str) -> list[Finding]:
    """A sweep that ran beside another workload: what it shared the GPU with, and that its figures are not the
    GPU's own (no roofline comparison is made of them)."""
    act = sw.gpu_activity
    waited = f" after waiting {act.waited_s:g} s of the {act.wait_s:g} s allowed" if act and act.wait_s else ""
    ran = "ran" if sw.available else "was to run"
    # the user's own engine on the GPU is the deployment being measured around, not another workload
    engine = bool(act and act.others) and all(engine_of(str(o.get("name") or "")) for o in act.others)  # type: ignore[union-attr]
    return [Finding(
        id=f"measured-on-shared-gpu-{sw.kind}", category="observation", confidence=0.9, evidence=[eid],
        title=f"The {what} shared the GPU with " + ("the serving engine" if engine else "another workload"),
        claim=(f"The {what} on {sw.host} {ran} while {_others(sw)} used the GPU{waited}: its figures are shared "
               f"with that load, not the GPU's own, and are not compared with the roofline."),
        recommendations=["Measure again when the other process is gone, or let the probe wait for it: "
                         "`--measure --measure-wait 300`."],
        symptoms=["throughput", "itl", "ttft"], informational=True, data={"shared_gpu": True})]


def measurements(v: "EvidenceView") -> list[Finding]:
    """GEMM and all-reduce measurements (`--measure`) against their rooflines."""
    return measure_findings(v.evidence, v.observations)
