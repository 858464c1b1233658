"""An engine's command line (and the config file it names) -> its EFFECTIVE configuration, with where each value
came from: the flag as given, the config file, or the engine's default (with the source file that sets it).

Flag names are the engines' own. Defaults come from the harvested settings (knowledge/settings, per release: the
fields' own defaults, and for vLLM the batch tiers of get_batch_defaults and the CUDA-graph cap of
_set_cudagraph_sizes, `computed` in vllm.json); a default is written here only where the data holds none.
- vLLM: vllm/engine/arg_utils.py (EngineArgs.add_cli_args), vllm/config/*.py.
- SGLang: python/sglang/srt/server_args.py and arg_groups/fields/*.py (ServerArgs).
- TensorRT-LLM: tensorrt_llm/commands/serve.py (click options: kv_cache_free_gpu_memory_fraction 0.9,
  max_batch_size 2048, max_num_tokens 8192) and the --extra_llm_api_options / --config YAML (llmapi/llm_args.py:
  cuda_graph_config, kv_cache_config, scheduler_config.capacity_scheduler_policy default GUARANTEED_NO_EVICT).
- TGI: launcher/src/main.rs (clap args, also read from env; cuda graphs [1, 2, 4, 8, 16, 32] by default,
  max_concurrent_requests 128, ATTENTION / PREFIX_CACHING env).
Pure functions; no I/O.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Any, Callable, Mapping


from orchestrator import knowledge
from orchestrator.knowledge import settings as kb
from orchestrator.prongs.serving_engine.models import EngineName

VLLM_ARGS = "https://github.com/vllm-project/vllm/blob/main/vllm/engine/arg_utils.py"
SGLANG_ARGS = "https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/server_args.py"
TRTLLM_SERVE = "https://github.com/NVIDIA/TensorRT-LLM/blob/main/tensorrt_llm/commands/serve.py"
TRTLLM_ARGS = "https://github.com/NVIDIA/TensorRT-LLM/blob/main/tensorrt_llm/llmapi/llm_args.py"
TGI_LAUNCHER = "https://github.com/huggingface/text-generation-inference/blob/main/launcher/src/main.rs"



@dataclass(frozen=True)
class Flag:
    setting: str
    names: tuple[str, ...]
    kind: str = "str"
    """str | int | float | true (present -> True) | false (present -> False) | list | json"""
    negs: tuple[str, ...] = ()
    """Flags that set the setting to False (`--no-enable-prefix-caching`)."""


def _f(setting: str, *names: str, kind: str = "str", negs: tuple[str, ...] = ()) -> Flag:
    return Flag(setting, names, kind, negs)


FLAGS: dict[str, list[Flag]] = {
    "vllm": [
        _f("model", "--model"),
        _f("tp", "--tensor-parallel-size", "-tp", kind="int"),
        _f("pp", "--pipeline-parallel-size", "-pp", kind="int"),
        _f("dp", "--data-parallel-size", "-dp", kind="int"),
        _f("expert_parallel", "--enable-expert-parallel", kind="true", negs=("--no-enable-expert-parallel",)),
        _f("enforce_eager", "--enforce-eager", kind="true", negs=("--no-enforce-eager",)),
        _f("cuda_graph_sizes", "--cuda-graph-sizes", kind="list"),
        _f("max_cudagraph_capture_size", "--max-cudagraph-capture-size", "--max-seq-len-to-capture", kind="int"),
        _f("compilation_config", "--compilation-config", "-O", kind="json"),
        _f("attention_backend", "--attention-backend"),
        _f("kv_cache_dtype", "--kv-cache-dtype"),
        _f("gpu_memory_utilization", "--gpu-memory-utilization", kind="float"),
        _f("num_gpu_blocks_override", "--num-gpu-blocks-override", kind="int"),
        _f("block_size", "--block-size", kind="int"),
        _f("max_num_seqs", "--max-num-seqs", kind="int"),
        _f("max_num_batched_tokens", "--max-num-batched-tokens", kind="int"),
        _f("max_model_len", "--max-model-len", kind="int"),
        _f("chunked_prefill", "--enable-chunked-prefill", kind="true", negs=("--no-enable-chunked-prefill",)),
        _f("prefix_caching", "--enable-prefix-caching", kind="true", negs=("--no-enable-prefix-caching",)),
        _f("quantization", "--quantization", "-q"),
        _f("dtype", "--dtype"),
        _f("scheduler_policy", "--scheduling-policy"),
        _f("async_scheduling", "--async-scheduling", kind="true", negs=("--no-async-scheduling",)),
        _f("speculative_config", "--speculative-config", kind="json"),
        _f("port", "--port", kind="int"),
        _f("config_file", "--config"),
    ],
    "sglang": [
        _f("model", "--model-path", "--model"),
        _f("tp", "--tp-size", "--tp", "--tensor-parallel-size", kind="int"),
        _f("pp", "--pp-size", "--pp", "--pipeline-parallel-size", kind="int"),
        _f("dp", "--dp-size", "--dp", "--data-parallel-size", kind="int"),
        _f("ep", "--ep-size", "--ep", "--expert-parallel-size", kind="int"),
        _f("dp_attention", "--enable-dp-attention", kind="true"),
        _f("cuda_graphs", "--disable-cuda-graph", kind="false"),
        # SGLang's CUDA-graph refactor (sglang#23906) replaced --cuda-graph-max-bs / --cuda-graph-bs with per-phase
        # flags; 0.5.18 and 0.5.23 have only --cuda-graph-max-bs-decode / --cuda-graph-bs-decode (and -prefill), so
        # the old spelling is an ambiguous abbreviation there that argparse refuses.
        _f("cuda_graph_max_bs", "--cuda-graph-max-bs-decode", "--cuda-graph-max-bs", kind="int"),
        _f("cuda_graph_sizes", "--cuda-graph-bs-decode", "--cuda-graph-bs", kind="list"),
        _f("torch_compile", "--enable-torch-compile", kind="true"),
        _f("attention_backend", "--attention-backend"),
        _f("prefill_attention_backend", "--prefill-attention-backend"),
        _f("decode_attention_backend", "--decode-attention-backend"),
        _f("kv_cache_dtype", "--kv-cache-dtype"),
        _f("gpu_memory_utilization", "--mem-fraction-static", kind="float"),
        _f("max_total_tokens", "--max-total-tokens", kind="int"),
        _f("max_num_seqs", "--max-running-requests", kind="int"),
        _f("chunked_prefill_size", "--chunked-prefill-size", kind="int"),
        _f("max_num_batched_tokens", "--max-prefill-tokens", kind="int"),
        _f("prefix_caching", "--disable-radix-cache", kind="false"),
        _f("speculative_algorithm", "--speculative-algorithm", "--speculative-algo"),
        _f("speculative_draft_model", "--speculative-draft-model-path", "--speculative-draft"),
        _f("speculative_num_steps", "--speculative-num-steps", kind="int"),
        _f("speculative_num_draft_tokens", "--speculative-num-draft-tokens", kind="int"),
        _f("quantization", "--quantization"),
        _f("dtype", "--dtype"),
        _f("scheduler_policy", "--schedule-policy"),
        _f("schedule_conservativeness", "--schedule-conservativeness", kind="float"),
        _f("max_model_len", "--context-length", kind="int"),
        _f("page_size", "--page-size", kind="int"),
        _f("metrics_enabled", "--enable-metrics", kind="true"),
        _f("port", "--port", kind="int"),
        _f("config_file", "--config"),
    ],
    "trtllm": [
        _f("backend", "--backend"),
        _f("tp", "--tp_size", "--tp-size", kind="int"),
        _f("pp", "--pp_size", "--pp-size", kind="int"),
        _f("ep", "--ep_size", "--ep-size", kind="int"),
        _f("max_num_seqs", "--max_batch_size", "--max-batch-size", kind="int"),
        _f("max_num_batched_tokens", "--max_num_tokens", "--max-num-tokens", kind="int"),
        _f("max_model_len", "--max_seq_len", "--max-seq-len", kind="int"),
        _f("gpu_memory_utilization", "--kv_cache_free_gpu_memory_fraction", "--kv-cache-free-gpu-memory-fraction",
           kind="float"),
        _f("kv_cache_dtype", "--kv_cache_dtype", "--kv-cache-dtype"),
        _f("chunked_prefill", "--enable_chunked_prefill", "--enable-chunked-prefill", kind="true"),
        _f("port", "--port", kind="int"),
        _f("config_file", "--extra_llm_api_options", "--extra-llm-api-options", "--config"),
    ],
    "tgi": [
        _f("model", "--model-id"),
        _f("tp", "--num-shard", kind="int"),
        _f("quantization", "--quantize"),
        _f("dtype", "--dtype"),
        _f("kv_cache_dtype", "--kv-cache-dtype"),
        _f("max_num_seqs", "--max-concurrent-requests", kind="int"),
        _f("max_num_batched_tokens", "--max-batch-prefill-tokens", kind="int"),
        _f("max_total_tokens", "--max-batch-total-tokens", kind="int"),
        _f("max_batch_size", "--max-batch-size", kind="int"),
        _f("max_model_len", "--max-total-tokens", kind="int"),
        _f("cuda_graph_sizes", "--cuda-graphs", kind="list"),
        _f("port", "--port", "-p", kind="int"),
    ],
}

# The TGI launcher reads every clap arg from the environment too (`#[clap(long, env)]`).
TGI_ENV = {"NUM_SHARD": "tp", "QUANTIZE": "quantization", "KV_CACHE_DTYPE": "kv_cache_dtype",
           "MAX_CONCURRENT_REQUESTS": "max_num_seqs", "MAX_BATCH_PREFILL_TOKENS": "max_num_batched_tokens",
           "MAX_BATCH_TOTAL_TOKENS": "max_total_tokens", "CUDA_GRAPHS": "cuda_graph_sizes", "MODEL_ID": "model"}


@dataclass
class Setting:
    value: Any
    source: str
    """`flag --x`, `config file F`, `env NAME`, `log line N of F`, `default (...)`."""
    default: bool = False


def split_command(command: str) -> list[str]:
    """A shell command line as argv (quotes honoured; unbalanced quotes fall back to whitespace)."""
    try:
        return shlex.split(command, comments=False)
    except ValueError:
        return command.split()


_WRAPPERS = {"exec", "nohup", "env", "time", "sudo", "numactl", "taskset", "mpirun", "mpiexec", "srun", "uv", "run",
             "stdbuf", "setsid", "python", "python3", "trtllm-llmapi-launch", "docker", "podman"}


def _segments(argv: list[str]) -> list[list[str]]:
    """A shell line's simple commands (split on ;, &&, ||, |, &)."""
    out: list[list[str]] = []
    cur: list[str] = []
    for a in argv:
        if a in (";", "&&", "||", "|", "&"):
            out.append(cur)
            cur = []
        else:
            cur.append(a)
    out.append(cur)
    return [c for c in out if c]


