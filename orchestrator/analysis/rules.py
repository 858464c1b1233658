"""Data-driven rules that turn evidence into findings.

A rule is `(EvidenceView) -> list[Finding]`; `RULES` is the list the offline backend runs, and other modules may
append to it. A rule claims only what its cited evidence shows: no GPU evidence, no GPU claims; error results are
never cited. Numbers a finding rests on go in `data["numbers"]` as `orchestrator.diagnosis.Number`s.
"""

from __future__ import annotations

import re

from typing import Callable

from orchestrator import knowledge
from orchestrator.analysis.evidence_view import EvidenceView, HostGpu
from orchestrator.analysis.observation_rules import PowerReading, analyze_observations, read_power
from orchestrator.analysis.roofline import MoeDecodeRoofline, moe_decode_roofline
from orchestrator.findings import Agreement, Bound, BoundClaim, Finding, diagnosis_bound
from orchestrator.ranks import Rank
from orchestrator.knowledge.catalog import catalog
from orchestrator.knowledge.catalog import entry as catalog_entry
from orchestrator.analysis.templates import entry_words, fill
from orchestrator.diagnosis import Number

Rule = Callable[[EvidenceView], list[Finding]]

FLASHINFER = "flashinfer-python"


def _lowp_class(dtype: str | None) -> str | None:
    """'fp4' / 'fp8' for quantizations that need those tensor cores to run natively, else None (the dtype table,
    knowledge/dtypes.yaml: w4a16 is weight-only everywhere, so None)."""
    return knowledge.lowp_class(dtype)


def _runs_weight_only(g: HostGpu | None, dtype: str | None) -> bool:
    """The workload's quantization has no tensor cores on this GPU, so it runs weight-only (dequantizing kernels)."""
    cls = _lowp_class(dtype)
    if g is None or g.caps is None or cls is None:
        return False
    return knowledge.native_mma(cls, g.caps.cc) is False


def _moe_model(v: EvidenceView) -> bool | None:
    """Whether the model is MoE: True/False when the observations say (its shape), else from the name of the model
    the engine serves or the observations name (knowledge/model_families.yaml), None when neither tells."""
    oe = v.observations_evidence
    m = oe[1].model if oe else None
    if m is not None:
        if m.num_experts is not None:
            return m.num_experts > 1
        if m.top_k or m.moe_intermediate_size or m.num_moe_layers:
            return True
        if m.hidden_size or m.intermediate_size:
            return False  # the user described the model's shape and gave no expert field: a dense model
    names = [getattr(m, "name", None)] if m is not None else []
    for _ev, rep in v.probes("engine_config"):
        eng = getattr(rep, "primary", None)
        if eng is not None:
            names.append(eng.model)
    for _ev, rep in v.probes("engine_config"):  # a served model named only in a log the user passed
        names += [e.model for e in getattr(rep, "engines", []) if e.model]
    for _ev, acct in v.probes("resource_account"):  # the model files the serving processes hold (their --model)
        names += [f.path for p in getattr(acct, "processes", []) for f in p.files]
    for name in names:
        known = knowledge.moe_by_name(name)
        if known is not None:
            return known[0]
    # the model the question names ("our Llama-3.3-70B TP4 ...")
    known = knowledge.moe_by_name(v.question) if v.question else None
    return known[0] if known is not None else None


def _triton_moe_configs_matter(v: EvidenceView) -> tuple[bool, str]:
    """Whether Triton fused-MoE tuned configs (vLLM/SGLang E=..,N=..,device_name=..json) are read for this workload.

    They are not for a dense model, nor for FP4 MoE (CUTLASS / FlashInfer / Marlin FP4 MoE kernels) or a
    quantization that runs weight-only on this GPU (Marlin MoE): those kernels do not read these files.
    """
    dtype, _ = v.workload_dtype()
    g = v.gpu
    cls = _lowp_class(dtype)
    why = entry_words("moe-config-missing", {"dtype": dtype, "cc": g.cc if g else None,
                                             "cls": cls.upper() if cls else None})["words"]
    if _moe_model(v) is False:
        return False, why["not_read_dense"]
    if g is not None and cls is not None and _runs_weight_only(g, dtype):  # weight-only needs both
        return False, why["not_read_weight_only"]
    if cls == "fp4":
        return False, why["not_read_fp4"]
    return True, ""


def _num(name: str, value: float, unit: str, source: str, peak: float | None = None, note: str = "") -> Number:
    return Number(name=name, value=round(float(value), 4), unit=unit, peak=peak, source=source, note=note)


def _gpu_label(g: HostGpu) -> str:
    cc = f"CC {g.cc}" if g.cc else "CC unknown"
    return f"{g.count} x {g.name} ({cc})"


# --- hardware -----------------------------------------------------------------------------------------------------


def hardware_peaks(v: EvidenceView) -> list[Finding]:
    """What the host's GPU can do at best, from the spec database."""
    g = v.gpu
    if g is None:
        return []
    if g.spec is None:
        near = ", ".join(knowledge.closest_gpu_names(g.name))
        return [Finding(id="gpu-unknown", category="hardware", confidence=0.6, evidence=g.evidence,
                        claim=f"{_gpu_label(g)} is not in the spec database, so its peaks are unknown (closest: {near}).",
                        data={"title": "GPU not in the spec database"})]
    s = g.spec
    peaks = ", ".join(f"{k.upper()} {v_:,.0f}" for k, v_ in s.tflops.items() if v_) or "no verified tensor peaks"
    nums = [_num(f"dense {k.upper()} tensor peak", v_, "TFLOPS", f"knowledge: {s.source}")
            for k, v_ in s.tflops.items() if v_ and k in ("fp4", "fp8", "bf16")]
    if s.mem_bw_gbs:
        nums.append(_num("memory bandwidth", s.mem_bw_gbs, "GB/s", f"knowledge: {s.source}"))
    claim = (f"{_gpu_label(g)}: dense {peaks} TFLOPS, {s.mem_bw_gbs or 'unknown'} GB/s, "
             f"{s.smem_per_block_bytes or 'unknown'} B shared memory per block, {s.tdp_w or 'unknown'} W.")
    if s.disputes:
        claim += " Sources disagree: " + " ".join(s.disputes)
    return [Finding(id="gpu-peaks", category="hardware", confidence=0.9, evidence=g.evidence, claim=claim,
                    data={"title": "Hardware ceilings", "numbers": nums, "informational": True})]


def _op_class(op: str) -> str | None:
    return "fp4" if "fp4" in op else "fp8" if "fp8" in op else "bf16" if "bf16" in op else None


def _backend_recs(cc: str | None, dtype: str | None = None) -> list[str]:
    recs = []
    want = _lowp_class(dtype) or ("bf16" if dtype else None)
    for b in knowledge.backends_for(cc):
        if want and _op_class(b.op) not in (None, want):
            continue  # a backend for another dtype than the workload's
        caps = knowledge.arch_caps(cc)
        peer = knowledge.arch_caps(caps.peer_cc) if caps and caps.peer_cc else None
        arch_specific = peer is None or peer.cc_int not in b.ccs
        if b.library in ("vllm", "flashinfer") and (arch_specific or b.op == "fp4_weight_only"):
            note = f" ({b.note})" if b.note else ""
            recs.append(f"Try the {b.library} {b.backend} backend for {b.op} (supported on CC {cc}){note} [{b.source}]")
    return recs


