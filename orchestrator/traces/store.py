"""The compact per-rank columns a trace is read into: a few numbers per GPU activity and runtime call, never the
whole JSON. A 5 GB Kineto trace holds a few million kernels and launches: ~40 bytes each here, not a dict each."""

from __future__ import annotations

import json
from array import array
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from orchestrator.limits import TRACE_MAX_NAMES, TRACE_NAME_MAX_CHARS

KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET = 0, 1, 2
MORE_NAMES = f"(names past the first {TRACE_MAX_NAMES:,})"
"""The name every activity gets once a rank has TRACE_MAX_NAMES distinct names (a real trace has a few thousand)."""
MAX_SKIP_KINDS = 64
"""Categories of skipped events counted apart; the rest are counted as `other`."""


def clip_name(name: str) -> str:
    """A name as kept and classified: at most TRACE_NAME_MAX_CHARS characters (the kernel-class patterns and every
    later step then work on bounded text, and a few hundred bytes of gzip cannot become gigabytes of names), with a
    lone surrogate (JSON's "\\ud800") replaced: the report must encode as UTF-8."""
    if len(name) > TRACE_NAME_MAX_CHARS:
        name = name[:TRACE_NAME_MAX_CHARS - 1] + "…"
    if not name.isascii():
        name = name.encode("utf-8", "replace").decode("utf-8")
    return name


@dataclass(slots=True)
class Annotation:
    """A host-side range (user annotation / NVTX range / step marker) on one thread."""

    name: str
    ts: float
    end: float
    tid: int


@dataclass
class RankColumns:
    """One rank's GPU activities and CUDA runtime calls, as columns (times in microseconds)."""

    source: str
    rank: int | None = None
    gpu_name: str | None = None
    fmt: str = "kineto"
    names: list[str] = field(default_factory=list)
    _name_ids: dict[str, int] = field(default_factory=dict)
    # GPU activities (kernels, memcpy, memset)
    g_ts: array = field(default_factory=lambda: array("d"))
    g_end: array = field(default_factory=lambda: array("d"))
    g_stream: array = field(default_factory=lambda: array("q"))
    g_device: array = field(default_factory=lambda: array("q"))
    g_name: array = field(default_factory=lambda: array("q"))
    g_kind: array = field(default_factory=lambda: array("b"))
    g_corr: array = field(default_factory=lambda: array("q"))
    g_ext: array = field(default_factory=lambda: array("q"))
    # CUDA runtime / driver calls
    r_ts: array = field(default_factory=lambda: array("d"))
    r_end: array = field(default_factory=lambda: array("d"))
    r_name: array = field(default_factory=lambda: array("q"))
    r_corr: array = field(default_factory=lambda: array("q"))
    r_tid: array = field(default_factory=lambda: array("q"))
    annotations: list[Annotation] = field(default_factory=list)
    """Host-side ranges other than python functions (step markers among them)."""
    s_ext: array = field(default_factory=lambda: array("q"))
    """External ids of GEMM-like CPU ops whose shapes were recorded (record_shapes), and for each the index of its
    shape in `shapes` (s_shape): two columns, sorted by id on first lookup, not a dict of millions of ints."""
    s_shape: array = field(default_factory=lambda: array("l"))
    _s_sorted: bool = True
    shapes: list[tuple[str, str]] = field(default_factory=list)
    """Distinct (op name, JSON of [Input Dims, Input type]): a trace repeats a few shapes millions of times."""
    _shape_ids: dict[tuple[str, str], int] = field(default_factory=dict)

    def add_shape(self, ext: int, op: str, dims: list[Any], types: list[str]) -> None:
        key = (op, json.dumps([dims, types]))
        i = self._shape_ids.get(key)
        if i is None:
            i = self._shape_ids[key] = len(self.shapes)
            self.shapes.append(key)
        if self.s_ext and ext < self.s_ext[-1]:
            self._s_sorted = False
        self.s_ext.append(ext)
        self.s_shape.append(i)

    @property
    def n_shapes(self) -> int:
        return len(self.s_ext)

    def shape_slot(self, ext: int) -> int:
        """The slot of the GEMM op with this External id (the last recorded one when an id repeats), -1: none."""
        if not self._s_sorted:
            order = sorted(range(len(self.s_ext)), key=self.s_ext.__getitem__)  # stable: a repeated id keeps order
            self.s_ext = array("q", (self.s_ext[i] for i in order))
            self.s_shape = array("l", (self.s_shape[i] for i in order))
            self._s_sorted = True
        j = bisect_right(self.s_ext, ext) - 1
        return j if j >= 0 and self.s_ext[j] == ext else -1

    def shape_at(self, slot: int) -> tuple[str, list[Any], list[str]]:
        op, raw = self.shapes[self.s_shape[slot]]
        dims, types = json.loads(raw)
        return op, dims, types

    def shape(self, ext: int) -> tuple[str, list[Any], list[str]]:
        slot = self.shape_slot(ext)
        if slot < 0:
            raise KeyError(ext)
        return self.shape_at(slot)
    skipped: dict[str, int] = field(default_factory=dict)
    """Events not kept, by category (python functions, CPU ops, flow arrows, metadata)."""
    events_read: int = 0

    def name_id(self, name: str) -> int:
        i = self._name_ids.get(name)
        if i is None:
            name = clip_name(name)
            i = self._name_ids.get(name)
            if i is not None:
                return i
            if len(self.names) >= TRACE_MAX_NAMES:
                name = MORE_NAMES
                if (i := self._name_ids.get(name)) is not None:
                    return i
            i = self._name_ids[name] = len(self.names)
            self.names.append(name)
        return i

    def add_gpu(self, kind: int, name: str, ts: float, dur: float, stream: int, device: int, corr: int,
                ext: int) -> None:
        self.g_ts.append(ts)
        self.g_end.append(ts + dur)
        self.g_stream.append(stream)
        self.g_device.append(device)
        self.g_name.append(self.name_id(name))
        self.g_kind.append(kind)
        self.g_corr.append(corr)
        self.g_ext.append(ext)

    def add_runtime(self, name: str, ts: float, dur: float, corr: int, tid: int) -> None:
        self.r_ts.append(ts)
        self.r_end.append(ts + dur)
        self.r_name.append(self.name_id(name))
        self.r_corr.append(corr)
        self.r_tid.append(tid)

    def skip(self, cat: str) -> None:
        if cat not in self.skipped and len(self.skipped) >= MAX_SKIP_KINDS:
            cat = "other"
        self.skipped[cat] = self.skipped.get(cat, 0) + 1

    @property
    def n_gpu(self) -> int:
        return len(self.g_ts)

    @property
    def n_runtime(self) -> int:
        return len(self.r_ts)
