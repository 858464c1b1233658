"""Pure renderers for `investigate specs` and `investigate roofline` (the CLI prints them; exit 2 on UnknownGpu)."""

from __future__ import annotations

from typing import Iterable

from orchestrator import knowledge
from orchestrator.errors import InputError


class UnknownGpu(InputError):
    """The GPU name is not in the spec database; the message names the closest known names."""


def spec_or_raise(name: str) -> knowledge.GpuSpec:
    spec = knowledge.gpu_spec(name)
    if spec is None:
        near = "; ".join(f'"{n}"' for n in knowledge.closest_gpu_names(name))
        raise UnknownGpu(f"unknown GPU {name!r}; closest known names: {near} (run `investigate specs` with one of them)")
    return spec


def resolve_gpus(name: str) -> list[knowledge.GpuSpec]:
    """The GPUs a name means, as `investigate specs` reads it: the one part an exact name or alias names, or every
    part a short name stands for ("H100": the SXM, PCIe and NVL parts, in catalogue order); UnknownGpu otherwise."""
    spec = knowledge.gpu_spec(name)
    if spec is not None:
        return [spec]
    return knowledge.gpu_family(name) or [spec_or_raise(name)]


def gpu_table(specs: Iterable[knowledge.GpuSpec]) -> str:
    """One line per GPU with its headline dense peaks (n/v: not verified; -: no native MMA for the dtype)."""

    def num(v: float | None) -> str:
        return "n/v" if v is None else f"{v:,.0f}"

    def peak(g: knowledge.GpuSpec, dtype: str) -> str:
        v = g.tflops.get(dtype)  # type: ignore[call-overload]  # a dtype name from the table's own columns
        return "-" if v is None and knowledge.native_mma(dtype, g.cc) is False else num(v)

    head = f"{'GPU (as nvidia-smi names it)':<56} {'CC':<7} {'mem GB':>6} {'GB/s':>6} {'FP4':>6} {'FP8':>6} {'BF16':>6} {'TDP W':>6}"
    lines = [head, "-" * len(head)]
    for g in specs:
        acc = " *" if g.tflops_note and "FP32-accumulate" in g.tflops_note else ""
        lines.append(f"{g.name:<56} {g.cc:<7} {num(g.memory_gb):>6} {num(g.mem_bw_gbs):>6} {peak(g, 'fp4'):>6} "
                     f"{peak(g, 'fp8'):>6} {peak(g, 'bf16'):>6} {num(g.tdp_w):>6}{acc}")
    lines.append("")
    lines.append("Dense tensor TFLOPS (- : no native MMA for the dtype; n/v: not verified); * GeForce: FP32-accumulate "
                 "rates (half the FP16-accumulate ones). "
                 "`investigate specs GPU` shows one sheet with its sources.")
    return "\n".join(lines) + "\n"