def _leading(argv: list[str], j: int) -> bool:
    """Everything before argv[j] is an env assignment, a wrapper (nohup, mpirun, ...), its option or a number."""
    import os
    import re

    for a in argv[:j]:
        base = os.path.basename(a)
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", a) or a.startswith("-") or a.isdigit():
            continue
        if base in _WRAPPERS or base.startswith("python"):
            continue
        return False
    return True


_ENTRY_MODULES: tuple[tuple[str, EngineName], ...] = (
    ("vllm.entrypoints", "vllm"), ("sglang.launch_server", "sglang"), ("sglang.srt.server", "sglang"),
    ("tensorrt_llm.commands.serve", "trtllm"), ("text_generation_server", "tgi"))


def engine_kind(argv: list[str]) -> EngineName | None:
    """vllm / sglang / trtllm / tgi from a command line (same rules as the probe script), else None."""
    import os

    for seg in _segments(argv):
        for i, arg in enumerate(seg[:-1]):
            if arg == "-m" and i > 0 and os.path.basename(seg[i - 1]).startswith("python"):
                mod = seg[i + 1]
                for prefix, name in _ENTRY_MODULES:
                    if mod.startswith(prefix):
                        return name
        for j, arg in enumerate(seg):
            base = os.path.basename(arg)
            kind: EngineName | None = None
            if base == "vllm" and j + 1 < len(seg) and seg[j + 1] == "serve":
                kind = "vllm"
            elif base == "trtllm-serve":
                kind = "trtllm"
            elif base in ("text-generation-launcher", "text-generation-server"):
                kind = "tgi"
            if kind and _leading(seg, j):
                return kind
    return None


