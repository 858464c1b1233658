"""Benchmark: one investigation over N staged hosts (N sshd processes on 127.0.0.1) against the same investigation
of one host.

Every sshd serves the same staged GPU host (tests/support/staged_host.py; one of them with its power limits lowered,
so the comparison has an outlier to name). The one-host run is the ordinary `--host` investigation; the N-host run
adds the fleet prong, which probes every host (node_health, engine_config, python_env) with at most
`hosts_in_flight` hosts busy at once. Reported: wall time of each, the ratio, peak RSS of the investigating process
(ru_maxrss, from a fresh process per run so the figures do not mix), and that the odd host was named.

On loopback every "host" shares this machine's cores, where on a real fleet each host's nvidia-smi and probe
scripts run on that host's own CPU. The staged nvidia-smi (a Python script) is therefore put behind a shell cache in
both runs; the probe scripts themselves still start one Python per probe per host.

Run: `python bench/hosts.py [N] [--in-flight K] [--repeat K]` (default 64 hosts; the issue's bar is N=64 within 3x
one host). With `--repeat`, K pairs alternate one-host and N-host runs and the medians are compared too.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))


CACHED_SMI = """#!/bin/sh
# nvidia-smi answered from files after its first call with the same arguments (bench only: see the docstring)
d={cache}; k=$(printf '%s\\n' "$@" | /usr/bin/md5sum | /usr/bin/cut -c1-32)
if [ -f "$d/$k.out" ]; then /usr/bin/cat "$d/$k.out"; exit "$(/usr/bin/cat "$d/$k.rc")"; fi
{real} "$@" > "$d/$k.$$" 2>/dev/null; rc=$?
echo "$rc" > "$d/$k.rc"; /usr/bin/mv "$d/$k.$$" "$d/$k.out"; /usr/bin/cat "$d/$k.out"; exit "$rc"
"""


def _cache_nvidia_smi(bindir: Path, cache: Path) -> None:
    """Put the staged (Python) nvidia-smi behind a shell cache: a real nvidia-smi costs its own host's CPU, while
    here 64 "hosts" share this machine's cores, and 64 x 5 Python start-ups of the fake would measure the fake."""
    cache.mkdir(parents=True, exist_ok=True)
    real = bindir / "nvidia-smi.real"
    (bindir / "nvidia-smi").rename(real)
    (bindir / "nvidia-smi").write_text(CACHED_SMI.format(cache=cache, real=real))
    (bindir / "nvidia-smi").chmod(0o755)


def _cpu_s(sshd_pids: list[int]) -> float:
    """CPU seconds spent so far by this process (all threads, and children it reaped) and by every sshd with the
    sessions it reaped: what one investigation costs the machine, whatever else runs on it."""
    tick = os.sysconf("SC_CLK_TCK")
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    for pid in sshd_pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
    return total