_FEATURE_IDS = {"shared memory": "arch-smem-per-block", "tcgen05 / TMEM / 2-SM MMA": "arch-no-tcgen05",
                "clusters > 1 / TMA multicast": "arch-no-multicast", "wgmma / TMA / thread-block clusters": "arch-no-wgmma"}


def arch_vs_peer(v: EvidenceView) -> list[Finding]:
    """What this architecture lacks against the datacenter part its kernels are usually designed for."""
    g = v.gpu
    if g is None or g.caps is None or not g.caps.peer_cc:
        return []
    caps, peer = g.caps, knowledge.arch_caps(g.caps.peer_cc)
    out = []
    for fact in caps.missing_vs_peer:
        fid = _FEATURE_IDS.get(fact.feature or "", "arch-" + (fact.feature or "gap").replace(" ", "-"))
        data: dict = {"title": f"{caps.sm} lacks {fact.feature} of {peer.sm if peer else caps.peer_cc}"}
        recs: list[str] = []
        if fid == "arch-smem-per-block" and peer:
            w = entry_words("arch-smem-per-block", {"sm": caps.sm, "smem": f"{caps.max_smem_per_block_bytes:,}",
                                                    "peer_sm": peer.sm, "peer_smem": f"{peer.max_smem_per_block_bytes:,}"})
            data["title"] = w["words"]["title"]
            data["numbers"] = [_num(f"shared memory per block ({caps.sm})", caps.max_smem_per_block_bytes, "B",
                                    f"knowledge: {fact.source}", peak=peer.max_smem_per_block_bytes,
                                    note=f"peak = {peer.sm}")]
            recs = w["recommendations"]
            data["entry"] = "arch-smem-per-block"
        elif fid == "arch-no-tcgen05":
            cutlass = next((n for n in caps.notes if "reduced subset" in n.text), None)
            claim_extra = f" {cutlass.text}" if cutlass else ""
            data["extra"] = claim_extra
            recs = _backend_recs(g.cc, v.workload_dtype()[0])
        if fact.weight < 0.6:
            data["secondary"] = True
        out.append(Finding(id=fid, category="kernel", confidence=fact.weight, evidence=g.evidence,
                           claim=f"{_gpu_label(g)}: {fact.text}{data.get('extra', '')} [{fact.source}]",
                           recommendations=recs, data=data))
    return out


def fp4_without_tensor_cores(v: EvidenceView) -> list[Finding]:
    """An FP4 or FP8 workload on a GPU whose tensor cores lack that dtype runs through weight-only dequantizing
    kernels (Marlin-style: low-precision weights, BF16 activations and math)."""
    g = v.gpu
    dtype, ids = v.workload_dtype()
    cls = _lowp_class(dtype)
    if g is None or g.caps is None or cls is None or not _runs_weight_only(g, dtype):  # weight-only needs a cls
        return []
    bf16 = g.spec.tflops.get("bf16") if g.spec else None
    fp8 = g.spec.tflops.get("fp8") if g.spec and g.caps.fp8_tensor_cores and cls == "fp4" else None
    values = {"dtype": dtype, "cc": g.cc, "cls": cls.upper(), "sm": g.caps.sm, "gpu": _gpu_label(g),
              "tensor_dtypes": ", ".join(g.caps.tensor_dtypes), "bf16": f"{bf16:,.0f}" if bf16 else None,
              "fp8": f"{fp8:,.0f}" if fp8 else None}
    words = entry_words("lowp-no-native-mma", values)["words"]
    values["ceiling"] = words["ceiling_bf16" if bf16 else "ceiling_bf16_unknown"] + (words["ceiling_fp8"] if fp8 else "")
    values["alt"] = words["alt_fp8" if cls == "fp4" and g.caps.fp8_tensor_cores else "alt_bf16"]
    w = entry_words("lowp-no-native-mma", values, flags={"vllm"} if "vllm" in v.libraries else set())
    return [Finding(
        id=f"{cls}-no-native-mma", category="kernel", confidence=w["confidence"], evidence=g.evidence + ids,
        claim=w["words"]["claim"], recommendations=w["recommendations"], title=w["title"], entry=w["entry"])]


def no_gpu_on_host(v: EvidenceView) -> list[Finding]:
    """The host was looked at and has no usable NVIDIA GPU: say so, and how to investigate the GPU box instead."""
    out = []
    for ev, inv in v.unavailable():
        if inv.kind == "gpu_inventory":
            w = entry_words("no-gpu-on-host", {"host": inv.host, "reason": inv.reason},
                            flags={"local" if inv.host in ("local", "localhost") else "remote"})
            out.append(Finding(
                id="no-gpu-on-host", category="environment", confidence=w["confidence"], evidence=[ev.id],
                claim=w["words"]["claim"],
                # a user who already gave --observations is not told to pass them; `--host gpu-box` was given:
                # advising `--host user@gpu-box` would be noise (the local/remote flags pick the fix)
                recommendations=[r for r in w["recommendations"]
                                 if v.observations is None or "--observations" not in r], entry=w["entry"],
                title=w["title"], informational=True))
            break
    return out


def dtype_native_support(v: EvidenceView) -> list[Finding]:
    """Where a dtype the question names has native tensor cores, when the host's GPU is not known to decide it."""
    if v.gpu is not None:
        return []  # the GPU-specific rules (fp4-no-native-mma, arch-vs-peer) say it for the actual GPU
    out = []
    for ev in v.of_kind("knowledge"):
        for hit in (ev.data or {}).get("hits", []):
            if hit.get("type") != "dtype" or not hit.get("native_ccs"):
                continue
            dtype = hit["dtype"]
            w = entry_words("dtype-native-support", {"dtype": dtype.upper(), "native": ", ".join(hit["native_ccs"]),
                                                     "source": hit["source"]})
            out.append(Finding(
                id=f"dtype-{dtype}-native-support", category="kernel", confidence=w["confidence"], evidence=[ev.id],
                claim=w["words"]["claim"], recommendations=w["recommendations"], entry=w["entry"],
                title=w["title"], informational=True))
    return out


# --- autotune -----------------------------------------------------------------------------------------------------


