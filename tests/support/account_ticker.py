"""The ticker of a staged resource-account host (tests/support/stage_account.py): it writes the kernel's counter
files under a staged root as they would read `t` seconds after boot, each counter at its staged rate, and (run as a
script: `python3 account_ticker.py ROOT SPEC.json`) rewrites them every 20 ms from the wall clock. Formats: proc(5),
Documentation/accounting/psi.rst, Documentation/admin-guide/cgroup-v2.rst, Documentation/scheduler/sched-bwc.rst."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

CLK = 100
PAGE = 4096
BASE_PID = 41000


def _g(d: dict[str, Any], k: str, default: Any = 0) -> Any:
    v = d.get(k)
    return default if v is None else v


def staged_pids(spec: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return [(int(p.get("pid") or BASE_PID + 100 * i), p) for i, p in enumerate(spec.get("processes") or [])]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _put(path: Path, text: str) -> None:
    """`_write` into a tree no reader sees yet: no rename needed."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def write_static(root: Path, spec: dict[str, Any]) -> None:
    """Files that do not move: identities, limits, mounts, maps, the governor, NIC speeds."""
    proc = root / "proc"
    cpus = int(_g(spec, "cpus", 32))
    freq = spec.get("cpufreq")  # {cur_mhz, max_mhz}: every CPU's cpufreq clock (cpufreq.rst, in kHz)
    for c in range(cpus if freq else 1 if spec.get("governor") else 0):
        d = root / f"sys/devices/system/cpu/cpu{c}/cpufreq"
        _write(d / "scaling_governor", str(spec.get("governor") or "performance") + "\n")
        if freq:
            _write(d / "scaling_cur_freq", f"{int(freq['cur_mhz']) * 1000}\n")
            _write(d / "cpuinfo_max_freq", f"{int(freq['max_mhz']) * 1000}\n")
    for name, nic in (spec.get("nics") or {}).items():
        if nic.get("speed"):
            _write(root / f"sys/class/net/{name}/speed", f"{int(nic['speed'])}\n")
    cg = spec.get("cgroup")
    if cg:
        d = _cgroup_dir(root, cg)
        if int(_g(cg, "version", 2)) == 2:
            q = cg.get("quota_cores")
            _write(d / "cpu.max", ("max" if not q else str(int(float(q) * 100000))) + " 100000\n")
            mm = cg.get("memory_max_gib")
            _write(d / "memory.max", ("max" if not mm else str(int(float(mm) * 2**30))) + "\n")
            _write(d / "memory.current", f"{int(float(_g(cg, 'memory_gib', 1)) * 2**30)}\n")
            ev = {"low": 0, "high": 0, "max": 0, "oom": 0, "oom_kill": 0, "oom_group_kill": 0,
                  **(cg.get("memory_events") or {})}
            _write(d / "memory.events", "".join(f"{k} {v}\n" for k, v in ev.items()))
            _write(d / "cpuset.cpus.effective", cg.get("cpuset", f"0-{cpus - 1}") + "\n")
        else:
            q = cg.get("quota_cores")
            _write(d / "cpu.cfs_quota_us", ("-1" if not q else str(int(float(q) * 100000))) + "\n")
            _write(d / "cpu.cfs_period_us", "100000\n")
    mounts = ["22 27 0:21 / /proc rw,relatime - proc proc rw", "23 27 0:22 / /sys rw,relatime - sysfs sysfs rw",
              "27 1 253:1 / / rw,relatime - ext4 /dev/nvme0n1p1 rw"]
    for pid, p in staged_pids(spec):
        d = proc / str(pid)
        argv = [str(a) for a in p.get("argv") or ["python3", "-m", "vllm.entrypoints.openai.api_server"]]
        _write(d / "cmdline", "\0".join(argv) + "\0")
        _write(d / "comm", p.get("comm", "python3") + "\n")
        path = cg.get("path", "/") if cg else "/"
        _write(d / "cgroup", f"0::{path}\n" if not cg or int(_g(cg, "version", 2)) == 2
               else f"4:cpu,cpuacct:{path}\n0::/\n")
        lines = list(mounts)
        for i, (mp, fstype, source, *opts) in enumerate(p.get("mounts") or []):
            # a fourth element is the super options as the kernel prints them (tmpfs: "rw,size=65536k")
            lines.append(f"{300 + i} 27 0:{60 + i} / {mp} rw,relatime - {fstype} {source} "
                         f"{opts[0] if opts else 'rw,vers=4.2'}")
        _write(d / "mountinfo", "\n".join(lines) + "\n")
        maps = ["55d0c0000000-55d0c0021000 r--p 00000000 103:01 1234 /usr/bin/python3.12"]
        for i, f in enumerate(p.get("files") or []):
            maps.append(f"7f{i:02x}00000000-7f{i:02x}80000000 r--s 00000000 00:{60 + i} {9000 + i} {f}")
        _write(d / "maps", "\n".join(maps) + "\n")
        _write(d / "environ", "PATH=/usr/bin\0")
        # proc(5) /proc/PID/limits: "Limit  Soft Limit  Hard Limit  Units", one resource a line
        memlock = p.get("memlock_kib")
        lk = "unlimited" if memlock in (None, "unlimited") else str(int(memlock) * 1024)
        _write(d / "limits", "Limit                     Soft Limit           Hard Limit           Units     \n"
               "Max open files            1048576              1048576              files     \n"
               f"Max locked memory         {lk:<20} {lk:<20} bytes     \n")
        for i, target in enumerate(p.get("fds") or []):  # /proc/PID/fd/N links (e.g. /dev/infiniband/uverbs0)
            (d / "fd").mkdir(parents=True, exist_ok=True)
            os.symlink(target, d / "fd" / str(20 + i))


