"""Interval arithmetic on sorted, disjoint intervals: unions, intersections and differences, so that kernels
overlapping on several streams are counted once.

Intervals are kept flat in an `array('d')` — `[s0, e0, s1, e1, ...]`, 16 bytes an interval — not as a list of
tuples (~100 bytes each): an eager decode trace has nearly one interval per kernel, and a 5 GB trace millions of
kernels. Every operation is one linear pass over sorted inputs. The list-of-tuples functions at the end are the same
operations for small inputs (tests, notes)."""

from __future__ import annotations

from array import array
from typing import Iterable


def new() -> array:
    return array("d")


class Merger:
    """The union of intervals fed in order of their start, built as they come (no list of the inputs kept)."""

    __slots__ = ("out", "_s", "_e")

    def __init__(self) -> None:
        self.out = array("d")
        self._s = self._e = float("nan")

    def add(self, s: float, e: float) -> None:
        if e <= s:
            return
        if self._s == self._s and s <= self._e:  # overlaps or touches the open interval
            if e > self._e:
                self._e = e
            return
        if self._s == self._s:
            self.out.append(self._s)
            self.out.append(self._e)
        self._s, self._e = s, e

    def done(self) -> array:
        if self._s == self._s:
            self.out.append(self._s)
            self.out.append(self._e)
            self._s = self._e = float("nan")
        return self.out


def merge_flat(items: Iterable[tuple[float, float]]) -> array:
    """Union of possibly overlapping intervals in any order (sorted first)."""
    m = Merger()
    for s, e in sorted(items):
        m.add(s, e)
    return m.done()


def measure_flat(a: array) -> float:
    return sum(a[i + 1] - a[i] for i in range(0, len(a), 2))


def union_flat(a: array, b: array) -> array:
    """Union of two sorted disjoint flat lists: one merge pass (the same intervals as sorting both together)."""
    m = Merger()
    i = j = 0
    na, nb = len(a), len(b)
    while i < na or j < nb:
        if j >= nb or (i < na and (a[i], a[i + 1]) <= (b[j], b[j + 1])):
            m.add(a[i], a[i + 1])
            i += 2
        else:
            m.add(b[j], b[j + 1])
            j += 2
    return m.done()


def intersect_flat(a: array, b: array) -> array:
    out = array("d")
    i = j = 0
    na, nb = len(a), len(b)
    while i < na and j < nb:
        s = max(a[i], b[j])
        e = min(a[i + 1], b[j + 1])
        if s < e:
            out.append(s)
            out.append(e)
        if a[i + 1] < b[j + 1]:
            i += 2
        else:
            j += 2
    return out


def subtract_flat(a: array, b: array) -> array:
    """a minus b."""
    out = array("d")
    j = 0
    nb = len(b)
    for i in range(0, len(a), 2):
        s, e = a[i], a[i + 1]
        cur = s
        while j < nb and b[j + 1] <= cur:
            j += 2
        k = j
        while k < nb and b[k] < e:
            if b[k] > cur:
                out.append(cur)
                out.append(b[k])
            cur = max(cur, b[k + 1])
            if cur >= e:
                break
            k += 2
        if cur < e:
            out.append(cur)
            out.append(e)
    return out


def gaps_flat(a: array, start: float, end: float) -> array:
    """The parts of [start, end) that a does not cover."""
    return subtract_flat(array("d", (start, end)), a) if end > start else array("d")


def pairs(a: array) -> Iterable[tuple[float, float]]:
    return ((a[i], a[i + 1]) for i in range(0, len(a), 2))


# The same operations on lists of (start, end) tuples, for small inputs.

Intervals = list[tuple[float, float]]


def _flat(a: Intervals) -> array:
    return array("d", (x for p in a for x in p))


def merge(items: Iterable[tuple[float, float]]) -> Intervals:
    """Union of possibly overlapping intervals, as a sorted disjoint list."""
    return list(pairs(merge_flat(items)))


def measure(a: Intervals) -> float:
    return sum(e - s for s, e in a)


def union(a: Intervals, b: Intervals) -> Intervals:
    return list(pairs(union_flat(_flat(a), _flat(b))))


def intersect(a: Intervals, b: Intervals) -> Intervals:
    return list(pairs(intersect_flat(_flat(a), _flat(b))))


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """a minus b."""
    return list(pairs(subtract_flat(_flat(a), _flat(b))))


def gaps(a: Intervals, start: float, end: float) -> Intervals:
    """The parts of [start, end) that a does not cover."""
    return list(pairs(gaps_flat(_flat(a), start, end)))
