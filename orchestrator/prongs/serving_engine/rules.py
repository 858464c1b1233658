"""Rules over serving evidence: measured TTFT / ITL (benchmark results, else the engine's /metrics histograms)
against the roofline floor of the model on this GPU at the measured batch (arithmetic in prongs/serving_engine/floors.py).

Prefill and decode are judged apart; each finding says which phase it is, what bounds it and how far above its
floor it runs. The question's phase (TTFT vs ITL words) orders them.
"""

from __future__ import annotations

import re
from typing import Any

from orchestrator.prongs.resource_account.where import (GPU_BUSY_PCT, GPU_IDLE_PCT, busy_with_batch_work, gpus_busy,
                                                        serving_gpus, where_time_went)
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.prongs.resource_account.load_rules import engine_ttft_instead, ttft_whole
from orchestrator.prongs.serving_engine.floors import (
    BELOW_RATIO, FAR_RATIO, NEAR_RATIO, PhaseVerdict, decode_floor, judge_decode, judge_prefill, prefill_floor, question_phase,
    shape_from_name, shape_from_observations,
)
from orchestrator.diagnosis import Number
from orchestrator.findings import BoundClaim, Finding, diagnosis_bound
from orchestrator.ranks import Rank
from orchestrator.prongs.serving_engine.metrics import MetricSummary
from orchestrator.prongs.serving_engine.models import EngineInstance, EngineReport
from orchestrator.prongs.serving_engine.weights import weight_dtype as _dtype

def _engine(v: EvidenceView) -> tuple[str, EngineInstance] | None:
    for ev, rep in v.probes("engine_config"):
        assert isinstance(rep, EngineReport)
        if rep.primary is not None:
            return ev.id, rep.primary
    return None




_BEFORE = re.compile(r"\b(?:before|baseline|old|previous|prior)\b", re.IGNORECASE)
"""A run's label that names it as the state before a change."""