def autotune_not_persisted(v: EvidenceView) -> list[Finding]:
    """An autotuning library is installed but nothing it tuned was persisted: every restart runs fallback tactics."""
    out = []
    for ev, rep in v.probes("autotune_caches"):
        if rep.persisted_any:
            continue
        tuners = [lib for lib in (FLASHINFER, "tensorrt-llm", "vllm", "sglang", "triton") if lib in v.libraries]
        if not tuners:
            continue
        ids = [ev.id] + sorted({v.libraries[t][1] for t in tuners})
        env = ", ".join(f"{k}={val}" for k, val in rep.env.items())
        looked = ", ".join(loc.path for loc in rep.locations[:6])
        flags = {"flashinfer"} if FLASHINFER in v.libraries else set()
        flags |= {lib for lib in ("tensorrt-llm", "triton") if lib in v.libraries}
        # Triton alone (no serving library) tunes only what a program asks it to: nothing persisted there is
        # expected, and says little about a serving stack.
        serving = [t for t in tuners if t != "triton"]
        dtype, dids = v.workload_dtype()
        gpu = v.gpu
        weight_only = _runs_weight_only(gpu, dtype)
        values = {"host": rep.host, "tuners": ", ".join(tuners), "looked": looked or None, "env": env or None,
                  "dtype": dtype, "cc": gpu.cc if gpu else None}
        words = entry_words("autotune-not-persisted", values)["words"]
        values["verb"] = words["verb_one" if len(tuners) == 1 else "verb_many"]
        values["looked"] = looked or words["looked_default"]
        values["env"] = env or words["env_none"]
        w = entry_words("autotune-not-persisted", values, flags=flags)
        claim = w["words"]["claim"] + (" " + w["words"]["weight_only"] if weight_only and gpu is not None else "")
        out.append(Finding(
            id="autotune-not-persisted", category="autotune", entry=w["entry"],
            confidence=w["secondary_confidence"] if weight_only or not serving else w["confidence"],
            evidence=ids + (dids if weight_only else []), claim=claim, recommendations=w["recommendations"],
            data={"title": w["title"], "secondary": not serving or weight_only}))
    return out


def autotune_fallback(v: EvidenceView) -> list[Finding]:
    out = []
    for ev, rep in v.probes("autotune_caches"):
        fb = [f for f in rep.files if f.fallback_entries > 0]
        if not fb:
            continue
        total = sum(f.entries for f in fb)
        n = sum(f.fallback_entries for f in fb)
        w = entry_words("autotune-fallback-tactics", {"n": n, "total": total, "paths": ", ".join(f.path for f in fb[:3])})
        out.append(Finding(
            id="autotune-fallback-tactics", category="autotune", confidence=w["confidence"], evidence=[ev.id],
            claim=w["words"]["claim"], recommendations=w["recommendations"], entry=w["entry"],
            data={"title": w["title"],
                  "numbers": [_num("fallback autotune entries", n, "entries", ev.id, peak=total)]}))
    return out


_SKIPPED_ON_MISMATCH = knowledge.skipped_on_mismatch_formats()
"""Formats whose loader ignores the whole file when its metadata does not match (knowledge/caches.yaml)."""


_MOE_CONFIG_FORMATS = knowledge.moe_formats()


def _config_is_for_this_model(v: EvidenceView, f) -> bool:
    """A tuned fused-MoE config file can matter for this workload: Triton fused-MoE configs are read at all, and the
    file's expert count is the model's (when both are known). Other formats always can."""
    if f.format not in _MOE_CONFIG_FORMATS:
        return True
    if not _triton_moe_configs_matter(v)[0]:
        return False
    g = v.gpu
    if g is not None and getattr(f, "device_name", None) and f.device_name != g.name.replace(" ", "_"):
        return False  # a config for another device name is never read on this GPU (the name must match exactly)
    oe = v.observations_evidence
    e_model = oe[1].model.num_experts if oe and oe[1].model else None
    e_file = (f.expert_shape or {}).get("E")
    try:
        return e_model is None or e_file is None or int(e_file) == int(e_model)
    except (TypeError, ValueError):
        return True


def autotune_mismatch(v: EvidenceView) -> list[Finding]:
    """Persisted tuning results made under other versions or another GPU: skipped (FlashInfer) or stale (others)."""
    out = []
    for ev, rep in v.probes("autotune_caches"):
        bad = [f for f in rep.files if f.metadata_mismatch]
        skipped = [f for f in bad if f.format in _SKIPPED_ON_MISMATCH]
        stale = [f for f in bad if f.format not in _SKIPPED_ON_MISMATCH and _config_is_for_this_model(v, f)]
        if skipped:
            fields = sorted({m for f in skipped for m in f.metadata_mismatch})
            w = entry_words("autotune-metadata-mismatch",
                            {"count": len(skipped), "fields": ", ".join(fields), "path": skipped[0].path})
            out.append(Finding(
                id="autotune-metadata-mismatch", category="autotune", confidence=w["confidence"], evidence=[ev.id],
                claim=w["words"]["claim"], recommendations=w["recommendations"], entry=w["entry"],
                data={"title": w["title"]}))
        if stale:
            fields = sorted({m for f in stale for m in f.metadata_mismatch})
            formats = sorted({f.format for f in stale})
            w = entry_words("tuned-config-stale", {"count": len(stale), "formats": ", ".join(formats),
                                                   "fields": ", ".join(fields), "path": stale[0].path})
            moe_only = all(f.format in _MOE_CONFIG_FORMATS for f in stale)
            out.append(Finding(
                id="tuned-config-stale", category="autotune", confidence=w["confidence"], evidence=[ev.id],
                claim=w["words"]["claim"], recommendations=w["recommendations"], entry=w["entry"],
                # fused-MoE configs are read only for a mixture of experts: said apart until the model is known
                unmet=entry_words("moe-config-missing")["words"]["unmet"] if moe_only and _moe_model(v) is None else "",
                data={"title": w["title"], "secondary": True}))
    return out


def moe_config_missing(v: EvidenceView) -> list[Finding]:
    out = []
    for ev, rep in v.probes("autotune_caches"):
        if rep.tuned_config_for_device is not False:
            continue
        matters, why_not = _triton_moe_configs_matter(v)
        if _moe_model(v) is False:
            continue  # a dense model runs no fused MoE
        words = entry_words("moe-config-missing")["words"]
        dev = rep.device_name or (v.gpu.name if v.gpu else words["device_default"])
        shape = rep.expert_shape or {}
        shape_txt = ", ".join(f"{k}={val}" for k, val in shape.items())
        others = sorted({f.device_name for f in rep.files if f.format in ("vllm_fused_moe", "sglang_fused_moe")
                         and f.device_name and f.device_name != dev.replace(" ", "_")})
        w = entry_words("moe-config-missing", {
            "device": dev.replace(" ", "_"), "shape": shape_txt or words["shape_default"],
            "others": ", ".join(others[:4]), "why_not": why_not})
        claim = " ".join([w["words"]["claim"]] + ([w["words"]["others"]] if others else [])
                         + ([] if matters else [w["words"]["matters_little"]]))
        oe = v.observations_evidence
        unknown = _moe_model(v) is None  # a dense model runs no fused MoE: said apart until the model is known
        out.append(Finding(
            id="moe-config-missing", category="autotune", unmet=w["words"]["unmet"] if unknown else "",
            confidence=w["confidence"] if matters else w["secondary_confidence"],
            evidence=[ev.id] + ([oe[0].id] if oe and not matters else []), claim=claim,
            recommendations=w["recommendations"] if matters else [], entry=w["entry"],
            data={"title": w["title"], "secondary": not matters}))
    return out


# --- roofline and observations ----------------------------------------------------------------------------------