def render_specs(name: str) -> str:
    """A spec sheet with sources for one GPU; for a short name that stands for several parts ("H100", "A100"),
    the table of those parts and how to see one sheet."""
    if knowledge.gpu_spec(name) is None:
        family = knowledge.gpu_family(name)
        if len(family) == 1:
            name = family[0].name
        elif family:
            return (f"{name!r} stands for {len(family)} GPUs; `investigate specs \"{family[0].name}\"` shows one "
                    f"sheet with its sources.\n\n" + gpu_table(family))
    s = spec_or_raise(name)
    caps = knowledge.arch_caps(s.cc)
    fmt = lambda v, unit: "n/v" if v is None else f"{v:,.0f} {unit}"  # noqa: E731
    lines = [f"{s.name}  ({s.arch}, compute capability {s.cc})"]
    if s.aliases:
        lines.append(f"  also known as: {', '.join(s.aliases)}")
    lines.append(f"  SMs:                     {s.sms if s.sms is not None else 'n/v'}")
    for dt in ("fp4", "fp8", "int8", "bf16", "fp16", "tf32"):
        native = knowledge.native_mma(dt, s.cc)
        if dt not in s.tflops and not native:
            continue
        value = s.tflops.get(dt)
        shown = (f"none (no {dt.upper()} tensor cores on CC {s.cc})" if value is None and native is False
                 else fmt(value, "TOPS" if dt == "int8" else "TFLOPS"))
        lines.append(f"  {'dense ' + dt.upper() + ' tensor:':<25}{shown}")
    if s.tflops_note:
        lines.append(f"  note: {s.tflops_note}")
    lines.append(f"  memory bandwidth:        {fmt(s.mem_bw_gbs, 'GB/s')}")
    lines.append(f"  memory:                  {fmt(s.memory_gb, 'GB')}{' (' + s.memory_note + ')' if s.memory_note else ''}")
    lines.append(f"  shared memory per SM:    {fmt(s.smem_per_sm_bytes, 'B')}")
    lines.append(f"  shared memory per block: {fmt(s.smem_per_block_bytes, 'B')}")
    lines.append(f"  TDP:                     {fmt(s.tdp_w, 'W')}")
    if s.interconnect:
        lines.append(f"  interconnect:            {s.interconnect}")
    for dt in ("fp4", "fp8", "bf16"):
        ridge = s.ridge_flop_per_byte(dt)
        if ridge:
            lines.append(f"  {'ridge point ' + dt.upper() + ':':<25}{ridge:,.0f} FLOP/B")
    if caps:
        flags = [f"tcgen05={'yes' if caps.tcgen05 else 'no'}", f"TMEM={'yes' if caps.tmem else 'no'}",
                 f"2-SM MMA={'yes' if caps.two_sm_mma else 'no'}", f"wgmma={'yes' if caps.wgmma else 'no'}",
                 f"multicast={'yes' if caps.multicast else 'no'}"]
        lines.append(f"  tensor-core dtypes:      {', '.join(caps.tensor_dtypes)}")
        lines.append(f"  {caps.sm}: {', '.join(flags)}")
        for f in caps.missing_vs_peer:
            lines.append(f"  - {f.text} [{f.source}]")
    for d in s.disputes + (caps.disputes if caps else []):
        lines.append(f"  sources disagree: {d}")
    lines.append("  sources: " + "; ".join(s.sources))
    if any("n/v" in ln for ln in lines):
        lines.append("  n/v = not verified: no source we trust gives this figure for this part")
    return "\n".join(lines) + "\n"


def render_roofline(gpu: str, dtype: str, m: int, n: int, k: int) -> str:
    """Where one GEMM sits on a GPU's roofline; for a short name that stands for several parts, on each of them."""
    specs = resolve_gpus(gpu)
    if len(specs) == 1:
        return _roofline_sheet(specs[0], gpu, dtype, m, n, k)
    rows = []
    for s in specs:
        try:
            sheet = _roofline_sheet(s, s.name, dtype, m, n, k)
        except UnknownGpu:
            rows.append(f"  {s.name:<40} no verified peak for {dtype}")
            continue
        got = dict(line.strip().split(":", 1) for line in sheet.splitlines()[1:] if ":" in line)
        rows.append(f"  {s.name:<40} {got['bound'].strip():<8} floor {got['time floor'].strip():>12}  "
                    f"attainable {got['attainable'].strip()}")
    return (f"{gpu!r} stands for {len(specs)} GPUs; GEMM M={m} N={n} K={k} {dtype} on each "
            f"(`investigate roofline --gpu \"{specs[0].name}\" ...` shows one in full):\n" + "\n".join(rows) + "\n")


