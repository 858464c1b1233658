"""One scored run of a scenario class, as a Markdown list: each case PASS or FAIL, and for a failure what the tool
said (its verdict's first sentence and its first ranked cause) beside the first expectation it did not meet.

    python tests/scenarios/score.py residual-blind [-n WORKERS] > score.md

Residual classes run strict (INVESTIGATE_RESIDUAL_STRICT=1): a failure is a failure. The run is pytest's own
(tests/scenarios/test_scenarios.py), read back from its JUnit XML; nothing here judges a case."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
_RANKED = re.compile(r"Ranked causes: \(1\) (.+?)(?:; \(2\)|\. Start with|$)")


def said(message: str) -> tuple[str, str, str]:
    """(first unmet expectation, the verdict's first sentence, the first ranked cause) of a failure's message."""
    head, _, words = message.partition("--- diagnosis words ---")
    unmet = next((ln.strip()[2:] for ln in head.splitlines() if ln.strip().startswith("- ")), head.strip()[:300])
    verdict = next((ln.strip() for ln in words.splitlines() if ln.strip()), "")
    first = _RANKED.search(verdict)
    sentence = verdict.split(" Ranked causes:")[0].split(". ")[0].rstrip(".")
    return unmet, sentence, first.group(1) if first else "(no ranked cause)"


def score(klass: str, workers: int) -> tuple[int, int, list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "junit.xml"
        env = {**os.environ, "INVESTIGATE_RESIDUAL_STRICT": "1"}
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE / "test_scenarios.py"),
               f"--junitxml={xml}", "-o", "junit_logging=no", "--tb=short"]
        cmd += ["-n", str(workers)] if workers > 1 else []
        cmd += ["-k", f"{klass}/"]
        subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        cases = ET.parse(xml).getroot().iter("testcase")
        lines, passed, total = [], 0, 0
        for tc in sorted(cases, key=lambda t: t.get("name", "")):
            name = tc.get("name", "")
            m = re.search(r"\[(.+)/(.+)\]$", name)
            if not m or m.group(1) != klass:
                continue
            total += 1
            bad = tc.find("failure") if tc.find("failure") is not None else tc.find("error")
            if bad is None and tc.find("skipped") is None:
                passed += 1
                lines.append(f"- PASS `{m.group(2)}`")
                continue
            unmet, verdict, first = said((bad.get("message", "") + "\n" + (bad.text or "")) if bad is not None
                                         else "skipped")
            lines.append(f"- FAIL `{m.group(2)}` - first cause: \"{first}\"; verdict: \"{verdict}\"; "
                         f"first unmet: {unmet}")
        return passed, total, lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("klass", help="a directory of tests/scenarios (residual, residual-blind, ...)")
    ap.add_argument("-n", type=int, default=1, help="pytest-xdist workers")
    a = ap.parse_args()
    passed, total, lines = score(a.klass, a.n)
    print(f"**Score: {passed}/{total} `{a.klass}`**\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
