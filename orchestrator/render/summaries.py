"""Probe summaries: the compact text of each probe model, which the tools return to the model and `investigate
probe` prints. Pure functions of the typed results in `orchestrator.probes` (no host, no run, no CLI): the tools
import them, and so do the renderers (`render.engine` shares the engine configuration table)."""

from __future__ import annotations

from typing import Any, Callable

from orchestrator.prongs.serving_engine.models import ENGINE_LABEL
from orchestrator.prongs.serving_engine.models import EngineInstance, EngineReport
from orchestrator.prongs.tensor_core_specs.models import CommSweep, GemmSweep
from orchestrator.prongs.node_health.models import GpuHealth, NodeHealth
from orchestrator.probes.results import (
    AutotuneReport, GpuInventory, KernelInventory, LogScan, PowerSampling, ProbeModel, PythonEnv,
)


# --- the read-only probes (tools/probes.py) -------------------------------------------------------------------------


def _unavailable(model: ProbeModel) -> str | None:
    return None if model.available else f"{model.kind} unavailable on {model.host}: {model.reason}"


def _num(v: float | None, unit: str) -> str:
    return "?" if v is None else f"{v:g} {unit}"


def summarize_gpus(inv: GpuInventory) -> str:
    if (u := _unavailable(inv)) is not None:
        return u
    lines = [f"{inv.count} GPU(s); driver {inv.driver_version}, CUDA {inv.cuda_version}"]
    for g in inv.gpus:
        reasons = f"; throttle: {', '.join(g.clocks_throttle_reasons)}" if g.clocks_throttle_reasons else ""
        lines.append(
            f"GPU{g.index}: {g.name} (CC {g.compute_cap or '?'}, {g.architecture or '?'}), "
            f"{_num(g.memory_used_mib, 'MiB')} of {_num(g.memory_total_mib, 'MiB')}, "
            f"{_num(g.power_draw_w, 'W')} of {_num(g.power_limit_w, 'W')}, "
            f"SM {_num(g.sm_clock_mhz, 'MHz')} of {_num(g.sm_clock_max_mhz, 'MHz')}, util {_num(g.utilization_pct, '%')}"
            f"{reasons}"
        )
    if inv.topology:
        kinds = sorted({link.kind for link in inv.topology.links})
        lines.append(f"topology: {'NVLink' if inv.topology.nvlink else 'PCIe only'} (links: {', '.join(kinds) or 'none'})")
    return "\n".join(lines)


def summarize_power(p: PowerSampling) -> str:
    if (u := _unavailable(p)) is not None:
        return u
    lines = [f"{len(p.samples)} samples over {p.duration_s:g} s"]
    for s in p.summary:
        lines.append(
            f"GPU{s.gpu}: mean {_num(s.mean_power_w, 'W')} (max {_num(s.max_power_w, 'W')}) of "
            f"{_num(s.power_limit_w, 'W')}, SM {_num(s.mean_sm_clock_mhz, 'MHz')} of {_num(s.max_sm_clock_mhz, 'MHz')}, "
            f"util {_num(s.mean_utilization_pct, '%')}"
        )
    return "\n".join(lines)


def summarize_pyenv(e: PythonEnv) -> str:
    if (u := _unavailable(e)) is not None:
        return u
    pkgs = ", ".join(f"{k} {v}" for k, v in sorted(e.packages.items())) or "none of the inference libraries"
    lines = [
        f"interpreter {e.interpreter} ({e.interpreter_source}), Python {e.python_version}"
        + (f", virtualenv {e.virtualenv}" if e.virtualenv else ""),
        f"packages: {pkgs}",
        f"torch CUDA {e.torch_cuda or '?'}; arch list: {', '.join(e.torch_arch_list) or 'unknown'}",
    ]
    if e.interpreter_source == "python3 on PATH":
        lines.append(f"no running vLLM, SGLang or TensorRT-LLM process was found and no --python was given: this is "
                     f"{e.interpreter} (python3 on PATH), which may not be the interpreter that serves the model; "
                     "pass --python PATH to inspect the serving one")
    if e.reason:
        lines.append(e.reason)
    return "\n".join(lines)


