"""Benchmark: 50 small commands over the pooled SshHost vs one `ssh` per command vs OpenSSH ControlMaster.

Runs against a throwaway sshd on 127.0.0.1 (tests/support/sshd.py), then times inventorying a 10,000-file
directory with `SshHost.find` (one round trip). Run: `python bench/ssh.py`.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from orchestrator.hosts.ssh import SshHost  # noqa: E402
from orchestrator.settings import Settings  # noqa: E402
from support.sshd import start_sshd  # noqa: E402

N = 50


def ssh_argv(sshd, *extra: str) -> list[str]:
    return ["ssh", "-F", str(sshd.ssh_config), *extra, sshd.alias]


def per_process(sshd) -> float:
    t = time.perf_counter()
    for i in range(N):
        subprocess.run([*ssh_argv(sshd), "echo", str(i)], check=True, capture_output=True)
    return time.perf_counter() - t


def control_master(sshd, tmp: Path) -> float:
    opts = ["-o", "ControlMaster=auto", "-o", f"ControlPath={tmp}/cm-%C", "-o", "ControlPersist=60"]
    subprocess.run([*ssh_argv(sshd, *opts), "true"], check=True, capture_output=True)  # master up, not timed
    t = time.perf_counter()
    for i in range(N):
        subprocess.run([*ssh_argv(sshd, *opts), "echo", str(i)], check=True, capture_output=True)
    elapsed = time.perf_counter() - t
    subprocess.run([*ssh_argv(sshd, *opts[:4], "-O", "exit")], capture_output=True)
    return elapsed


async def pooled(sshd) -> tuple[float, float, float]:
    host = await SshHost(sshd.target(), Settings()).connect()  # connection up, not timed (as for ControlMaster)
    t = time.perf_counter()
    for i in range(N):
        assert (await host.run(["echo", str(i)])).ok
    seq = time.perf_counter() - t

    t = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for i in range(N):
            tg.start_soon(host.run, ["echo", str(i)])
    conc = time.perf_counter() - t

    tmp = Path(tempfile.mkdtemp())
    for d in range(100):
        sub = tmp / f"d{d:03d}"
        sub.mkdir()
        for f in range(100):
            (sub / f"k{f:03d}.json").touch()
    before = host.commands_sent
    t = time.perf_counter()
    found = await host.find(str(tmp), "*.json", max_results=20_000)
    inv = time.perf_counter() - t
    assert len(found) == 10_000 and host.commands_sent - before == 1
    await host.aclose()
    return seq, conc, inv


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-ssh-"))
    sshd = start_sshd(tmp, max_sessions=10)
    try:
        proc = per_process(sshd)
        cm = control_master(sshd, tmp)
        seq, conc, inv = anyio.run(pooled, sshd)
    finally:
        sshd.stop()
    rows = [
        ("one ssh process per command", proc),
        ("OpenSSH ControlMaster", cm),
        ("pooled SshHost, sequential", seq),
        ("pooled SshHost, 50 concurrent", conc),
    ]
    print(f"{N} small commands (`echo i`) against sshd on 127.0.0.1\n")
    print(f"{'method':<32} {'total s':>8} {'per cmd ms':>11} {'vs per-process':>15} {'vs ControlMaster':>17}")
    for name, secs in rows:
        print(f"{name:<32} {secs:>8.3f} {secs / N * 1000:>11.1f} {proc / secs:>14.1f}x {secs / cm:>16.2f}x")
    print(f"\npooled sequential is {proc / seq:.1f}x faster than one process per command (target >= 5x)")
    print(f"pooled sequential takes {seq / cm:.2f}x the time of ControlMaster (target <= 1.5x)")
    print(f"inventory of a 10,000-file directory with SshHost.find: {inv:.3f} s in 1 round trip")


if __name__ == "__main__":
    main()
