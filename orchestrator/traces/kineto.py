"""Read a Kineto / PyTorch-profiler chrome trace (`.json` or `.json.gz`) as a stream of events into `RankColumns`.

Format: a JSON object with `deviceProperties`, `distributedInfo` (rank, world size) and `traceEvents`, each event
`{"ph": "X", "cat", "name", "pid", "tid", "ts" (us), "dur" (us), "args": {...}}` (Kineto's output_json.cpp:
https://github.com/pytorch/kineto/blob/main/libkineto/src/output_json.cpp). GPU activities carry `args.stream`,
`args.device`, `args.correlation` (the CUDA runtime call that launched them) and `args.External id` (the CPU op).
Python functions and CPU ops are counted and dropped (HTA skips `python_function` by default too:
hta/configs/parser_config.py).

The file is read a chunk at a time and each top-level value and event is decoded on its own by json's C decoder:
as fast as a streaming parser, and nothing is kept per nesting level (a parser that names each event by its path
keeps N paths of ~N characters at N levels: memory grows with the square of the nesting). Bounds (orchestrator/limits.py): one event or header value at most TRACE_EVENT_MAX_BYTES
and TRACE_MAX_DEPTH levels deep, the part before `traceEvents` at most TRACE_HEADER_MAX_BYTES, names cut at
TRACE_NAME_MAX_CHARS, and an event whose `ts`/`dur` is not a finite number within TRACE_TIME_MAX_US left out and
counted. A parse error names the byte offset, never the file's text.
"""

from __future__ import annotations

import codecs
import gzip
import json
import math
import re
import zlib
from pathlib import Path
from typing import IO, Any, Iterator

from orchestrator.limits import (TRACE_EVENT_MAX_BYTES, TRACE_HEADER_MAX_BYTES, TRACE_MAX_DEPTH, TRACE_READ_CHUNK,
                                 TRACE_TIME_MAX_US)
from orchestrator.traces.store import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, Annotation, RankColumns, clip_name

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

READ_CHUNK = TRACE_READ_CHUNK
BAD_TIME = "unusable ts/dur"
"""The `skipped` category of events whose ts or dur is missing, not a number, not finite or out of range."""
_INT64 = 1 << 63


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


def _constant(name: str) -> float:
    return float(name)  # NaN, Infinity, -Infinity: read, then refused where a number must be finite


_DECODER = json.JSONDecoder(strict=False, parse_constant=_constant)
_WS = re.compile(r"[ \t\n\r]*")