def summarize_autotune(r: AutotuneReport) -> str:
    if (u := _unavailable(r)) is not None:
        return u
    lines = [f"device {r.device_name or '?'}; persisted autotune results: {'yes' if r.persisted_any else 'NONE'}"]
    if r.env:
        lines.append("env: " + ", ".join(f"{k}={v}" for k, v in sorted(r.env.items())))
    for loc in r.locations:
        state = f"{loc.files} file(s)" if loc.exists else "absent"
        extra = f" [{loc.env_var}]" if loc.env_var else ""
        subs = f"; dirs: {', '.join(loc.subdirs[:6])}" if loc.subdirs else ""
        lines.append(f"{loc.format}: {loc.path}{extra}: {state}{subs}")
    for f in r.files[:20]:
        bits = [f"{f.entries} entries"]
        if f.fallback_entries:
            bits.append(f"{f.fallback_entries} fallback (tactic -1/Default)")
        if f.device_name:
            bits.append(f"device {f.device_name}" + ("" if f.matches_device is not False else " (NOT this GPU)"))
        if f.expert_shape:
            bits.append("shape " + ",".join(f"{k}={v}" for k, v in f.expert_shape.items()))
        if f.metadata_mismatch:
            bits.append("metadata mismatch: " + "; ".join(f.metadata_mismatch))
        if f.error:
            bits.append(f"error: {f.error}")
        lines.append(f"  {f.format} {f.path}: " + ", ".join(bits))
    states = [f"{c.name} {c.files} file(s) {c.bytes / 1e6:,.1f} MB" + (" ON TMP (lost on restart)" if c.in_tmp else "")
              + (" [moved by env]" if c.env_set else "") for c in r.caches if c.present]
    if states:
        lines.append("caches present: " + "; ".join(states))
    if r.tuned_config_for_device is not None:
        shape = f" and expert shape {r.expert_shape}" if r.expert_shape else ""
        lines.append(f"fused-MoE tuned config for this device{shape}: {'yes' if r.tuned_config_for_device else 'NO'}")
    if r.reason:
        lines.append(r.reason)
    return "\n".join(lines)


def summarize_kernels(k: KernelInventory) -> str:
    if (u := _unavailable(k)) is not None:
        return u
    lines = [f"arch {k.arch or '?'}; cuobjdump {'present' if k.cuobjdump else 'absent'}"]
    for lib in k.libraries:
        bits = []
        if lib.tile_candidates:
            bits.append("tiles " + ", ".join(lib.tile_candidates))
        if lib.backends_for_arch:
            bits.append("backends " + ", ".join(lib.backends_for_arch))
        if lib.compiled_archs:
            bits.append("compiled " + ", ".join(lib.compiled_archs))
        if lib.jit_arch_dirs:
            bits.append("JIT cache " + ", ".join(lib.jit_arch_dirs))
        lines.append(f"{lib.name}: " + ("; ".join(bits) or "nothing specific to this arch") +
                     (f" ({'; '.join(lib.notes[:3])})" if lib.notes else ""))
    if k.reason:
        lines.append(k.reason)
    return "\n".join(lines)


def summarize_logs(s: LogScan) -> str:
    if (u := _unavailable(s)) is not None:
        return u
    lines = [f"{len(s.files)} file(s), {s.lines_scanned} lines, {len(s.matches)} match(es)"]
    if s.missing:
        lines.append("missing: " + ", ".join(s.missing))
    lines += [f"refused: {why}" for why in s.refused.values()]
    lines.extend(f"skipped: {k.text}" for k in s.skipped)
    for m in s.matches[:30]:
        lines.append(f"{m.path}:{m.line_no} [{m.signature_id}] {m.line[:200]}")
    return "\n".join(lines)


