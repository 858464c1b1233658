"""What fits where: the model's weight bytes (parameters x bytes per element of the dtype loaded) against GPU memory x
the parallel degree and against what nvidia-smi shows in use over the account's window, with the arithmetic shown.

A model whose weights exceed the GPUs' memory cannot be served from them (it is offloaded, or fails); serving
processes holding less GPU memory than their share of the weights keep the rest elsewhere (CPU offload, host memory);
what is left after the weights is all the KV cache and activations can have. Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.prongs.serving_engine.kv_rules import intended_dtype, kv_findings
from orchestrator.prongs.serving_engine.floors import shape_from_name, shape_from_observations
from orchestrator.diagnosis import Number
from orchestrator.findings import Finding
from orchestrator.prongs.resource_account.models import ResourceAccount
from orchestrator.prongs.serving_engine.models import EngineReport

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView

GIB = 2**30
NOT_ON_GPU = 0.8
"""GPU memory in use below this share of the GPU's part of the weights: the rest is held elsewhere."""
HOST_HOLDS = 0.8
"""Serving processes' resident host memory at least this share of the weights missing from the GPUs: they hold them."""


def _engine(v: "EvidenceView") -> tuple[str, EngineReport] | None:
    for ev, rep in v.probes("engine_config"):
        if isinstance(rep, EngineReport) and rep.primary is not None:
            return ev.id, rep
    return None


def fit_findings(v: "EvidenceView") -> list[Finding]:
    """Weights against GPU memory, the dtype the weights' memory implies, and the KV cache against the load."""
    return _weight_findings(v) + kv_findings(v)