def _moe_from_evidence(v: EvidenceView) -> tuple[MoeDecodeRoofline, list[str], float | None, str] | None:
    """MoE decode roofline: from a recorded `roofline` result, else computed from observations + GPU spec."""
    for ev in v.of_kind("roofline"):
        d = ev.data or {}
        if d.get("mode") == "moe_decode" and d.get("result"):
            r = MoeDecodeRoofline.model_validate(d["result"])
            return r, [ev.id], d.get("achieved_tok_s"), d.get("run", "")
    oe, g = v.observations_evidence, v.gpu
    if oe is None or g is None or g.spec is None or g.caps is None:
        return None
    ev, obs = oe
    m = obs.model
    if not (m and m.num_experts and m.top_k and m.hidden_size and m.moe_intermediate_size):
        return None
    from orchestrator.analysis.moe_inputs import moe_args_from

    args = moe_args_from(obs, g.spec, g.caps)
    if args is None:
        return None
    kwargs, run = args
    return moe_decode_roofline(**kwargs), [ev.id] + g.evidence, run.total_tok_s or run.output_tok_s, run.name


NEAR_MEMORY_FLOOR = 0.8
"""At or above this share of the expert-weight memory floor the MoE GEMMs are near their roof."""

_MOE_OPS = {"fp4": ("fused_moe_fp4",), "fp8": ("fused_moe_fp8",), "bf16": ("fused_moe_bf16",)}
_WEIGHT_ONLY_OPS = {"fp4": "fp4_weight_only", "fp8": "fp8_weight_only"}


def _observed_gpus(v: EvidenceView) -> int | None:
    oe = v.observations_evidence
    runs = oe[1].runs if oe else []
    if runs:
        return max(r.gpus for r in runs)
    return v.gpu.count if v.gpu else None


def _moe_backend_rec(v: EvidenceView, r: MoeDecodeRoofline) -> str:
    """Which MoE backends to benchmark for this dtype on this GPU, from the knowledge base's backend table."""
    g = v.gpu
    cls = _lowp_class(r.dtype) or "bf16"
    generic = entry_words("moe-decode-roofline", {"bandwidth": f"{r.bandwidth_gbs:,.0f}"}, flags={"no_backends"})
    if g is None or g.caps is None:
        return generic["recommendations"][0]
    ops = (_WEIGHT_ONLY_OPS[cls],) if _runs_weight_only(g, r.dtype) else _MOE_OPS.get(cls, ())
    found = [b for op in ops for b in knowledge.backends_for(g.cc, op=op)]
    if not found:
        return generic["recommendations"][0]
    return entry_words("moe-decode-roofline", {
        "bandwidth": f"{r.bandwidth_gbs:,.0f}", "dtype": r.dtype, "cc": g.cc,
        "names": "; ".join(f"{b.library} {b.backend}" for b in found),
        "sources": "; ".join(dict.fromkeys(b.source for b in found))})["words"]["benchmark_backends"]


def moe_decode_memory_bound(v: EvidenceView) -> list[Finding]:
    got = _moe_from_evidence(v)
    if got is None:
        return []
    r, ids, achieved, run = got
    src = ids[0]
    nums = [
        _num("decode tokens per expert (B*k/E)", r.tokens_per_expert, "tokens", src,
             note=f"batch {r.batch}, top_k {r.top_k}, {r.num_experts} experts"),
        _num("MoE GEMM arithmetic intensity", r.intensity, "FLOP/B", src, peak=r.ridge, note="peak = ridge point"),
        _num("MoE decode floor per step (expert GEMMs)", r.time_floor_per_step_ms, "ms", src),
    ]
    values: dict = {"tpe": f"{r.tokens_per_expert:.1f}", "batch": r.batch, "top_k": r.top_k, "experts": r.num_experts,
                    "touched": f"{r.experts_touched:.0f}", "intensity": f"{r.intensity:,.0f}",
                    "ridge": f"{r.ridge:,.0f}", "below": f"{r.ridge / r.intensity:.0f}", "bound": r.bound,
                    "tile_m": r.tile_m, "waste": f"{r.tile_waste * 100:.0f}"}
    if achieved and r.tokens_per_s_ceiling:
        values.update(achieved=f"{achieved:,.0f}", pct=f"{100 * achieved / r.tokens_per_s_ceiling:.0f}",
                      ceiling=f"{r.tokens_per_s_ceiling:,.0f}",
                      gbs=f"{r.weight_bytes_per_layer * r.layers / (r.batch / achieved) / 1e9:,.0f}")
    frac = achieved / r.tokens_per_s_ceiling if achieved and r.tokens_per_s_ceiling else None
    if frac is not None:
        values["frac"] = f"{frac * 100:.2g}"
    gpus = _observed_gpus(v)
    words = entry_words("moe-decode-roofline", values)["words"]
    values["ep"] = words["ep"] if gpus and gpus > 1 else ""
    w = entry_words("moe-decode-roofline", values)
    oe = v.observations_evidence
    comm_limited = oe is not None and any(c.verdict == "communication" for c in analyze_observations(oe[1]).comparisons)
    # with comm_limited the GEMMs' roofline class is not the workload's bound: the experiment puts it in the all-reduce
    claim = w["words"]["claim"] + " " + w["words"]["verdict_communication" if comm_limited else "verdict"]
    if achieved and r.tokens_per_s_ceiling:
        # weights actually streamed per second at the observed throughput
        step_s = r.batch / achieved
        gbs = r.weight_bytes_per_layer * r.layers / step_s / 1e9
        nums.append(_num(f"throughput ({run})", achieved, "tok/s", src, peak=r.tokens_per_s_ceiling,
                         note="peak = MoE-GEMM memory floor, expert weights only"))
        nums.append(_num("implied expert-weight bandwidth", gbs, "GB/s", src, peak=r.bandwidth_gbs,
                         note="expert weights streamed per second at the observed throughput"))
        claim += " " + w["words"]["achieved"]
    if r.tile_waste > 0.05:
        claim += " " + w["words"]["tile_waste"]
        nums.append(_num("MMA tile rows wasted", r.tile_waste * 100, "%", src, note=f"tile M={r.tile_m}"))
    if frac is not None and achieved is not None and frac < FAR_BELOW_ROOF and r.batch <= SMALL_BATCH:  # frac: achieved
        return [_far_below_every_roof(v, r, ids, nums, achieved, run, frac)]
    if frac is not None and frac < FAR_BELOW_ROOF:
        # a large batch far below the expert-weight floor: attention's KV-cache reads may be the memory traffic
        claim += " " + w["words"]["rest_elsewhere"]
    if frac is not None and frac >= NEAR_MEMORY_FLOOR and r.bound == "memory":
        claim += " " + w["words"]["near_floor"]
    recs = [_moe_backend_rec(v, r)] + w["recommendations"]
    fid = "moe-decode-memory-bound" if r.bound == "memory" else "moe-decode-compute-bound"
    if comm_limited:
        f = Finding(id=fid, category="roofline", confidence=w["secondary_confidence"], evidence=ids, claim=claim,
                    recommendations=recs[:1], title=w["words"]["title_communication"],
                    numbers=nums, secondary=True, entry=w["entry"])
    else:
        f = Finding(id=fid, category="roofline", confidence=w["confidence"], evidence=ids, claim=claim,
                    recommendations=recs, entry=w["entry"],
                    data={"short": w["words"]["short"],
                          "title": w["title"] if r.bound == "memory" else w["words"]["title_compute"],
                          "numbers": nums, "bound": r.bound})
    # the decode roofline states the bound (memory first) without being a cause of its own, and beside a fault that
    # sets another bound says what it alone would have said
    f.sets_bound = BoundClaim(rank=Rank.MOE_ROOFLINE + (0.0 if r.bound == "memory" else 0.5), leads=False,
                              bound=diagnosis_bound(f.bound, "memory"), words=f.short or f.claim)
    f.agrees = [Agreement(tier=Rank.CATALOG, order=1, unless_bound=f.bound, words=(
        f"(The decode roofline alone would say {f.bound}-bound: {f.short or f.title}; the fault above comes first.)"))]
    return [f]


