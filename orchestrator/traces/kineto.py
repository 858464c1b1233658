"""Read a Kineto / PyTorch-profiler chrome trace (`.json` or `.json.gz`) as a stream of events into `RankColumns`.

Format: a JSON object with `deviceProperties`, `distributedInfo` (rank, world size) and `traceEvents`, each event
`{"ph": "X", "cat", "name", "pid", "tid", "ts" (us), "dur" (us), "args": {...}}` (Kineto's output_json.cpp:
https://github.com/pytorch/kineto/blob/main/libkineto/src/output_json.cpp). GPU activities carry `args.stream`,
`args.device`, `args.correlation` (the CUDA runtime call that launched them) and `args.External id` (the CPU op).
Events are parsed one at a time with ijson's C backend; python functions and CPU ops are counted and dropped
(HTA skips `python_function` by default too: hta/configs/parser_config.py).
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path
from typing import IO, Any, Iterator

import ijson  # type: ignore[import-untyped]

from orchestrator.traces.store import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, Annotation, RankColumns

GEMM_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
                      "aten::_scaled_mm", "aten::_addmm_activation"})
"""CPU ops whose `Input Dims` give a GEMM's M, N, K (recorded when the profiler ran with record_shapes)."""

_GPU_KINDS = {"kernel": KIND_KERNEL, "gpu_memcpy": KIND_MEMCPY, "memcpy": KIND_MEMCPY, "gpu_memset": KIND_MEMSET,
              "memset": KIND_MEMSET}
_RUNTIME = frozenset({"cuda_runtime", "cuda_driver", "runtime", "driver"})
_ANNOTATION = frozenset({"user_annotation", "cuda_profiler_range"})
_HOST_ONLY = frozenset({"python_function"})
_RANK_IN_NAME = (re.compile(r"-TP-(\d+)-"), re.compile(r"rank[-_]?(\d+)", re.I), re.compile(r"[_-]tp(\d+)[_.-]", re.I))
"""Rank in a per-rank file name: SGLang's `{id}-TP-{tp}-DP-{dp}-PP-{pp}-EP-{ep}.trace.json.gz`
(docs/developer_guide/benchmark_and_profiling.md), `rank0`/`rank_0`/`rank-0`, `..._tp0.`."""

READ_CHUNK = 1 << 20


class TraceFormatError(ValueError):
    """The file is not a trace this reader understands; the message names the file and what is wrong."""


def open_stream(path: Path) -> IO[bytes]:
    """The file's bytes, decompressed on the fly when it is gzip (checked by magic, not by name)."""
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    if gz:
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb", buffering=READ_CHUNK)


def rank_from_name(name: str) -> int | None:
    for pat in _RANK_IN_NAME:
        m = pat.search(name)
        if m:
            return int(m.group(1))
    return None


def read_header(path: Path) -> dict[str, Any]:
    """The top-level keys written before `traceEvents` (deviceProperties, distributedInfo, ...): a short scan."""
    out: dict[str, Any] = {}
    with open_stream(path) as f:
        builder: ijson.ObjectBuilder | None = None
        key = ""
        try:
            for prefix, event, value in ijson.parse(f, use_float=True):
                if builder is not None:
                    builder.event(event, value)
                    if prefix == key and event in ("end_map", "end_array"):
                        out[key] = builder.value
                        builder = None
                    elif prefix == key and event in ("string", "number", "boolean", "null"):
                        out[key] = builder.value
                        builder = None
                    continue
                if prefix == "" and event == "map_key":
                    if value == "traceEvents":
                        return out
                    key = value
                    builder = ijson.ObjectBuilder()
                elif prefix == "" and event == "start_array":
                    raise TraceFormatError(f"{path}: a JSON array at the top, not a Kineto trace object "
                                           "(expected an object with traceEvents)")
        except ijson.JSONError as e:
            raise TraceFormatError(f"{path}: not valid JSON ({e})") from None
        except (OSError, EOFError) as e:
            raise TraceFormatError(f"{path}: cannot be read ({e})") from None
    raise TraceFormatError(f"{path}: no traceEvents key (not a Kineto / PyTorch profiler trace)")


def _events(path: Path) -> Iterator[dict[str, Any]]:
    with open_stream(path) as f:
        try:
            yield from ijson.items(f, "traceEvents.item", use_float=True)
        except ijson.JSONError as e:
            raise TraceFormatError(f"{path}: the trace breaks off or is not valid JSON ({e})") from None
        except (OSError, EOFError) as e:
            raise TraceFormatError(f"{path}: cannot be read ({e}); a truncated .gz?") from None


def _int(v: Any, default: int = -1) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return default


def read_kineto(path: Path, include_host: bool = False) -> RankColumns:
    """Read one rank's trace into columns. `include_host`: keep python functions as host ranges too."""
    header = read_header(path)
    cols = RankColumns(source=str(path), fmt="kineto")
    dist = header.get("distributedInfo")
    if isinstance(dist, dict) and dist.get("rank") is not None:
        cols.rank = _int(dist.get("rank"), 0)
    else:
        cols.rank = rank_from_name(path.name)
    props = header.get("deviceProperties")
    if isinstance(props, list) and props and isinstance(props[0], dict):
        cols.gpu_name = props[0].get("name")
    n = 0
    for e in _events(path):
        n += 1
        if e.get("ph") != "X":
            cols.skip("metadata" if e.get("ph") == "M" else str(e.get("cat") or e.get("ph")))
            continue
        cat = str(e.get("cat") or "").lower()
        kind = _GPU_KINDS.get(cat)
        args = e.get("args") or {}
        if kind is not None:
            cols.add_gpu(kind, str(e.get("name", "")), float(e["ts"]), float(e.get("dur") or 0.0),
                         _int(args.get("stream", e.get("tid"))), _int(args.get("device", e.get("pid"))),
                         _int(args.get("correlation")), _int(args.get("External id")))
        elif cat in _RUNTIME:
            cols.add_runtime(str(e.get("name", "")), float(e["ts"]), float(e.get("dur") or 0.0),
                             _int(args.get("correlation")), _int(e.get("tid")))
        elif cat in _ANNOTATION or (include_host and cat in _HOST_ONLY):
            ts = float(e["ts"])
            cols.annotations.append(Annotation(str(e.get("name", "")), ts, ts + float(e.get("dur") or 0.0),
                                               _int(e.get("tid"))))
        elif cat == "cpu_op" and e.get("name") in GEMM_OPS and "Input Dims" in args:
            cols.add_shape(_int(args.get("External id")), str(e["name"]), list(args["Input Dims"]),
                           list(args.get("Input type") or []))
        else:
            cols.skip(cat or "other")
    cols.events_read = n
    if n == 0:
        raise TraceFormatError(f"{path}: traceEvents is empty (the profiler recorded nothing)")
    return cols
