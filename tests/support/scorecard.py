"""The scenario scorecard at the end of the session: cases passed per class, the off-symptom causes (target 0), and
the ranked causes of every case whose ranked causes differ from those recorded in tests/scenarios/ranked.json.

A case whose change of ranking lost an expected finding (an `expect.causes` pattern a ranked cause matched when it
was recorded, now matched by none) fails in its own test (tests/scenarios/harness.py `judge`); here every change is
printed, before and after, so a change to relevance or ranking shows all it moved. `INVESTIGATE_RANKED_RECORD=1`
writes the ranked causes of the cases this session ran into ranked.json (after a change whose moves are intended).

A plugin of tests/conftest.py, not tests/scenarios/conftest.py: under pytest-xdist the controlling process collects
nothing, so only the top-level conftest's plugins see the reports the workers send back."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

SCORES: list[tuple[str, str, bool, list[str], dict[str, Any]]] = []
"""(class, case id, passed, off-symptom causes, ranked causes now/held/recorded) of every case reported in this session,
by this process or an xdist worker (each case's report carries them as a user property, test_scenarios.SCORE)."""

RANKED = Path(__file__).resolve().parent.parent / "scenarios" / "ranked.json"
RECORD = "INVESTIGATE_RANKED_RECORD"
_NUM = re.compile(r"\d+(?:[.,]\d+)*")


def pytest_runtest_logreport(report):
    for name, value in getattr(report, "user_properties", ()):
        if name == "scenario" and report.when == "call":
            class_, case_id, passed, off, *rest = value
            SCORES.append((class_, case_id, bool(passed), list(off), dict(rest[0]) if rest else {}))


def _same(a: list[str], b: list[str]) -> bool:
    """The same causes in the same order, whatever figures their titles carry."""
    return [_NUM.sub("#", t) for t in a] == [_NUM.sub("#", t) for t in b]


def ranking_changes(scores) -> list[str]:
    """Each case whose ranked causes differ from the recorded ones: before and after (cases not recorded: said so)."""
    lines = []
    for class_, case_id, _ok, _off, r in scores:
        if "ranked" not in r:
            continue
        before, after = r.get("before"), r["ranked"]
        if before is None:
            lines.append(f"  not recorded: {class_}/{case_id}: {' | '.join(after) or '(none)'}")
        elif not _same(before, after):
            lines.append(f"  {class_}/{case_id}:\n    before: {' | '.join(before) or '(none)'}\n"
                         f"    after:  {' | '.join(after) or '(none)'}")
    return lines


def scorecard(scores) -> list[str]:
    """Cases passed per class, and per class the ranked causes that cannot explain the case's symptom (target 0)."""
    total, passed, off = Counter(), Counter(), Counter()
    for class_, _id, ok, offs, *_ in scores:
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
    for class_, case_id, _ok, offs, *_ in scores:
        for x in offs:
            lines.append(f"  off-symptom: {class_}/{case_id}: {x}")
    changes = ranking_changes(scores)
    moved = sum(1 for ln in changes if not ln.startswith("  not recorded"))
    lines.append(f"ranked causes changed against tests/scenarios/ranked.json: {moved} case(s)")
    lines += changes
    return lines


def record(scores, path: Path = RANKED) -> int:
    """Write the ranked causes of the cases in `scores` into the recorded baseline; how many were written."""
    try:
        kept = json.loads(path.read_text())
    except (OSError, ValueError):
        kept = {}
    n = 0
    for class_, case_id, _ok, _off, r in scores:
        if "ranked" in r:
            kept[f"{class_}/{case_id}"] = {"ranked": r["ranked"], "held": r.get("held", [])}
            n += 1
    path.write_text(json.dumps(dict(sorted(kept.items())), indent=1, ensure_ascii=False) + "\n")
    return n


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    lines = scorecard(SCORES)
    if lines:
        terminalreporter.section("scenario scorecard (cases passed per class)")
        for ln in lines:
            terminalreporter.write_line(ln)
        if os.environ.get(RECORD) and not hasattr(config, "workerinput"):
            terminalreporter.write_line(f"recorded the ranked causes of {record(SCORES)} case(s) in {RANKED}")
