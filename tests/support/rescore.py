"""Replay a change to relevance or ranking over the whole scenario corpus in seconds, without staging a host.

A scenario session run with `INVESTIGATE_CASE_DUMP=DIR` leaves, per case, what the synthesis ran on (question,
observations, every tool result, the staged log lines) and the diagnosis it wrote (tests/scenarios/harness.py). The
synthesis is pure, so writing the diagnosis again from that evidence with the code as it is now is the same as
running the case again, for any change above the probes. This prints, for every case whose ranked causes changed,
the ranked causes before (the recorded diagnosis) and after, and every case whose checks now fail, with why:

    cd tests && python -m support.rescore DIR [-k SUBSTRING] [--all]

Exit status 1 when a case fails. Run from the repository's tests/ directory (the harness is imported from there).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
for p in (HERE, HERE / "scenarios"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from harness import ROOT, judge, load_case, ranked_baseline  # noqa: E402

from orchestrator.analysis.synthesis import synthesize  # noqa: E402
from orchestrator.evidence import Evidence  # noqa: E402
from orchestrator.observations import Observations  # noqa: E402

_NUM = re.compile(r"\d+(?:[.,]\d+)*")


def same_titles(a: list[str], b: list[str]) -> bool:
    """Two lists of cause titles name the same causes in the same order (figures in them may differ)."""
    return [_NUM.sub("#", t) for t in a] == [_NUM.sub("#", t) for t in b]


def rescore(dump: Path, baseline: dict) -> tuple[str, list[str], list[str], list[str], list[str]]:
    """(case key, ranked titles before, after, failures, expected causes ranked) of one recorded case, written again
    by today's synthesis."""
    doc = json.loads(dump.read_text())
    path = ROOT / doc["class"] / doc["id"] / "case.yaml"
    case = load_case(path)
    evidence = [Evidence.model_validate(e) for e in doc["evidence"]]
    # the observations the run saw: the case's, with its `bench:` files' runs added (harness.observations_of)
    case.observations = doc.get("observations", case.observations)
    obs = Observations.model_validate(case.observations) if case.observations else None
    d = synthesize(case.question, obs, evidence, [])
    echoed = doc.get("echoed")
    if echoed is None:  # a dump written before the staged lines were kept: read the case's own log files
        echoed = []
        for value in (case.stage.get("logs") or {}).values():
            f = path.parent / str(value)
            text = f.read_text(errors="replace") if "\n" not in str(value) and f.is_file() else str(value)
            echoed += text.splitlines()
    out = judge(case, path, d, evidence, echoed, baseline)
    before = [c["title"] for c in (doc.get("diagnosis") or {}).get("causes", [])]
    return f"{doc['class']}/{doc['id']}", before, out.ranked, out.failures, out.held


def write_baseline(record: dict) -> None:
    from harness import RANKED

    RANKED.write_text(json.dumps(dict(sorted(record.items())), indent=1, ensure_ascii=False) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", type=Path, help="the INVESTIGATE_CASE_DUMP directory of a scenario session")
    ap.add_argument("-k", default="", help="only cases whose class/id contains this")
    ap.add_argument("--all", action="store_true", help="print every case's ranked causes, changed or not")
    ap.add_argument("--record", action="store_true",
                    help="write the replayed ranked causes into tests/scenarios/ranked.json (the regression baseline)")
    args = ap.parse_args(argv)
    baseline = ranked_baseline()
    dumps = sorted(args.dir.glob("*.json"))
    changed = failed = 0
    record = dict(baseline)
    for dump in dumps:
        if args.k and args.k not in dump.stem.replace("__", "/"):
            continue
        key, before, after, failures, held = rescore(dump, baseline)
        if args.record:
            record[key] = {"ranked": after, "held": held}
        moved = not same_titles(before, after)
        changed += moved
        failed += bool(failures)
        if moved or failures or args.all:
            print(f"{'FAIL ' if failures else ''}{key}")
            if moved:
                print("  before: " + (" | ".join(before) or "(none)"))
            print(("  after:  " if moved else "  ranked: ") + (" | ".join(after) or "(none)"))
            for f in failures:
                print(f"  - {f[:400]}")
    if args.record:
        write_baseline(record)
    print(f"{len(dumps)} cases replayed: {changed} with other ranked causes, {failed} failing")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
