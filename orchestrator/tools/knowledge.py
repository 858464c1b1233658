"""Knowledge tools: GPU spec sheets, rooflines, the user's observations, and a search over the knowledge base."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from orchestrator import knowledge
from orchestrator.analysis.moe_inputs import compute_peak, moe_args_from
from orchestrator.analysis.observation_rules import analyze_observations
from orchestrator.analysis.roofline import gemm_roofline, moe_decode_roofline
from orchestrator.tools.base import Tool, ToolContext, ToolFailure, ToolOutput


def spec_payload(spec: knowledge.GpuSpec, count: int = 1, reported_name: str | None = None) -> dict:
    caps = knowledge.arch_caps(spec.cc)
    return {"name": reported_name or spec.name, "known_as": spec.name, "count": count, "cc": spec.cc,
            "spec": spec.model_dump(), "arch": caps.model_dump() if caps else None}


def render_gpu_list() -> str:
    """`investigate specs --list`: every GPU of knowledge/gpus.yaml with its headline dense peaks (n/v: not verified)."""
    from orchestrator.render.specs import gpu_table

    return gpu_table(knowledge.gpus())


class GpuSpecsInput(BaseModel):
    gpu: str | None = Field(None, description="GPU name (nvidia-smi's); omit to look up the investigated host's GPUs")


class GpuSpecs(Tool):
    name = "gpu_specs"
    acts = False
    description = "Spec sheet (dense tensor TFLOPS per dtype, bandwidth, shared memory, TDP, arch capabilities) with sources."
    Input = GpuSpecsInput

    async def run(self, args: GpuSpecsInput, ctx: ToolContext) -> ToolOutput:
        from orchestrator.render.specs import render_specs

        if args.gpu:
            spec = knowledge.gpu_spec(args.gpu)
            if spec is None:
                raise ToolFailure(f"unknown GPU {args.gpu!r}; closest: {', '.join(knowledge.closest_gpu_names(args.gpu))}")
            return ToolOutput(text=render_specs(spec.name), data={"kind": "gpu_specs", "source": "argument",
                                                                  "gpus": [spec_payload(spec)]})
        try:
            on = ctx.host()
        except ToolFailure as exc:
            raise ToolFailure(f"{exc}; pass gpu=<name>") from None
        from orchestrator.probes.gpu import gpu_inventory

        inv = await gpu_inventory(on)
        host = on.name
        if not inv.available:
            raise ToolFailure(f"could not list GPUs on {host}: {inv.reason or 'unavailable'}")
        if not inv.gpus:
            return ToolOutput(text=f"{host} has no NVIDIA GPU.", host=host,
                              data={"kind": "gpu_specs", "source": "host", "gpus": []})
        names: dict[str, int] = {}
        ccs: dict[str, str | None] = {}
        for g in inv.gpus:
            names[g.name] = names.get(g.name, 0) + 1
            ccs[g.name] = g.compute_cap
        texts, gpus = [], []
        for nm, n in names.items():
            spec = knowledge.gpu_spec(nm)
            if spec is None:
                texts.append(f"{n} x {nm} (CC {ccs[nm]}): not in the spec database; closest: "
                             f"{', '.join(knowledge.closest_gpu_names(nm))}")
                gpus.append({"name": nm, "count": n, "cc": ccs[nm], "spec": None, "arch": None})
            else:
                texts.append(f"{n} x {nm} on {host}:\n" + render_specs(spec.name))
                p = spec_payload(spec, n, nm)
                p["cc"] = ccs[nm] or spec.cc
                gpus.append(p)
        return ToolOutput(text="\n\n".join(texts), host=host, data={"kind": "gpu_specs", "source": "host", "gpus": gpus})


class RooflineInput(BaseModel):
    mode: Literal["auto", "gemm", "moe_decode"] = "auto"
    gpu: str | None = Field(None, description="GPU name; default: the host's GPU")
    dtype: str | None = Field(None, description="nvfp4, mxfp4, fp8, bf16, ...")
    m: int | None = None
    n: int | None = None
    k: int | None = None


class Roofline(Tool):
    name = "roofline"
    acts = False
    description = ("Where a GEMM (m, n, k, dtype) or the observed MoE decode sits on the GPU's roofline: intensity vs "
                   "ridge, bound, time floor. Without args: MoE decode from the observations and the host's GPU.")
    Input = RooflineInput

    async def _spec(self, name: str | None, ctx: ToolContext) -> knowledge.GpuSpec:
        if name is None:
            obs = ctx.inputs.parsed_observations()
            name = obs.gpu.name if obs and obs.gpu and obs.gpu.name else None
        if name is None:
            from orchestrator.probes.gpu import gpu_inventory

            try:
                on = ctx.host()
            except ToolFailure:
                on = None  # no host: the observations or the arguments must name the GPU
            if on is not None:
                inv = await gpu_inventory(on)
                name = inv.gpus[0].name if inv.available and inv.gpus else None
        if name is None:
            raise ToolFailure("no GPU known: none on the host and no gpu.name in the observations")
        spec = knowledge.gpu_spec(name)
        if spec is None:
            raise ToolFailure(f"unknown GPU {name!r}; closest: {', '.join(knowledge.closest_gpu_names(name))}")
        return spec

    async def run(self, args: RooflineInput, ctx: ToolContext) -> ToolOutput:
        spec = await self._spec(args.gpu, ctx)
        caps = knowledge.arch_caps(spec.cc)
        if args.mode == "gemm" or (args.mode == "auto" and args.m and args.n and args.k):
            from orchestrator.render.specs import render_roofline

            if not (args.m and args.n and args.k and args.dtype):
                raise ToolFailure("gemm roofline needs m, n, k and dtype")
            text = render_roofline(spec.name, args.dtype, args.m, args.n, args.k)
            peak, _ = compute_peak(spec, caps, args.dtype)
            if peak is None or spec.mem_bw_gbs is None:  # found by mypy: this was a TypeError
                raise ToolFailure(f"no verified {args.dtype} peak or memory bandwidth for {spec.name}: "
                                  "no roofline to place the GEMM on")
            g = gemm_roofline(args.m, args.n, args.k, args.dtype, peak, spec.mem_bw_gbs)
            return ToolOutput(text=text, data={"kind": "roofline", "mode": "gemm", "gpu": spec.name,
                                                "result": g.model_dump()})
        obs = ctx.inputs.parsed_observations()
        if obs is None:
            # said to the user as a gap as well as to the agent: what the user can add, then what the agent can pass
            raise ToolFailure("no model or run to place on the roofline (no observations): give --observations with "
                              "the model and a run (docs/observations.md), or pass m, n, k and dtype for one GEMM")
        got = moe_args_from(obs, spec, caps)
        if got is None and args.mode != "moe_decode":
            dense = _dense_floors(obs, spec, caps)  # a dense model needs only its layer shapes or parameter count
            if dense is not None:
                return dense
        if got is None:
            raise ToolFailure("observations lack the model's size (model.hidden_size/num_layers/intermediate_size, "
                              "active_params_b or a name with its size such as 8B) or, for MoE, num_experts/top_k/"
                              "moe_intermediate_size and a run with concurrency/batch; or the GPU's peak for this dtype "
                              "is not verified")
        kwargs, run = got
        r = moe_decode_roofline(**kwargs)
        achieved = run.total_tok_s or run.output_tok_s
        text = (f"MoE decode roofline on {spec.name} for {run.name} (batch {r.batch}, {r.dtype}): tokens/expert "
                f"{r.tokens_per_expert:.2f}, experts touched {r.experts_touched:.1f}/{r.num_experts}, expert weights "
                f"{r.weight_bytes_per_layer / 1e6:,.1f} MB per layer per GPU, intensity {r.intensity:.1f} FLOP/B vs "
                f"ridge {r.ridge:.0f} FLOP/B -> {r.bound}-bound; floor {r.time_floor_per_step_ms:.2f} ms/step over "
                f"{r.layers} layers = {r.tokens_per_s_ceiling:,.0f} tok/s ceiling"
                + (f" (observed {achieved:,.0f} tok/s)." if achieved else ".")
                + f" Sources: {spec.source}.")
        return ToolOutput(text=text, data={"kind": "roofline", "mode": "moe_decode", "gpu": spec.name, "run": run.name,
                                           "achieved_tok_s": achieved, "result": r.model_dump()})


def _dense_floors(obs, spec: knowledge.GpuSpec, caps) -> ToolOutput | None:
    """Prefill and decode floors of a dense model from the observations (prongs/serving_engine/floors.py's arithmetic)."""
    from orchestrator.prongs.serving_engine.floors import decode_floor, prefill_floor, shape_from_observations

    shape = shape_from_observations(obs.model) if obs.model else None
    if shape is None or shape.expert_params or not spec.mem_bw_gbs:
        return None
    dtype = (obs.model.quantization if obs.model and obs.model.quantization else "bf16").lower()
    if knowledge.dtype_info(dtype) is None:
        dtype = "bf16"
    peak, _ = compute_peak(spec, caps, dtype)
    if not peak:
        return None
    run = obs.runs[0] if obs.runs else None
    bench = obs.bench[0] if obs.bench else None
    batch = (run.decode_batch if run and run.decode_batch else None) or (bench.max_concurrency if bench else None) or 1
    prompt = int((run.input_len if run and run.input_len else None) or (bench.input_len if bench and bench.input_len
                                                                        else 0) or 1024)
    gpus = run.gpus if run else 1
    dec = decode_floor(shape, batch, dtype=dtype, peak_tflops=peak, bandwidth_gbs=spec.mem_bw_gbs, gpus=gpus)
    pre = prefill_floor(shape, prompt, dtype=dtype, peak_tflops=peak, bandwidth_gbs=spec.mem_bw_gbs, gpus=gpus)
    text = (f"Dense roofline on {spec.name} ({dtype}, {gpus} GPU{'s' if gpus > 1 else ''}, {shape.source}): decode at "
            f"batch {batch}: floor {dec.floor_ms:.3g} ms/step ({dec.bound}-bound at {dec.intensity:.0f} FLOP/B vs "
            f"ridge {dec.ridge:.0f}); prefill of {prompt} tokens: floor {pre.floor_ms:.3g} ms ({pre.bound}-bound). "
            f"A measured latency within a small factor of its floor is GPU work; many times it, the time is spent "
            f"elsewhere. Sources: {spec.source}.")
    data = {"kind": "roofline", "mode": "dense", "gpu": spec.name, "dtype": dtype, "gpus": gpus,
            "decode": {"batch": batch, "floor_ms": dec.floor_ms, "bound": dec.bound, "compute_ms": dec.compute_ms,
                       "memory_ms": dec.memory_ms},
            "prefill": {"tokens": prompt, "floor_ms": pre.floor_ms, "bound": pre.bound,
                        "compute_ms": pre.compute_ms, "memory_ms": pre.memory_ms}}
    return ToolOutput(text=text, data=data)


class NoArgs(BaseModel):
    pass


def _bench_line(b) -> str:
    def p(lat, unit="ms") -> str:
        return "?" if lat is None or lat.p50 is None else f"p50 {lat.p50:g} / p99 {lat.p99 if lat.p99 is not None else '?'} {unit}"

    return (f"bench {b.name}: input {b.input_len or '?'} / output {b.output_len or '?'} tokens, TTFT {p(b.ttft)}, "
            f"ITL {p(b.itl)}, TPOT {p(b.tpot)}, output {b.output_throughput or '?'} tok/s")


class ObservationsTool(Tool):
    name = "observations"
    acts = False
    description = "The user's observations (--observations) and what they rule out (parallelism scaling, power vs limit)."
    Input = NoArgs

    async def run(self, args: NoArgs, ctx: ToolContext) -> ToolOutput:
        obs = ctx.inputs.parsed_observations()
        if obs is None:
            return ToolOutput(text="No observations were given (--observations).",
                              data={"kind": "observations", "observations": None, "analysis": None})
        a = analyze_observations(obs)
        lines = [f"model: {_fields(obs.model.model_dump(exclude_none=True)) if obs.model else 'not given'}"]
        lines += [_run_line(r) for r in obs.runs]
        lines += [_bench_line(b) for b in obs.bench]  # --bench runs (orchestrator/benchresults.py)
        lines += [c.reasoning for c in a.comparisons]
        if a.power:
            lines.append(a.power.reasoning)
        lines += a.notes
        return ToolOutput(text="\n".join(lines), data={"kind": "observations", "observations": obs.model_dump(mode="json"),
                                                       "analysis": a.model_dump(mode="json")})


def _fields(d: dict) -> str:
    """`key value, ...` as a person writes it, never a Python dict repr."""
    return ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in d.items()) or "nothing given"


