"""Resource-account staging: a host whose kernel counters move, for what this machine cannot produce on demand (GPU
busy fractions, NFS mounts behind the weights, PSI under pressure, swapping, a throttled cgroup, saturated threads).

The staged root (INVESTIGATE_NODE_ROOT, which the account script reads /proc and /sys under) gets, in the kernel's
exact formats, /proc/{stat,vmstat,meminfo,loadavg,net/dev,pressure/*} (proc(5), Documentation/accounting/psi.rst),
/proc/PID/{cmdline,comm,stat,status,io,cgroup,mountinfo,maps,task/TID/{stat,status}} of the serving processes, and
/sys/fs/cgroup/<path>/{cpu.max,cpu.stat,memory.*,*.pressure} (Documentation/admin-guide/cgroup-v2.rst; v1:
cpu.cfs_quota_us, cpu.cfs_period_us, cpu.stat with throttled_time in ns). A real ticker process (this module run as
a script) rewrites the counter files every 20 ms from the wall clock, each counter at its staged rate, so the
probe's two readings a window apart see the rates a real kernel would show. `nvidia-smi` is wrapped so that
`--query-gpu=... --format=csv,noheader,nounits -lms N` prints one row per GPU every N ms (busy per the staged series,
in the driver's row format) and `--query-compute-apps` lists the staged processes; anything else goes to the base
fake nvidia-smi.

    account:
      cpus: 32                                 # CPUs online
      cpu: {busy: 0.1, steal: 0.0, iowait: 0.0}  # fractions of all CPU time
      loadavg: [1.2, 1.1, 1.0]
      mem: {total_gib: 512, available_gib: 400, swap_total_gib: 0, swap_free_gib: 0}
      swap: {in: 0, out: 0}                    # pages/s
      pressure: {cpu: 0, memory: 0, io: 0}     # `some` share of time, percent (full = half of it)
      nics: {eth0: {rx_mbit: 100, tx_mbit: 50, speed: 25000}}
      governor: performance
      cpufreq: {cur_mhz: 1400, max_mhz: 3600}  # every CPU's scaling_cur_freq / cpuinfo_max_freq
      gpus: [{busy: [20, 25, 30], mem_util: 10, memory_used_mib: 70000, memory_total_mib: 81559, power_w: 150}]
      cgroup: {version: 2, path: /kubepods/pod1/c1, quota_cores: 4, throttled: 0.6, used_cores: 3.9,
               memory_max_gib: 64, memory_gib: 40, memory_events: {oom_kill: 0}, pressure: {cpu: 40}}
      processes:
        - argv: [python3, -m, vllm.entrypoints.openai.api_server, --model, /mnt/models/x]
          comm: python3
          gpus: [0]
          threads: [{comm: python3, cpu: 1.0, state: R, vcs: 10, ivcs: 50, majflt: 0}]
          rss_gib: 12                          # VmRSS in /proc/PID/status (host memory held)
          read_mbit: 0                         # storage reads (read_bytes) and read() bytes (rchar), MB/s
          rchar_mbit: 0
          files: [/mnt/models/x/model-00001-of-00004.safetensors]   # mapped (maps)
          mounts: [[/mnt/models, nfs4, "10.0.0.5:/export/models"]]  # extra mountinfo lines; a fourth element
                                               # is the super options (e.g. [/dev/shm, tmpfs, shm, "rw,size=65536k"])
          cpus_allowed: "0-31"                 # Cpus_allowed_list (affinity); default all CPUs
          memlock_kib: 8192                    # /proc/PID/limits "Max locked memory" (KiB); default unlimited
          fds: [/dev/infiniband/uverbs0]       # /proc/PID/fd/N links
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from support import account_ticker
from support.account_ticker import staged_pids, write_static, tick
from support.stagers import StageContext, StageError, stager

WRAPPER = r'''#!/bin/sh
# nvidia-smi staged for the resource account: -lms loops and the compute apps from .account-smi.py, the rest from
# the base fake (tests/support/staged_host.py)
case "$*" in
*-lms*|--query-compute-apps=*) exec {python} -IS "${0%/*}/.account-smi.py" "$@" ;;
esac
exec "${0%/*}/nvidia-smi.base" "$@"
'''

WRAPPER_PY = r'''"""nvidia-smi staged for the resource account: -lms queries loop, compute apps list the staged processes."""
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
acct = json.load(open(os.path.join(here, "account-smi.json")))
args = sys.argv[1:]
q = next((a.split("=", 1)[1] for a in args if a.startswith("--query-gpu=")), None)
if q is not None and "-lms" in args:
    fields = q.split(",")
    ms = int(args[args.index("-lms") + 1])
    i = 0
    while True:
        for g in acct["gpus"]:
            busy = g["busy"][i % len(g["busy"])]
            vals = {"index": str(g["index"]), "pci.bus_id": g["bus_id"], "utilization.gpu": str(busy),
                    "utilization.memory": str(g.get("mem_util", 0)), "memory.used": str(g["memory_used_mib"]),
                    "memory.total": str(g["memory_total_mib"]), "power.draw": "%.2f" % g.get("power_w", 100.0),
                    "clocks.sm": str(g.get("sm_clock", 1980))}
            sys.stdout.write(", ".join(vals.get(f, "[N/A]") for f in fields) + "\n")
        sys.stdout.flush()
        i += 1
        time.sleep(ms / 1000.0)
if any(a.startswith("--query-compute-apps=") for a in args):
    for p in acct["apps"]:
        print("%d, %s, %d" % (p["pid"], p["bus_id"], p["used_mib"]))
    sys.exit(0)
sys.stderr.write("account nvidia-smi: unsupported arguments %r\n" % (args,))
sys.exit(2)
'''


def _smi(ctx: StageContext, spec: dict[str, Any]) -> None:
    bindir = ctx.root / "bin"
    base = json.loads((bindir / "nvidia-smi.json").read_text())
    rows = base.get("gpus") or []
    gpus = []
    for i, g in enumerate(spec.get("gpus") or []):
        row = rows[i] if i < len(rows) else {}
        busy = g.get("busy", 0)
        total = g.get("memory_total_mib") or float(str(row.get("memory.total", "81559")).split()[0])
        gpus.append({"index": i, "bus_id": row.get("pci.bus_id", f"00000000:{0x17 + i * 0x10:02X}:00.0"),
                     "busy": busy if isinstance(busy, list) else [busy], "mem_util": g.get("mem_util", 0),
                     "memory_used_mib": g.get("memory_used_mib", int(total * 0.9)), "memory_total_mib": int(total),
                     "power_w": g.get("power_w", 150.0), "sm_clock": g.get("sm_clock", 1980)})
    apps = []
    for pid, p in staged_pids(spec):
        for gi in p.get("gpus") or []:
            if gi < len(gpus):
                apps.append({"pid": pid, "bus_id": gpus[gi]["bus_id"], "used_mib": gpus[gi]["memory_used_mib"]})
    (bindir / "account-smi.json").write_text(json.dumps({"gpus": gpus, "apps": apps}))
    exe = bindir / "nvidia-smi"
    if exe.exists() and not (bindir / "nvidia-smi.base").exists():
        os.replace(exe, bindir / "nvidia-smi.base")
    exe.write_text(WRAPPER.replace("{python}", sys.executable))
    exe.chmod(0o755)
    (bindir / ".account-smi.py").write_text(WRAPPER_PY)


SHM = "/dev/shm"


def _memory_dir() -> str | None:
    """A private directory on a memory file system for the ticker's trees (account_ticker.ticker_main), or None
    (then they are made under the staged root)."""
    try:
        st = os.statvfs(SHM)
        if st.f_bavail * st.f_frsize < 256 * 2**20 or not os.access(SHM, os.W_OK):
            return None
        return tempfile.mkdtemp(prefix="account-ticker-", dir=SHM)
    except OSError:
        return None


@stager("account")
def stage_account(ctx: StageContext, arg: Any) -> None:
    """`account: {...}` (see the module docstring): counters that move, processes, cgroup, mounts, GPU busy series."""
    if not isinstance(arg, dict):
        raise StageError("account: expected a mapping (see tests/support/stage_account.py)")
    spec = dict(arg)
    root = ctx.root
    write_static(root, spec)
    tick(root, spec, 1000.0)
    if spec.get("gpus"):
        _smi(ctx, spec)
    path = ctx.tmp / "account-spec.json"
    path.write_text(json.dumps(spec))
    trees = _memory_dir()
    proc = subprocess.Popen([sys.executable, account_ticker.__file__, str(root), str(path), *([trees] if trees else [])],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    for _ in range(250):  # until the ticker has swapped in its first tree
        if (root / "proc").is_symlink() or proc.poll() is not None:
            break
        time.sleep(0.02)

    def stop() -> None:
        proc.kill()
        proc.wait()
        if trees:
            shutil.rmtree(trees, ignore_errors=True)

    ctx.cleanups.append(stop)
    ctx.env["INVESTIGATE_NODE_ROOT"] = str(root)