def _cgroup_dir(root: Path, cg: dict[str, Any]) -> Path:
    rel = str(cg.get("path", "/kubepods/pod0/c0")).lstrip("/")
    if int(_g(cg, "version", 2)) == 2:
        return root / "sys/fs/cgroup" / rel
    return root / "sys/fs/cgroup/cpu,cpuacct" / rel


def _stat_line(pid: int, comm: str, state: str, ticks: int, majflt: int, ppid: int = 1) -> str:
    # proc(5) /proc/PID/stat: pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
    # utime stime cutime cstime priority nice num_threads itrealvalue starttime vsize rss ... (52 fields)
    utime, stime = ticks * 9 // 10, ticks - ticks * 9 // 10
    rest = [state, ppid, pid, pid, 0, -1, 4194560, 1000, 0, majflt, 0, utime, stime, 0, 0, 20, 0, 1, 0, 12345,
            10**9, 20000] + [0] * 29
    return f"{pid} ({comm}) " + " ".join(str(x) for x in rest) + "\n"


def _status(name: str, pid: int, state: str, vcs: int, ivcs: int, rss_kb: int | None = None,
            allowed: str = "0-31") -> str:
    names = {"R": "R (running)", "S": "S (sleeping)", "D": "D (disk sleep)"}
    rss = f"VmRSS:\t{rss_kb:>8} kB\n" if rss_kb is not None else ""
    return (f"Name:\t{name}\nUmask:\t0022\nState:\t{names.get(state, state)}\nTgid:\t{pid}\nPid:\t{pid}\nPPid:\t1\n"
            f"{rss}Threads:\t1\nCpus_allowed_list:\t{allowed}\nvoluntary_ctxt_switches:\t{vcs}\n"
            f"nonvoluntary_ctxt_switches:\t{ivcs}\n")


def _psi(some_pct: float, t: float) -> str:
    some = some_pct / 100.0
    full = some / 2
    return (f"some avg10={some_pct:.2f} avg60={some_pct:.2f} avg300={some_pct:.2f} total={int(some * t * 1e6) + 1000}\n"
            f"full avg10={full * 100:.2f} avg60={full * 100:.2f} avg300={full * 100:.2f} total={int(full * t * 1e6)}\n")


