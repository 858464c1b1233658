"""Scenario corpus setup: the harness importable as `harness`, and the scorecard at the end of the session."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


def scorecard(results) -> list[str]:
    total, passed = Counter(), Counter()
    for r in results:
        total[r.case.class_] += 1
        passed[r.case.class_] += r.passed
    if not total:
        return []
    width = max(len(c) for c in total)
    lines = [f"{c:<{width}}  {passed[c]:>3}/{total[c]:<3}" + ("" if passed[c] == total[c] else "  <-- failing")
             for c in sorted(total)]
    lines.append(f"{'all':<{width}}  {sum(passed.values()):>3}/{sum(total.values()):<3}")
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    mod = sys.modules.get("test_scenarios")
    results = getattr(mod, "RESULTS", None) if mod else None
    lines = scorecard(results or [])
    if lines:
        terminalreporter.section("scenario scorecard (cases passed per class)")
        for ln in lines:
            terminalreporter.write_line(ln)
