"""Record what the offline diagnosis says for each scenario case, and compare two records (a reshaping check).

    python tests/scenarios/snapshot.py record DIR [-k SUBSTR]...   # stage + investigate each case, keep its
                                                                     # transcript and diagnosis under DIR
    python tests/scenarios/snapshot.py resynth DIR OUT [-k SUBSTR]  # re-synthesize DIR's transcripts offline (no
                                                                     # host: only the rules and the synthesis run)
    python tests/scenarios/snapshot.py compare OLD NEW              # bound and ranked causes must be the same

A case costs about 3 CPU-s to record and a fraction of that to re-synthesize: `resynth` checks a change to the
rules or the synthesis against the recorded evidence without staging anything. `compare` exits 1 when a case's
bound, ranked cause titles or confidences differ, and prints the word differences (which sampled figures may cause)
separately.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]


def summary(d: Any) -> dict[str, Any]:
    """What a diagnosis says, in the form compared: strict keys first, words after."""
    if d is None:
        return {"bound": None}
    return {"bound": d.bound, "causes": [[c.title, c.confidence] for c in d.causes],
            "also": [a.title for a in d.also_noticed], "recs": [r.action for r in d.recommendations],
            "reasoning": d.bound_reasoning, "verdict": d.verdict,
            "explanations": [c.explanation for c in d.causes], "notes": [a.note for a in d.also_noticed],
            "gaps": [f"{g.what}: {g.why}" for g in d.gaps]}


def _cases(keys: list[str]) -> list[Path]:
    from harness import discover

    return [p for p in discover() if not keys or any(k in str(p) for k in keys)]


async def _record_one(path: Path, out: Path) -> dict[str, Any]:
    from harness import load_case
    from support.sshd import start_sshd
    from support.stagers import stage

    from orchestrator.api import investigate
    from orchestrator.settings import Settings

    case = load_case(path)
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        ctx = stage(path.parent, tmp, case.stage)
        try:
            sshd = start_sshd(tmp, env=ctx.env)
            try:
                result = await investigate(
                    case.question, host=sshd.alias, ssh_config=str(sshd.ssh_config), observations=case.observations,
                    logs=ctx.logs, offline=True, transcript=str(out / f"{case.id}.jsonl"), measure=case.measure,
                    settings=Settings(power_sample_s=0.3, account_sample_s=1.0, measure_wait_s=case.measure_wait_s,
                                      gemm_budget_s=20, comm_budget_s=20))
            finally:
                sshd.stop()
        finally:
            for cleanup in ctx.cleanups:
                cleanup()
    return summary(result.diagnosis)


async def _resynth_one(path: Path) -> dict[str, Any]:
    from orchestrator.api import replay

    return summary((await replay(path, offline=True)).diagnosis)


def main(argv: list[str] | None = None) -> int:
    import os

    import anyio

    os.environ["INVESTIGATE_STRICT_RULES"] = "1"
    os.environ["INVESTIGATE_ALLOW_MODEL_REQUESTS"] = "0"
    os.environ.setdefault("INVESTIGATE_STAGED_TAG", f"snapshot-{os.getpid()}")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("dir", type=Path)
    r.add_argument("-k", action="append", default=[])
    s = sub.add_parser("resynth")
    s.add_argument("dir", type=Path)
    s.add_argument("out", type=Path)
    s.add_argument("-k", action="append", default=[])
    c = sub.add_parser("compare")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    a = p.parse_args(argv)
    if a.cmd == "compare":
        return compare(a.old, a.new)
    if a.cmd == "record":
        a.dir.mkdir(parents=True, exist_ok=True)
        out = {}
        for path in _cases(a.k):
            cid = path.parent.name
            try:
                out[cid] = anyio.run(_record_one, path, a.dir)
            except Exception as e:  # a case that cannot run is recorded as such
                out[cid] = {"bound": None, "error": f"{type(e).__name__}: {e}"}
            print(cid, out[cid].get("bound"), [t for t, _ in out[cid].get("causes", [])], flush=True)
        _merge(a.dir / "summary.json", out)
        return 0
    a.out.mkdir(parents=True, exist_ok=True)
    out = {}
    for t in sorted(a.dir.glob("*.jsonl")):
        if a.k and not any(k in t.stem for k in a.k):
            continue
        try:
            out[t.stem] = anyio.run(_resynth_one, t)
        except Exception as e:
            out[t.stem] = {"bound": None, "error": f"{type(e).__name__}: {e}"}
    _merge(a.out / "summary.json", out)
    print(f"{len(out)} case(s) re-synthesized into {a.out / 'summary.json'}")
    return 0


def _merge(path: Path, new: dict[str, Any]) -> None:
    old = json.loads(path.read_text()) if path.exists() else {}
    old.update(new)
    path.write_text(json.dumps(old, indent=1, sort_keys=True))


STRICT = ("bound", "causes", "error")


def compare(old_dir: Path, new_dir: Path) -> int:
    old = json.loads((old_dir / "summary.json").read_text())
    new = json.loads((new_dir / "summary.json").read_text())
    strict, words = [], []
    for cid in sorted(set(old) & set(new)):
        o, n = old[cid], new[cid]
        for k in STRICT:
            if o.get(k) != n.get(k):
                strict.append(f"{cid}: {k}: {o.get(k)!r} -> {n.get(k)!r}")
        for k in sorted(set(o) | set(n)):
            if k not in STRICT and o.get(k) != n.get(k):
                words.append(f"{cid}: {k} differs")
    print(f"{len(set(old) & set(new))} case(s) compared; only in old: {sorted(set(old) - set(new))}; "
          f"only in new: {sorted(set(new) - set(old))}")
    print("\n".join(strict) or "bound and ranked causes: all the same")
    print("\n".join(words) or "words: all the same")
    return 1 if strict else 0


if __name__ == "__main__":
    sys.exit(main())
