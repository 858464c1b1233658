"""Is my number bad? The user's throughput against published figures for the same GPU, model and precision.

`match` finds the nearest rows of the reference dataset (orchestrator/knowledge/references.py) for a setup and
states every difference (engine, precision, lengths, parallelism, load); it never claims a match across a different
model or GPU. `reference_rule` puts the user's measured output tokens/s per GPU against the closest row: near it, the
setup is tuned and the question is the hardware; far below it, the cause is in the deployment. Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from orchestrator import knowledge
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.diagnosis import Number
from orchestrator.findings import Finding
from orchestrator.knowledge import references as refs

_PRECISION = {"nvfp4": "fp4", "mxfp4": "fp4", "fp4": "fp4", "w4a4": "fp4", "fp8": "fp8", "fp8_e4m3": "fp8",
              "w8a8": "fp8", "modelopt": "fp8", "bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16",
              "auto": None}
NEAR = 0.8
"""At or above this share of the closest published figure the setup is as tuned as the reference."""
FAR = 0.5
"""Below this share the cause is in the deployment, not the hardware."""
LOW_LOAD = 32
"""A client concurrency at or under which a max-load reference is an upper bound, not a like-for-like figure."""


def precision_of(name: str | None) -> str | None:
    """fp4 / fp8 / bf16 / fp16 for a quantization or dtype name; None when it names none."""
    if not name:
        return None
    key = name.strip().lower().replace("-", "_")
    if key in _PRECISION:
        return _PRECISION[key]
    for tag in ("nvfp4", "mxfp4", "fp4", "fp8", "bf16", "fp16"):
        if tag in key:
            return _PRECISION[tag]
    return None


@dataclass
class Setup:
    """What the user ran, as far as the evidence says."""

    gpu: str | None
    model: str | None
    precision: str | None = None
    engine: str | None = None
    gpus: int | None = None
    isl: float | None = None
    osl: float | None = None
    concurrency: int | None = None


@dataclass
class Match:
    row: refs.ReferenceRow
    differences: list[str] = field(default_factory=list)
    distance: float = 0.0


@dataclass
class Lookup:
    """The nearest rows for a setup, or why there are none."""

    setup: Setup
    model_id: str | None
    matches: list[Match]
    why_none: str = ""
    elsewhere: list[str] = field(default_factory=list)
    """GPUs with published figures for this model (not comparable: another GPU)."""


def _len_gap(mine: float | None, theirs: int | None) -> float:
    if mine is None or theirs is None or mine <= 0 or theirs <= 0:
        return 1.0
    return abs(math.log(mine / theirs))


def match(setup: Setup, data: refs.ReferenceData | None = None, n: int = 3) -> Lookup:
    """The n nearest published rows for the same GPU and model, each with its differences stated."""
    data = data or refs.load()
    mid, ambiguous = refs.model_id(setup.model, data.models)
    if setup.gpu is None or setup.model is None:
        return Lookup(setup, mid, [], why_none="the GPU and the model must both be known to compare with a "
                                               "published figure")
    if mid is None:
        why = (f"the model name {setup.model!r} could mean {', '.join(ambiguous)}; no figure is claimed for it"
               if ambiguous else f"no published reference covers {setup.model!r}")
        return Lookup(setup, None, [], why_none=why)
    same_model = [r for r in data.rows if r.model == mid]
    rows = [r for r in same_model if r.gpu == setup.gpu]
    elsewhere = sorted({r.gpu for r in same_model if r.gpu != setup.gpu})
    if not rows:
        why = (f"no published figure for {mid} on {setup.gpu}" + (f" (published for {', '.join(elsewhere)}: another "
                                                                  "GPU is not comparable)" if elsewhere else ""))
        return Lookup(setup, mid, [], why_none=why, elsewhere=elsewhere)
    out: list[Match] = []
    for r in rows:
        diffs: list[str] = []
        dist = 0.0
        if setup.precision and r.precision and setup.precision != r.precision:
            diffs.append(f"precision {setup.precision} vs {r.precision}")
            dist += 4
        elif r.precision is None:
            diffs.append("the source does not state its precision")
            dist += 0.5
        elif setup.precision is None:
            diffs.append(f"your precision is not known (the reference is {r.precision})")
            dist += 0.5
        if setup.engine and setup.engine != r.engine:
            diffs.append(f"engine {setup.engine} vs {r.engine}{f' ({r.engine_version})' if r.engine_version else ''}")
            dist += 0.5
        gi, go = _len_gap(setup.isl, r.isl), _len_gap(setup.osl, r.osl)
        if r.isl is None:
            diffs.append("the reference's prompts vary in length (a dataset, not fixed ISL/OSL)")
        elif setup.isl is None or setup.osl is None:
            diffs.append(f"your ISL/OSL are not known (the reference is {r.isl}/{r.osl})")
        elif gi > 0.1 or go > 0.1:
            diffs.append(f"ISL/OSL {setup.isl:.0f}/{setup.osl:.0f} vs {r.isl}/{r.osl}")
        dist += gi + go
        if setup.gpus and setup.gpus != r.gpu_count:
            diffs.append(f"{setup.gpus} GPU(s) vs {r.gpu_count} ({r.parallel or 'the reference system'})")
            dist += 0.3 * abs(math.log(setup.gpus / r.gpu_count))
        if r.scenario in ("max-throughput", "Offline"):
            load = "all requests at once (maximum load)"
            if setup.concurrency:
                diffs.append(f"concurrency {setup.concurrency} vs {load}")
        else:
            lim = ", ".join(f"{k} {v:g}" for k, v in r.limits.items())
            diffs.append(f"the reference is MLPerf Server (latency-bounded{f': {lim}' if lim else ''})")
            dist += 0.2
        out.append(Match(r, diffs, dist))
    out.sort(key=lambda m: (m.distance, -m.row.output_tok_s_per_gpu))
    return Lookup(setup, mid, out[:n], elsewhere=elsewhere)


@dataclass
class Measured:
    """One measured throughput of the user's, per GPU, with where it came from."""

    label: str
    per_gpu: float
    evidence: list[str]
    isl: float | None = None
    osl: float | None = None
    concurrency: int | None = None
    gpus: int | None = None
    derived: str = ""