FAR_BELOW_ROOF = 0.05
"""Below this share of the MoE GEMMs' memory floor, moving weights explains too little of a decode step for the
workload to be memory-bound: the time goes to latency (launches, synchronisation, host) or communication."""


def _far_below_every_roof(v: EvidenceView, r: MoeDecodeRoofline, ids: list[str], nums: list[Number],
                          achieved: float, run: str, frac: float) -> Finding:
    """Throughput so far below the roofline that neither weight streaming nor math explains the step time."""
    e = catalog_entry("decode-far-below-every-roof")
    step_ms = r.batch / achieved * 1e3
    gpus = _observed_gpus(v) or 1
    nv = _nvlink(v)
    comm = gpus > 1 and nv is not True
    words = entry_words(e.id, {"gpus": gpus})["words"]
    link = words["link_pcie" if nv is False else "link_unknown"]
    where = entry_words(e.id, {"gpus": gpus, "link": link})["words"]["where_communication" if comm else "where_latency"]
    values = {"tokens_per_expert": f"{r.tokens_per_expert:.2g}", "batch": r.batch, "top_k": r.top_k,
              "experts": r.num_experts, "intensity": f"{r.intensity:,.0f}", "ridge": f"{r.ridge:,.0f}",
              "achieved": f"{achieved:,.0f}", "run": run or "the observed run",
              "fraction": f"{frac * 100:.2g}", "floor_ms": f"{r.time_floor_per_step_ms:.3g}",
              "step_ms": f"{step_ms:.3g}", "bandwidth": f"{r.bandwidth_gbs:,.0f}",
              "gbs": f"{frac * r.bandwidth_gbs:,.3g}", "where": where}
    claim = f"{fill(e.claim, values)} {fill(e.explanation, values)} [{e.source}]"
    short = fill(e.reasoning or "", values)
    bound: Bound = "communication" if comm and nv is False else "latency"
    return Finding(id="decode-far-below-every-roof", entry=e.id, category="roofline", confidence=e.confidence,
                   evidence=ids, claim=claim, title=fill(e.title, values), numbers=nums,
                   recommendations=[e.cite(fx, fill(fx, values)) for fx in e.fixes()],
                   bound=bound, severity=e.severity, short=short,
                   sets_bound=BoundClaim(rank=Rank.FAR_BELOW_ROOF, bound=diagnosis_bound(bound, "latency"), words=short,
                                         pointers=True),
                   agrees=[Agreement(tier=Rank.COMM_EXPERIMENT, order=1, words=short)])


_NO_NVLINK = re.compile(r"\b(?:no|without)\s+nvlink\b|\bpcie[- ]only\b|\bnvlink\s*:\s*(?:no|none)\b", re.IGNORECASE)


def _nvlink(v: EvidenceView) -> bool | None:
    """Whether the GPUs share NVLink: from the inventory's topology; else False for a product that has none (its spec
    names no NVLink: L40S, RTX 4090, RTX PRO 6000) or when the observations' notes say so; None when nothing tells."""
    for _, inv in v.probes("gpu_inventory"):
        if inv.topology is not None and inv.topology.links:
            return inv.topology.nvlink
    spec = v.gpu.spec if v.gpu is not None else None
    if spec is not None and spec.interconnect and "nvlink" not in spec.interconnect.lower().replace("(no nvlink)", ""):
        return False
    oe = v.observations_evidence
    if oe is not None and oe[1].notes and _NO_NVLINK.search(str(oe[1].notes)):
        return False
    return None


def _link_flag(v: EvidenceView) -> str:
    """`pcie`, `nvlink` or `unknown_link`: which interconnect the inventory shows, for the fixes that depend on it."""
    nv = _nvlink(v)
    return "pcie" if nv is False else "nvlink" if nv is True else "unknown_link"


SMALL_BATCH = 32
"""At or below this many concurrent sequences a decode step's all-reduce messages are small: latency, not bandwidth."""


def parallelism_scaling(v: EvidenceView) -> list[Finding]:
    oe = v.observations_evidence
    if oe is None:
        return []
    ev, obs = oe
    by_name = {r.name: r for r in obs.runs}
    out = []
    for c in analyze_observations(obs).comparisons:
        if c.verdict == "inconclusive":
            continue
        nums = [_num(f"throughput {c.a}", c.a_tok_s, "tok/s", ev.id), _num(f"throughput {c.b}", c.b_tok_s, "tok/s", ev.id)]
        if c.verdict == "gemm":
            drop = "The halving" if 1.7 <= c.ratio <= 2.4 else f"The {c.ratio:.1f}x drop"
            w = entry_words("tp-scaling-rules-out-allreduce", {"drop": drop},
                            flags={"moe"} if _moe_model(v) is not False else set())
            out.append(Finding(
                id="parallelism-rules-out-allreduce", category="observation", confidence=w["confidence"],
                evidence=[ev.id], claim=c.reasoning, recommendations=w["recommendations"], title=w["title"],
                numbers=nums, bound="gemm", entry=w["entry"], rules_out=["communication"],
                sets_bound=BoundClaim(rank=Rank.GEMM_EXPERIMENT, bound="unknown", leads=False, words=(
                    "The parallelism experiment puts the cost in the per-GPU GEMMs, but no roofline evidence "
                    "separates memory- from compute-bound.")),
                agrees=[Agreement(tier=Rank.FAR_BELOW_ROOF, order=3, words=(
                    "The parallelism experiment puts the difference between layouts in the per-GPU GEMMs, but at "
                    "this throughput the GEMMs' floor is a small part of the step.")),
                        Agreement(tier=Rank.MOE_ROOFLINE, order=1, words=(
                            "The parallelism experiment puts the cost in the per-GPU GEMMs, not all-reduce."))]))
        else:
            run = by_name.get(c.a)
            batch = (run.batch or run.concurrency) if run else None
            link = _link_flag(v)
            flags = {link} | ({"small_batch"} if batch is not None and batch <= SMALL_BATCH else set())
            w = entry_words("tp-scaling-implicates-allreduce",
                            {"wide": c.b, "narrow": c.a, "narrow_tp": c.a_tp, "wide_tp": c.b_tp,
                             "speedup": f"{1 / c.ratio:.2f}", "batch": batch}, flags=flags)
            if c.a_gpus is not None and c.b_gpus:  # a larger TP group on more GPUs: what the added GPUs paid for
                w["claim"] = c.reasoning
                w["title"] = (f"{c.a} on {c.a_gpus} GPUs is {'slower than' if c.ratio < 1 else 'barely faster than'} "
                              f"{c.b} on {c.b_gpus}: the all-reduce is implicated")
            extra = [w["explanation"]] if link == "pcie" else []
            if "small_batch" in flags:
                extra.append(fill(catalog_entry("tp-scaling-implicates-allreduce").notes or "", {"batch": batch}))
            out.append(Finding(
                id="parallelism-points-at-communication", category="communication", confidence=w["confidence"],
                evidence=[ev.id] + (_inventory_ids(v) if link != "unknown_link" else []),
                claim=" ".join([w["claim"]] + [x for x in extra if x]) + f" [{w['source']}]",
                recommendations=w["recommendations"], title=w["title"], numbers=nums, bound="communication",
                entry=w["entry"]))
            # the experiment that implicates all-reduce sets the bound first among the experiments
            out[-1].sets_bound = BoundClaim(rank=Rank.COMM_EXPERIMENT, bound="communication", words=out[-1].claim)
    return out