def tick(root: Path, spec: dict[str, Any], t: float, proc: Path | None = None, private: bool = False) -> None:
    """Write every counter file as the kernel would show it `t` seconds after the staged host booted (the /proc
    files into `proc`, default <root>/proc; `private`: a tree no reader sees until it is swapped in, written
    directly instead of each file through a rename)."""
    proc = proc or root / "proc"
    put = _put if private else _write
    cpus = int(_g(spec, "cpus", 32))
    cpu = spec.get("cpu") or {}
    total = cpus * CLK * t
    busy, steal, iowait = float(_g(cpu, "busy", 0.05)), float(_g(cpu, "steal", 0)), float(_g(cpu, "iowait", 0))
    user, system = int(total * busy * 0.8), int(total * busy * 0.2)
    st, io = int(total * steal), int(total * iowait)
    idle = max(0, int(total) - user - system - st - io)
    lines = [f"cpu  {user} 0 {system} {idle} {io} 0 0 {st} 0 0"]
    for c in range(cpus):
        lines.append(f"cpu{c} {user // cpus} 0 {system // cpus} {idle // cpus} {io // cpus} 0 0 {st // cpus} 0 0")
    lines += ["intr 0", "ctxt 0", "btime 1764500000", "processes 1000", "procs_running 2", "procs_blocked 0"]
    stat_text = "\n".join(lines) + "\n"
    swap = spec.get("swap") or {}
    put(proc / "vmstat", f"nr_free_pages 1000000\npgmajfault {int(t * 10)}\npswpin {int(float(_g(swap, 'in')) * t)}\n"
           f"pswpout {int(float(_g(swap, 'out')) * t)}\n")
    mem = spec.get("mem") or {}
    kb = 1024 * 1024
    put(proc / "meminfo", f"MemTotal:       {int(float(_g(mem, 'total_gib', 512)) * kb)} kB\n"
           f"MemFree:        {int(float(_g(mem, 'available_gib', 400)) * kb * 0.9)} kB\n"
           f"MemAvailable:   {int(float(_g(mem, 'available_gib', 400)) * kb)} kB\n"
           f"SwapTotal:      {int(float(_g(mem, 'swap_total_gib', 0)) * kb)} kB\n"
           f"SwapFree:       {int(float(_g(mem, 'swap_free_gib', 0)) * kb)} kB\n")
    load = spec.get("loadavg") or [1.0, 1.0, 1.0]
    put(proc / "loadavg", f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} 3/1200 99999\n")
    pressure = spec.get("pressure") or {}
    for res in ("cpu", "memory", "io"):
        put(proc / "pressure" / res, _psi(float(_g(pressure, res)), t))
    dev = ["Inter-|   Receive                                                |  Transmit",
           " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls "
           "carrier compressed",
           "    lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0"]
    for name, nic in (spec.get("nics") or {"eth0": {}}).items():
        rx, tx = int(float(_g(nic, "rx_mbit")) * 1e6 / 8 * t), int(float(_g(nic, "tx_mbit")) * 1e6 / 8 * t)
        dev.append(f"{name:>6}: {rx} {rx // 1500} 0 0 0 0 0 0 {tx} {tx // 1500} 0 0 0 0 0 0")
    put(proc / "net" / "dev", "\n".join(dev) + "\n")
    cg = spec.get("cgroup")
    if cg:
        d = _cgroup_dir(root, cg)
        periods = int(10 * t)  # 100 ms periods
        thr = int(periods * float(_g(cg, "throttled")))
        used = float(_g(cg, "used_cores", 1.0))
        if int(_g(cg, "version", 2)) == 2:
            _write(d / "cpu.stat", f"usage_usec {int(used * t * 1e6)}\nuser_usec {int(used * t * 0.8e6)}\n"
                   f"system_usec {int(used * t * 0.2e6)}\nnr_periods {periods}\nnr_throttled {thr}\n"
                   f"throttled_usec {thr * 30000}\nnr_bursts 0\nburst_usec 0\n")
            for res, v in (cg.get("pressure") or {}).items():
                _write(d / f"{res}.pressure", _psi(float(v), t))
        else:
            _write(d / "cpu.stat", f"nr_periods {periods}\nnr_throttled {thr}\nthrottled_time {thr * 30000000}\n")
    for pid, p in staged_pids(spec):
        d = proc / str(pid)
        threads = p.get("threads") or [{"comm": p.get("comm", "python3"), "cpu": 0.01, "state": "S"}]
        majflt_total = 0
        for i, th in enumerate(threads):
            tid = pid if i == 0 else pid + 1 + i
            ticks = int(float(_g(th, "cpu")) * CLK * t)
            majflt = int(float(_g(th, "majflt")) * t)
            majflt_total += majflt
            state = th.get("state", "S")
            td = d / "task" / str(tid)
            put(td / "stat", _stat_line(tid, th.get("comm", "python3"), state, ticks, majflt))
            put(td / "status", _status(th.get("comm", "python3"), tid, state, int(float(_g(th, "vcs", 5)) * t),
                                          int(float(_g(th, "ivcs", 1)) * t), str(p.get("cpus_allowed", f"0-{cpus - 1}"))))
        main = threads[0]
        all_ticks = sum(int(float(_g(th, "cpu")) * CLK * t) for th in threads)
        put(d / "stat", _stat_line(pid, p.get("comm", "python3"), main.get("state", "S"), all_ticks, majflt_total))
        rss_kb = int(float(p["rss_gib"]) * 2**20) if p.get("rss_gib") is not None else None
        put(d / "status", _status(p.get("comm", "python3"), pid, main.get("state", "S"), 10, 1, rss_kb,
                                     str(p.get("cpus_allowed", f"0-{cpus - 1}"))))
        rb, rc = float(_g(p, "read_mbit")) * 1e6 * t, float(_g(p, "rchar_mbit", _g(p, "read_mbit"))) * 1e6 * t
        put(d / "io", f"rchar: {int(rc)}\nwchar: 1000\nsyscr: {int(rc) // 65536}\nsyscw: 10\n"
               f"read_bytes: {int(rb)}\nwrite_bytes: 0\ncancelled_write_bytes: 0\n")
    # last, right after the threads: the probe measures thread CPU against /proc/stat's clock, so the two must come
    # from the same tick as nearly as a reader can tell
    put(proc / "stat", stat_text)


