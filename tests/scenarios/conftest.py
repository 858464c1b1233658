"""Scenario corpus setup: the harness importable as `harness`, and the scorecard at the end of the session."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


def scorecard(results) -> list[str]:
    """Cases passed per class, and per class the ranked causes that cannot explain the case's symptom (target 0)."""
    total, passed, off = Counter(), Counter(), Counter()
    for r in results:
        total[r.case.class_] += 1
        passed[r.case.class_] += r.passed
        off[r.case.class_] += len(getattr(r, "off_symptom", []))
    if not total:
        return []
    width = max(len(c) for c in total)
    lines = [f"{c:<{width}}  {passed[c]:>3}/{total[c]:<3}  off-symptom causes {off[c]}"
             + ("" if passed[c] == total[c] else "  <-- failing") for c in sorted(total)]
    lines.append(f"{'all':<{width}}  {sum(passed.values()):>3}/{sum(total.values()):<3}  off-symptom causes "
                 f"{sum(off.values())}")
    for r in results:
        for x in getattr(r, "off_symptom", []):
            lines.append(f"  off-symptom: {r.case.class_}/{r.case.id}: {x}")
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    mod = sys.modules.get("test_scenarios")
    results = getattr(mod, "RESULTS", None) if mod else None
    lines = scorecard(results or [])
    if lines:
        terminalreporter.section("scenario scorecard (cases passed per class)")
        for ln in lines:
            terminalreporter.write_line(ln)