def _inventory_ids(v: EvidenceView) -> list[str]:
    return [ev.id for ev, inv in v.probes("gpu_inventory") if inv.topology is not None and inv.topology.links][:1]


def _inventory_clocks(v: EvidenceView) -> tuple[float, float, list[str], str] | None:
    """Mean SM clock, max SM clock and active clocks-event reasons from the inventory, with its evidence id."""
    for ev, inv in v.probes("gpu_inventory"):
        g = [x for x in inv.gpus if x.sm_clock_mhz and x.sm_clock_max_mhz]
        if g:
            reasons = sorted({r for x in inv.gpus for r in x.clocks_throttle_reasons if r and "idle" not in r.lower()})
            return (sum(x.sm_clock_mhz for x in g) / len(g), max(x.sm_clock_max_mhz for x in g), reasons, ev.id)
    return None


def other_workloads(v: EvidenceView) -> list[Finding]:
    """GPUs that only another workload holds, where the evidence shows two workloads (prongs/node_health/view.py): name
    it with its memory, the load seen while sampling and the evidence that it is not the user's, and say that load is
    not the workload asked about."""
    from orchestrator.prongs.node_health.view import other_workloads as held

    out = []
    for w in held(v):
        out.append(Finding(
            id=f"other-workload-gpu-{w.gpu}", category="node", confidence=0.85, evidence=w.evidence,
            title=f"Another workload holds GPU {w.gpu}: {', '.join(p.name or '?' for p in w.processes)}",
            claim=(f"{w.says()}: this load is another workload's, not the one asked about, since {w.why}; anything "
                   f"measured on this GPU now shares it."),
            recommendations=[f"Find what runs there (`nvidia-smi --query-compute-apps=gpu_bus_id,pid,process_name,"
                             f"used_memory --format=csv`, `ps -o pid,args -p {w.processes[0].pid}`); stop or move it "
                             f"before serving or measuring on GPU {w.gpu}, or measure with `--measure-wait`."],
            symptoms=["throughput", "itl", "ttft"], severity="high", short=w.says() + ".",
            # time-sliced with it, a workload on this GPU gets at most the share the other one leaves
            explains=None if w.utilization_pct is None else round(min(w.utilization_pct, 100.0) / 100.0, 2),
            data={"gpu": w.gpu, "pids": [p.pid for p in w.processes]}))
    return out


def _power_over_gpus(gpus: list[tuple[int, float, float, float | None]]) -> PowerReading | None:
    """One power reading of several GPUs ((index, watts, limit, utilization %) each): their mean when they share a
    limit; when their limits differ, a mean would name a limit no GPU has, so the GPU nearest its own limit is read,
    named, and the other limits said."""
    def busy(xs: list[tuple[int, float, float, float | None]]) -> float | None:
        util = [u for _, _, _, u in xs if u is not None]
        return sum(util) / len(util) / 100 if util else None

    limits = sorted({round(lim) for _, _, lim, _ in gpus})
    if len(limits) == 1:
        return read_power(sum(p for _, p, _, _ in gpus) / len(gpus), gpus[0][2], busy(gpus), kernel_time=True)
    idx, p, lim, u = max(gpus, key=lambda x: x[1] / x[2])
    reading = read_power(p, lim, busy([(idx, p, lim, u)]), kernel_time=True)
    if reading is None:
        return None
    others = sorted({round(x[2]) for x in gpus if x[0] != idx} - {round(lim)})
    return reading.model_copy(update={"reasoning": (
        f"GPU {idx} (its limit {lim:.0f} W; other GPUs' limits: {', '.join(f'{x} W' for x in others)}): "
        + reading.reasoning)})


_STALL_AGREES = "Power far below the limit while the GPU is busy agrees: the SMs wait rather than compute."
_STALL: dict = {
    "sets_bound": BoundClaim(rank=Rank.POWER_STALL, bound="unknown", leads=False,
                             words="Low power while the GPU is busy says it stalls, but no evidence says on what."),
    "agrees": [Agreement(tier=Rank.COMM_EXPERIMENT, order=2, words=_STALL_AGREES),
               Agreement(tier=Rank.FAR_BELOW_ROOF, order=2, words=_STALL_AGREES),
               Agreement(tier=Rank.MOE_ROOFLINE, order=2, words=(
                   "Power far below the limit while the GPU is busy agrees: the SMs wait on memory rather than "
                   "compute."))]}
"""A stall (low power while busy): it states the bound as unknown when nothing else does, and agrees with what says
the SMs wait."""


def _account_idle_pct(v: EvidenceView) -> float | None:
    """The share of the resource account's window the GPUs were idle (100 - their mean busy %), or None."""
    for _ev, acct in v.probes("resource_account"):
        busy = [g.busy_pct for g in getattr(acct, "gpus", []) if g.busy_pct is not None]
        if busy:
            return 100.0 - sum(busy) / len(busy)
    return None


def _at_default_limit(v: EvidenceView, foreign: set[tuple[str | None, int]]) -> list[str]:
    """The node-health read's evidence id when every GPU of the deployment it read enforces its default power limit
    and the software power cap is the only slowdown reason active (a lowered limit, thermal or hardware slowdown have
    findings of their own); [] when any differs or was not read."""
    known = knowledge.clock_event_reasons()
    for ev, nh in v.probes("node_health"):
        gpus = [g for g in getattr(nh, "gpus", []) if (ev.host, g.index) not in foreign]
        if not gpus or not all(g.clocks_event and g.power_default_w for g in gpus):
            return []
        for g in gpus:
            limit = g.power_enforced_w or g.power_limit_w
            active = {r for r, on in g.clocks_event.items() if on and (r not in known or known[r].slowdown)}
            if limit is None or abs(limit - (g.power_default_w or 0)) > 0.01 * (g.power_default_w or 0) \
                    or active - {"sw_power_cap"}:
                return []
        return [ev.id]
    return []