def _gpus_from_engine(v: EvidenceView) -> tuple[int | None, str | None, str | None]:
    """(GPUs the engine uses, engine name, model) from the engine probe."""
    for _ev, rep in v.probes("engine_config"):
        eng = getattr(rep, "primary", None)
        if eng is None:
            continue
        deg = 1
        for key in ("tp", "pp", "dp"):  # the engine table's normalized keys (prongs/serving_engine/cmdline.py)
            val = eng.value(key)
            if isinstance(val, (int, float)) and val >= 1:
                deg *= int(val)
        return deg, str(eng.name), eng.model
    return None, None, None


def measured(v: EvidenceView) -> list[Measured]:
    """Every output-throughput figure the user gave (observation runs and benchmark results), per GPU."""
    oe = v.observations_evidence
    if oe is None:
        return []
    ev_id, obs = oe[0].id, oe[1]
    eng_gpus, _, _ = _gpus_from_engine(v)
    out: list[Measured] = []
    for r in obs.runs:
        gpus = r.gpus
        if r.output_tok_s:
            out.append(Measured(f"run {r.name}", r.output_tok_s / gpus, [ev_id], r.input_len, r.output_len,
                                r.concurrency, gpus))
        elif r.total_tok_s and r.input_len and r.output_len:
            share = r.output_len / (r.input_len + r.output_len)
            out.append(Measured(f"run {r.name}", r.total_tok_s * share / gpus, [ev_id], r.input_len, r.output_len,
                                r.concurrency, gpus, derived=f"output share {share:.0%} of total_tok_s (ISL/OSL)"))
    for b in obs.bench:
        if not b.output_throughput:
            continue
        n_gpus = eng_gpus or (obs.runs[0].gpus if obs.runs else None) or (obs.gpu.count if obs.gpu and obs.gpu.count
                                                                           else None)
        if not n_gpus:
            continue
        out.append(Measured(f"{b.format} {b.name}", b.output_throughput / n_gpus, [ev_id], b.input_len, b.output_len,
                            b.max_concurrency, n_gpus, derived="" if eng_gpus else f"{n_gpus} GPU(s) assumed from the "
                                                                                 "observations"))
    return out


def setup_of(v: EvidenceView) -> tuple[Setup, list[str]]:
    """The user's GPU, model, precision and engine from the evidence, with the evidence ids that say so."""
    ids: list[str] = []
    gpu = None
    if v.gpu is not None and v.gpu.spec is not None:
        gpu, ids = v.gpu.spec.name, list(v.gpu.evidence)
    oe = v.observations_evidence
    obs = oe[1] if oe else None
    if gpu is None and obs and obs.gpu and obs.gpu.name:
        spec = knowledge.gpu_spec(obs.gpu.name)
        gpu = spec.name if spec else None
        if gpu and oe:
            ids.append(oe[0].id)
    _, engine, eng_model = _gpus_from_engine(v)
    model = (obs.model.name if obs and obs.model and obs.model.name else None) or eng_model or \
        next((b.model for b in (obs.bench if obs else []) if b.model), None)
    dtype, dt_ids = v.workload_dtype()
    precision = precision_of(dtype) or precision_of(model)
    if oe and oe[0].id not in ids:
        ids.append(oe[0].id)
    return Setup(gpu=gpu, model=model, precision=precision, engine=engine), ids + [i for i in dt_ids if i not in ids]


def _fmt(x: float) -> str:
    return f"{x:,.0f}"


def reference_rule(v: EvidenceView) -> list[Finding]:
    """The user's best measured output tok/s per GPU against the closest published figure (the verdict carries its
    short form whenever it explains the asked symptom)."""
    found = _reference(v)
    for f in found:
        f.verdict_words = f.short
    return found