def _run_line(r) -> str:
    """One observed run with only what was given (no "total None tok/s")."""
    given = [(label, v) for label, v in (("concurrency", r.concurrency), ("batch", r.batch),
                                        ("input_len", r.input_len), ("output_len", r.output_len),
                                        ("total", r.total_tok_s), ("output", r.output_tok_s)) if v is not None]
    parts = [f"{label} {v:g} tok/s" if label in ("total", "output") else f"{label} {v}" for label, v in given]
    return f"run {r.name}: " + (", ".join(parts) or "no measurements given")


class KnowledgeSearchInput(BaseModel):
    query: str = Field(description="words that must all appear, e.g. 'sm120 shared memory' or 'autotune cache vllm'")


class KnowledgeSearch(Tool):
    name = "knowledge_search"
    acts = False
    description = "Search the knowledge base (arch facts, known issues, backend support, cache locations, GPUs) with sources."
    Input = KnowledgeSearchInput

    async def run(self, args: KnowledgeSearchInput, ctx: ToolContext) -> ToolOutput:
        hits = knowledge.search(args.query)
        if not hits:
            return ToolOutput(text=f"no knowledge entries match {args.query!r}", data={"kind": "knowledge", "query": args.query, "hits": []})
        text = "\n".join(f"[{h['type']}] {h['title']}: {h['text']} (source: {h['source']})" for h in hits)
        return ToolOutput(text=text, data={"kind": "knowledge", "query": args.query, "hits": hits})


def register(registry) -> None:
    for tool in (GpuSpecs(), Roofline(), ObservationsTool(), KnowledgeSearch()):
        registry.add(tool)
