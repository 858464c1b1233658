"""Reading a roofline out of a diagnosis's numbers: which are ceilings (peaks, spec-sheet values), which are operating
points (achieved FLOP/s and bytes/s, arithmetic intensities), and the ridge between them.

Classifying numbers is analysis; the HTML report (render/html.py) only draws what `find_roof` returns.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Iterable

from orchestrator.diagnosis import Number

_PREFIX = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15, "e": 1e18}
_FLOP_RATE = re.compile(r"^\s*([kmgtpe]?)flop(?:s|/s|s/s|/sec)\s*$", re.I)
_BYTE_RATE = re.compile(r"^\s*([kmgtpe]?)(i?)(?:b|byte|bytes)\s*/\s*s(?:ec)?\s*$", re.I)
_PER_BYTE = re.compile(r"^\s*flops?\s*/\s*(?:b|byte|bytes)\s*$", re.I)


@dataclass
class Roof:
    """Ceilings and operating points found among a diagnosis' numbers, in FLOP/s, B/s and FLOP/B."""

    compute: float
    memory: float
    ridge: float
    achieved_flops: float | None = None
    achieved_bw: float | None = None
    points: list[tuple[str, float]] = field(default_factory=list)
    other_ceilings: list[tuple[str, float]] = field(default_factory=list)
    """Further compute ceilings (FLOP/s), e.g. other dtypes' peaks, drawn dashed."""


_SPEC_NAME = re.compile(r"peak|ceiling|spec|theoretical|\bmax", re.I)


def _is_spec(n: Number) -> bool:
    return bool(_SPEC_NAME.search(n.name)) or n.source.strip().lower().startswith("knowledge")


def find_roof(numbers: Iterable[Number]) -> Roof | None:
    """Read the roofline out of numbers by the module's convention; None when they do not make a roof."""
    roof_compute: float | None = None
    roof_memory: float | None = None
    ridge: float | None = None
    achieved_flops: float | None = None
    achieved_bw: float | None = None
    points: list[tuple[str, float]] = []
    compute: list[tuple[int, str, float]] = []  # (rank: 0 from a peak field, 1 spec-sheet), label, FLOP/s
    memory: list[tuple[int, float]] = []
    for n in numbers:
        unit, name = n.unit.strip(), n.name.lower()
        if m := _FLOP_RATE.match(unit):
            scale = _PREFIX[m.group(1).lower()]
            if n.peak:
                compute.append((0, n.name, n.peak * scale))
            elif _is_spec(n):
                compute.append((1, n.name, n.value * scale))
                continue
            if achieved_flops is None and n.value > 0:
                achieved_flops = n.value * scale
        elif m := _BYTE_RATE.match(unit):
            p = m.group(1).lower()
            scale = (1024.0 ** "_kmgtpe".index(p)) if m.group(2) and p else _PREFIX[p]
            if n.peak:
                memory.append((0, n.peak * scale))
            elif _is_spec(n):
                memory.append((1, n.value * scale))
                continue
            if achieved_bw is None and n.value > 0:
                achieved_bw = n.value * scale
        elif _PER_BYTE.match(unit):
            if "ridge" in name and ridge is None and n.value > 0:
                ridge = n.value
            elif "intensity" in name and n.value > 0:
                points.append((n.name, n.value))
                if n.peak is not None and n.peak > 0 and ridge is None:  # a negative ceiling is none
                    ridge = n.peak
    compute = [c for c in compute if c[2] > 0]
    memory = [m for m in memory if m[1] > 0]
    other_ceilings: list[tuple[str, float]] = []
    if memory:
        roof_memory = min(memory, key=lambda m: m[0])[1]
    if compute:
        best = min(compute, key=lambda c: c[0])
        if best[0] == 1 and ridge and roof_memory:
            # spec sheets list a peak per dtype: the one that matches the stated ridge is the roof in question
            stated = ridge * roof_memory
            best = min(compute, key=lambda c: abs(math.log(c[2] / stated)))
        roof_compute = best[2]
        other_ceilings = [(label, v) for _, label, v in compute if v != roof_compute]
    # Two of compute, memory and ridge give the third; fewer make no roof.
    if roof_compute is None:
        if ridge is None or roof_memory is None:
            return None
        roof_compute = ridge * roof_memory
    elif roof_memory is None:
        if ridge is None:
            return None
        roof_memory = roof_compute / ridge
    ridge = roof_compute / roof_memory  # the ceilings win over a stated ridge that disagrees with them
    if not (roof_compute > 0 and roof_memory > 0):
        return None
    return Roof(compute=roof_compute, memory=roof_memory, ridge=ridge, achieved_flops=achieved_flops,
                achieved_bw=achieved_bw, points=points, other_ceilings=other_ceilings)