def _latency_inputs(v: EvidenceView, eng: EngineInstance | None) -> list[dict[str, Any]]:
    """What was measured: each benchmark run, else the engine's histograms (medians, seconds -> ms)."""
    out: list[dict[str, Any]] = []
    oe = v.observations_evidence
    m_eng = eng.metrics.metrics if eng is not None and eng.metrics and eng.metrics.metrics else {}
    ran = next((m_eng[n].value for n in ("vllm:num_requests_running", "sglang:num_running_reqs",
                                         "tgi_batch_current_size") if n in m_eng and m_eng[n].value), None)
    if ran is None:
        # no engine process to scrape: the engines' own stats lines, each engine apart (Ray Serve replicas, DP
        # ranks logging to one file), give the batch each one decodes
        from orchestrator.prongs.request.account import engine_view

        ev_view = engine_view(v)[0]
        if ev_view is not None and ev_view.running and ev_view.engines:
            ran = ev_view.running / ev_view.engines
    if oe is not None:
        now = [b for b in oe[1].bench if b.label != "baseline"]  # `--baseline`: the run before, not this state
        # of a before/after pair, the state asked about is the one after the change: it is judged first
        now.sort(key=lambda b: bool(_BEFORE.search(b.label or "")))
        for b in (now or oe[1].bench)[:4]:
            itl = b.itl if b.itl and b.itl.p50 is not None else b.tpot
            itl_ms = itl.p50 if itl and itl.p50 is not None else itl.mean if itl else None
            batch = b.max_concurrency
            if batch and ran and ran < batch:
                # the engine's own count of running requests is the batch it decoded, not the concurrency offered
                # (requests held before the engine never join its batch)
                batch = int(ran)
            if not batch and itl_ms and b.output_throughput:
                # no concurrency cap: the streams decoding at once, by Little's law (tokens/s x s per token)
                batch = max(1, round(b.output_throughput * itl_ms / 1e3))
            out.append({
                "ev": oe[0].id, "label": f"{b.format} ({b.source}, {b.name})", "batch": batch,
                "input_len": b.input_len, "itl_ms": (itl.p50 if itl and itl.p50 is not None else itl.mean if itl else None),
                "itl_name": "median ITL" if b.itl and b.itl.p50 is not None else "median TPOT",
                # a TTFT that is the whole request (not streamed) is no prefill time: load_rules says so instead
                "ttft_ms": None if ttft_whole(b) else
                (b.ttft.p50 if b.ttft and b.ttft.p50 is not None else b.ttft.mean if b.ttft else None),
                "model": b.model,
                # a closed loop (a concurrency cap) holds the load at the batch; an open one can queue without bound
                "output_len": b.output_len if b.max_concurrency else None,
            })
            inside = engine_ttft_instead(v, b)
            if inside is not None:
                # the client's TTFT is mostly the path to the engine (load_rules.ttft_outside_engine): the prefill is
                # judged on the engine's own median, from its arrival at the engine
                out[-1].update(ttft_ms=inside[0], ttft_label=f"the engine's median TTFT ({inside[1]})")
        for r in oe[1].runs[:4]:
            # a run's output rate at a known concurrency implies each stream's time per output token (an upper bound
            # on the decode step: any prefill in the run's time only adds to it)
            batch = r.decode_batch
            if not (r.output_tok_s and batch):
                continue
            out.append({
                "ev": oe[0].id, "label": f"run {r.name}: {r.output_tok_s:g} output tok/s at concurrency {batch}",
                "batch": batch, "input_len": r.input_len, "itl_ms": 1e3 * batch / r.output_tok_s,
                "itl_name": "time per output token", "ttft_ms": None, "model": None, "tp": r.tp,
            })
    if not out and eng is not None and eng.metrics and eng.metrics.metrics:
        m = eng.metrics.metrics

        def h(*names: str) -> MetricSummary | None:
            for n in names:
                if n in m and m[n].count:
                    return m[n]
            return None

        itl_m = h("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds",
                  "sglang:inter_token_latency_seconds", "trtllm_time_per_output_token_seconds",
                  "time_per_output_token_seconds")
        ttft = h("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds",
                 "trtllm_time_to_first_token_seconds", "time_to_first_token_seconds")
        running = next((m[n].value for n in ("vllm:num_requests_running", "sglang:num_running_reqs",
                                             "tgi_batch_current_size") if n in m and m[n].value), None)
        prompt = h("vllm:request_prompt_tokens")
        if itl_m or ttft:
            out.append({"ev": None, "label": f"the engine's /metrics ({eng.metrics.url})",
                        "batch": int(running) if running else None,
                        "input_len": prompt.mean if prompt else None,
                        "itl_ms": itl_m.p50 * 1e3 if itl_m and itl_m.p50 is not None else None, "itl_name": "median ITL",
                        "ttft_ms": ttft.p50 * 1e3 if ttft and ttft.p50 is not None else None, "model": None})
    return out