def _argv_after_entry(kind: str, argv: list[str]) -> list[str]:
    """The arguments after the engine's entry point (`vllm serve`, `-m module`, `trtllm-serve [serve]`)."""
    import os

    for i, arg in enumerate(argv):
        if arg == "-m" and i + 1 < len(argv):
            return argv[i + 2:]
        base = os.path.basename(arg)
        if kind == "vllm" and base == "vllm" and i + 1 < len(argv) and argv[i + 1] == "serve":
            return argv[i + 2:]
        if kind == "trtllm" and base == "trtllm-serve":
            rest = argv[i + 1:]
            return rest[1:] if rest[:1] == ["serve"] else rest
        if kind == "tgi" and base in ("text-generation-launcher", "text-generation-server"):
            rest = argv[i + 1:]
            return rest[1:] if rest[:1] == ["serve"] else rest
    return argv[1:]


def _convert(kind: str, raw: Any) -> Any:
    if raw is None:
        return None
    try:
        if kind == "int":
            return int(float(raw))
        if kind == "float":
            return float(raw)
        if kind == "json":
            if isinstance(raw, (dict, list)):
                return raw
            s = str(raw).strip()
            if s.isdigit():  # -O3: the optimization level
                return {"level": int(s)}
            return json.loads(s)
    except (ValueError, TypeError):
        return str(raw)
    return raw


