"""What fits where, the KV cache and the weights' dtype: KV bytes per token and per sequence from the model's attention
shape (prongs/serving_engine/kv_fit.py) against what is left of GPU memory after the weights, and the weights' measured memory
against their bytes at the intended dtype; every finding shows its arithmetic.

Inputs: the model's shape (the observations' model block, else the config.json the settings audit read from the model
directory, else the parameter count in its name), the engine's effective settings (TP, PP, --kv-cache-dtype,
--max-model-len, --gpu-memory-utilization / --mem-fraction-static, --quantization) and its own startup lines: vLLM
"GPU KV cache size: N tokens", "Available KV cache memory: X GiB", "Model loading took X GiB"; SGLang "KV Cache is
allocated. #tokens: N", "max_total_num_tokens=N", "Load weight end. ... mem usage=X GB" (formats in
prongs/serving_engine/logs.py). The load offered: a benchmark's concurrency and its input + output tokens per request. Pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from orchestrator import knowledge
from orchestrator.prongs.serving_engine.kv_fit import KvShape, kv_bytes_per_element, kv_shape, sequences
from orchestrator.prongs.serving_engine.floors import ModelShape, shape_from_name, shape_from_observations
from orchestrator.diagnosis import Number
from orchestrator.findings import BoundClaim, Finding, capitalized
from orchestrator.ranks import Rank
from orchestrator.observations import ModelInfo
from orchestrator.prongs.resource_account.models import ResourceAccount
from orchestrator.prongs.serving_engine.models import EngineInstance, EngineReport
from orchestrator.prongs.serving_engine.weights import weight_dtype
from orchestrator.prongs.settings_audit.models import SettingsReport

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView

GIB = 2**30
FEWER = 0.9
ASSUMED_MEMORY_FRACTION = 0.9
"""A heuristic, used only where the engine's effective configuration has no memory fraction (SGLang computes
mem_fraction_static from the GPU's memory and TP; no engine seen). An engine whose default the harvested settings
hold (vLLM's gpu_memory_utilization, 0.92 in 0.26.0-0.33.0) gets it from the engine probe (prongs/serving_engine/cmdline.py),
never from here."""
"""The KV cache holding fewer than this share of the offered concurrency: requests wait for KV blocks."""
NOT_APPLIED = 1.6
"""Weights' measured memory at least this many times their bytes at the intended (sub-16-bit) dtype: not applied."""
PREALLOCATES = ("vllm", "sglang")
"""Engines that take a fixed share of GPU memory at start (weights + KV pool), so memory in use says little."""
_DTYPE_BYTES = {"torch.bfloat16": 2.0, "bfloat16": 2.0, "torch.float16": 2.0, "float16": 2.0, "float32": 4.0,
                "torch.float32": 4.0}
_MOE_KEYS = (("num_experts", ("n_routed_experts", "num_experts", "num_local_experts")),
             ("top_k", ("num_experts_per_tok", "moe_topk", "top_k")),
             ("moe_intermediate_size", ("moe_intermediate_size",)), ("num_layers", ("num_hidden_layers",)),
             ("hidden_size", ("hidden_size",)), ("intermediate_size", ("intermediate_size",)))


@dataclass
class FitInputs:
    """Everything the KV and dtype arithmetic needs, each with where it came from."""

    gpu_name: str
    gpu_mem: float
    """Bytes per GPU."""
    tp: int
    pp: int
    engine: EngineInstance | None
    ev_ids: list[str]
    weights_dtype: str
    weights_bpe: float
    params: ModelShape | None
    kv: KvShape | None
    config: dict[str, Any] = field(default_factory=dict)
    config_ev: str | None = None

    @property
    def degree(self) -> int:
        return max(1, self.tp * self.pp)

    def weights_per_gpu(self) -> float | None:
        return self.params.total_params * self.weights_bpe / self.degree if self.params else None


def _config(v: "EvidenceView") -> tuple[str, dict[str, Any]] | None:
    """The model's config.json as the settings audit read it from the model directory on the host."""
    for ev, rep in v.probes("settings_audit"):
        if not isinstance(rep, SettingsReport):
            continue
        for p in rep.processes:
            for f in p.files.values():
                if f.role == "config.json" and f.text and not f.truncated:
                    try:
                        cfg = json.loads(f.text)
                    except ValueError:
                        continue
                    if isinstance(cfg, dict):
                        return ev.id, cfg
    return None


def _text(cfg: dict[str, Any]) -> dict[str, Any]:
    """A multimodal config's language model part (`text_config`), else the config itself."""
    t = cfg.get("text_config")
    return t if isinstance(t, dict) else cfg


def _info_from_config(cfg: dict[str, Any], name: str | None) -> ModelInfo | None:
    c = _text(cfg)
    got: dict[str, Any] = {"name": name}
    for field_name, keys in _MOE_KEYS:
        for k in keys:
            x = c.get(k)
            if isinstance(x, int) and not isinstance(x, bool) and x > 0:
                got[field_name] = x
                break
    try:
        return ModelInfo.model_validate(got)
    except ValueError:
        return None


def intended_dtype(v: "EvidenceView", prim: EngineInstance | None, name: str | None) -> tuple[str, float]:
    """(dtype, bytes per parameter) the weights are meant to load in: the observations' or the engine's
    quantization, else a tag in the model's name (-FP8, -AWQ, ...), else BF16."""
    obs_model = v.observations_evidence[1].model if v.observations_evidence else None
    q = (obs_model.quantization if obs_model and obs_model.quantization else None) or \
        (str(prim.value("quantization")) if prim and prim.value("quantization") else None)
    if not q:
        q = weight_dtype(v, prim, name)[0]
    try:
        return str(q).lower(), knowledge.bytes_per_element(str(q).lower())
    except Exception:
        return "bf16", 2.0


def fit_inputs(v: "EvidenceView") -> FitInputs | None:
    g = v.gpu
    if g is None or g.spec is None:
        return None
    oe = v.observations_evidence
    obs_model = oe[1].model if oe else None
    eng = next(((ev.id, rep.primary) for ev, rep in v.probes("engine_config")
                if isinstance(rep, EngineReport) and rep.primary is not None), None)
    prim = eng[1] if eng else None
    conf = _config(v)
    name = (obs_model.name if obs_model and obs_model.name else None) or (prim.model if prim else None)
    params = shape_from_observations(obs_model) if obs_model else None
    if params is None and conf:
        info = _info_from_config(conf[1], name)
        params = shape_from_observations(info) if info else None
        if params is not None:
            params.source = params.source.replace("the observations", "the model's config.json")
    if params is None:
        params = shape_from_name(name)
    kv = kv_shape(obs_model.model_dump(), "the attention shape in the observations") if obs_model else None
    if kv is None and conf:
        kv = kv_shape(conf[1], "the attention shape in the model's config.json")
    dtype, bpe = intended_dtype(v, prim, name)
    tp = int(prim.value("tp") or 1) if prim else (oe[1].runs[0].tp if oe and oe[1].runs else 1)
    pp = int(prim.value("pp") or 1) if prim else (oe[1].runs[0].pp if oe and oe[1].runs else 1)
    acct = next((m for _, m in v.probes("resource_account") if isinstance(m, ResourceAccount)), None)
    totals = [x.memory_total_mib for x in (acct.gpus if acct else []) if x.memory_total_mib]
    gpu_mem = (totals[0] * 2**20) if totals else ((g.spec.memory_gb or 0) * 1e9)
    if not gpu_mem:
        return None
    ev_ids = [*g.evidence, *([oe[0].id] if oe else []), *([eng[0]] if eng else []), *([conf[0]] if conf else [])]
    return FitInputs(g.name, gpu_mem, max(1, tp or 1), max(1, pp or 1), prim, list(dict.fromkeys(ev_ids)), dtype,
                     bpe, params, kv, conf[1] if conf else {}, conf[0] if conf else None)


def _model_dtype_bytes(fi: FitInputs) -> float:
    c = _text(fi.config)
    return _DTYPE_BYTES.get(str(c.get("torch_dtype") or c.get("dtype") or "bfloat16").lower(), 2.0)


def _offered(v: "EvidenceView") -> tuple[int, float, str] | None:
    """(concurrency, tokens per request, where) of the load the user offered: a benchmark run with a concurrency cap
    and its mean input + output lengths, else an observed run."""
    oe = v.observations_evidence
    if oe is None:
        return None
    for b in oe[1].bench:
        if b.max_concurrency and b.input_len and b.output_len:
            return (b.max_concurrency, b.input_len + b.output_len,
                    f"{b.input_len:g} input + {b.output_len:g} output tokens (benchmark {b.name})")
    for r in oe[1].runs:
        if r.concurrency and r.input_len and r.output_len:
            return (r.concurrency, r.input_len + r.output_len,
                    f"{r.input_len} input + {r.output_len} output tokens (the observed run at concurrency "
                    f"{r.concurrency})")
    return None


def _num(name: str, value: float, unit: str, ev: str, note: str = "", peak: float | None = None) -> Number:
    return Number(name=name, value=round(value, 2), unit=unit, source=ev, note=note, peak=peak)


def kv_findings(v: "EvidenceView") -> list[Finding]:
    """What the weights and the KV cache fit (each call a copy of the view's one computation)."""
    return [f.model_copy() for f in v.fact("kv-fit", lambda: _kv_findings(v))]


def kv_holds_fewer(v: "EvidenceView") -> Finding | None:
    """The fact that the KV cache holds fewer requests than offered, as its finding (None otherwise): read by the
    resource account's answer to where the time went, computed once with the rest of the fit."""
    return next((f for f in v.fact("kv-fit", lambda: _kv_findings(v)) if f.id == "fit-kv-fewer-sequences-than-offered"),
                None)


def _kv_findings(v: "EvidenceView") -> list[Finding]:
    fi = fit_inputs(v)
    if fi is None:
        return []
    out = [f for f in (_dtype_not_applied(fi),) if f]
    out += _kv(v, fi)
    return out


def _dtype_not_applied(fi: FitInputs) -> Finding | None:
    """The weights' measured memory (the engine's own startup line) against their bytes at the intended dtype."""
    e = fi.engine
    measured = e.log.weights_gib if e and e.log else None
    expect = fi.weights_per_gpu()
    if not expect or not fi.params or fi.weights_bpe >= 2.0:
        return None
    if not measured:
        if e is None or e.name not in PREALLOCATES:
            return None
        # nvidia-smi's memory in use is the engine's whole pool, weights and KV together: it cannot tell the dtype
        return Finding(
            id="fit-weights-dtype-untold", category="workload", confidence=0.5, evidence=fi.ev_ids,
            informational=True, title=f"Whether the weights loaded as {fi.weights_dtype} cannot be told",
            claim=(f"At {fi.weights_dtype} the weights are {expect / GIB:,.1f} GiB per GPU, in 16 bits "
                   f"{fi.params.total_params * 2.0 / fi.degree / GIB:,.1f} GiB; {e.label} pre-allocates its share of "
                   "GPU memory (vLLM --gpu-memory-utilization, SGLang --mem-fraction-static) whatever the weights "
                   "take, so the memory nvidia-smi shows in use cannot tell which dtype loaded, and no weight-loading "
                   "line of its log was read (vLLM 'Model loading took X GiB', SGLang 'Load weight end. ... mem "
                   "usage=X GB')."),
            short=f"whether the weights loaded as {fi.weights_dtype} cannot be told without the engine's "
                  "weight-loading line.", symptoms=["throughput", "itl", "cost"],
            recommendations=["Give the engine's startup log (--log): its weight-loading line says how much memory "
                             "the weights took on each GPU."])
    ratio = measured * GIB / expect
    if ratio < NOT_APPLIED:
        return None
    bf16 = fi.params.total_params * 2.0 / fi.degree
    line = "vLLM's 'Model loading took X GiB'" if e and e.name == "vllm" else "the engine's weight-loading line"
    if e and e.name == "sglang":
        line = "SGLang's 'Load weight end. ... mem usage=X GB'"
    claim = (f"{line} says the weights took {measured:,.2f} GiB per GPU. At the intended {fi.weights_dtype} "
             f"({fi.weights_bpe:g} byte{'' if fi.weights_bpe == 1 else 's'} per parameter) they are {fi.params.total_params / 1e9:,.1f} B x "
             f"{fi.weights_bpe:g} / {fi.degree} GPU{'s' if fi.degree > 1 else ''} = {expect / GIB:,.2f} GiB per "
             f"GPU; the measured memory is {ratio:.1f}x that, {measured * GIB / bf16:.2f}x what BF16 weights take "
             f"({bf16 / GIB:,.2f} GiB): the weights were loaded in 16 bits, or kept in both dtypes, so the "
             f"{fi.weights_dtype} quantization was not applied to what the GPU holds. Every decode step then reads "
             f"{ratio:.1f}x the bytes it should, and the KV cache gets {(measured * GIB - expect) / GIB:,.1f} GiB "
             "less per GPU.")
    return Finding(
        id="fit-weights-dtype-not-applied", category="workload", confidence=0.75, evidence=fi.ev_ids, bound="memory",
        title=f"The weights take {measured:,.1f} GiB per GPU, {ratio:.1f}x their {fi.weights_dtype} size: the "
              "quantization was not applied",
        claim=claim, short=f"the weights take {measured:,.1f} GiB per GPU, {ratio:.1f}x their {fi.weights_dtype} "
        f"size ({expect / GIB:,.1f} GiB).", symptoms=["throughput", "itl", "cost", "startup"],
        numbers=[_num("weights' memory per GPU (engine log)", measured, "GiB", fi.ev_ids[-1]),
                 _num(f"weights per GPU at {fi.weights_dtype}", expect / GIB, "GiB", fi.ev_ids[0],
                      f"{fi.params.source}; knowledge/dtypes.yaml")],
        recommendations=["Load a checkpoint already in the intended dtype (its config.json names a "
                         "quantization_config) instead of quantizing online, and check the engine's weight-loading "
                         "line: the GiB it prints should be about parameters x bytes per parameter / TP.",
                         "If the engine keeps the 16-bit copy during online quantization (sglang#8337), use a "
                         "pre-quantized checkpoint or a release that frees it."])


def _kv(v: "EvidenceView", fi: FitInputs) -> list[Finding]:
    e = fi.engine
    kv = fi.kv
    log = e.log if e else None
    kv_dtype_raw = (e.value("kv_cache_dtype") if e else None) or \
        (v.observations_evidence[1].model.kv_cache_dtype if v.observations_evidence and
         v.observations_evidence[1].model else None)
    bpe, kv_dtype = kv_bytes_per_element(str(kv_dtype_raw) if kv_dtype_raw else None, _model_dtype_bytes(fi))
    per_tok = kv.bytes_per_token(bpe, fi.tp, fi.pp) if kv else None
    obs_model = v.observations_evidence[1].model if v.observations_evidence else None
    max_len = (e.value("max_model_len") if e else None) or (obs_model.max_model_len if obs_model else None)
    len_src = "--max-model-len" if max_len else ""
    if not max_len:
        c = _text(fi.config)
        if isinstance(c.get("max_position_embeddings"), int):
            max_len, len_src = c["max_position_embeddings"], "the model's max_position_embeddings (the default)"
    # the pool: the engine's own count of tokens, else its KV memory over the bytes per token, else what is left
    pool: float | None = None
    pool_src = ""
    at_most = False
    if log and log.kv_cache_tokens:
        pool, pool_src = float(log.kv_cache_tokens), f"the engine's log: KV cache of {log.kv_cache_tokens:,} tokens"
    elif log and log.kv_cache_memory_gib and per_tok:
        pool = log.kv_cache_memory_gib * GIB / per_tok
        pool_src = (f"the engine's log: {log.kv_cache_memory_gib:g} GiB of KV cache memory per GPU / "
                    f"{per_tok / 1024:,.1f} KiB per token = {pool:,.0f} tokens")
    elif per_tok and fi.params:
        util = e.value("gpu_memory_utilization") if e else None
        weights = (log.weights_gib * GIB if log and log.weights_gib else fi.weights_per_gpu()) or 0.0
        frac = float(util) if isinstance(util, (int, float)) else ASSUMED_MEMORY_FRACTION
        assumed = "" if isinstance(util, (int, float)) else " (an assumed fraction: the engine sizes its own)"
        if e and e.name == "trtllm":
            left = (fi.gpu_mem - weights) * frac
            how = f"({fi.gpu_mem / GIB:,.1f} GiB - {weights / GIB:,.1f} GiB of weights) x {frac:g}{assumed}"
        else:
            left = fi.gpu_mem * frac - weights
            how = f"{fi.gpu_mem / GIB:,.1f} GiB x {frac:g}{assumed} - {weights / GIB:,.1f} GiB of weights"
        if left <= 0:
            pool = 0.0
        else:
            pool = left / per_tok
        at_most = True
        pool_src = (f"at most {how} = {max(left, 0) / GIB:,.1f} GiB per GPU for KV (activations and CUDA graphs "
                    f"take some of it) / {per_tok / 1024:,.1f} KiB per token = {pool:,.0f} tokens")
    if pool is None:
        return []
    per_tok_words = (f"{kv.formula(bpe, fi.tp, fi.pp)} = {per_tok / 1024:,.1f} KiB per token per GPU "
                     f"(KV dtype {kv_dtype}; {kv.source})" if kv and per_tok else "")
    out: list[Finding] = []
    src_ev = fi.ev_ids[-1] if e else fi.ev_ids[0]
    offered = _offered(v)
    if offered:
        conc, tokens, where = offered
        fits = sequences(pool, tokens)
        if fits < FEWER * conc:
            waiting = conc - int(fits)
            claim = (f"The KV cache holds {pool:,.0f} tokens ({pool_src}"
                     + (f"; {per_tok_words}" if per_tok_words else "") + f"). Each request of {where} needs up to "
                     f"{tokens:,.0f} tokens of it, so at most {pool:,.0f} / {tokens:,.0f} = {fits:.1f} requests run "
                     f"at once against the {conc} offered: the other {waiting} wait in the engine's queue (or are "
                     "preempted and recomputed when the running ones grow). TTFT includes that wait, and throughput "
                     f"is what {max(int(fits), 1)} concurrent streams give, not {conc}.")
            out.append(Finding(
                id="fit-kv-fewer-sequences-than-offered", category="workload", confidence=0.75, evidence=fi.ev_ids,
                bound=None, title=f"The KV cache holds {fits:.1f} requests at once, fewer than the {conc} offered",
                queue_wait=True,
                claim=claim, short=f"the KV cache holds {fits:.1f} of the {conc} concurrent requests offered; the "
                f"rest wait.", symptoms=["ttft", "throughput", "itl"],
                numbers=[_num("requests the KV cache holds at once", fits, "requests", src_ev, pool_src,
                              peak=float(conc)),
                         _num("KV cache", pool, "tokens", src_ev)]
                + ([_num("KV bytes per token per GPU", per_tok / 1024, "KiB", fi.config_ev or fi.ev_ids[0],
                         per_tok_words)] if per_tok else []),
                recommendations=[
                    "Give the KV cache more room: a higher --gpu-memory-utilization (vLLM) / --mem-fraction-static "
                    "(SGLang), an FP8 KV cache (--kv-cache-dtype fp8 halves a 16-bit cache), fewer bytes of weights "
                    "per GPU (FP8 weights, or more GPUs: TP/PP), or a --max-model-len no longer than the requests "
                    "need.",
                    f"Or offer no more concurrency than fits ({max(int(fits), 1)}) and add replicas for the rest."]))
            # requests wait for a place in the batch the KV cache allows: that sets the bound (latency)
            out[-1].sets_bound = BoundClaim(rank=Rank.BATCH_HELD, bound="latency", words=capitalized(out[-1].short))
    running = e is not None and e.origin == "process"
    if max_len and pool < max_len and not (at_most and running):
        # an estimate against a running engine is not enough: vLLM checks this at start and would not be running
        need = max_len * per_tok if per_tok else None
        claim = (f"One request at the context length ({max_len:,} tokens, {len_src}) needs {max_len:,} tokens of KV"
                 + (f" = {need / GIB:,.2f} GiB per GPU ({per_tok_words})" if need else "")
                 + f", and the KV cache holds {'at most ' if at_most else ''}{pool:,.0f} tokens ({pool_src}): a "
                 "request of that length cannot fit. vLLM refuses to start (\"To serve at least one request with "
                 "the models's max seq len ... larger than the available KV cache memory\"); an engine that starts "
                 f"anyway can serve only {pool / max_len:.2f} of such requests at once.")
        out.append(Finding(
            id="fit-context-does-not-fit", category="workload", confidence=0.75, evidence=fi.ev_ids, bound=None,
            title=f"The context length ({max_len:,} tokens) does not fit the KV cache ({pool:,.0f} tokens)",
            claim=claim, short=f"a {max_len:,}-token request does not fit the {pool:,.0f}-token KV cache.",
            symptoms=["startup", "errors", "ttft", "throughput"],
            numbers=[_num("context length / KV cache tokens", max_len / pool if pool else 0.0, "x", src_ev)],
            recommendations=[f"Set --max-model-len to what fits ({int(pool):,} tokens or less) or what the requests "
                             "need, or free memory for the KV cache: FP8 KV cache (--kv-cache-dtype fp8), a higher "
                             "--gpu-memory-utilization, or the weights over more GPUs."]))
    if not out:
        bits = [f"The KV cache holds {pool:,.0f} tokens ({pool_src})"]
        if per_tok_words:
            bits.append(per_tok_words)
        if max_len:
            bits.append(f"{pool / max_len:.1f} requests at the full context of {max_len:,} tokens ({len_src})")
        if offered:
            bits.append(f"{sequences(pool, offered[1]):.1f} requests of {offered[1]:,.0f} tokens, against the "
                        f"{offered[0]} offered")
        if log and log.max_concurrency and log.max_concurrency_len:
            bits.append(f"the engine's own estimate: {log.max_concurrency:g}x requests of "
                        f"{log.max_concurrency_len:,} tokens")
        out.append(Finding(
            id="fit-kv-cache", category="workload", confidence=0.6, evidence=fi.ev_ids, informational=True,
            title=f"KV cache {pool:,.0f} tokens" + (f", {per_tok / 1024:,.0f} KiB per token per GPU" if per_tok
                                                     else ""),
            claim="; ".join(bits) + ".", short=f"the KV cache holds {pool:,.0f} tokens.",
            symptoms=["ttft", "throughput", "cost"],
            numbers=[_num("KV cache", pool, "tokens", src_ev)]
            + ([_num("KV bytes per token per GPU", per_tok / 1024, "KiB", fi.config_ev or fi.ev_ids[0])]
               if per_tok else [])))
    return out