def _reference(v: EvidenceView) -> list[Finding]:
    figures = measured(v)
    if not figures:
        return []
    setup, ids = setup_of(v)
    if setup.gpu is None or setup.model is None:
        return []
    best_f: Measured | None = None
    best_l: Lookup | None = None
    for f in figures:
        s = Setup(**{**setup.__dict__, "isl": f.isl, "osl": f.osl, "concurrency": f.concurrency, "gpus": f.gpus})
        lk = match(s)
        if best_l is None or (lk.matches and (not best_l.matches or f.per_gpu > (best_f.per_gpu if best_f else 0))):
            best_f, best_l = f, lk
    assert best_f is not None and best_l is not None
    evidence = sorted(set(ids + best_f.evidence))
    src_names = {s.id: s for s in refs.load().sources}
    if not best_l.matches:
        return [Finding(
            id="reference-throughput", title="No published reference for this GPU and model",
            claim=f"You get {_fmt(best_f.per_gpu)} output tok/s per GPU ({best_f.label}); {best_l.why_none}, so how "
                  "far this is from a tuned deployment cannot be read from published figures; the roofline floors "
                  "are the comparison left.",
            confidence=0.6, category="observation", informational=True, evidence=evidence, rule="reference_rule",
            symptoms=["throughput", "cost"],
            short=f"No published reference to compare with: {best_l.why_none}.",
            numbers=[Number(name=f"output tok/s per GPU ({best_f.label})", value=round(best_f.per_gpu, 1),
                            unit="tok/s/GPU", source="observations")])]
    m = best_l.matches[0]
    r = m.row
    src = src_names.get(r.source)
    share = best_f.per_gpu / r.output_tok_s_per_gpu
    cond = ", ".join(x for x in (r.parallel, f"ISL/OSL {r.isl}/{r.osl}" if r.isl else None,
                                 "max load" if r.scenario == "max-throughput" else f"MLPerf {r.scenario}",
                                 r.precision.upper() if r.precision else None) if x)
    low_load = best_f.concurrency is not None and best_f.concurrency <= LOW_LOAD and \
        r.scenario in ("max-throughput", "Offline")
    if low_load:
        reading = (f"At concurrency {best_f.concurrency} a maximum-load figure is an upper bound, not a like-for-like "
                   "one: the gap says how much a larger batch could give, not that the setup is broken.")
        explains = None
    elif share >= NEAR:
        reading = ("Near the published figure: the setup is about as well tuned as the reference; more throughput "
                   "needs other hardware, a lower precision or another parallel layout, not a fix.")
        explains = None
    elif share >= FAR:
        reading = (f"Below the published figure by {1 - share:.0%}: a tuning gap of that size is worth finding "
                   "(settings, kernels, batch) before blaming the hardware.")
        explains = round(1 - share, 3)
    else:
        reading = ("Far below the published figure: the GPU can do much more, so the cause is in this deployment, not "
                   "the hardware.")
        explains = round(1 - share, 3)
    diffs = "; ".join(m.differences) if m.differences else "none stated"
    claim = (f"You get {_fmt(best_f.per_gpu)} output tok/s per GPU ({best_f.label}"
             f"{f'; {best_f.derived}' if best_f.derived else ''}); the closest published figure for {r.gpu} / "
             f"{best_l.model_id} is {_fmt(r.output_tok_s_per_gpu)} ({src.title if src else r.source}; {cond}): you are "
             f"at {share:.0%} of it. Differences: {diffs}. {reading}")
    return [Finding(
        id="reference-throughput", title=f"Throughput at {share:.0%} of the published figure for this GPU and model",
        claim=claim, confidence=0.6, category="observation", informational=True, evidence=evidence,
        rule="reference_rule", symptoms=["throughput", "cost"], explains=explains,
        short=(f"Against the closest published figure ({_fmt(r.output_tok_s_per_gpu)} output tok/s per GPU, "
               f"{src.title if src else r.source}, {cond}) you get {_fmt(best_f.per_gpu)}, {share:.0%} of it: "
               f"{reading[0].lower()}{reading[1:]}"),
        numbers=[Number(name=f"output tok/s per GPU vs published ({best_f.label})", value=round(best_f.per_gpu, 1),
                        unit="tok/s/GPU", peak=r.output_tok_s_per_gpu, source=src.url if src else r.source,
                        note=f"{cond}; differences: {diffs}")],
        data={"share": round(share, 4), "reference": r.model_dump(mode="json"), "source_url": src.url if src else None,
              "differences": m.differences})]


def rows_table(lookup: Lookup) -> list[dict[str, Any]]:
    """The matches as plain dicts (the CLI's --json and the model's tool)."""
    src = {s.id: s for s in refs.load().sources}
    return [{**m.row.model_dump(mode="json", exclude_defaults=True), "differences": m.differences,
             "source_url": src[m.row.source].url if m.row.source in src else None,
             "method": src[m.row.source].method if m.row.source in src else ""} for m in lookup.matches]
