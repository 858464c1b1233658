"""Pure parsers for every autotune-cache and tuned-config format, each into a `CacheFile`.

Formats (sources in tests/probes/data/README.md):
- FlashInfer autotuner JSON (`flashinfer.autotune(cache=...)`, vLLM's flashinfer_autotune_cache):
  {"_metadata": {flashinfer_version, cuda_version, cublas_version, cudnn_version, cudnn_frontend_version, gpu},
   "('op', 'Runner', shapes...)": ["Runner", tactic], ...}; tactic -1 is the fallback.
- TensorRT-LLM autotuner cache: {"metadata": {lib_version, device_name, device_capability},
  "cache_data": {key: {runner_id, tactic, min_time}}}.
- vLLM / SGLang fused-MoE configs: file name E=..,N=..,device_name=..[,dtype=..][,block_shape=[..]].json (SGLang adds
  [,per_channel_quant=True][_down]; vLLM names every H200-family GPU NVIDIA_H200), body
  {"<M>": {BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, num_warps, num_stages}, ["triton_version"]}.
- Triton `<fn>.autotune.json`: {"key": [...], "configs_timings": [[config, [median, p20, p80]], ...]}.
- Inductor `*.best_config`: one JSON object of the chosen Triton config.
- PyTorch TunableOp CSV: `Validator,NAME,VALUE` rows, then `OpSignature,ParamSignature,Solution,TimeMs` rows.

Each parser registers itself for the formats it reads (`@parser("triton_autotune")`); `parse_cache_file` dispatches
through the registry, and knowledge/caches.yaml names the format of every file the cache probe collects. Adding a
format is one decorated function here plus its caches.yaml entry.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, cast, overload

from orchestrator import knowledge
from orchestrator.probes.results import CacheFile, TunedEntry

SAMPLE = 8
"""Entries kept per file for evidence excerpts."""


@dataclass
class CacheContext:
    """What a cache is compared against: the installed versions and this host's GPU."""

    device_name: str | None = None
    compute_cap: str | None = None
    packages: dict[str, str] = field(default_factory=dict)
    torch_cuda: str | None = None


def device_file_name(name: str) -> str:
    """A GPU name as vLLM and SGLang spell it in config file names (spaces to underscores)."""
    return name.replace(" ", "_")


def vllm_device_file_name(name: str) -> str:
    """The device name vLLM's fused-MoE lookup uses: spaces to underscores, and any H200-family GPU as NVIDIA_H200
    (vllm/model_executor/layers/fused_moe/fused_moe.py get_config_file_name)."""
    spelled = device_file_name(name)
    return "NVIDIA_H200" if "H200" in spelled.split("_") else spelled


ParseFn = Callable[[str, "str | None", CacheContext, str], CacheFile]
"""A parser that is also called without the file's text (`needs_text=False`: the file name says enough)."""
TextParseFn = Callable[[str, str, CacheContext, str], CacheFile]
"""A parser of the file's text: `parse_cache_file` calls it only with text."""


@dataclass(frozen=True)
class Parser:
    fn: ParseFn
    needs_text: bool = True
    """False: the file name alone says enough (fused-MoE configs outside this device are listed, not read)."""


PARSERS: dict[str, Parser] = {}
"""Cache format -> its parser."""


@overload
def parser(*formats: str, needs_text: Literal[True] = True) -> Callable[[TextParseFn], TextParseFn]: ...


@overload
def parser(*formats: str, needs_text: Literal[False]) -> Callable[[ParseFn], ParseFn]: ...


def parser(
    *formats: str, needs_text: bool = True
) -> Callable[[TextParseFn], TextParseFn] | Callable[[ParseFn], ParseFn]:
    """Register fn as the parser of these formats (fn(path, text, ctx, fmt) -> CacheFile)."""

    def register(fn: TextParseFn) -> TextParseFn:
        for fmt in formats:
            if fmt in PARSERS:
                raise ValueError(f"two parsers for cache format {fmt!r}")
            # a text parser is a ParseFn as the registry calls it: parse_cache_file passes None only when
            # needs_text is False, and the overloads give those a ParseFn
            PARSERS[fmt] = Parser(cast(ParseFn, fn), needs_text)
        return fn

    return register