def serving_latency(v: EvidenceView) -> list[Finding]:
    g = v.gpu or v.observed_gpu  # the host's GPU, else the one the user measured on
    if g is None or g.spec is None or not g.spec.mem_bw_gbs:
        return []
    got = _engine(v)
    eng_ev, eng = (got if got else (None, None))
    inputs = _latency_inputs(v, eng)
    if not inputs:
        return []
    oe = v.observations_evidence
    obs_model = oe[1].model if oe else None
    shape = shape_from_observations(obs_model) if obs_model else None
    model_name = (obs_model.name if obs_model and obs_model.name else None) or (eng.model if eng else None) or \
        next((i["model"] for i in inputs if i.get("model")), None)
    if shape is None:
        shape = shape_from_name(model_name)
    if shape is None:
        return []
    b_dtype, c_dtype, dtype_src = _dtype(v, eng, model_name)
    peak = g.spec.peak_tflops(c_dtype) or g.spec.peak_tflops("bf16")
    if not peak:
        return []
    bw = g.spec.mem_bw_gbs
    tp = int(eng.value("tp") or 1) if eng else 1
    if oe and oe[1].runs and not eng:
        tp = oe[1].runs[0].tp
    elif not eng:
        # no engine flags: the GPUs the serving processes hold form one TP group per engine the logs show
        from orchestrator.prongs.request.account import engine_view

        ev_view = engine_view(v)[0]
        tp = max(1, (serving_gpus(v) or tp) // max(1, ev_view.engines if ev_view is not None else 1))
    cuda_graphs = eng.value("cuda_graphs") if eng else None
    max_seqs = eng.value("max_num_seqs") if eng else None
    nvlink = None
    for _, inv in v.probes("gpu_inventory"):
        if inv.topology is not None:
            nvlink = inv.topology.nvlink
    question = getattr(v, "question", None) or ""
    asked = question_phase(question) if question else None
    findings: list[Finding] = []
    base_ev = [*g.evidence, *([eng_ev] if eng_ev else [])]
    elsewhere, acct_ev = where_time_went(v)
    src = f"{g.spec.name} {peak:g} TFLOPS {c_dtype} dense, {bw:g} GB/s ({g.spec.source})"
    where = f"{g.count} x {g.name}" if g.count > 1 else g.name
    busy = gpus_busy(v)
    # GPUs idle most of the window and a phase a third or less GPU work: both say the time goes elsewhere
    far_at = NEAR_RATIO if busy is not None and busy < GPU_IDLE_PCT else FAR_RATIO
    for inp in inputs[:2]:
        ev = [*base_ev, *([inp["ev"]] if inp["ev"] else [])]
        batch = inp["batch"] or 1
        if isinstance(max_seqs, int) and max_seqs > 0 and batch > max_seqs:
            batch = max_seqs  # the engine runs at most max_num_seqs per step; the rest queue
        if inp["itl_ms"]:
            run_tp = int(inp.get("tp") or tp)
            fl = decode_floor(shape, batch, dtype=b_dtype, peak_tflops=peak, bandwidth_gbs=bw, gpus=run_tp)
            verdict = judge_decode(inp["itl_ms"], f"{inp['itl_name']} ({inp['label']})", fl, cuda_graphs=cuda_graphs,
                                   tp=run_tp, nvlink=nvlink, far=far_at)
            findings.append(_finding(verdict, ev + acct_ev, shape.source, dtype_src, where, run_tp, src, asked,
                                     elsewhere, far_at))
        if inp["ttft_ms"] and inp["input_len"]:
            fl = prefill_floor(shape, int(inp["input_len"]), dtype=b_dtype, peak_tflops=peak, bandwidth_gbs=bw, gpus=tp)
            verdict = judge_prefill(inp["ttft_ms"], inp.get("ttft_label") or f"median TTFT ({inp['label']})", fl,
                                    far=far_at)
            f = _finding(verdict, ev + acct_ev, shape.source, dtype_src, where, tp, src, asked, elsewhere, far_at)
            findings.append(_queued_prefill(f, verdict, batch, busy) or
                            (_loaded_prefill(f, verdict, batch, busy, inp["itl_ms"], inp.get("output_len"))
                             if busy_with_batch_work(v) else None) or f)
        if findings:
            break
    return findings


_RECS = {
    "latency": ["Run decode with CUDA graphs: drop --enforce-eager (vLLM) / --disable-cuda-graph (SGLang), and "
                "capture sizes up to the running batch (vLLM --max-cudagraph-capture-size, SGLang --cuda-graph-max-bs)."],
    "communication": ["Put the TP group on NVLink, or use fewer TP ranks per replica (TP within an NVLink domain, "
                      "DP/replicas across); the two all-reduces per layer per step cost more than the weight reads."],
    "memory": ["Decode streams the weights and KV each step: raise the batch (max_num_seqs, KV pool) to amortize the "
               "weight reads, or cut the bytes (FP8/FP4 weights, FP8 KV cache)."],
    "compute": ["Prefill is compute-bound: lower-precision GEMMs (FP8/FP4 on tensor cores that have them), prefix "
                "caching for shared prompts, or more GPUs per prefill (TP) cut TTFT."],
}


def _finding(vd: PhaseVerdict, ev: list[str], shape_src: str, dtype_src: str, where: str, tp: int, src: str,
             asked: str | None, elsewhere: str | None = None, far_at: float = FAR_RATIO) -> Finding:
    fl = vd.floor
    phase = "Decode" if vd.phase == "decode" else "Prefill"
    unit_what = (f"batch {fl.tokens} per step" if vd.phase == "decode" else f"{fl.tokens}-token prompts")
    about = ""
    if asked:
        about = (" The question is about this phase." if asked == vd.phase else
                 f" (The question is about {asked}; this is the other phase.)")
    far = vd.ratio >= far_at
    if vd.ratio < BELOW_RATIO:
        return _below_floor(vd, ev, where, tp, unit_what, asked)
    verdict = (f"{phase} runs far above its {fl.bound} floor, so no {fl.bound} limit sets its time: {vd.reason}." if far else
               f"{phase} is {vd.bound}-bound here: {vd.reason}.")
    claim = (f"{phase}: {vd.measured_label} is {vd.measured_ms:.1f} ms at {unit_what} on {where} (TP{tp}), against a "
             f"roofline floor of {fl.floor_ms:.2f} ms ({vd.ratio:.1f}x). {verdict}{about}")
    if far and elsewhere:
        claim += f" The resource account shows where: {elsewhere}"
    numbers = [
        Number(name=f"{vd.phase} latency ({'TTFT' if vd.phase == 'prefill' else 'ITL'}) vs roofline floor",
               value=round(vd.measured_ms, 3), unit="ms", peak=None, source=vd.measured_label,
               note=f"roofline floor {fl.floor_ms:.3g} ms ({vd.ratio:.1f}x)"),
        Number(name=f"{vd.phase} roofline floor", value=round(fl.floor_ms, 4), unit="ms", source=src,
               note=f"{shape_src}; weights {dtype_src}; compute {fl.compute_ms:.3g} ms, memory {fl.memory_ms:.3g} ms"),
    ]
    entry = _entry()
    recs = list(_RECS.get(vd.bound, [])) if not far or vd.phase == "decode" and "CUDA graphs off" in vd.reason else []
    if far:
        recs.append("Find where the time goes before tuning kernels: the GPUs' busy share over a window (the resource "
                    "account), the engine's waiting queue, and the latency split into queue and GPU time (vLLM's "
                    "vllm:request_queue_time_seconds and vllm:request_prefill_time_seconds histograms).")
    if vd.phase == "prefill" and far:
        recs.append("TTFT far above one prefill's compute is waiting time: check the waiting queue and the chunked-"
                    "prefill budget (max_num_batched_tokens) against the prompt lengths.")
    if entry is not None:
        claim += f" [{entry.source}]"
        recs = [f"{r} [{entry.source}]" for r in recs]
    short = (f"{phase} {vd.measured_ms:.1f} ms is {vd.ratio:.1f}x its roofline floor of {fl.floor_ms:.2f} ms at "
             + (f"{unit_what}: the time is spent outside the GPU work the floor counts." if far else
                f"{unit_what}: {vd.bound}-bound ({vd.reason})."))
    return Finding(
        id=f"serving-{vd.phase}-vs-roofline", claim=claim, confidence=0.6 if vd.ratio >= 1 else 0.4, evidence=ev,
        recommendations=recs, category="workload", title=f"{phase} runs {vd.ratio:.1f}x its roofline floor "
        + (f"(the time is spent outside GPU work at {unit_what})" if far else f"({vd.bound}-bound at {unit_what})"),
        numbers=numbers, bound=vd.bound, short=short, symptoms=["ttft"] if vd.phase == "prefill" else ["itl", "throughput"],
        explains=round(1 - 1 / vd.ratio, 2) if far else None,
        entry=entry.id if entry is not None else "", secondary=asked is not None and asked != vd.phase,
        reads=vd.phase,
        # the phase asked about first, decode before prefill
        sets_bound=BoundClaim(rank=Rank.SERVING_FLOOR + 0.2 * (asked != vd.phase) + 0.1 * (vd.phase != "decode"),
                              bound=diagnosis_bound(vd.bound, "unknown"), words=short) if vd.bound else None,
        data={"phase": vd.phase, "asked": asked == vd.phase,
              "serving": {"phase": vd.phase, "measured_ms": vd.measured_ms, "floor_ms": fl.floor_ms,
                          "ratio": vd.ratio, "bound": vd.bound, "label": vd.measured_label, "batch": fl.tokens,
                          "compute_ms": fl.compute_ms, "memory_ms": fl.memory_ms}},
    )


def _below_floor(vd: PhaseVerdict, ev: list[str], where: str, tp: int, unit_what: str, asked: str | None) -> Finding:
    """A phase measured below its floor: the work the floor counts cannot take less, so the figure is not that work
    (a shorter prompt than counted, truncated or served from a cache; another model, dtype or speculation; a figure
    taken elsewhere). Said with its arithmetic, and no bound is read from it."""
    fl = vd.floor
    phase = "Decode" if vd.phase == "decode" else "Prefill"
    what = (f"a decode step of batch {fl.tokens}" if vd.phase == "decode" else
            f"one prefill of {fl.tokens} prompt tokens")
    claim = (f"{phase}: {vd.measured_label} is {vd.measured_ms:.1f} ms at {unit_what} on {where} (TP{tp}), "
             f"{vd.ratio:.2f}x the roofline floor of {fl.floor_ms:.2f} ms for {what}: the work the floor counts "
             "cannot take less than its floor, so the figure is not that work (a shorter prompt than counted, "
             "truncated or served from a cache; another model, dtype or speculative decoding; or a figure measured "
             f"elsewhere), and no {fl.bound} bound can be read from it.")
    return Finding(
        id=f"serving-{vd.phase}-vs-roofline", claim=claim, confidence=0.4, evidence=ev, category="workload",
        title=f"{phase} runs {vd.ratio:.1f}x its roofline floor (below it at {unit_what}: not the work the floor "
              "counts)",
        short=f"{phase} {vd.measured_ms:.1f} ms is {vd.ratio:.2f}x its floor of {fl.floor_ms:.2f} ms: below it.",
        numbers=[Number(name=f"{vd.phase} latency ({'TTFT' if vd.phase == 'prefill' else 'ITL'}) vs roofline floor",
                        value=round(vd.measured_ms, 3), unit="ms", peak=None, source=vd.measured_label,
                        note=f"roofline floor {fl.floor_ms:.3g} ms ({vd.ratio:.2f}x)")],
        symptoms=["ttft"] if vd.phase == "prefill" else ["itl", "throughput"], secondary=True, reads=vd.phase,
        data={"phase": vd.phase, "asked": asked == vd.phase,
              "serving": {"phase": vd.phase, "measured_ms": vd.measured_ms, "floor_ms": fl.floor_ms,
                          "ratio": vd.ratio, "bound": None, "label": vd.measured_label, "batch": fl.tokens}})


QUEUED_FLOOR_SHARE = 0.25
"""A TTFT below this share of all the concurrent prompts' prefill is not their prefill together."""
QUEUED_SLACK = 2.0
"""A TTFT within this factor of prefilling every concurrent prompt once is explained by those prefills."""


def _queued_prefill(f: Finding, vd: PhaseVerdict, batch: int, busy: float | None) -> Finding | None:
    """A TTFT far above one prompt's prefill but within the prefill of all the concurrent prompts, on GPUs busy the
    whole window: each request waits for the prefills scheduled with and ahead of it. The time is GPU compute shared
    among the concurrent prompts (queueing for compute), not time outside the GPU."""
    if vd.phase != "prefill" or vd.ratio < FAR_RATIO or batch < 2 or busy is None or busy < GPU_BUSY_PCT:
        return None
    together = batch * vd.floor.floor_ms
    if vd.measured_ms > QUEUED_SLACK * together or vd.measured_ms < QUEUED_FLOOR_SHARE * together:
        # far below the prefill of all the concurrent prompts: they do not prefill together (arrivals staggered, the
        # batch decoding): the claim would contradict its own figure
        return None
    claim = (f"Prefill: {vd.measured_label} is {vd.measured_ms:.1f} ms, {vd.ratio:.1f}x one {vd.floor.tokens}-token "
             f"prompt's roofline floor of {vd.floor.floor_ms:.2f} ms, but {vd.measured_ms / together:.1f}x the "
             f"{together:.0f} ms it takes to prefill all {batch} concurrent prompts, with the GPUs busy {busy:.0f} % "
             "of the window. Each request's first token waits behind the other requests' prefill scheduled with and "
             "ahead of it: the GPU's compute, shared among the concurrent prompts, sets the TTFT (queueing for "
             "compute), not time outside the GPU.")
    short = (f"TTFT {vd.measured_ms:.0f} ms is about {batch} prompts' prefill ({together:.0f} ms) on GPUs busy "
             f"{busy:.0f} %: each request waits behind the other requests' prefill.")
    return f.model_copy(update={
        "claim": claim, "short": short, "bound": "compute", "explains": None,
        "sets_bound": f.sets_bound.model_copy(update={"bound": "compute", "words": short}) if f.sets_bound else None,
        "title": f"TTFT is the prefill of {batch} concurrent prompts: each waits behind the others' prefill "
                 f"({vd.measured_ms / together:.1f}x their combined floor)",
        "recommendations": [
            "Fewer prompt tokens in flight per GPU: a lower --max-concurrency or max_num_seqs per replica, more "
            "replicas (data parallel) or more GPUs per prefill (TP), prefix caching for shared prompt prefixes; a "
            "smaller chunked-prefill budget (max_num_batched_tokens) trades TTFT for ITL, it does not remove the "
            "work."]})


def _loaded_prefill(f: Finding, vd: PhaseVerdict, batch: int, busy: float | None, itl_ms: float | None,
                    output_len: float | None) -> Finding | None:
    """A TTFT far above one prompt's prefill while a batch of other requests runs on GPUs busy the whole window: the
    time beyond the floor is GPU work, the other requests' (the steps the running batch takes, which a new prompt's
    prefill shares under continuous batching), not time outside the GPU. Said in decode steps, and no latency bound is
    read from it: the GPUs' busy share contradicts one. A wait longer than a whole answer's decode steps is not shared
    steps but a wait for a place in the batch (a place frees only when an answer ends): not this."""
    if vd.phase != "prefill" or vd.ratio < FAR_RATIO or batch < 2 or busy is None or busy < GPU_BUSY_PCT or \
            not itl_ms or not output_len:
        return None
    excess = vd.measured_ms - vd.floor.floor_ms
    steps = excess / itl_ms
    if steps >= output_len:
        return None
    claim = (f"Prefill: {vd.measured_label} is {vd.measured_ms:.1f} ms at {vd.floor.tokens}-token prompts, "
             f"{vd.ratio:.1f}x one prompt's roofline floor of {vd.floor.floor_ms:.2f} ms, with {batch} requests "
             f"running and the GPUs busy {busy:.0f} % of the window: the time beyond the floor is GPU work, the other "
             f"requests'. {vd.measured_ms:.0f} ms - {vd.floor.floor_ms:.1f} ms = {excess:.0f} ms is {steps:.1f} steps "
             f"of the {itl_ms:.3g} ms decode step the running batch takes; a new prompt's prefill shares those steps "
             "(continuous batching, chunked prefill), so its first token waits for them, not for anything outside "
             "the GPU. A shorter TTFT at this load needs fewer requests per GPU or shorter steps, not a faster "
             "prefill.")
    short = (f"TTFT {vd.measured_ms:.0f} ms is one prefill ({vd.floor.floor_ms:.0f} ms) plus {steps:.1f} steps of "
             f"the {batch}-request batch ({itl_ms:.3g} ms each) on GPUs busy {busy:.0f} %: the wait behind the other "
             "requests' GPU work.")
    return f.model_copy(update={
        "claim": claim, "short": short, "bound": None, "sets_bound": None, "explains": None,
        "title": f"Prefill runs {vd.ratio:.1f}x its roofline floor (the wait behind {batch} running requests' GPU "
                 f"work: {steps:.1f} decode steps)",
        "recommendations": [
            "Fewer requests per GPU shortens the wait for a first token (a lower concurrency or max_num_seqs per "
            "replica, more replicas); a larger chunked-prefill budget (max_num_batched_tokens) prefills a prompt in "
            "fewer steps at some cost to the inter-token latency."]})


def _entry():
    from orchestrator.knowledge.catalog import catalog

    return catalog().get("serving-latency-vs-roofline")
