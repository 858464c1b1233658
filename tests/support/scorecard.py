"""The scenario scorecard at the end of the session: cases passed per class and the off-symptom causes (target 0).

A plugin of tests/conftest.py, not tests/scenarios/conftest.py: under pytest-xdist the controlling process collects
nothing, so only the top-level conftest's plugins see the reports the workers send back."""

from __future__ import annotations

from collections import Counter

SCORES: list[tuple[str, str, bool, list[str]]] = []
"""(class, case id, passed, off-symptom causes) of every case reported in this session, by this process or an xdist
worker (each case's report carries them as a user property, test_scenarios.SCORE)."""


def pytest_runtest_logreport(report):
    for name, value in getattr(report, "user_properties", ()):
        if name == "scenario" and report.when == "call":
            class_, case_id, passed, off = value
            SCORES.append((class_, case_id, bool(passed), list(off)))


def scorecard(scores) -> list[str]:
    """Cases passed per class, and per class the ranked causes that cannot explain the case's symptom (target 0)."""
    total, passed, off = Counter(), Counter(), Counter()
    for class_, _id, ok, offs in scores:
        total[class_] += 1
        passed[class_] += ok
        off[class_] += len(offs)
    if not total:
        return []
    width = max(len(c) for c in total)
    lines = [f"{c:<{width}}  {passed[c]:>3}/{total[c]:<3}  off-symptom causes {off[c]}"
             + ("" if passed[c] == total[c] else "  <-- failing") for c in sorted(total)]
    lines.append(f"{'all':<{width}}  {sum(passed.values()):>3}/{sum(total.values()):<3}  off-symptom causes "
                 f"{sum(off.values())}")
    for class_, case_id, _ok, offs in scores:
        for x in offs:
            lines.append(f"  off-symptom: {class_}/{case_id}: {x}")
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    lines = scorecard(SCORES)
    if lines:
        terminalreporter.section("scenario scorecard (cases passed per class)")
        for ln in lines:
            terminalreporter.write_line(ln)