def _same_device(found: str | None, device: str | None, fmt: str | None = None) -> bool | None:
    if not found or not device:
        return None
    spell = vllm_device_file_name if fmt == "vllm_fused_moe" else device_file_name
    norm = lambda s: spell(s.strip()).lower()  # noqa: E731
    return norm(found) == norm(device)


def _base_version(v: str | None) -> str | None:
    return v.split("+", 1)[0] if v else v


def _expected(ctx: CacheContext, fmt: str) -> dict[str, str | None]:
    """Metadata field -> the installed version it must equal, from caches.yaml `compare` of the format."""
    info = knowledge.cache_format(fmt)
    out: dict[str, str | None] = {}
    for key, pkgs in (info.compare if info else {}).items():
        have = [ctx.torch_cuda if p == "torch_cuda" else ctx.packages.get(p) for p in pkgs]
        out[key] = next((v for v in have if v), None)
    return out


def _mismatch(meta: dict[str, Any], expected: dict[str, str | None]) -> list[str]:
    """Fields of meta that disagree with expected; '*' in the metadata is a wildcard, None is unknown."""
    out = []
    for key, want in expected.items():
        have = meta.get(key)
        if have is None or want is None or have == "*":
            continue
        if _base_version(str(have)) != _base_version(str(want)):
            out.append(f"{key}: cache {have!r} vs installed {want!r}")
    return out


def _parse_key(key: str) -> tuple[str, str | None, str | None]:
    """(op, runner, shape) from a stringified key tuple such as "('fp4_gemm', 'Runner', ((8, 7168),))"."""
    try:
        value = ast.literal_eval(key)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return key, None, None
    if isinstance(value, tuple) and value:
        op = str(value[0])
        runner = str(value[1]) if len(value) > 1 and isinstance(value[1], str) else None
        rest = value[2:] if runner is not None else value[1:]
        return op, runner, str(rest[0] if len(rest) == 1 else rest) if rest else None
    return str(value), None, None


def _is_fallback(tactic: Any) -> bool:
    return tactic == -1 or tactic == "-1"


def _finish(cf: CacheFile, entries: list[TunedEntry]) -> CacheFile:
    cf.entries = len(entries)
    cf.fallback_entries = sum(e.fallback for e in entries)
    ops: list[str] = []
    for e in entries:
        if e.op not in ops:
            ops.append(e.op)
    cf.ops = ops[:50]
    # Fallbacks first in the sample: they are what a diagnosis cites.
    cf.sample = sorted(entries, key=lambda e: not e.fallback)[:SAMPLE]
    return cf