def _deeper_than(obj: Any, limit: int) -> bool:
    """Whether lists and dicts nest more than `limit` levels in obj (iterative)."""
    stack = [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if isinstance(o, (dict, list)):
            if d > limit:
                return True
            stack.extend((v, d + 1) for v in (o.values() if isinstance(o, dict) else o))
    return False


class _Stream:
    """The decompressed text of a trace, decoded one JSON value at a time from a sliding buffer."""

    def __init__(self, path: Path, f: IO[bytes]):
        self.path, self.f = path, f
        self.dec = codecs.getincrementaldecoder("utf-8")("replace")
        self.buf, self.pos, self.base, self.eof = "", 0, 0, False

    def fill(self) -> bool:
        """Append the next chunk to the buffer (dropping what was consumed); False at the end of the file."""
        if self.eof:
            return False
        try:
            raw = self.f.read(READ_CHUNK)
        except (OSError, EOFError, zlib.error) as e:
            raise TraceFormatError(f"{self.path}: cannot be read ({' '.join(str(e).split())[:120]}); "
                                   "a truncated .gz?") from None
        self.eof = not raw
        self.base += self.pos
        self.buf = self.buf[self.pos:] + self.dec.decode(raw, final=self.eof)
        self.pos = 0
        return not self.eof

    @property
    def offset(self) -> int:
        return self.base + self.pos

    def peek(self) -> str:
        """The next character that is not whitespace ('' at the end of the file), not consumed."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.fill():
                return ""

    def expect(self, chars: str, what: str) -> str:
        c = self.peek()
        if not c or c not in chars:
            found = "the end of the file" if not c else "something else"
            raise TraceFormatError(f"{self.path}: not valid JSON at character {self.offset:,} (expected {what}, "
                                   f"found {found})")
        self.pos += 1
        return c

    def value(self, what: str) -> Any:
        """The JSON value at the cursor, at most TRACE_EVENT_MAX_BYTES and TRACE_MAX_DEPTH deep."""
        self.peek()
        while True:
            start = self.pos
            try:
                obj, end = _DECODER.raw_decode(self.buf, start)
            except json.JSONDecodeError as e:
                if len(self.buf) - start > TRACE_EVENT_MAX_BYTES:
                    raise TraceFormatError(f"{self.path}: {what} at character {self.base + start:,} is longer than "
                                           f"{TRACE_EVENT_MAX_BYTES:,} characters (or not valid JSON)") from None
                if self.fill():
                    continue
                raise TraceFormatError(f"{self.path}: the trace breaks off or is not valid JSON at character "
                                       f"{self.base + e.pos:,} ({e.msg})") from None
            except RecursionError:
                raise TraceFormatError(f"{self.path}: {what} at character {self.base + start:,} is nested more than "
                                       f"{TRACE_MAX_DEPTH} levels deep") from None
            except ValueError as e:  # an integer past Python's 4,300-digit limit
                msg = "an integer too long to read" if "digits" in str(e) else " ".join(str(e).split())[:80]
                raise TraceFormatError(f"{self.path}: {what} at character {self.base + start:,}: {msg}") from None
            if end == len(self.buf) and not self.eof and self.fill():
                continue  # a number at the very end of the buffer may go on in the next chunk
            if end - start > TRACE_EVENT_MAX_BYTES:
                raise TraceFormatError(f"{self.path}: {what} at character {self.base + start:,} is longer than "
                                       f"{TRACE_EVENT_MAX_BYTES:,} characters")
            if end - start > 2 * TRACE_MAX_DEPTH and \
                    self.buf.count("[", start, end) + self.buf.count("{", start, end) > TRACE_MAX_DEPTH and \
                    _deeper_than(obj, TRACE_MAX_DEPTH):
                raise TraceFormatError(f"{self.path}: {what} at character {self.base + start:,} is nested more than "
                                       f"{TRACE_MAX_DEPTH} levels deep")
            self.pos = end
            return obj


class _Trace:
    """A Kineto trace opened for one pass: its header (the top-level values before `traceEvents`), then its events."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.f = open_stream(path)
        except OSError as e:
            raise TraceFormatError(f"{path}: cannot be read ({e.strerror or e})") from None
        self.s = _Stream(path, self.f)
        self.found_events = False

    def __enter__(self) -> _Trace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.f.close()

    def header(self) -> dict[str, Any]:
        s, out = self.s, dict[str, Any]()
        c = s.peek()
        if c == "[":
            raise TraceFormatError(f"{self.path}: a JSON array at the top, not a Kineto trace object "
                                   "(expected an object with traceEvents)")
        s.expect("{", "a JSON object")
        if s.peek() == "}":
            raise TraceFormatError(f"{self.path}: no traceEvents key (not a Kineto / PyTorch profiler trace)")
        while True:
            key = s.value("a key")
            if not isinstance(key, str):
                raise TraceFormatError(f"{self.path}: not valid JSON at character {s.offset:,} (a key that is not "
                                       "a string)")
            s.expect(":", "':'")
            if key == "traceEvents":
                self.found_events = True
                return out
            out[key] = s.value(f"the value of {key[:40]!r}")
            if s.offset > TRACE_HEADER_MAX_BYTES:
                raise TraceFormatError(f"{self.path}: more than {TRACE_HEADER_MAX_BYTES:,} characters before "
                                       "traceEvents (not a Kineto / PyTorch profiler trace)")
            if s.expect(",}", "',' or '}'") == "}":
                raise TraceFormatError(f"{self.path}: no traceEvents key (not a Kineto / PyTorch profiler trace)")

    def events(self) -> Iterator[Any]:
        s = self.s
        s.expect("[", "traceEvents to be a list")
        if s.peek() == "]":
            return
        while True:
            yield s.value("an event")
            if s.expect(",]", "',' or ']' between events") == "]":
                return


def read_header(path: Path) -> dict[str, Any]:
    """The top-level keys written before `traceEvents` (deviceProperties, distributedInfo, ...): a short scan."""
    with _Trace(path) as t:
        return t.header()


def _int(v: Any, default: int = -1) -> int:
    """An int64 column value: numbers and numeric strings; anything else (or out of range) is `default`."""
    try:
        x = int(v)
    except (TypeError, ValueError, OverflowError):
        return default
    return x if -_INT64 <= x < _INT64 else default


def _time(v: Any) -> float | None:
    """A finite ts or dur in microseconds within TRACE_TIME_MAX_US; None otherwise."""
    if isinstance(v, bool):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return x if math.isfinite(x) and abs(x) <= TRACE_TIME_MAX_US else None


def _name(v: Any) -> str:
    return clip_name(v if isinstance(v, str) else str(v) if isinstance(v, (int, float)) else "")


def read_kineto(path: Path, include_host: bool = False) -> RankColumns:
    """Read one rank's trace into columns. `include_host`: keep python functions as host ranges too."""
    cols = RankColumns(source=str(path), fmt="kineto")
    n = 0
    with _Trace(path) as t:
        header = t.header()
        dist = header.get("distributedInfo")
        if isinstance(dist, dict) and dist.get("rank") is not None:
            cols.rank = _int(dist.get("rank"), 0)
        else:
            cols.rank = rank_from_name(path.name)
        props = header.get("deviceProperties")
        if isinstance(props, list) and props and isinstance(props[0], dict) and isinstance(props[0].get("name"), str):
            cols.gpu_name = clip_name(props[0]["name"])
        for e in t.events():
            n += 1
            if not isinstance(e, dict):
                cols.skip("not an object")
                continue
            ph = e.get("ph")
            if ph != "X":
                cols.skip("metadata" if ph == "M" else _name(e.get("cat") or ph)[:64] or "other")
                continue
            cat = _name(e.get("cat")).lower()
            kind = _GPU_KINDS.get(cat)
            args = e.get("args")
            if not isinstance(args, dict):
                args = {}
            if kind is not None or cat in _RUNTIME or cat in _ANNOTATION or (include_host and cat in _HOST_ONLY):
                ts, dur = _time(e.get("ts")), _time(e.get("dur") or 0.0)
                if ts is None or dur is None or abs(ts + dur) > TRACE_TIME_MAX_US:
                    cols.skip(BAD_TIME)
                    continue
                if kind is not None:
                    cols.add_gpu(kind, _name(e.get("name")), ts, dur, _int(args.get("stream", e.get("tid"))),
                                 _int(args.get("device", e.get("pid"))), _int(args.get("correlation")),
                                 _int(args.get("External id")))
                elif cat in _RUNTIME:
                    cols.add_runtime(_name(e.get("name")), ts, dur, _int(args.get("correlation")), _int(e.get("tid")))
                else:
                    cols.annotations.append(Annotation(_name(e.get("name")), ts, ts + dur, _int(e.get("tid"))))
            elif cat == "cpu_op" and isinstance(e.get("name"), str) and e["name"] in GEMM_OPS \
                    and isinstance(args.get("Input Dims"), list):
                types = args.get("Input type")
                cols.add_shape(_int(args.get("External id")), e["name"], list(args["Input Dims"]),
                               [_name(x) for x in types] if isinstance(types, list) else [])
            else:
                cols.skip(cat[:64] or "other")
    cols.events_read = n
    if n == 0:
        raise TraceFormatError(f"{path}: traceEvents is empty (the profiler recorded nothing)")
    return cols