def parse_flags(kind: str, argv: list[str]) -> tuple[dict[str, Setting], str | None, list[str]]:
    """(settings given on the command line, positional model, unknown flags)."""
    flags = FLAGS[kind]
    by_name: dict[str, tuple[Flag, bool]] = {}
    for fl in flags:
        for n in fl.names:
            by_name[n] = (fl, True)
        for n in fl.negs:
            by_name[n] = (fl, False)
    args = _argv_after_entry(kind, argv)
    out: dict[str, Setting] = {}
    unknown: list[str] = []
    positional: str | None = None
    i = 0
    while i < len(args):
        a = args[i]
        if not a.startswith("-") or a in ("-", "--"):
            if positional is None and a not in ("-", "--"):
                positional = a
            i += 1
            continue
        name, eq, inline = a.partition("=")
        if not eq and name.startswith("-O") and len(name) > 2 and name[2:].isdigit():  # vllm -O3
            name, inline, eq = "-O", name[2:], "="
        hit = by_name.get(name)
        if hit is None:
            unknown.append(name)
            i += 1
            if not eq and i < len(args) and not args[i].startswith("-"):
                i += 1  # its value
            continue
        fl, positive = hit
        if fl.kind in ("true", "false"):
            if eq and inline.lower() in ("false", "0", "no"):
                positive = not positive
            value = positive if fl.kind == "true" else not positive
            out[fl.setting] = Setting(value, f"flag {a}")
            i += 1
            continue
        if fl.kind == "list":
            vals: list[str] = []
            if eq:
                vals = [v for v in inline.replace(",", " ").split() if v]
                i += 1
            else:
                i += 1
                while i < len(args) and not args[i].startswith("--"):
                    vals.extend(v for v in args[i].replace(",", " ").split() if v)
                    i += 1
            out[fl.setting] = Setting([int(v) if v.lstrip("-").isdigit() else v for v in vals],
                                      f"flag {name} {' '.join(vals)}".strip())
            continue
        if eq:
            raw = inline
            i += 1
        elif i + 1 < len(args):
            raw = args[i + 1]
            i += 2
        else:
            raw = None
            i += 1
        out[fl.setting] = Setting(_convert(fl.kind, raw), f"flag {name} {raw}" if raw is not None else f"flag {name}")
    return out, positional, unknown


def _yaml_settings(kind: str, text: str, path: str) -> dict[str, Setting]:
    """Settings from a config YAML: vLLM/SGLang --config (keys = flag names), TensorRT-LLM extra options.

    The text is the host's: parsed within orchestrator.safeload's bounds (an alias bomb or deep nesting is refused,
    not expanded), at most CONFIG_MAX_SETTINGS keys read; a value that does not convert ends the reading (what was
    read before it is kept)."""
    from orchestrator.limits import CONFIG_MAX_SETTINGS
    from orchestrator.safeload import SafeLoadError, load_yaml

    try:
        data = load_yaml(text, source=f"config file {path}", fast=True) or {}
    except SafeLoadError:
        return {}
    if not isinstance(data, dict):
        return {}
    src = f"config file {path}"
    out: dict[str, Setting] = {}
    try:
        return _yaml_settings_of(kind, dict(list(data.items())[:CONFIG_MAX_SETTINGS]), src, out)
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError):
        return out