def power_vs_limit(v: EvidenceView) -> list[Finding]:
    """Power against the limit at high occupancy: from observations, the power sampler or the inventory. A GPU that
    another workload holds (node_view.other_workloads) is left out: its load is not the one asked about."""
    from orchestrator.prongs.node_health.view import other_workloads as held

    foreign = {(w.host, w.gpu) for w in held(v)}
    readings = []
    oe = v.observations_evidence
    if oe and oe[1].gpu:
        g = oe[1].gpu
        readings.append((read_power(g.power_w, g.power_limit_w, g.busy_fraction, kernel_time=g.sm_occupancy is None),
                         [oe[0].id]))
    for ev, ps in v.probes("power_sampling"):
        s = [(x.gpu, x.mean_power_w, x.power_limit_w, x.mean_utilization_pct) for x in ps.summary
             if x.mean_power_w is not None and x.power_limit_w and (ev.host, x.gpu) not in foreign]
        if s:
            readings.append((_power_over_gpus(s), [ev.id]))
    for ev, inv in v.probes("gpu_inventory"):
        g2 = [(x.index, x.power_draw_w, x.power_limit_w, x.utilization_pct) for x in inv.gpus
              if x.power_draw_w is not None and x.power_limit_w and (ev.host, x.index) not in foreign]
        if g2 and not v.probes("power_sampling"):
            readings.append((_power_over_gpus(g2), [ev.id]))
    out = []
    for reading, ids in readings:
        if reading is None or reading.pattern not in ("stall", "compute"):
            continue
        num = _num("power draw", reading.power_w, "W", ids[0], peak=reading.limit_w,
                   note=f"at {reading.busy * 100:.0f} % busy" if reading.busy is not None else "")
        comm = oe is not None and any(c.verdict == "communication" for c in analyze_observations(oe[1]).comparisons)
        if reading.pattern == "stall" and comm and oe is not None:  # comm holds only with observations
            w = entry_words("power-stall", {"pct": f"{reading.fraction * 100:.0f}", "while_busy": reading.while_busy}, flags={"comm"})
            out.append(Finding(
                id="power-stall", category="power", confidence=w["confidence"],
                evidence=list(dict.fromkeys(ids + [oe[0].id])),
                claim=reading.reasoning + " " + w["words"]["communication"], recommendations=w["recommendations"],
                entry=w["entry"], data={"title": w["words"]["title_communication"], "numbers": [num]}, **_STALL))
        elif reading.pattern == "stall":
            w = entry_words("power-stall", {"pct": f"{reading.fraction * 100:.0f}", "while_busy": reading.while_busy,
                                            "what": "kernels" if reading.kernel_time else "SMs"}, flags={"gemm"})
            out.append(Finding(id="power-stall", category="power", confidence=w["confidence"], evidence=ids,
                               claim=reading.reasoning, recommendations=w["recommendations"], entry=w["entry"],
                               data={"title": w["title"], "numbers": [num]}, **_STALL))
        else:
            claim, cids, nums = reading.reasoning, list(ids), [num]
            clocks = _inventory_clocks(v)
            w = entry_words("power-limited")
            if clocks:
                cur, mx, reasons, cev = clocks
                cids.append(cev)
                nums.append(_num("SM clock (inventory snapshot)", cur, "MHz", cev, peak=mx))
                w = entry_words("power-limited", {"cur": f"{cur:,.0f}", "max": f"{mx:,.0f}",
                                                  "reasons": ", ".join(reasons)})
                clocks_held = cur < 0.95 * mx or bool(reasons)
                claim += (" " + w["words"]["clocks"] + (w["words"]["clock_reasons"] if reasons else "")
                          + w["words"]["clocks_held" if clocks_held else "clocks_free"])
            idle = _account_idle_pct(v)
            # at the board's default limit, with the software power cap the only reason read, a GPU near its limit
            # under full load runs as designed: it says the work is compute-heavy (the bound), not what is wrong, and
            # the reasons its advice would have the user check are read already
            as_designed = _at_default_limit(v, foreign)
            title, recs = w["title"], w["recommendations"]
            if as_designed:
                cids += as_designed
                claim = reading.reasoning + " " + w["words"]["as_designed"]  # not "clocks are held down" first
                title = w["words"]["title_as_designed"]
                recs = []
            out.append(Finding(id="power-limited", category="power", confidence=w["confidence"],
                               evidence=list(dict.fromkeys(cids)), claim=claim, informational=bool(as_designed),
                               recommendations=recs, entry=w["entry"],
                               # a snapshot near the limit cannot explain steps in which the GPUs mostly wait
                               unmet=entry_words("power-limited", {"idle": f"{idle:.0f}"})["words"]["unmet"]
                               if idle is not None and idle >= 50 else "",
                               data={"title": title, "numbers": nums},
                               # as designed, it names no limiter: a busy GPU draws its limit whatever bounds it
                               sets_bound=None if as_designed else
                               BoundClaim(rank=Rank.POWER_LIMITED, bound="compute", leads=False, words=claim)))
        break  # one power reading is enough; observations come first, then the sampler
    return out


# --- logs, known issues, kernels, environment -------------------------------------------------------------------


def catalog_signals(v: EvidenceView) -> list[Finding]:
    """Every failure-mode catalog entry whose signals fire on the evidence (orchestrator/analysis/signals.py)."""
    from orchestrator.analysis.signals import catalog_findings

    return catalog_findings(v)


def pcie_allreduce(v: EvidenceView) -> list[Finding]:
    for ev, inv in v.probes("gpu_inventory"):
        topo = inv.topology
        if topo is None or topo.nvlink or inv.count <= 2 or not topo.links:
            continue
        caps = knowledge.arch_caps(inv.gpus[0].compute_cap) if inv.gpus else None
        iss = catalog_entry("pcie-tp-allreduce")
        single = _engines_on_one_gpu(v)
        if single:
            # no engine spans GPUs: no tensor-parallel all-reduce crosses PCIe, whatever the links (said, not ranked)
            w = entry_words(iss.id, {"count": inv.count, "links": ", ".join(sorted({l.kind for l in topo.links}))})
            return [Finding(id="pcie-allreduce", category="communication", confidence=0.3, evidence=[ev.id, *single],
                            claim=w["words"]["single_claim"], title=w["words"]["single_title"], informational=True,
                            static=True)]
        oe = v.observations_evidence
        ruled_out = oe is not None and any(c.verdict == "gemm" for c in analyze_observations(oe[1]).comparisons)
        w = entry_words(iss.id, {"count": inv.count, "links": ", ".join(sorted({l.kind for l in topo.links}))})
        claim = w["words"]["topology_claim"]
        if caps and caps.cc in iss.scope.ccs:
            claim += f" {iss.explanation} [{iss.source}]"
        if ruled_out:
            claim += " " + w["words"]["topology_ruled_out"]
        # the topology alone weighs less than the log line the entry's signals read: the rule's own confidences
        return [Finding(id="pcie-allreduce", category="communication", confidence=0.3 if ruled_out else 0.55,
                        evidence=[ev.id] + ([oe[0].id] if ruled_out and oe else []), claim=claim,
                        # the measured comparison ran the wider TP group faster: "reduce TP" would contradict it
                        recommendations=[] if ruled_out else [iss.cite(fx, fx) for fx in iss.fixes()],
                        entry=iss.id, title=w["words"]["topology_title"], secondary=ruled_out,
                        static=True)]  # how the GPUs are linked: the same before and after a change
    return []