# --- node health (prongs/node_health/tool.py) ----------------------------------------------------------------------------------


def _n(v: float | int | None, unit: str = "") -> str:
    return "?" if v is None else f"{v:g}{unit}"


def _gpu_line(g: GpuHealth, node: NodeHealth) -> str:
    active = [r for r, s in g.clocks_event.items() if s]
    bits = [
        f"GPU{g.index} {g.name} ({g.bus_id or '?'}) {g.pstate or '?'} util {_n(g.utilization_pct, '%')}",
        f"power {_n(g.power_draw_w, ' W')} enforced {_n(g.power_enforced_w, ' W')} (default {_n(g.power_default_w, ' W')},"
        f" max {_n(g.power_max_w, ' W')})",
        f"SM {_n(g.sm_mhz, ' MHz')} of {_n(g.max_sm_mhz, ' MHz')} (app {_n(g.app_sm_mhz, ' MHz')})",
        f"clocks events: {', '.join(active) or 'none'}",
        f"PCIe Gen{_n(g.pcie_gen)} x{_n(g.pcie_width)} of Gen{_n(g.pcie_gen_max)} x{_n(g.pcie_width_max)}",
        f"ECC {g.ecc_mode or '?'} (volatile DBE {_n(g.ecc_volatile_dbe)}, aggregate DBE {_n(g.ecc_aggregate_dbe)})",
        f"remapped rows unc {_n(g.remapped_uncorrectable)} pending {g.remap_pending} failure {g.remap_failure}",
        f"persistence {'on' if g.persistence_mode else 'off' if g.persistence_mode is False else '?'}",
        f"MIG {g.mig_mode or '?'}",
        f"processes {len(g.processes)}",
    ]
    if g.nvlinks or g.nvlink_all_inactive:
        up = sum(1 for x in g.nvlinks if x.up)
        crc = sum(x.crc_errors or 0 for x in g.nvlinks)
        bits.append("NVLink all inactive" if g.nvlink_all_inactive else f"NVLink {up}/{len(g.nvlinks)} up, CRC {crc}")
    if g.fabric_state not in (None, "N/A"):
        bits.append(f"fabric {g.fabric_state}/{g.fabric_status}")
    xids = [x for x in node.xids if x.gpu_index == g.index]
    if xids:
        bits.append("Xid " + ",".join(sorted({str(x.code) for x in xids})))
    return "; ".join(bits)


def summarize_node(node: NodeHealth) -> str:
    if not node.available:
        return f"node_health unavailable on {node.host}: {node.reason}"
    lines = [f"{len(node.gpus)} GPU(s); driver {node.driver_version}, CUDA {node.cuda_version}"]
    lines += [_gpu_line(g, node) for g in node.gpus]
    if node.topology:
        kinds = sorted({link.kind for link in node.topology.links})
        lines.append(f"topology: {', '.join(kinds) or 'single GPU'}")
    lines.append(f"kernel log: {node.kernel_log_source or 'not readable'}; {len(node.xids)} Xid line(s)")
    for x in node.xids[-10:]:
        lines.append(f"  Xid {x.code} {x.mnemonic or ''} [{x.klass}] GPU {x.gpu_index if x.gpu_index is not None else '?'}:"
                     f" {x.line[:200]}")
    acs = [d for d in node.pci if d.acs_redirect]
    lines.append(f"IOMMU {node.iommu or 'unknown'}; ACS redirect on {len(acs)} bridge(s); "
                 f"RDMA devices {', '.join(d.name for d in node.rdma_devices) or 'none'}; "
                 f"libibverbs {'present' if node.libibverbs else 'absent'}")
    if node.fabricmanager or node.fabricmanager_running is not None:
        lines.append(f"fabric manager: systemctl {node.fabricmanager or '?'}, process "
                     f"{'running' if node.fabricmanager_running else 'not running'}")
    for p in node.processes:
        env = ", ".join(f"{k}={v}" for k, v in sorted(p.env.items())) or "no allowlisted variables"
        lines.append(f"process {p.pid} {p.comm or '?'} ({p.kind or 'not an engine'}), CPUs {p.cpus_allowed or '?'}:"
                     f" {env}")
    n = node.nccl
    if n.lines:
        tr = ", ".join(f"{k} {v}" for k, v in sorted(n.transports.items())) or "no channel lines"
        lines.append(f"NCCL {n.version or '?'}: {n.channels} channel connection(s): {tr}; network {n.network or '?'}; "
                     f"GDR {n.gdr}")
    for gap in node.gaps:
        lines.append(f"gap: {gap.what}: {gap.why}")
    return "\n".join(lines)