def _yaml_settings_of(kind: str, data: dict[str, Any], src: str, out: dict[str, Setting]) -> dict[str, Setting]:
    if kind in ("vllm", "sglang"):
        argv = []
        for k, v in data.items():
            flag = "--" + str(k).replace("_", "-")
            if isinstance(v, bool):
                if v:
                    argv.append(flag)
                elif kind == "vllm":
                    argv.append("--no-" + flag[2:])
            elif isinstance(v, (dict, list)):
                argv += [flag, json.dumps(v)]
            else:
                argv += [flag, str(v)]
        got, _, _ = parse_flags(kind, ["x", "-m", "x", *argv])
        for k, s in got.items():
            out[k] = Setting(s.value, src)
        return out
    # TensorRT-LLM LLM API options (llmapi/llm_args.py)
    simple = {"tensor_parallel_size": ("tp", int), "pipeline_parallel_size": ("pp", int),
              "moe_expert_parallel_size": ("ep", int), "max_batch_size": ("max_num_seqs", int),
              "max_num_tokens": ("max_num_batched_tokens", int), "max_seq_len": ("max_model_len", int),
              "enable_chunked_prefill": ("chunked_prefill", bool), "attn_backend": ("attention_backend", str),
              "enable_attention_dp": ("dp_attention", bool), "backend": ("backend", str),
              "disable_overlap_scheduler": ("disable_overlap_scheduler", bool)}
    for key, (setting, typ) in simple.items():
        if key in data and data[key] is not None:
            out[setting] = Setting(typ(data[key]), f"{src} ({key})")
    kv = data.get("kv_cache_config") or {}
    if isinstance(kv, dict):
        if kv.get("dtype") is not None:
            out["kv_cache_dtype"] = Setting(str(kv["dtype"]), f"{src} (kv_cache_config.dtype)")
        if kv.get("free_gpu_memory_fraction") is not None:
            out["gpu_memory_utilization"] = Setting(float(kv["free_gpu_memory_fraction"]),
                                                    f"{src} (kv_cache_config.free_gpu_memory_fraction)")
        if kv.get("enable_block_reuse") is not None:
            out["prefix_caching"] = Setting(bool(kv["enable_block_reuse"]), f"{src} (kv_cache_config.enable_block_reuse)")
        if kv.get("max_tokens") is not None:
            out["max_total_tokens"] = Setting(int(kv["max_tokens"]), f"{src} (kv_cache_config.max_tokens)")
    sched = data.get("scheduler_config") or {}
    if isinstance(sched, dict) and sched.get("capacity_scheduler_policy"):
        out["scheduler_policy"] = Setting(str(sched["capacity_scheduler_policy"]),
                                          f"{src} (scheduler_config.capacity_scheduler_policy)")
    if "cuda_graph_config" in data:
        cg = data["cuda_graph_config"]
        if cg is None:
            out["cuda_graphs"] = Setting(False, f"{src} (cuda_graph_config: null)")
        elif isinstance(cg, dict):
            out["cuda_graphs"] = Setting(True, f"{src} (cuda_graph_config)")
            if cg.get("batch_sizes"):
                out["cuda_graph_sizes"] = Setting(list(cg["batch_sizes"]), f"{src} (cuda_graph_config.batch_sizes)")
            if cg.get("max_batch_size") is not None:
                out["cuda_graph_max_bs"] = Setting(int(cg["max_batch_size"]), f"{src} (cuda_graph_config.max_batch_size)")
    elif "use_cuda_graph" in data:  # TensorRT-LLM < 1.0
        out["cuda_graphs"] = Setting(bool(data["use_cuda_graph"]), f"{src} (use_cuda_graph)")
        if data.get("cuda_graph_batch_sizes"):
            out["cuda_graph_sizes"] = Setting(list(data["cuda_graph_batch_sizes"]), f"{src} (cuda_graph_batch_sizes)")
    moe = data.get("moe_config") or {}
    if isinstance(moe, dict) and moe.get("backend"):
        out["moe_backend"] = Setting(str(moe["backend"]), f"{src} (moe_config.backend)")
    return out


def _default(value: Any, where: str) -> Setting:
    return Setting(value, f"default ({where})", default=True)


HARVESTED: dict[str, dict[str, str]] = {
    "vllm": {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "dp": "data_parallel_size",
             "enforce_eager": "enforce_eager", "gpu_memory_utilization": "gpu_memory_utilization",
             "kv_cache_dtype": "kv_cache_dtype", "scheduler_policy": "scheduling_policy"},
    "sglang": {"tp": "tp_size", "pp": "pp_size", "dp": "dp_size", "ep": "ep_size", "torch_compile": "enable_torch_compile",
               "kv_cache_dtype": "kv_cache_dtype", "scheduler_policy": "schedule_policy",
               "max_num_batched_tokens": "max_prefill_tokens", "metrics_enabled": "enable_metrics",
               "quantization": "quantization"},
    "sglang_not": {"cuda_graphs": "disable_cuda_graph", "prefix_caching": "disable_radix_cache"},
    "tgi": {"max_num_seqs": "max_concurrent_requests"},
    "tensorrt_llm": {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "max_num_seqs": "max_batch_size",
                     "max_num_batched_tokens": "max_num_tokens",
                     "gpu_memory_utilization": "kv_cache_config.free_gpu_memory_fraction",
                     "backend": "backend", "prefix_caching": "kv_cache_config.enable_block_reuse",
                     "chunked_prefill": "enable_chunked_prefill", "kv_cache_dtype": "kv_cache_config.dtype",
                     "attention_backend": "attn_backend"},
}
"""The effective-config settings whose defaults come from the harvested knowledge base (knowledge/settings), per
engine: setting -> the engine's own field name (`sglang_not`: the field is the negation, disable_*)."""


