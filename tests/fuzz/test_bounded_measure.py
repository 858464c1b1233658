"""The bounded child's memory figure is its own: a parent that holds a lot (an xdist worker after many tests) does
not lend the child its resident set (ru_maxrss kept the forked parent's across the exec: 411 MB for `x = 1` under a
parent holding 400 MB, and the trace-bomb tests failed their 300 MB bound on a busy worker)."""

from __future__ import annotations

from fuzz.bounded import run_bounded


def test_a_trivial_child_of_a_large_parent_reports_its_own_small_peak() -> None:
    ballast = bytearray(256 << 20)
    for i in range(0, len(ballast), 4096):  # resident, not just reserved
        ballast[i] = 1
    res = run_bounded("x = 1", mem_mb=1024, timeout_s=30)
    assert res.rc == 0 and 0 < res.peak_mb < 100, res
    del ballast