_TP1_BY_DEFAULT = {"vllm", "sglang"}
"""Engines whose tensor-parallel degree is 1 unless a flag sets it (vLLM --tensor-parallel-size, SGLang --tp-size)."""


def _engines_on_one_gpu(v: EvidenceView) -> list[str]:
    """The engine_config evidence ids when every serving engine the host runs has tensor parallel 1 (its flag, or
    its default where the engine's default is 1); [] when any spans GPUs or its degree is not known."""
    ids: list[str] = []
    seen = False
    for ev, rep in v.probes("engine_config"):
        for e in rep.engines:
            if e.origin != "process":
                continue
            tp = e.value("tp")
            if tp is None and e.name not in _TP1_BY_DEFAULT:
                return []
            try:
                if int(tp or 1) != 1:
                    return []
            except (TypeError, ValueError):
                return []
            seen = True
            if ev.id not in ids:
                ids.append(ev.id)
    return ids if seen else []


def _lib_label(lib) -> str:
    return f"{lib.name} {lib.version}" if lib.version else lib.name


def kernel_inventory(v: EvidenceView) -> list[Finding]:
    g = v.gpu
    out = []
    for ev, inv in v.probes("kernel_inventory"):
        arch = inv.arch or (g.caps.sm.rstrip("a") if g and g.caps else None)
        for lib in inv.libraries:
            if lib.compiled_archs and arch and not any(a.rstrip("a").startswith(arch.rstrip("a")) for a in lib.compiled_archs):
                w = entry_words("kernels-missing-arch", {"lib": lib.name, "label": _lib_label(lib), "arch": arch,
                                                         "has": ", ".join(lib.compiled_archs[:6])})
                out.append(Finding(
                    id=f"kernels-missing-{lib.name}", category="kernel", confidence=w["confidence"], evidence=[ev.id],
                    claim=w["words"]["claim"], recommendations=w["recommendations"], entry=w["entry"],
                    data={"title": w["title"]}))
            if lib.tile_candidates and g and g.caps and g.caps.peer_cc:
                out.append(Finding(
                    id=f"kernels-tiles-{lib.name}", category="kernel", confidence=0.6, evidence=[ev.id],
                    claim=(f"{_lib_label(lib)} offers {len(lib.tile_candidates)} tile "
                           f"candidate{'' if len(lib.tile_candidates) == 1 else 's'} for {arch} "
                           f"({', '.join(lib.tile_candidates[:8])}); the autotuner can only choose among these."),
                    data={"title": f"{lib.name} offers only {len(lib.tile_candidates)} tile "
                                   f"candidate{'' if len(lib.tile_candidates) == 1 else 's'} for {arch}",
                          "numbers": [_num(f"{lib.name} tile candidates for {arch}", len(lib.tile_candidates), "tiles", ev.id)]}))
    return out


_ARCH = re.compile(r"^(sm|compute)_(\d+)(\d)([af]?)$")


def runs_on(arch_list: list[str], cc: str) -> bool | None:
    """Whether code built for `arch_list` (torch.cuda.get_arch_list(): sm_XY cubins, compute_XY PTX) runs on a GPU of
    compute capability `cc` ("8.9"): a cubin for X.y runs on X.z for z >= y (binary compatibility within a major
    version; an arch-specific sm_XYa only on X.Y itself), PTX for X.y is JIT-compiled for any capability >= X.y (an
    arch-specific compute_XYa only for X.Y). None when nothing in the list can be read."""
    try:
        major, minor = (int(x) for x in cc.split(".")[:2])
    except ValueError:
        return None
    read = False
    for a in arch_list:
        m = _ARCH.match(a.strip().lower())
        if not m:
            continue
        read = True
        kind, amaj, amin, suffix = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        if suffix == "a":
            if (amaj, amin) == (major, minor):
                return True
        elif kind == "sm" and amaj == major and amin <= minor:
            return True
        elif kind == "compute" and (amaj, amin) <= (major, minor):
            return True
    return False if read else None


def torch_arch(v: EvidenceView) -> list[Finding]:
    """torch built for no architecture that runs on this GPU: neither a cubin of its major version at or below its
    minor (binary compatibility: an sm_80/sm_86 build runs on sm_89) nor PTX at or below it (JIT)."""
    g = v.gpu
    if g is None or g.caps is None or not g.cc:
        return []
    want = g.caps.sm.rstrip("a")
    for ev, env in v.probes("python_env"):
        if env.torch_arch_list and runs_on(env.torch_arch_list, g.cc) is False:
            w = entry_words("torch-arch-missing", {"arch": want, "archs": ", ".join(env.torch_arch_list)})
            w = entry_words("torch-arch-missing", {"arch": want, "archs": ", ".join(env.torch_arch_list),
                                                   "cuda": env.torch_cuda or w["words"]["cuda_unknown"]})
            return [Finding(id="torch-arch-missing", category="environment", confidence=w["confidence"],
                            evidence=[ev.id] + g.evidence, claim=w["words"]["claim"],
                            recommendations=w["recommendations"], entry=w["entry"], data={"title": w["title"]})]
    return []


from orchestrator.prongs import parts as _prong_parts  # noqa: E402


RULES: list[Rule] = [
    hardware_peaks, no_gpu_on_host, dtype_native_support, arch_vs_peer, fp4_without_tensor_cores, autotune_not_persisted, autotune_fallback,
    autotune_mismatch, moe_config_missing, moe_decode_memory_bound, parallelism_scaling, other_workloads, power_vs_limit,
    catalog_signals, pcie_allreduce, kernel_inventory, torch_arch,
    *_prong_parts("rules"),  # then each prong's rules, in the order of orchestrator.prongs.PRONGS
]


def run_rules(view: EvidenceView, rules: list[Rule] | None = None) -> list[Finding]:
    """Every rule's findings, each citing only ids in the view. A rule that raises costs only its own findings and
    becomes a notice naming it (`view.notices`, a gap in the diagnosis); with INVESTIGATE_STRICT_RULES=1 (the test
    suite) it re-raises."""
    from orchestrator.analysis.signals import strict

    known = view.ids
    out: list[Finding] = []
    seen: set[str] = set()
    for rule in rules if rules is not None else RULES:
        name = getattr(rule, "__name__", "rule")
        try:
            found = rule(view)
        except Exception as e:  # one broken rule must not cost the whole diagnosis, nor pass unseen
            if strict():
                raise
            view.notice(f"rule {name}", f"failed and was skipped: {type(e).__name__}: {e}")
            continue
        for f in found:
            if not f.rule:
                f.rule = name
            if not f.symptoms and f.entry:  # what the catalog entry says the failure mode can explain
                ent = catalog().get(f.entry)
                f.symptoms = list(ent.symptoms) if ent is not None else []
            f.evidence = [e for e in dict.fromkeys(f.evidence) if e in known]
            if f.evidence and f.id not in seen:
                seen.add(f.id)
                out.append(f)
    return out