def _run_once(n: int, in_flight: int, tmp: Path) -> dict:
    """One investigation (in this process): n=1 is the one-host run."""
    import anyio
    from support.fleet import SICK, write_config
    from support.sshd import start_sshd
    from support.staged_host import VARIANTS, stage_host

    from orchestrator.api import investigate
    from orchestrator.settings import Settings

    VARIANTS[SICK] = dataclasses.replace(VARIANTS["rtx-pro-6000x8"], power_limit_w=450.0)
    healthy = stage_host(tmp / "healthy")
    sick = stage_host(tmp / "sick", variant=SICK)
    for i, st in enumerate((healthy, sick)):
        st.env["INVESTIGATE_STAGED_TAG"] = f"bench-{uuid.uuid4().hex}"
        # a GPU machine keeps its real nvidia-smi in /usr/bin, which staging drops from PATH: the staged one comes
        # first anyway, and the probes need the rest of /usr/bin
        st.env["PATH"] += "".join(f":{d}" for d in ("/usr/bin", "/bin") if d not in st.env["PATH"].split(":"))
        _cache_nvidia_smi(st.bin, tmp / f"smi-cache-{i}")
    sshds = []
    try:
        for i in range(n):
            env = sick.env if (n > 1 and i == n // 2) else healthy.env
            sshds.append(start_sshd(tmp, name=f"h{i:02d}", env=env, max_sessions=10))
        cfg = write_config(tmp / "ssh_config", sshds)
        names = [s.alias for s in sshds]
        settings = Settings(power_sample_s=0.5, hosts_in_flight=in_flight)
        cpu0 = _cpu_s([s.proc.pid for s in sshds])
        main0 = time.thread_time()
        t0 = time.perf_counter()
        result = anyio.run(lambda: investigate("why is one replica slower?", host=names if n > 1 else names[0],
                                               ssh_config=str(cfg), offline=True, transcript=False,
                                               settings=settings))
        wall = time.perf_counter() - t0
        main_cpu = time.thread_time() - main0
        time.sleep(0.3)  # the sshds reap their finished sessions (their CPU joins the listener's cutime/cstime)
        cpu = _cpu_s([s.proc.pid for s in sshds]) - cpu0
    finally:
        for s in sshds:
            s.stop()
    d = result.diagnosis
    odd = [o.host for t in (d.fleet or []) for o in t.outliers] if d else []
    me = resource.getrusage(resource.RUSAGE_SELF)
    return {"hosts": n, "status": result.status, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "self_cpu_s": round(me.ru_utime + me.ru_stime, 2), "main_thread_cpu_s": round(main_cpu, 2), "odd": odd,
            "expected_odd": names[n // 2] if n > 1 else None,
            "maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "gaps": len(d.gaps) if d else None}


def _child(n: int, in_flight: int, profile: str | None = None) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", str(n), "--in-flight", str(in_flight)]
                         + (["--profile", profile] if profile else []),
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))})
    if out.returncode != 0:
        raise SystemExit(f"run over {n} host(s) failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("hosts", nargs="?", type=int, default=64)
    ap.add_argument("--in-flight", type=int, default=16)
    ap.add_argument("--profile", metavar="FILE", help="also write a cProfile of the N-host run's main thread to FILE")
    ap.add_argument("--repeat", type=int, default=1, metavar="K",
                    help="K pairs of runs (one host, then N hosts, each in a fresh process); also reports the ratio "
                         "of the median times")
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None:
        with tempfile.TemporaryDirectory(prefix="bench-hosts-") as tmp:
            if a.profile:
                import cProfile

                prof = cProfile.Profile()
                out = prof.runcall(_run_once, a.child, a.in_flight, Path(tmp))
                prof.dump_stats(a.profile)
            else:
                out = _run_once(a.child, a.in_flight, Path(tmp))
            print(json.dumps(out))
        return
    pairs = []
    for i in range(a.repeat):
        one = _child(1, a.in_flight)
        many = _child(a.hosts, a.in_flight, a.profile if i == 0 else None)
        ratio = many["wall_s"] / one["wall_s"]
        per_host = (many["cpu_s"] - one["cpu_s"]) / max(1, a.hosts - 1)
        print(f"1 host:    {one['wall_s']:6.2f} s   CPU {one['cpu_s']:6.2f} s   peak RSS {one['maxrss_mib']:7.1f} MiB")
        print(f"{a.hosts} hosts: {many['wall_s']:6.2f} s   CPU {many['cpu_s']:6.2f} s   peak RSS "
              f"{many['maxrss_mib']:7.1f} MiB   ({ratio:.2f}x the time of one host; {a.in_flight} hosts in flight; "
              f"{os.cpu_count()} cores)")
        print(f"CPU per additional host (sshd, probes on the host, this process): {per_host * 1e3:.0f} ms")
        print(f"odd host named: {many['odd']} (staged: {many['expected_odd']}); status {many['status']}")
        print(json.dumps({"one": one, "many": many, "ratio": round(ratio, 2), "cpu_per_host_ms": round(per_host * 1e3),
                          "cores": os.cpu_count()}), flush=True)
        pairs.append((one["wall_s"], many["wall_s"]))
    if len(pairs) > 1:
        # the two timings compared as two samples: the median of each, then their ratio (a lent machine's noise
        # moves single runs by ~20 % either way, the one-host run included)
        one_s = statistics.median(o for o, _ in pairs)
        many_s = statistics.median(m for _, m in pairs)
        ratios = sorted(m / o for o, m in pairs)
        print(f"over {len(pairs)} pairs: median one host {one_s:.2f} s, median {a.hosts} hosts {many_s:.2f} s: "
              f"{many_s / one_s:.2f}x (single pairs {ratios[0]:.2f}-{ratios[-1]:.2f}x)")
        print(json.dumps({"pairs": len(pairs), "median_one_s": one_s, "median_many_s": many_s,
                          "ratio_of_medians": round(many_s / one_s, 2),
                          "pair_ratios": [round(r, 2) for r in ratios]}))

if __name__ == "__main__":
    main()