def _harvested(project: str, field: str, version: str | None) -> Setting | None:
    """The default of `field` at `version`, from knowledge/settings (harvested from the release's own definitions);
    None where the data has no literal default (computed at start-up)."""
    docs = [d for d in kb.find(field, project) if d.kind in ("cli", "config")]
    if not docs:
        return None
    value, at = kb.default_at(docs[0], version)
    if kb.is_computed(value):
        return None
    if isinstance(value, str) and value.isdigit():  # clap's default_value strings (TGI)
        value = int(value)
    label = kb.project_data(project).get("label", project)
    return _default(value, f"{docs[0].source}, {label} {at or 'harvested'}")


def _harvested_defaults(s: dict[str, Setting], project: str, version: str | None) -> None:
    for setting, field in HARVESTED.get(project, {}).items():
        if setting not in s:
            d = _harvested(project, field, version)
            if d is not None and (d.value is not None or setting in ("attention_backend", "quantization")):
                s[setting] = d
    for setting, field in HARVESTED.get(project + "_not", {}).items():
        if setting not in s:
            d = _harvested(project, field, version)
            if d is not None and isinstance(d.value, bool):
                s[setting] = Setting(not d.value, d.source, default=True)


def _tier_holds(when: dict[str, Any], gpu_name: str | None, gpu_mem_mib: float, cc: str | None) -> bool | None:
    if when.get("unparsed"):
        return None
    if "min_gib" in when and gpu_mem_mib < when["min_gib"] * 1024:
        return False
    if any(n in (gpu_name or "").lower() for n in when.get("not_names", [])):
        return False
    if when.get("not_ccs"):
        if cc is None:
            return None
        if cc in when["not_ccs"]:
            return False
    if "cc_major" in when:
        if cc is None:
            return None
        if int(float(cc)) != when["cc_major"]:
            return False
    return True


def _gpu_cc(gpu_name: str | None) -> str | None:
    spec = knowledge.gpu_spec(gpu_name) if gpu_name else None
    return str(spec.cc) if spec is not None and getattr(spec, "cc", None) else None


def _vllm_batch_defaults(s: dict[str, Setting], gpu_name: str | None, gpu_mem_mib: float | None,
                         version: str | None) -> None:
    """max_num_batched_tokens / max_num_seqs of the API server, from the tiers vLLM's get_batch_defaults uses at
    this version (harvested: vllm.json `computed`)."""
    if gpu_mem_mib is None:
        return
    computed, at = kb.computed_defaults("vllm", version)
    bd = computed.get("batch_defaults")
    if not bd:
        return
    cc = _gpu_cc(gpu_name)
    for i, tier in enumerate(bd["tiers"]):
        holds = _tier_holds(tier["when"], gpu_name, gpu_mem_mib, cc)
        if holds is None:
            return  # a condition the harvest could not read, or a GPU whose CC is unknown: no default claimed
        if holds:
            where = (f"get_batch_defaults tier {i + 1} of {len(bd['tiers'])} ({_tier_words(tier['when'])}), API "
                     f"server, {bd['source']} at vLLM {at}")
            for name in ("max_num_batched_tokens", "max_num_seqs"):
                if tier.get(name) is not None:
                    s.setdefault(name, _default(tier[name], where))
            return


def _tier_words(when: dict[str, Any]) -> str:
    words = [f"GPU >= {when['min_gib']} GiB"] if "min_gib" in when else []
    words += [f"not {n.upper()}" for n in when.get("not_names", [])] + [f"not CC {c}" for c in when.get("not_ccs", [])]
    return ", ".join(words) or "any other GPU"


def _vllm_cudagraph_default(s: dict[str, Setting], gpu_name: str | None, version: str | None) -> None:
    """The largest CUDA-graph capture size vLLM picks when none is given (harvested from _set_cudagraph_sizes)."""
    computed, at = kb.computed_defaults("vllm", version)
    cg = computed.get("cudagraph_max")
    seqs = s.get("max_num_seqs")
    if not cg or not (seqs and isinstance(seqs.value, int)):
        return
    cc = _gpu_cc(gpu_name)
    cap = None
    for c in cg["caps"]:
        holds = _tier_holds(c["when"], gpu_name, float("inf"), cc)
        if holds is None:
            return
        if holds:
            cap = c["value"]
            break
    if cap is None:
        return
    value = min(seqs.value * cg["factor"], cap)  # decode_query_len 1 (no speculative decoding)
    how = f"min({cg['factor']} x max_num_seqs, {cap})"
    tokens = s.get("max_num_batched_tokens")
    if cg.get("min_batched_tokens") and tokens and isinstance(tokens.value, int):
        value, how = min(value, tokens.value), f"min(max_num_batched_tokens, {how})"
    s["cuda_graph_max_bs"] = _default(value, f"{cg['source']} at vLLM {at}: {how}")