# --- serving engines (prongs/serving_engine/tool.py; the configuration table of prongs/serving_engine/report.py) ---------------------------------


# The settings an engineer reads first, in table order, with their labels.
CONFIG_ROWS = [
    ("tp", "tensor parallel (TP)"), ("pp", "pipeline parallel (PP)"), ("dp", "data parallel (DP)"),
    ("ep", "expert parallel (EP)"), ("cuda_graphs", "CUDA graphs"), ("enforce_eager", "enforce_eager"),
    ("cuda_graph_max_bs", "largest captured batch"), ("attention_backend", "attention backend (configured)"),
    ("attention_backend_selected", "attention backend (selected, log)"), ("kv_cache_dtype", "KV cache dtype"),
    ("gpu_memory_utilization", "GPU memory for weights+KV"), ("kv_cache_tokens", "KV cache size (tokens)"),
    ("num_gpu_blocks", "KV cache blocks"), ("block_size", "KV block size"), ("max_num_seqs", "max running requests"),
    ("max_num_batched_tokens", "per-step token budget (prefill chunk)"), ("chunked_prefill", "chunked prefill"),
    ("prefix_caching", "prefix caching"), ("quantization", "quantization"), ("scheduler_policy", "scheduler policy"),
    ("max_model_len", "max model length"), ("backend", "backend"),
]

METRIC_ROWS = [
    ("vllm:num_requests_running", "running"), ("vllm:num_requests_waiting", "waiting"),
    ("vllm:kv_cache_usage_perc", "KV usage (0-1)"), ("vllm:gpu_cache_usage_perc", "KV usage (0-1, V0)"),
    ("vllm:num_preemptions_total", "preemptions"), ("sglang:num_running_reqs", "running"),
    ("sglang:num_queue_reqs", "waiting"), ("sglang:token_usage", "KV usage (0-1)"),
    ("sglang:num_retracted_requests_total", "retracted (preempted)"), ("sglang:cache_hit_rate", "prefix cache hit rate"),
    ("tgi_queue_size", "waiting"), ("tgi_batch_current_size", "running"),
    ("trtllm_kv_cache_utilization", "KV usage (0-1)"),
]
HIST_ROWS = [
    "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds", "vllm:request_prefill_time_seconds",
    "vllm:request_decode_time_seconds", "vllm:request_queue_time_seconds", "sglang:time_to_first_token_seconds",
    "sglang:inter_token_latency_seconds", "trtllm_time_to_first_token_seconds", "trtllm_time_per_output_token_seconds",
    "tgi_request_queue_duration", "tgi_request_mean_time_per_token_duration",
]


def _fmt(v) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, list):
        return ",".join(str(x) for x in v[:12]) + ("..." if len(v) > 12 else "")
    return "unknown" if v is None else str(v)


def config_rows(e: EngineInstance) -> list[tuple[str, str, str]]:
    """(label, value, source) for the configuration table."""
    rows = []
    for key, label in CONFIG_ROWS:
        s = e.settings.get(key)
        if s is None:
            continue
        rows.append((label, _fmt(s.value), s.source))
    return rows