def _roofline_sheet(s: knowledge.GpuSpec, gpu: str, dtype: str, m: int, n: int, k: int) -> str:
    # imported here: `specs` (and the CLI's start-up) need none of it
    from orchestrator.analysis.moe_inputs import compute_peak, weight_only
    from orchestrator.analysis.roofline import UnknownDtype, gemm_roofline

    caps = knowledge.arch_caps(s.cc)
    peak, tensor = compute_peak(s, caps, dtype)
    if weight_only(caps, dtype) and s.tflops.get("bf16"):
        peak, tensor = s.tflops["bf16"], "bf16"  # weight-only kernels (Marlin-style) run BF16 MMAs
    if not peak or not s.mem_bw_gbs:
        what = f"{tensor.upper()} peak" if not peak else "memory bandwidth"
        raise UnknownGpu(f"{s.name} has no verified {what} (n/v in `investigate specs {gpu}`); try another dtype "
                         "(bf16, fp8) or GPU")
    # without tensor cores for the dtype the kernels are weight-only: dequantized weights, BF16 activations
    act = "bf16" if weight_only(caps, dtype) else None
    try:
        r = gemm_roofline(m, n, k, dtype, peak, s.mem_bw_gbs, act_dtype=act)
    except UnknownDtype as exc:
        raise ValueError(str(exc)) from None
    runs_at = ("" if knowledge.tensor_dtype(dtype) == tensor else
               f" (no native {dtype} MMA on CC {s.cc}: weight-only, dequantized to BF16: BF16 peak)")
    return "\n".join([
        f"GEMM M={m} N={n} K={k} {dtype} on {s.name} (CC {s.cc})",
        f"  FLOPs:               {r.flops:,.0f} (2MNK)",
        f"  bytes:               {r.bytes:,.0f} (NK*b_w + MK*b_a + MN*b_out)",
        f"  arithmetic intensity {r.intensity:,.1f} FLOP/B",
        f"  ridge point:         {r.ridge:,.0f} FLOP/B = {peak:,.0f} TFLOPS / {s.mem_bw_gbs:,.0f} GB/s{runs_at}",
        f"  bound:               {r.bound}",
        f"  time floor:          {r.time_floor_us:,.2f} us",
        f"  attainable:          {r.attainable_tflops:,.1f} of {peak:,.0f} TFLOPS",
        f"  sources: {s.source}",
    ]) + "\n"


def render_references(gpu: str, model: str, dtype: str | None = None, isl: int | None = None,
                      osl: int | None = None, concurrency: int | None = None) -> str:
    """`investigate reference`: the published figures nearest to a setup, each with its differences and source."""
    from orchestrator.prongs.reference.rules import rows_table
    from orchestrator.sanitize import sanitize

    spec, lookup, note = reference_lookup(gpu, model, dtype, isl, osl, concurrency)
    if not lookup.matches:
        return sanitize(f"{note}{spec.name} / {model}: {lookup.why_none}.\n")  # the user's words: no terminal control
    lines = [f"{note}Published output throughput for {spec.name} / {lookup.model_id}"
             f"{f' ({dtype})' if dtype else ''}, nearest first (tok/s per GPU; input tokens not counted):", ""]
    for row in rows_table(lookup):
        lens = f"{row['isl']}/{row['osl']}" if row.get("isl") else "dataset"
        lines.append(f"  {row['output_tok_s_per_gpu']:>9,.0f}  {row.get('precision') or '?':<4} "
                     f"{row.get('parallel') or str(row['gpu_count']) + ' GPUs':<9} ISL/OSL {lens:<11} "
                     f"{row['scenario']:<14} {row['engine']}")
        if row["differences"]:
            lines.append(f"             differs: {'; '.join(row['differences'])}")
        lines.append(f"             source: {row['source_url']}")
    methods = {r["source"]: r["method"] for r in rows_table(lookup)}
    lines.append("")
    lines += [f"  {sid}: {m}" for sid, m in methods.items() if m]
    return sanitize("\n".join(lines) + "\n")  # the user's model name is echoed: no terminal control


def reference_lookup(gpu: str, model: str, dtype: str | None = None, isl: int | None = None, osl: int | None = None,
                     concurrency: int | None = None):
    """(the GPU, the published rows nearest to the setup, a line saying which part a short name was read as): for a
    name that stands for several parts, the first of them with published figures for the model."""
    from orchestrator.prongs.reference.rules import Setup, match, precision_of

    specs = resolve_gpus(gpu)
    looked = [(s, match(Setup(gpu=s.name, model=model, precision=precision_of(dtype), isl=isl, osl=osl,
                              concurrency=concurrency), n=8)) for s in specs]
    spec, lookup = next(((s, lk) for s, lk in looked if lk.matches), looked[0])
    note = "" if len(specs) == 1 else (
        f"{gpu!r} stands for {len(specs)} GPUs ({', '.join(s.name for s in specs)}); read as {spec.name} "
        f"(--gpu \"NAME\" for another).\n")
    return spec, lookup, note