def _vllm_defaults(s: dict[str, Setting], env: dict[str, str], gpu_name: str | None, gpu_mem_mib: float | None,
                   version: str | None) -> None:
    _harvested_defaults(s, "vllm", version)
    s.setdefault("block_size", _default(16, "vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE; the attention "
                                            "backend may prefer another (platforms/interface.py)"))
    s.setdefault("chunked_prefill", _default(True, "always on in the V1 engine"))
    s.setdefault("prefix_caching", _default(True, "on by default in the V1 engine"))
    _vllm_batch_defaults(s, gpu_name, gpu_mem_mib, version)
    # Expert parallelism: --enable-expert-parallel puts the experts on TP x DP ranks.
    ep_on = s.get("expert_parallel")
    tp = s["tp"].value if s.get("tp") and isinstance(s["tp"].value, int) else 1
    dp = s["dp"].value if s.get("dp") and isinstance(s["dp"].value, int) else 1
    if ep_on is not None and ep_on.value:
        s["ep"] = Setting(tp * dp, f"{ep_on.source}: EP = TP x DP = {tp * dp}")
    else:
        s.setdefault("ep", _default(1, "vllm/engine/arg_utils.py: expert parallelism off"))
    # CUDA graphs: enforce_eager, or compilation_config cudagraph_mode NONE, turns them off.
    cc = s.get("compilation_config")
    cc_val: dict[str, Any] = {}
    cc_src = ""  # read only when cc_val is not empty, so cc is set
    if cc is not None and isinstance(cc.value, dict):
        cc_val, cc_src = cc.value, cc.source
    mode = str(cc_val.get("cudagraph_mode", "")).upper()
    if s.get("enforce_eager") and s["enforce_eager"].value:
        s["cuda_graphs"] = Setting(False, s["enforce_eager"].source)
    elif mode == "NONE":
        s["cuda_graphs"] = Setting(False, f"{cc_src}: cudagraph_mode NONE")
    else:
        s.setdefault("cuda_graphs", _default(True, "CUDA graphs captured unless --enforce-eager"))
        # (a served config's values are the host's: a number where a list belongs, a string or infinity where a
        # number does, is not read rather than raised on: it cost every engine's report)
        if isinstance(cc_val.get("cudagraph_capture_sizes"), list) and cc_val["cudagraph_capture_sizes"]:
            s["cuda_graph_sizes"] = Setting(list(cc_val["cudagraph_capture_sizes"]), f"{cc_src}")
        if isinstance(cc_val.get("max_cudagraph_capture_size"), int) and cc_val["max_cudagraph_capture_size"] > 0:
            s["cuda_graph_max_bs"] = Setting(int(cc_val["max_cudagraph_capture_size"]), f"{cc_src}")
        if "cuda_graph_max_bs" not in s:
            if s.get("cuda_graph_sizes") and isinstance(s["cuda_graph_sizes"].value, list) and s["cuda_graph_sizes"].value:
                nums = [v for v in s["cuda_graph_sizes"].value if isinstance(v, int)]
                if nums:
                    s["cuda_graph_max_bs"] = Setting(max(nums), s["cuda_graph_sizes"].source)
            elif s.get("max_cudagraph_capture_size"):
                s["cuda_graph_max_bs"] = s["max_cudagraph_capture_size"]
            else:
                _vllm_cudagraph_default(s, gpu_name, version)
    if "attention_backend" not in s and env.get("VLLM_ATTENTION_BACKEND"):
        s["attention_backend"] = Setting(env["VLLM_ATTENTION_BACKEND"], "env VLLM_ATTENTION_BACKEND")
    s.setdefault("attention_backend", _default("auto", "chosen by vllm/platforms/cuda.py for the GPU, dtype, head size"))
    s.setdefault("quantization", _default(None, "from the checkpoint's config"))


def _sglang_defaults(s: dict[str, Setting], env: dict[str, str], version: str | None = None) -> None:
    src = "python/sglang/srt/server_args.py"
    _harvested_defaults(s, "sglang", version)
    s.setdefault("attention_backend", _default("auto", src + ": attention_backend None, chosen at start-up"))
    cps = s.get("chunked_prefill_size")
    if cps is not None and isinstance(cps.value, int):
        s["chunked_prefill"] = Setting(cps.value > 0, cps.source + (" (-1 disables)" if cps.value <= 0 else ""))
    else:
        s.setdefault("chunked_prefill", _default(True, src + ": chunked_prefill_size chosen by GPU memory"))
    s.setdefault("gpu_memory_utilization", _default(None, src + ": mem_fraction_static chosen by GPU memory and TP"))
    s.setdefault("max_num_seqs", _default(None, src + ": max_running_requests from the KV pool"))
    graphs = s.get("cuda_graphs")
    if graphs is not None:
        s["enforce_eager"] = Setting(not graphs.value, graphs.source, graphs.default)


