"""What a staged scenario case costs in CPU seconds, and where: the test process, the processes the case starts
(probes, sshd and the login shells, the account ticker, fakes), per phase; and what one remote command costs.

    python bench/staged_case.py                      # every 6th case of the corpus (residual classes left out)
    python bench/staged_case.py --every 12 --offset 1
    python bench/staged_case.py node/xid-13-application-h100 account/hf-cache-on-gcsfuse
    python bench/staged_case.py --commands           # one remote command's cost over the staged sshd

Runs the cases one after another in this process as tests/scenarios/test_scenarios.py does (harness.run_case),
after one case to warm up (imports, parsed captures). CPU time, not wall time (a shared machine's wall clock is
noise): this process's own (`RUSAGE_SELF`) and its children's (`RUSAGE_CHILDREN`). The process is a child subreaper
(prctl), so sshd's session processes, killed with sshd, are reaped here and counted (they were lost to init).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "scenarios"), str(ROOT)]

import harness  # noqa: E402

PHASES = ("stage", "start_sshd", "investigate", "judge")


def cpu() -> tuple[float, float]:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime, c.ru_utime + c.ru_stime


def reap() -> None:
    """Reap exited orphans this subreaper adopted (their CPU then counts in RUSAGE_CHILDREN)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def sample(every: int, offset: int) -> list[str]:
    cases = [p for p in harness.discover() if p.parent.parent.name not in harness.RESIDUAL_CLASSES]
    return [f"{p.parent.parent.name}/{p.parent.name}" for p in cases[offset::every]]


def run(ids: list[str]) -> None:
    acc: dict[str, list[float]] = {k: [0.0, 0.0, 0.0] for k in (*PHASES, "sshd.stop")}

    def timed(name, fn):
        if asyncio.iscoroutinefunction(fn):
            async def g(*a, **k):
                c0, t0 = cpu(), time.monotonic()
                try:
                    return await fn(*a, **k)
                finally:
                    c1 = cpu()
                    acc[name][0] += c1[0] - c0[0]
                    acc[name][1] += c1[1] - c0[1]
                    acc[name][2] += time.monotonic() - t0
        else:
            def g(*a, **k):
                c0, t0 = cpu(), time.monotonic()
                try:
                    return fn(*a, **k)
                finally:
                    c1 = cpu()
                    acc[name][0] += c1[0] - c0[0]
                    acc[name][1] += c1[1] - c0[1]
                    acc[name][2] += time.monotonic() - t0
        return g

    for name in PHASES:
        setattr(harness, name, timed(name, getattr(harness, name)))
    import support.sshd as sshd_mod

    sshd_mod.Sshd.stop = timed("sshd.stop", sshd_mod.Sshd.stop)

    def one(case_id: str) -> bool:
        out = asyncio.run(harness.run_case(harness.ROOT / case_id / "case.yaml", Path(tempfile.mkdtemp())))
        time.sleep(0.05)  # let killed sessions exit, then reap them
        reap()
        return out.passed

    one(ids[0])  # warm-up, not counted
    for v in acc.values():
        v[:] = [0.0, 0.0, 0.0]
    per: list[tuple[str, float, float]] = []
    failed = []
    for case_id in ids:
        c0 = cpu()
        if not one(case_id):
            failed.append(case_id)
        c1 = cpu()
        per.append((case_id, c1[0] - c0[0], c1[1] - c0[1]))
    n = len(ids)
    tot = [sum(x[1] for x in per), sum(x[2] for x in per)]
    print(f"{n} cases ({len(failed)} failed{': ' + ', '.join(failed) if failed else ''})")
    print(f"CPU-s per case: {(tot[0] + tot[1]) / n:.3f} (this process {tot[0] / n:.3f}, the processes it started "
          f"{tot[1] / n:.3f}); median {statistics.median(s + c for _, s, c in per):.3f}; "
          f"sample total {tot[0] + tot[1]:.1f}")
    for name, (s, c, w) in acc.items():
        print(f"  {name:12s} this process {s / n:.3f}  started {c / n:.3f}  wall {w / n:.2f} s")
    print("most costly:")
    for case_id, s, c in sorted(per, key=lambda x: -(x[1] + x[2]))[:5]:
        print(f"  {s + c:.3f}  {case_id}")


async def commands(reps: int = 30) -> None:
    """One remote command's CPU over the staged sshd (channel, login shell, watchdog, the command): `true`, a bare
    `python3 -I -S -`, and the same with the probes' prelude. Each kind over its own sshd, whose processes are
    counted once it stops."""
    from orchestrator.hosts.ssh import SshHost
    from orchestrator.probes import scripts
    from orchestrator.settings import Settings
    from support.sshd import start_sshd
    from support.stagers import stage

    for label, argv, stdin in (("true", ["true"], None),
                               ("python3 -I -S - (pass)", ["python3", "-I", "-S", "-"], "pass\n"),
                               ("python3 -I -S - (prelude)", ["python3", "-I", "-S", "-"],
                                scripts.prelude() + "\npass\n")):
        tmp = Path(tempfile.mkdtemp())
        ctx = stage(tmp, tmp, {})
        sshd = start_sshd(tmp, env=ctx.env)
        try:
            host = await SshHost(sshd.target(), Settings()).connect()
            await host.run(argv, stdin=stdin)
            c0 = cpu()
            for _ in range(reps):
                assert (await host.run(argv, stdin=stdin)).ok
            c1 = cpu()
            await host.aclose()
        finally:
            sshd.stop()
            time.sleep(0.1)
            reap()
            ctx.close()
        c2 = cpu()
        print(f"{label:28s} this process {1000 * (c1[0] - c0[0]) / reps:5.1f} ms, host side (sshd, shells, the "
              f"command) {1000 * (c2[1] - c0[1]) / (reps + 1):5.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", help="class/id of cases (default: a sample of the corpus)")
    ap.add_argument("--every", type=int, default=6)
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--commands", action="store_true", help="the cost of one remote command instead")
    ap.add_argument("--alone", action="store_true", help="every probe script in an interpreter of its own "
                    "(probes/runner.py TOGETHER emptied): the cost before scripts started together shared one")
    args = ap.parse_args()
    if args.alone:
        from orchestrator.probes import runner

        runner.TOGETHER = {}
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    if args.commands:
        asyncio.run(commands())
        return
    run(args.cases or sample(args.every, args.offset))


if __name__ == "__main__":
    main()