def summarize_engines(r: EngineReport) -> str:
    if not r.available:
        return f"engine_config unavailable on {r.host}: {r.reason}"
    if not r.engines:
        return "\n".join([r.reason or "no serving engine found"] + [f"skipped: {k.text}" for k in r.skipped_logs])
    lines = []
    for e in r.engines:
        head = f"{ENGINE_LABEL.get(e.name, e.name)}{' ' + e.version if e.version else ''} ({e.origin}: {e.where}"
        head += f", port {e.port})" if e.port else ")"
        lines.append(head + (f" serving {e.model}" if e.model else ""))
        if e.command:
            lines.append(f"  command: {e.command[:400]}")
        for label, value, source in config_rows(e):
            lines.append(f"  {label}: {value}  [{source}]")
        if e.env:
            lines.append("  env: " + ", ".join(f"{k}={v}" for k, v in sorted(e.env.items())[:30]))
        elif e.origin == "process" and not e.env_readable:
            lines.append("  env: not readable (another user's process)")
        if e.metrics is not None:
            if e.metrics.error:
                lines.append(f"  /metrics: {e.metrics.url}: {e.metrics.error}")
            else:
                ms = e.metrics.metrics
                vals = [f"{label} {ms[n].value:g}" for n, label in METRIC_ROWS if n in ms and ms[n].value is not None]
                lines.append(f"  /metrics ({e.metrics.url}, {len(ms)} metrics): " + (", ".join(vals) or "none of note"))
                for n in HIST_ROWS:
                    h = ms.get(n)
                    if h is not None and h.count:
                        lines.append(f"    {n}: n={h.count:g} mean {_fmt(h.mean)} p50 {_fmt(h.p50)} "
                                     f"p90 {_fmt(h.p90)} p99 {_fmt(h.p99)} s")
        if e.log is not None:
            lg = e.log
            bits = []
            if lg.selected_backend:
                bits.append(f"selected attention backend {lg.selected_backend}")
            if lg.fallbacks:
                bits.append(f"{len(lg.fallbacks)} backend fallback line(s)")
            if lg.kv_cache_tokens:
                bits.append(f"KV cache {lg.kv_cache_tokens:,} tokens")
            if lg.graphs_captured:
                bits.append(f"CUDA graphs captured in {lg.graph_capture_s:g} s")
            if lg.eager_line:
                bits.append("eager mode")
            if lg.preemption_lines:
                bits.append(f"{lg.preemption_lines} preemption/retraction line(s)")
            if lg.moe_default_config_lines:
                bits.append(f"{lg.moe_default_config_lines} default-MoE-config warning(s)")
            if lg.stats_samples:
                bits.append(f"{lg.stats_samples} stats lines: KV usage max {_fmt(lg.kv_usage_max_pct)}%, "
                            f"waiting max {_fmt(lg.waiting_max)}, running max {_fmt(lg.running_max)}, "
                            f"generation {_fmt(lg.gen_tok_s_mean)} tok/s mean")
            lines.append("  log: " + ("; ".join(bits) or "nothing engine-specific"))
    if r.missing_logs:
        lines.append("missing logs: " + ", ".join(r.missing_logs))
    lines.extend(f"skipped: {k.text}" for k in r.skipped_logs)
    return "\n".join(lines)


# --- GPU benchmarks (prongs/tensor_core_specs/tool.py; loaded only with --measure) -----------------------------------------------