def ticker_main(root: str, spec_path: str, trees: str | None = None) -> None:
    """Every 20 ms a complete new /proc tree (static files hard-linked, counters written), swapped in at once by
    renaming a symlink over <root>/proc: a reader sees one tick's counters in every file it opens, as a real kernel's
    reads are consistent, instead of a tree half rewritten. `trees`: a directory on a memory file system to build the
    trees in (`<root>/proc` then links there), else beside <root>/proc: a tree of a few dozen files made and removed
    every 20 ms cost ~6 ms of CPU a tick on an ext4 disk mounted with `discard`, ~1 ms in memory."""
    try:  # ahead of the workers that load a small test machine: a tree swapped in late reads as a stale kernel
        os.nice(-10)
    except OSError:  # not root: ordinary priority
        pass
    base = Path(root)
    home = Path(trees) if trees else base
    spec = json.loads(Path(spec_path).read_text())
    static = home / "proc.static"
    if not (base / "proc").is_symlink():
        if home == base:
            os.replace(base / "proc", static)
        else:  # another file system: hard links from there need the static files here
            shutil.copytree(base / "proc", static, symlinks=True)
            shutil.rmtree(base / "proc")
    files = [p.relative_to(static) for p in static.rglob("*") if p.is_file() or p.is_symlink()]  # fd/N links too
    dirs = sorted({a for rel in files for a in rel.parents if a != Path(".")}, key=lambda r: len(r.parts))
    t0 = time.time() - 1000.0  # the staged host has been up a while
    n = 0
    while True:
        d = home / f"proc.{n}"
        d.mkdir()
        for rel in dirs:
            (d / rel).mkdir(exist_ok=True)
        for rel in files:
            os.link(static / rel, d / rel, follow_symlinks=False)
        tick(base, spec, time.time() - t0, d, private=True)
        if n == 0:  # the directories the counters go in too (task/TID, pressure, net), made ahead from now on
            dirs = sorted((p.relative_to(d) for p in d.rglob("*") if p.is_dir() and not p.is_symlink()),
                          key=lambda r: len(r.parts))
        link = base / "proc.link"
        os.symlink(d if home != base else d.name, link)
        os.replace(link, base / "proc")
        old = home / f"proc.{n - 3}"
        if old.exists():
            shutil.rmtree(old, ignore_errors=True)
        n += 1
        time.sleep(0.02)  # fine enough that a probe's reads of threads and of /proc/stat land in trees 20 ms apart
        # at most (every 100 ms, a loaded CI machine read a busy thread at 0 % once)


if __name__ == "__main__":
    ticker_main(*sys.argv[1:4])