def _json_object(cf: CacheFile, text: str, expected: str = "a JSON object", required: str | None = None) -> dict | None:
    """The file's JSON object, or None with cf.error saying what is wrong (not JSON, or not the expected shape)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        cf.error = f"not valid JSON: {exc}"
        return None
    if not isinstance(data, dict) or (required is not None and required not in data):
        cf.error = f"expected {expected}"
        return None
    return data


@parser("flashinfer_autotune", "vllm_flashinfer_autotune")
def parse_flashinfer_autotune(path: str, text: str, ctx: CacheContext, fmt: str = "flashinfer_autotune") -> CacheFile:
    """FlashInfer autotuner cache JSON: entries, fallback tactics, metadata vs installed versions and GPU."""
    cf = CacheFile(format=fmt, path=path, size_bytes=len(text.encode()))
    data = _json_object(cf, text)
    if data is None:
        return cf
    meta = data.get("_metadata") or {}
    cf.metadata = meta if isinstance(meta, dict) else {}
    cf.metadata_mismatch = _mismatch(cf.metadata, _expected(ctx, fmt))
    gpu = cf.metadata.get("gpu")
    if gpu and gpu != "*":
        cf.device_name = str(gpu)
        cf.matches_device = _same_device(cf.device_name, ctx.device_name)
        if cf.matches_device is False:
            cf.metadata_mismatch.append(f"gpu: cache {gpu!r} vs this GPU {ctx.device_name!r}")
    entries = []
    for key, value in data.items():
        if key == "_metadata":
            continue
        op, runner, shape = _parse_key(key)
        tactic = value
        if isinstance(value, list) and len(value) == 2:
            runner, tactic = value[0], value[1]
        entries.append(TunedEntry(op=op, runner=runner, tactic=tactic, shape=shape, fallback=_is_fallback(tactic)))
    return _finish(cf, entries)


@parser("trtllm_autotuner")
def parse_trtllm_autotuner(path: str, text: str, ctx: CacheContext, fmt: str = "trtllm_autotuner") -> CacheFile:
    """TensorRT-LLM autotuner cache: metadata vs installed tensorrt-llm and GPU; entries with tactic -1 fell back."""
    cf = CacheFile(format=fmt, path=path, size_bytes=len(text.encode()))
    data = _json_object(cf, text, "{'metadata': ..., 'cache_data': ...}", required="cache_data")
    if data is None:
        return cf
    cf.metadata = data.get("metadata") or {}
    cf.metadata_mismatch = _mismatch(cf.metadata, _expected(ctx, fmt))
    name = cf.metadata.get("device_name")
    if name:
        cf.device_name = str(name)
        cf.matches_device = _same_device(cf.device_name, ctx.device_name)
        if cf.matches_device is False:
            cf.metadata_mismatch.append(f"device_name: cache {name!r} vs this GPU {ctx.device_name!r}")
    cap = cf.metadata.get("device_capability")
    if cap is not None and ctx.compute_cap:
        have = ".".join(str(c) for c in cap) if isinstance(cap, (list, tuple)) else str(cap)
        if have.replace(".", "") != ctx.compute_cap.replace(".", ""):
            cf.metadata_mismatch.append(f"device_capability: cache {have} vs this GPU {ctx.compute_cap}")
    entries = []
    for key, value in (data.get("cache_data") or {}).items():
        op, runner, shape = _parse_key(key)
        tactic = value.get("tactic") if isinstance(value, dict) else value
        if isinstance(value, dict) and value.get("runner_id") is not None:
            runner = runner or str(value["runner_id"])
        entries.append(TunedEntry(op=op, runner=runner, tactic=tactic, shape=shape, fallback=_is_fallback(tactic)))
    return _finish(cf, entries)


_MOE_NAME = re.compile(
    r"^E=(?P<E>\d+),N=(?P<N>\d+),device_name=(?P<device>[^,]+?)"
    r"(?:,dtype=(?P<dtype>[^,]+?))?(?:,block_shape=\[(?P<block>[\d,\s]*)\])?"
    r"(?P<per_channel>,per_channel_quant=True)?(?P<suffix>_down|_up)?\.json$"
)


def parse_moe_config_name(name: str) -> dict[str, Any] | None:
    """E, N, device_name, dtype, block_shape from a vLLM/SGLang fused-MoE config file name (None if not one)."""
    m = _MOE_NAME.match(os.path.basename(name))
    if not m:
        return None
    out: dict[str, Any] = {"E": int(m["E"]), "N": int(m["N"]), "device_name": m["device"]}
    if m["dtype"]:
        out["dtype"] = m["dtype"]
    if m["block"] is not None:
        out["block_shape"] = [int(x) for x in m["block"].split(",") if x.strip()]
    if m["per_channel"]:
        out["per_channel_quant"] = True
    if m["suffix"]:
        out["part"] = m["suffix"][1:]
    return out


@parser("vllm_fused_moe", "sglang_fused_moe", needs_text=False)
def parse_fused_moe_config(path: str, text: str | None, ctx: CacheContext, fmt: str = "vllm_fused_moe") -> CacheFile:
    """A fused-MoE tuned config: which device and expert shape, and the batch sizes (M) it was tuned for."""
    cf = CacheFile(format=fmt, path=path, size_bytes=len(text.encode()) if text is not None else None)
    shape = parse_moe_config_name(path)
    if shape is None:
        cf.error = "file name is not E=..,N=..,device_name=...json"
        return cf
    cf.device_name = shape.pop("device_name")
    cf.matches_device = _same_device(cf.device_name, ctx.device_name, fmt)
    cf.expert_shape = shape
    if text is None:
        return cf
    data = _json_object(cf, text, "a JSON object keyed by batch size")
    if data is None:
        return cf
    if "triton_version" in data:
        cf.metadata["triton_version"] = data["triton_version"]
        cf.metadata_mismatch = _mismatch(cf.metadata, _expected(ctx, fmt))
    entries = [
        TunedEntry(op="fused_moe", tactic=cfg, shape=f"M={m}")
        for m, cfg in data.items()
        if m != "triton_version" and isinstance(cfg, dict)
    ]
    return _finish(cf, entries)


@parser("triton_autotune")
def parse_triton_autotune(path: str, text: str, ctx: CacheContext, fmt: str = "triton_autotune") -> CacheFile:
    """Triton `<fn>.autotune.json`: the key and the fastest config (by median time)."""
    cf = CacheFile(format=fmt, path=path, size_bytes=len(text.encode()))
    data = _json_object(cf, text, "{'key': ..., 'configs_timings': ...}", required="configs_timings")
    if data is None:
        return cf
    fn = os.path.basename(path).removesuffix(".autotune.json")
    timings = [ct for ct in data.get("configs_timings") or [] if isinstance(ct, list) and len(ct) == 2]
    cf.metadata = {"key": data.get("key"), "configs_tried": len(timings)}
    if timings:
        best_cfg, best_t = min(timings, key=lambda ct: _median(ct[1]))
        cf.metadata["best_ms"] = _median(best_t)
        entry = TunedEntry(op=fn, tactic=best_cfg, shape=json.dumps(data.get("key")))
        return _finish(cf, [entry])
    return _finish(cf, [])


def _median(t: Any) -> float:
    if isinstance(t, list) and t:
        return float(t[0])
    if isinstance(t, (int, float)):
        return float(t)
    return float("inf")


@parser("inductor")
def parse_inductor_best_config(path: str, text: str, ctx: CacheContext, fmt: str = "inductor") -> CacheFile:
    """Inductor `*.best_config`: the Triton config autotuning chose for one generated kernel."""
    cf = CacheFile(format=fmt, path=path, size_bytes=len(text.encode()))
    data = _json_object(cf, text)
    if data is None:
        return cf
    op = os.path.basename(path).removesuffix(".best_config")
    return _finish(cf, [TunedEntry(op=op, tactic=data)])


@parser("tunableop")
def parse_tunableop_csv(path: str, text: str, ctx: CacheContext, fmt: str = "tunableop") -> CacheFile:
    """PyTorch TunableOp results: validators (versions) and one chosen solution per op and shape."""
    cf = CacheFile(format=fmt, path=path, size_bytes=len(text.encode()))
    entries = []
    for row in csv.reader(io.StringIO(text)):
        if not row or not row[0].strip():
            continue
        if row[0] == "Validator" and len(row) >= 3:
            cf.metadata[row[1]] = ",".join(row[2:])
            continue
        if len(row) < 3:
            cf.error = f"unexpected row {','.join(row)[:80]!r}"
            continue
        solution = row[2]
        entries.append(
            TunedEntry(op=row[0], shape=row[1], tactic=solution, runner=None, fallback=solution == "Default")
        )
    cf.metadata_mismatch = _mismatch(cf.metadata, _expected(ctx, fmt))
    return _finish(cf, entries)


def parse_cache_file(fmt: str, path: str, text: str | None, ctx: CacheContext) -> CacheFile:
    """Dispatch through the registry; a file whose text was not read is listed with its error."""
    p = PARSERS.get(fmt)
    if p is None:
        return CacheFile(format=fmt, path=path, error=f"no parser for {fmt}")
    if text is None and p.needs_text:
        return CacheFile(format=fmt, path=path, error="not read")
    return p.fn(path, text, ctx, fmt)