def gemm_text(sw: GemmSweep) -> str:
    """A compact table of the sweep for the model."""
    if not sw.available:
        return f"GEMM sweep on {sw.host} skipped: {sw.reason}"
    head = (f"GEMM sweep on {sw.host}: {sw.gpu_name} (CC {sw.compute_cap}), torch {sw.torch_version}, "
            f"{len(sw.points)}/{sw.planned_points} points in {sw.elapsed_s} s")
    lines = [head]
    if sw.dtypes_skipped:
        lines.append("skipped: " + "; ".join(f"{k}: {v}" for k, v in sw.dtypes_skipped.items()))
    if sw.reason:
        lines.append(f"note: {sw.reason}")
    if sw.peaks:
        lines.append(f"peaks ({sw.peaks.source}): {sw.peaks.dense_tflops} TFLOPS, {sw.peaks.mem_bw_tbs} TB/s")
    lines.append("shape dtype M N K ms TFLOPS GB/s %peak %roofline bound W MHz")
    for p in sw.points:
        def f(x, fmt):
            return "-" if x is None else format(x, fmt)
        lines.append(f"{p.shape} {p.dtype} {p.m} {p.n} {p.k} {p.ms:.4f} {p.tflops:.1f} {p.gbps:.0f} "
                     f"{f(p.fraction_of_peak, '.1%')} {f(p.fraction_of_roofline, '.1%')} {p.bound or '-'} "
                     f"{f(p.mean_power_w, '.0f')} {f(p.mean_sm_clock_mhz, '.0f')}")
    for p in sw.points:
        if p.hold_s is not None:
            limit = f" of {sw.power_limit_w:.0f} W ({p.fraction_of_power_limit:.0%})" if (
                sw.power_limit_w and p.fraction_of_power_limit is not None) else ""
            power = (f"{p.mean_power_w:.0f} W{limit}, SM {p.mean_sm_clock_mhz:.0f} MHz over {p.power_samples} samples"
                     if p.mean_power_w is not None and p.mean_sm_clock_mhz is not None else "no power samples")
            lines.append(f"held {p.shape} {p.dtype} M={p.m} for {p.hold_s:.1f} s ({p.hold_calls} GEMMs, "
                         f"{p.hold_ms:.4f} ms each): {power}")
    for h in sw.holds_skipped:
        lines.append(f"not held: {h}")
    return "\n".join(lines)


def comm_text(sw: CommSweep) -> str:
    if not sw.available:
        return f"all-reduce sweep on {sw.host} skipped: {sw.reason}"
    lines = [f"all-reduce sweep on {sw.host}: {sw.backend}, world {sw.world_size}, groups {sw.group_sizes}, "
             f"torch {sw.torch_version}, nccl {sw.nccl_version}, {sw.elapsed_s} s"]
    if sw.reason:
        lines.append(f"note: {sw.reason}")
    lines.append("group bytes us algbw_GB/s busbw_GB/s correct")
    for p in sw.points:
        lines.append(f"{p.group_size}x{p.groups} {p.bytes} {p.ms * 1e3:.1f} {p.algbw_gbps or 0:.2f} "
                     f"{p.busbw_gbps or 0:.2f} {p.correct}")
    if sw.topology_raw:
        lines += ["nvidia-smi topo -m:", sw.topology_raw.rstrip()]
    return "\n".join(lines)


# --- any probe ------------------------------------------------------------------------------------------------------


def summarize(model: ProbeModel) -> str:
    """The compact text of any probe model (what the tools return; also for `investigate probe`)."""
    by_kind: dict[str, Callable[[Any], str]] = {
        "gpu_inventory": summarize_gpus, "power_sampling": summarize_power, "python_env": summarize_pyenv,
        "autotune_caches": summarize_autotune, "kernel_inventory": summarize_kernels, "log_scan": summarize_logs,
        "node_health": summarize_node, "engine_config": summarize_engines, "gemm_sweep": gemm_text,
        "comm_sweep": comm_text,
    }
    fn = by_kind.get(model.kind)
    if fn is None:
        return f"{model.kind}: " + ("available" if model.available else f"unavailable: {model.reason}")
    return fn(model)


def render_probes(probes: list[ProbeModel], console: Any) -> None:
    """`investigate probe`: each probe's summary under a rule naming it and its host, onto a rich console."""
    from rich.text import Text

    for p in probes:
        console.rule(Text(f"{p.kind} on {p.host}"))  # a host like [fe80::1] is not rich markup
        console.print(summarize(p), markup=False, highlight=False)
