"""Independent check of the multi-rank figures: straggler, collective wait and exposed communication computed from
the raw events of per-rank Kineto files with plain json (none of orchestrator.traces), against the trace prong's.

    python bench/trace_ranks.py DIR_OF_RANK_FILES
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

COMM = ("nccl",)


def raw_figures(path: Path) -> dict:
    doc = json.load(gzip.open(path))
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    kern = sorted((e["ts"], e["ts"] + e["dur"], e["name"]) for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    comm = [k for k in kern if k[2].lower().startswith(COMM)]
    compute = [k for k in kern if not k[2].lower().startswith(COMM) and not k[2].startswith("Mem")]
    # steps, independently of the prong's step finder: from one all-reduce end on the main stream to the next
    ends = sorted(e["ts"] + e["dur"] for e in ev if e.get("cat") == "kernel" and e["name"].lower().startswith(COMM)
                  and (e.get("args") or {}).get("stream") == 7)

    def union(iv):
        out = []
        for s, e in sorted(iv):
            if out and s <= out[-1][1]:
                out[-1][1] = max(out[-1][1], e)
            else:
                out.append([s, e])
        return out

    cu = union([(s, e) for s, e, _ in compute])
    over = 0.0
    for s, e, _ in comm:
        for a, b in cu:
            over += max(0.0, min(e, b) - max(s, a))
    return {"rank": doc["distributedInfo"]["rank"], "comm": comm, "comm_total": sum(e - s for s, e, _ in comm),
            "overlap": over, "ends": ends}


def main() -> None:
    from orchestrator.traces.analyze import analyze

    files = sorted(Path(sys.argv[1]).glob("*.trace.json.gz"))
    raw = sorted((raw_figures(f) for f in files), key=lambda r: r["rank"])
    report = analyze([sys.argv[1]])
    n = min(len(r["comm"]) for r in raw)
    wait = {r["rank"]: 0.0 for r in raw}
    late = {r["rank"]: 0.0 for r in raw}
    for i in range(n):
        fastest = min(r["comm"][i][1] - r["comm"][i][0] for r in raw)
        first = min(r["comm"][i][0] for r in raw)
        for r in raw:
            wait[r["rank"]] += r["comm"][i][1] - r["comm"][i][0] - fastest
            late[r["rank"]] += r["comm"][i][0] - first
    straggler = max(late, key=lambda k: late[k])
    print(f"straggler: raw rank {straggler}, prong rank {report.straggler.rank if report.straggler else None}")
    print(f"{'rank':6}{'figure':34}{'raw':>10}{'prong':>10}{'rel diff':>10}")
    worst = 0.0
    for r, acc in zip(raw, report.ranks):
        diffs = sorted(b - a for a, b in zip(r["ends"], r["ends"][1:]))
        step = diffs[len(diffs) // 2]  # median step: the warm-up and the cut-off last step do not move it
        per_step = wait[r["rank"]] / len(r["ends"])
        rows = [("collective wait share of step", per_step / step, acc.collective_wait_share or 0.0),
                ("comm overlapped / comm", r["overlap"] / r["comm_total"],
                 acc.breakdown.comm_overlapped_us / acc.breakdown.comm_us)]
        for name, x, y in rows:
            rel = abs(x - y) / x if x else abs(y)
            worst = max(worst, rel if abs(x - y) > 0.01 else 0.0)  # 5 % relative, or within one point
            print(f"{r['rank']:<6}{name:34}{x:10.4f}{y:10.4f}{rel:10.3f}")
    print(f"worst relative difference: {worst:.3f} (limit 0.05)")
    sys.exit(0 if worst <= 0.05 and report.straggler and report.straggler.rank == straggler else 1)


if __name__ == "__main__":
    main()
