"""Interval arithmetic on sorted, disjoint lists of (start, end): unions, intersections and differences, so that
kernels overlapping on several streams are counted once."""

from __future__ import annotations

from typing import Iterable

Intervals = list[tuple[float, float]]


def merge(items: Iterable[tuple[float, float]]) -> Intervals:
    """Union of possibly overlapping intervals, as a sorted disjoint list."""
    out: Intervals = []
    for s, e in sorted(items):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def measure(a: Intervals) -> float:
    return sum(e - s for s, e in a)


def union(a: Intervals, b: Intervals) -> Intervals:
    return merge([*a, *b])


def intersect(a: Intervals, b: Intervals) -> Intervals:
    out: Intervals = []
    i = j = 0
    while i < len(a) and j < len(b):
        s = max(a[i][0], b[j][0])
        e = min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """a minus b."""
    out: Intervals = []
    j = 0
    for s, e in a:
        cur = s
        while j < len(b) and b[j][1] <= cur:
            j += 1
        k = j
        while k < len(b) and b[k][0] < e:
            if b[k][0] > cur:
                out.append((cur, b[k][0]))
            cur = max(cur, b[k][1])
            if cur >= e:
                break
            k += 1
        if cur < e:
            out.append((cur, e))
    return out


def gaps(a: Intervals, start: float, end: float) -> Intervals:
    """The parts of [start, end) that a does not cover."""
    return subtract([(start, end)], a) if end > start else []