def _weight_findings(v: "EvidenceView") -> list[Finding]:
    g = v.gpu
    if g is None or g.spec is None:
        return []
    oe = v.observations_evidence
    obs_model = oe[1].model if oe else None
    eng = _engine(v)
    prim = eng[1].primary if eng else None
    shape = shape_from_observations(obs_model) if obs_model else None
    name = (obs_model.name if obs_model and obs_model.name else None) or (prim.model if prim else None)
    if shape is None:
        shape = shape_from_name(name)
    if shape is None:
        return []
    dtype, bpe = intended_dtype(v, prim, name)
    tp = int(prim.value("tp") or 1) if prim else (oe[1].runs[0].tp if oe and oe[1].runs else 1)
    pp = int(prim.value("pp") or 1) if prim else (oe[1].runs[0].pp if oe and oe[1].runs else 1)
    degree = max(1, tp * pp)
    weights = shape.total_params * bpe
    per_gpu = weights / degree
    acct = next(((ev.id, m) for ev, m in v.probes("resource_account") if isinstance(m, ResourceAccount)), None)
    totals = [x.memory_total_mib for x in (acct[1].gpus if acct else []) if x.memory_total_mib]
    gpu_mem = (totals[0] * 2**20) if totals else ((g.spec.memory_gb or 0) * 1e9)
    if not gpu_mem:
        return []
    ev_ids = [*g.evidence, *([oe[0].id] if oe else []), *([eng[0]] if eng else [])]
    src = f"{shape.source}; {dtype} at {bpe:g} bytes per element (knowledge/dtypes.yaml)"
    arith = (f"{shape.total_params / 1e9:,.1f} B parameters x {bpe:g} bytes ({dtype}) = {weights / GIB:,.1f} GiB of "
             f"weights; over {degree} GPU{'s' if degree > 1 else ''} (TP{tp} x PP{pp}) {per_gpu / GIB:,.1f} GiB each, "
             f"against {gpu_mem / GIB:,.1f} GiB per {g.name}")
    numbers = [Number(name="weights per GPU", value=round(per_gpu / GIB, 2), unit="GiB", peak=round(gpu_mem / GIB, 2),
                      source=(oe[0].id if oe else ev_ids[0]),  # one id: a number's source is one citation
                      note=f"{src}; also {', '.join(ev_ids)}")]
    out: list[Finding] = []
    rss = sum(p.rss_bytes or 0 for p in (acct[1].processes if acct else []) if p.gpus)
    if per_gpu > gpu_mem:
        over = (per_gpu - gpu_mem) * degree
        host = (f" The serving processes hold {rss / GIB:,.1f} GiB of host memory (VmRSS, /proc/PID/status): the "
                f"{over / GIB:,.1f} GiB that do not fit are there." if rss >= HOST_HOLDS * over else "")
        out.append(Finding(
            id="fit-weights-exceed-gpu-memory", category="workload", confidence=0.8, evidence=ev_ids, bound="memory",
            title=f"The weights do not fit: {per_gpu / GIB:,.0f} GiB per GPU against {gpu_mem / GIB:,.0f} GiB",
            claim=f"{arith}: the weights alone exceed each GPU's memory by {(per_gpu - gpu_mem) / GIB:,.1f} GiB, so "
                  "part of them must live in host memory (offload) and cross PCIe every step, or the model cannot load."
                  + host,
            short=f"the weights ({per_gpu / GIB:,.0f} GiB per GPU) exceed GPU memory ({gpu_mem / GIB:,.0f} GiB).",
            numbers=numbers, symptoms=["throughput", "itl", "startup", "errors"],
            recommendations=[f"Spread the weights over more GPUs (TP/PP so that each holds under about 80 % of "
                             f"{gpu_mem / GIB:,.0f} GiB) or load a smaller dtype (FP8 halves BF16's bytes)."]))
    used = [x.memory_used_mib for x in (acct[1].gpus if acct else []) if x.memory_used_mib is not None]
    held = {i for p in (acct[1].processes if acct else []) for i in p.gpus if isinstance(i, int)}
    if acct and used and held and per_gpu <= gpu_mem:
        use = [x.memory_used_mib * 2**20 for x in acct[1].gpus if x.index in held and x.memory_used_mib is not None]
        mean_used = sum(use) / len(use) if use else 0
        if use and mean_used < NOT_ON_GPU * per_gpu:
            missing = (per_gpu - mean_used) * len(use)
            host = ""
            if rss >= HOST_HOLDS * missing:
                host = (f" The serving processes hold {rss / GIB:,.1f} GiB of host memory (VmRSS, "
                        f"/proc/PID/status), room for the {missing / GIB:,.1f} GiB of weights the GPUs do not hold: "
                        "the weights are offloaded to the CPU.")
            out.append(Finding(
                id="fit-weights-not-on-gpu", category="workload", confidence=0.7, evidence=ev_ids + [acct[0]],
                title=f"The GPUs hold {mean_used / GIB:,.1f} GiB, less than their {per_gpu / GIB:,.1f} GiB share of "
                      "the weights",
                claim=f"{arith}; nvidia-smi shows {mean_used / GIB:,.1f} GiB in use per serving GPU over the window: "
                      "part of the weights is held elsewhere (CPU offload, host memory) or loaded in a smaller dtype "
                      "than the one named, and what is off the GPU crosses PCIe every step." + host,
                short=f"the GPUs hold {mean_used / GIB:,.1f} GiB, under their {per_gpu / GIB:,.1f} GiB share of the "
                      "weights.",
                numbers=numbers + [Number(name="GPU memory in use (serving GPUs, mean)", value=round(mean_used / GIB, 2),
                                          unit="GiB", source=acct[0])],
                symptoms=["throughput", "itl"],
                recommendations=["Check the engine's offload settings (vLLM --cpu-offload-gb, SGLang "
                                 "--cpu-offload-gb) and the dtype it loaded (its startup log's weight memory line)."]))
    if not out:
        out.append(Finding(
            id="fit-weights-per-gpu", category="workload", confidence=0.6, evidence=ev_ids, informational=True,
            title=f"Weights {per_gpu / GIB:,.1f} GiB per GPU of {gpu_mem / GIB:,.0f} GiB",
            claim=f"{arith}: {(gpu_mem - per_gpu) / GIB:,.1f} GiB per GPU remain for the KV cache, activations and "
                  "CUDA graphs.", short=f"weights {per_gpu / GIB:,.1f} GiB per GPU of {gpu_mem / GIB:,.0f} GiB.",
            numbers=numbers, symptoms=["cost", "throughput"]))
    return out


def what_fits(v: "EvidenceView") -> list[Finding]:
    """Weight bytes against GPU memory x the parallel degree and against what nvidia-smi shows in use."""
    return fit_findings(v)