def _trtllm_defaults(s: dict[str, Setting], version: str | None = None) -> None:
    _harvested_defaults(s, "tensorrt_llm", version)
    tp = s.get("tp")
    s.setdefault("ep", _default(tp.value if tp is not None and isinstance(tp.value, int) else 1,
                                "tensorrt_llm/llmapi/llm_args.py: MoE EP follows TP when unset"))
    s.setdefault("dp", _default(1, "tensorrt_llm/llmapi/llm_args.py"))
    s.setdefault("scheduler_policy", _default("GUARANTEED_NO_EVICT", "llm_args.py SchedulerConfig.capacity_scheduler_policy"))
    if "cuda_graphs" in s:
        s["enforce_eager"] = Setting(not s["cuda_graphs"].value, s["cuda_graphs"].source)


def _tgi_defaults(s: dict[str, Setting], env: dict[str, str], version: str | None = None) -> None:
    for name, setting in TGI_ENV.items():
        if setting not in s and env.get(name):
            s[setting] = Setting(_convert("int", env[name]) if setting in ("tp", "max_num_seqs",
                                 "max_num_batched_tokens", "max_total_tokens") else env[name], f"env {name}")
    s.setdefault("tp", _default(None, TGI_LAUNCHER + ": all visible GPUs when --num-shard is unset"))
    _harvested_defaults(s, "tgi", version)
    sizes = s.get("cuda_graph_sizes")
    if sizes is not None:
        vals = [v for v in (sizes.value or []) if isinstance(v, int) and v > 0]
        s["cuda_graphs"] = Setting(bool(vals), sizes.source + ("" if vals else " (0 disables)"))
        if vals:
            s["cuda_graph_max_bs"] = Setting(max(vals), sizes.source)
    else:
        s["cuda_graph_sizes"] = _default([1, 2, 4, 8, 16, 32], "launcher/src/main.rs")
        s["cuda_graphs"] = _default(True, "launcher/src/main.rs: cuda graphs [1, 2, 4, 8, 16, 32]")
        s["cuda_graph_max_bs"] = _default(32, "launcher/src/main.rs")
    s["enforce_eager"] = Setting(not s["cuda_graphs"].value, s["cuda_graphs"].source, s["cuda_graphs"].default)
    if env.get("ATTENTION"):
        s["attention_backend"] = Setting(env["ATTENTION"], "env ATTENTION")
    else:
        s.setdefault("attention_backend", _default("flashinfer", "launcher/src/main.rs resolve_attention (CC >= 8.0)"))
    if env.get("PREFIX_CACHING") or env.get("USE_PREFIX_CACHING"):
        v = env.get("PREFIX_CACHING") or env.get("USE_PREFIX_CACHING") or ""
        s["prefix_caching"] = Setting(v.lower() in ("1", "true"), "env PREFIX_CACHING")
    else:
        s.setdefault("prefix_caching", _default(True, "launcher/src/main.rs resolve_attention"))
    s.setdefault("pp", _default(1, "TGI has no pipeline parallelism"))
    s.setdefault("dp", _default(1, "TGI shards with TP only"))
    s.setdefault("ep", _default(1, "TGI shards with TP only"))
    s.setdefault("chunked_prefill", _default(True, "TGI v3 prefill chunking with flashinfer/flashdecoding"))
    s.setdefault("kv_cache_dtype", _default("auto", "launcher/src/main.rs"))


def effective_config(kind: str, argv: list[str], *, env: dict[str, str] | None = None,
                     config_files: Mapping[str, str | None] | None = None, gpu_name: str | None = None,
                     gpu_mem_mib: float | None = None, version: str | None = None) -> tuple[dict[str, Setting], str | None]:
    """(effective settings, model) of an engine started with argv: flags, then its config file, then defaults."""
    env = env or {}
    flags, positional, _ = parse_flags(kind, argv)
    settings: dict[str, Setting] = {}
    cfg = flags.get("config_file")
    if cfg is not None and config_files:
        text = config_files.get(str(cfg.value))
        if text:
            settings.update(_yaml_settings(kind, text, str(cfg.value)))
    settings.update(flags)  # a flag wins over the config file
    named = settings.get("model")
    model = named.value if named else positional
    defaults: dict[str, Callable[[], None]] = {
        "vllm": lambda: _vllm_defaults(settings, env, gpu_name, gpu_mem_mib, version),
        "sglang": lambda: _sglang_defaults(settings, env, version),
        "trtllm": lambda: _trtllm_defaults(settings, version),
        "tgi": lambda: _tgi_defaults(settings, env, version),
    }
    defaults[kind]()
    return settings, model
