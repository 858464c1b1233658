"""The resource account of a GPU host: where the time goes, sampled over a short window. Read-only.

stdlib only, Python >= 3.8. Params (JSON, argv[1]): {"sample_s": 3.0, "interval_ms": 200, "max_threads": 24}.
Two readings of every kernel counter, `sample_s` apart, give rates; `nvidia-smi --query-gpu ... -lms` (or the amdgpu
driver's gpu_busy_percent, polled) runs through the window and gives each GPU's busy fraction over it, not one snapshot. Prints one JSON object:
  window_s, clk_tck, gpus[] (busy mean/min/max over the samples, memory, power, SM clock, per-sample series),
  host (CPUs online/busy/steal/iowait, loadavg, governor, MemAvailable, swap in/out, PSI, NIC rates),
  processes[] (the serving / GPU-holding processes: CPU, threads with comm/state/CPU/ctxt switches, major faults,
  bytes read, GPUs, cgroup with its quota/throttling/memory/PSI, the mounts behind the files it maps, its /dev/shm
  mount and size, its locked-memory limit and the RDMA verbs devices it holds open),
  gaps[] (what could not be read, and why).

Formats (the kernel's documentation):
- /proc/stat, /proc/PID/stat, /proc/PID/task/TID/stat, /proc/PID/status, /proc/PID/io, /proc/PID/mountinfo,
  /proc/meminfo, /proc/vmstat, /proc/loadavg, /proc/net/dev: proc(5) (man7.org/linux/man-pages/man5/proc.5.html)
  and Documentation/filesystems/proc.rst.
- /proc/pressure/{cpu,memory,io} and the cgroup's {cpu,memory,io}.pressure ("some avg10=0.00 avg60=0.00
  avg300=0.00 total=0", total in microseconds): Documentation/accounting/psi.rst.
- cgroup v2 cpu.max ("$MAX $PERIOD", max = unlimited), cpu.stat (usage_usec, nr_periods, nr_throttled,
  throttled_usec), memory.max, memory.current, memory.events (low, high, max, oom, oom_kill), cpuset.cpus.effective:
  Documentation/admin-guide/cgroup-v2.rst. v1: cpu.cfs_quota_us / cpu.cfs_period_us (-1 = unlimited), cpu.stat
  (nr_periods, nr_throttled, throttled_time in ns): Documentation/scheduler/sched-bwc.rst.

INVESTIGATE_NODE_ROOT, when set, is a directory the host's /proc and /sys are read under (a container that mounts
the host there; the staged test hosts). Processes come from <root>/proc when it lists any, else from this machine's
/proc, kept to those carrying INVESTIGATE_STAGED_TAG when that is set (the staged test hosts of tests/support).
"""
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.environ.get("INVESTIGATE_NODE_ROOT") or "/"
TAG = os.environ.get("INVESTIGATE_STAGED_TAG")

SMI_FIELDS = "index,pci.bus_id,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,clocks.sm"
ENGINE_NAME = re.compile(r"^(VLLM|vllm|sglang|SGLang|trtllm|TRTLLM)|::(Worker|EngineCore|scheduler|TP\d)", re.I)
WEIGHT_FILE = re.compile(r"\.(safetensors|bin|pt|pth|gguf|engine|plan|onnx)$")
NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "ceph", "lustre", "glusterfs", "gpfs", "beegfs", "9p", "virtiofs")


def hp(path):
    """A host path under ROOT."""
    return os.path.join(ROOT, path.lstrip("/")) if ROOT != "/" else path


def gap(out, what, why):
    out["gaps"].append({"what": what, "why": str(why).strip()[:300]})


def why_not(exc):
    if isinstance(exc, PermissionError):
        return "permission denied (run as the serving user or root)"
    if isinstance(exc, FileNotFoundError):
        return "not present on this host"
    return "%s: %s" % (type(exc).__name__, exc)


def try_read(out, path, what=None):
    try:
        return host_text(path)
    except OSError as exc:
        if what:
            gap(out, what, why_not(exc))
        return None


def kv_lines(text):
    """`name value` or `name: value kB` lines (meminfo, vmstat, cpu.stat, memory.events, status) as a dict."""
    d = {}
    for line in (text or "").splitlines():
        parts = line.replace(":", " ").split()
        if len(parts) >= 2:
            d[parts[0]] = parts[1]
    return d


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


# --- host counters -----------------------------------------------------------------------------------------------


def cpu_times(text):
    """/proc/stat: the aggregate `cpu` line (user nice system idle iowait irq softirq steal, in USER_HZ) and the
    number of `cpuN` lines (CPUs online)."""
    agg, n = None, 0
    for line in (text or "").splitlines():
        if line.startswith("cpu "):
            agg = [int(x) for x in line.split()[1:9]] + [0] * max(0, 9 - len(line.split()))
        elif re.match(r"cpu\d+ ", line):
            n += 1
    return agg, n


def psi(text):
    """A pressure file: {"some": {"avg10":..,"total":..}, "full": {...}} (psi.rst)."""
    d = {}
    for line in (text or "").splitlines():
        parts = line.split()
        if parts and parts[0] in ("some", "full"):
            d[parts[0]] = {k: num(v) for k, v in (p.split("=", 1) for p in parts[1:] if "=" in p)}
    return d


def net_dev(text):
    """/proc/net/dev: interface -> (rx bytes, tx bytes)."""
    d = {}
    for line in (text or "").splitlines()[2:]:
        if ":" not in line:
            continue
        name, rest = line.split(":", 1)
        f = rest.split()
        if len(f) >= 9:
            d[name.strip()] = (int(f[0]), int(f[8]))
    return d


def host_snapshot(out, first):
    s = {"t": time.time()}
    s["vmstat"] = kv_lines(try_read(out, hp("/proc/vmstat"), "/proc/vmstat" if first else None))
    s["net"] = net_dev(try_read(out, hp("/proc/net/dev"), "/proc/net/dev" if first else None))
    s["psi"] = {}
    for res in ("cpu", "memory", "io"):
        text = try_read(out, hp("/proc/pressure/" + res), ("/proc/pressure/" + res) if first else None)
        if text is not None:
            s["psi"][res] = psi(text)
    # the kernel's clock beside these counters: their rates are taken over its span (see kernel_span)
    s["clock"] = try_read(out, hp("/proc/stat"))
    return s


def kernel_span(stat_a, stat_b, window, clk):
    """Seconds the kernel's clock advanced between two /proc/stat readings (the CPUs' ticks, idle included, per
    CPU), when it agrees with the wall-clock `window` closely enough to be one span; else the window. Counters read
    beside each reading are rates over that same span, even when a reading was served late (a loaded host, a FUSE-
    or lxcfs-served /proc); the wall clock stands in for a /proc/stat that does not advance or shows another
    machine's view."""
    ta, n_cpus = cpu_times(stat_a)
    tb, _ = cpu_times(stat_b)
    if ta and tb and n_cpus:
        kernel = (sum(tb) - sum(ta)) / float(n_cpus) / clk
        if 0.25 * window <= kernel <= 4.0 * window:
            return kernel
    return window


def host_account(out, a, b, window):
    h = {}
    ta, n_cpus = cpu_times(a["stat"])
    tb, _ = cpu_times(b["stat"])
    h["cpus_online"] = n_cpus or None
    if ta and tb and sum(tb) <= sum(ta):
        # the clock did not advance between the readings (a stale or replaced /proc/stat): no share can be computed,
        # and a zero total must not read as "100 % busy"
        gap(out, "/proc/stat", "the CPU counters did not advance over the window")
    elif ta and tb:
        d = [y - x for x, y in zip(ta, tb)]
        total = float(sum(d)) or 1.0
        idle = d[3] + d[4]
        h["cpu_busy_pct"] = round(100.0 * (total - idle) / total, 1)
        h["iowait_pct"] = round(100.0 * d[4] / total, 1)
        h["steal_pct"] = round(100.0 * d[7] / total, 1)
        h["cpu_ticks_per_cpu"] = total / max(1, n_cpus)
    load = try_read(out, hp("/proc/loadavg"), "/proc/loadavg")
    if load:
        f = load.split()
        h["loadavg"] = [num(x) for x in f[:3]]
        if "/" in f[3]:
            h["runnable"] = int(f[3].split("/")[0])
    gov = try_read(out, hp("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"))
    h["governor"] = gov.strip() if gov else None
    mem = kv_lines(try_read(out, hp("/proc/meminfo"), "/proc/meminfo"))
    for key, name in (("MemTotal", "mem_total_kb"), ("MemAvailable", "mem_available_kb"),
                      ("SwapTotal", "swap_total_kb"), ("SwapFree", "swap_free_kb")):
        if key in mem:
            h[name] = int(mem[key])
    va, vb = a["vmstat"], b["vmstat"]
    for key in ("pswpin", "pswpout", "pgmajfault"):
        if key in va and key in vb:
            h[key + "_per_s"] = round((int(vb[key]) - int(va[key])) / window, 1)
    h["psi"] = psi_account(a["psi"], b["psi"], window)
    nics = []
    for name, (rx1, tx1) in sorted(b["net"].items()):
        if name == "lo" or name not in a["net"]:
            continue
        rx0, tx0 = a["net"][name]
        speed = num((try_read(out, hp("/sys/class/net/%s/speed" % name)) or "").strip())
        nics.append({"name": name, "rx_bytes_per_s": round((rx1 - rx0) / window), "tx_bytes_per_s":
                     round((tx1 - tx0) / window), "speed_mbit": speed if speed and speed > 0 else None})
    h["nics"] = nics
    return h


def psi_account(a, b, window):
    """Per resource and line: the kernel's avg10 and the stalled share of this window (total is microseconds)."""
    res = {}
    for name, lines in b.items():
        res[name] = {}
        for kind, vals in lines.items():
            t0 = ((a.get(name) or {}).get(kind) or {}).get("total")
            t1 = vals.get("total")
            share = None if t0 is None or t1 is None else round(100.0 * (t1 - t0) / 1e6 / window, 1)
            res[name][kind] = {"avg10": vals.get("avg10"), "window_pct": share}
    return res


# --- processes ---------------------------------------------------------------------------------------------------


def proc_dir():
    """Where the processes are read: <root>/proc when the root has any, else this machine's /proc."""
    if ROOT != "/":
        p = hp("/proc")
        try:
            if any(n.isdigit() for n in os.listdir(p)):
                return p, False
        except OSError:
            pass
    return "/proc", bool(TAG)


def has_tag(proc, pid):
    try:
        return ("INVESTIGATE_STAGED_TAG=" + TAG).encode() in read_host_file("%s/%s/environ" % (proc, pid), 1 << 20)[0].split(b"\0")
    except OSError:
        return False


def stat_fields(text):
    """(comm, fields after the comm) of a /proc/PID/stat line: fields[0] is state (field 3 of proc(5))."""
    head, _, rest = text.rpartition(")")
    return head.partition("(")[2], rest.split()


def ppid_of(proc, pid):
    try:
        return int(stat_fields(host_text("%s/%s/stat" % (proc, pid)))[1][1])
    except (OSError, ValueError, IndexError):
        return None


def select_processes(proc, tagged, gpu_pids):
    """The serving processes (a server entry point, a worker named like one, their children) and the GPU holders."""
    kinds = {}
    try:
        pids = [int(p) for p in os.listdir(proc) if p.isdigit()]
    except OSError:
        pids = []
    me = os.getpid()
    argvs = {}
    for pid in pids:
        if pid == me:
            continue
        argv = proc_argv(pid, proc)
        if not argv:
            continue
        argvs[pid] = argv
        kind = server_kind(argv)
        if not kind and ENGINE_NAME.search(argv[0]):
            kind = "engine worker"
        if kind and (not tagged or has_tag(proc, pid)):
            kinds[pid] = kind
    # children of a server (spawned workers, tokenizer/detokenizer processes) belong to it
    for pid in argvs:
        if pid in kinds:
            continue
        p, hops = pid, 0
        while hops < 6:
            p = ppid_of(proc, p)
            if not p or p <= 1:
                break
            if p in kinds:
                kinds[pid] = "child of %s" % kinds[p].split(" ")[-1]
                break
            hops += 1
    for pid in gpu_pids:
        kinds.setdefault(pid, None)
    return kinds


def task_snapshot(proc, pid):
    """tid -> (comm, state, utime+stime ticks, voluntary, involuntary ctxt switches, majflt)."""
    tasks = {}
    try:
        tids = [t for t in os.listdir("%s/%d/task" % (proc, pid)) if t.isdigit()]
    except OSError:
        return None
    for tid in tids:
        try:
            comm, f = stat_fields(host_text("%s/%d/task/%s/stat" % (proc, pid, tid)))
            st = kv_lines(host_text("%s/%d/task/%s/status" % (proc, pid, tid)))
        except OSError:
            continue
        try:
            tasks[int(tid)] = (comm, f[0], int(f[11]) + int(f[12]), int(st.get("voluntary_ctxt_switches", 0)),
                               int(st.get("nonvoluntary_ctxt_switches", 0)), int(f[9]),
                               int(f[36]) if len(f) > 36 else None)  # field 39 `processor`: CPU last run on
        except (ValueError, IndexError):
            continue
    return tasks


def io_snapshot(proc, pid):
    try:
        d = kv_lines(host_text("%s/%d/io" % (proc, pid)))
        return {k: int(d[k]) for k in ("rchar", "read_bytes") if k in d}
    except (OSError, ValueError):
        return None


def cgroup_path(proc, pid):
    """(v2 path, v1 cpu path) from /proc/PID/cgroup ("0::/path" on v2; "N:cpu,cpuacct:/path" on v1)."""
    v2 = v1 = None
    try:
        for line in host_text("%s/%d/cgroup" % (proc, pid)).splitlines():
            hid, ctrls, path = line.split(":", 2)
            if hid == "0" and ctrls == "":
                v2 = path
            elif "cpu" in ctrls.split(","):
                v1 = path
    except (OSError, ValueError):
        pass
    return v2, v1


def cgroup_snapshot(v2, v1):
    s = {}
    if v2 is not None:
        base = hp("/sys/fs/cgroup") + ("" if v2 == "/" else v2)
        s["version"] = 2
        s["path"] = v2
        for name in ("cpu.max", "cpu.stat", "memory.max", "memory.current", "memory.events", "cpuset.cpus.effective",
                     "cpu.pressure", "memory.pressure", "io.pressure"):
            try:
                s[name] = host_text(os.path.join(base, name))
            except OSError:
                pass
        if len(s) > 2:
            return s
    if v1 is not None:
        base = os.path.join(hp("/sys/fs/cgroup/cpu,cpuacct"), v1.lstrip("/"))
        if not os.path.isdir(base):
            base = os.path.join(hp("/sys/fs/cgroup/cpu"), v1.lstrip("/"))
        s = {"version": 1, "path": v1}
        for name in ("cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.stat"):
            try:
                s[name] = host_text(os.path.join(base, name))
            except OSError:
                pass
    return s


def cgroup_account(a, b, window):
    c = {"version": b.get("version"), "path": b.get("path")}
    if b.get("version") == 2:
        cm = (b.get("cpu.max") or "").split()
        if cm:
            c["cpu_quota_cores"] = None if cm[0] == "max" else round(int(cm[0]) / float(cm[1]), 3)
        sa, sb = kv_lines(a.get("cpu.stat")), kv_lines(b.get("cpu.stat"))
        throttled_key, scale = "throttled_usec", 1.0
    else:
        q, per = num((b.get("cpu.cfs_quota_us") or "").strip()), num((b.get("cpu.cfs_period_us") or "").strip())
        if q is not None and per:
            c["cpu_quota_cores"] = None if q < 0 else round(q / per, 3)
        sa, sb = kv_lines(a.get("cpu.stat")), kv_lines(b.get("cpu.stat"))
        throttled_key, scale = "throttled_time", 1e-3
    if sb:
        for key in ("nr_periods", "nr_throttled"):
            if key in sa and key in sb:
                c[key + "_delta"] = int(sb[key]) - int(sa[key])
                c[key] = int(sb[key])
        if throttled_key in sa and throttled_key in sb:
            c["throttled_ms_per_s"] = round((int(sb[throttled_key]) - int(sa[throttled_key])) * scale / 1e3 / window, 1)
        if "usage_usec" in sa and "usage_usec" in sb:
            c["cpu_used_cores"] = round((int(sb["usage_usec"]) - int(sa["usage_usec"])) / 1e6 / window, 2)
    mm = (b.get("memory.max") or "").strip()
    if mm:
        c["memory_max_bytes"] = None if mm == "max" else int(mm)
    if (b.get("memory.current") or "").strip():
        c["memory_current_bytes"] = int(b["memory.current"].strip())
    ev = kv_lines(b.get("memory.events"))
    if ev:
        c["memory_events"] = {k: int(v) for k, v in ev.items()}
    if b.get("cpuset.cpus.effective"):
        c["cpuset"] = b["cpuset.cpus.effective"].strip()
    pa = {r: psi(a.get(r + ".pressure")) for r in ("cpu", "memory", "io") if a.get(r + ".pressure")}
    pb = {r: psi(b.get(r + ".pressure")) for r in ("cpu", "memory", "io") if b.get(r + ".pressure")}
    if pb:
        c["psi"] = psi_account(pa, pb, window)
    return c


def mounts_of(proc, pid):
    """/proc/PID/mountinfo: (mount point, fstype, source) per line (proc(5): fields after ' - ' are fstype, source)."""
    out = []
    try:
        for line in host_text("%s/%d/mountinfo" % (proc, pid)).splitlines():
            pre, sep, post = line.partition(" - ")
            f, g = pre.split(), post.split()
            if sep and len(f) >= 5 and len(g) >= 2:
                out.append((f[4].replace("\\040", " "), g[0], g[1]))
    except OSError:
        return None
    return out


TMPFS_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def shm_of(proc, pid):
    """The process's /dev/shm as its own mount namespace sees it (a container's, not the host's): the tmpfs line of
    /proc/PID/mountinfo whose mount point is /dev/shm, its size from the super options' size= (tmpfs(5): size in
    bytes with a k, m or g suffix, or a % of RAM; absent, the default of half of RAM). Docker gives a container a
    64 MB /dev/shm ("size=65536k") unless run with --shm-size or --ipc=host. None when not readable or not mounted."""
    try:
        text = host_text("%s/%d/mountinfo" % (proc, pid))
    except OSError:
        return None
    for line in text.splitlines():
        pre, sep, post = line.partition(" - ")
        f, g = pre.split(), post.split()
        if not sep or len(f) < 5 or len(g) < 2 or f[4] != "/dev/shm":
            continue
        out = {"fstype": g[0], "source": g[1], "options": (g[2] if len(g) > 2 else "")[:200]}
        for opt in out["options"].split(","):
            if opt.startswith("size="):
                v = opt[5:].strip().lower()
                try:
                    if v.endswith("%"):
                        out["size_pct_of_ram"] = float(v[:-1])
                    elif v and v[-1] in TMPFS_UNITS:
                        out["size_bytes"] = int(float(v[:-1]) * TMPFS_UNITS[v[-1]])
                    else:
                        out["size_bytes"] = int(v)
                except ValueError:
                    pass
        return out
    return None


def memlock_of(proc, pid):
    """The process's locked-memory limit (RLIMIT_MEMLOCK): the soft value of "Max locked memory" in /proc/PID/limits
    (proc(5); bytes, or "unlimited"). None when not readable."""
    try:
        for line in host_text("%s/%d/limits" % (proc, pid)).splitlines():
            if line.startswith("Max locked memory"):
                soft = line[len("Max locked memory"):].split()[0]
                return soft if soft == "unlimited" else int(soft)
    except (OSError, ValueError, IndexError):
        return None
    return None


def rdma_fds(proc, pid):
    """How many of the process's open files are RDMA verbs devices (/dev/infiniband/uverbsN, rdma_cm): it uses
    InfiniBand / RoCE (NCCL's NET/IB, a KV-transfer library). None when its fds are not readable."""
    n = 0
    try:
        for fd in os.listdir("%s/%d/fd" % (proc, pid))[:8192]:
            try:
                if os.readlink("%s/%d/fd/%s" % (proc, pid, fd)).startswith("/dev/infiniband/"):
                    n += 1
            except OSError:
                continue
    except OSError:
        return None
    return n


def weight_files(proc, pid):
    """Model files the process maps or holds open (/proc/PID/maps paths, /proc/PID/fd links)."""
    files = []
    try:
        for line in host_text("%s/%d/maps" % (proc, pid), 8 << 20).splitlines():
            parts = line.split(None, 5)
            if len(parts) == 6 and WEIGHT_FILE.search(parts[5].strip()):
                files.append(parts[5].strip())
    except OSError:
        pass
    try:
        for fd in os.listdir("%s/%d/fd" % (proc, pid))[:4096]:
            try:
                target = os.readlink("%s/%d/fd/%s" % (proc, pid, fd))
            except OSError:
                continue
            if WEIGHT_FILE.search(target):
                files.append(target)
    except OSError:
        pass
    return sorted(set(files))


def model_arg(argv):
    for i, a in enumerate(argv or []):
        if a in ("--model", "--model-path", "--model_path", "--model-id") and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--model=") or a.startswith("--model-path="):
            return a.split("=", 1)[1]
    if "serve" in (argv or [])[1:3]:
        rest = argv[argv.index("serve") + 1:]
        if rest and not rest[0].startswith("-"):
            return rest[0]
    return None


def mount_for(mounts, path):
    best = None
    for mp, fstype, source in mounts:
        if path == mp or path.startswith(mp.rstrip("/") + "/") or mp == "/":
            if best is None or len(mp) > len(best[0]):
                best = (mp, fstype, source)
    return best


def cpu_list_count(text):
    """How many CPUs a list such as "0-3,8,10-11" names (the kernel's cpulist format: Cpus_allowed_list in
    /proc/PID/status, proc(5); cpuset.cpus.effective, cgroup-v2.rst); None when it does not parse."""
    n = 0
    try:
        for part in text.strip().split(","):
            if not part:
                continue
            lo, _, hi = part.partition("-")
            n += (int(hi) - int(lo) + 1) if hi else 1
    except ValueError:
        return None
    return n or None


def cpu_clock(cpu):
    """The clock of the CPU a busy thread last ran on: cpufreq's scaling_cur_freq and cpuinfo_max_freq (kHz) and its
    governor (Documentation/admin-guide/pm/cpufreq.rst); {} where cpufreq is not exposed (many VMs)."""
    base = hp("/sys/devices/system/cpu/cpu%d/cpufreq/" % cpu)
    out = {"last_cpu": cpu}
    try:
        out["cur_mhz"] = int(host_text(base + "scaling_cur_freq").strip()) // 1000
        out["max_mhz"] = int(host_text(base + "cpuinfo_max_freq").strip()) // 1000
        out["governor"] = host_text(base + "scaling_governor").strip()[:32]
    except (OSError, ValueError):
        pass
    return out


def cpus_allowed(proc, pid):
    """The process's CPU affinity (taskset, sched_setaffinity, a cpuset): Cpus_allowed_list of /proc/PID/status."""
    try:
        v = kv_lines(host_text("%s/%d/status" % (proc, pid))).get("Cpus_allowed_list")
    except OSError:
        return None
    return v.strip() if v else None


def process_account(proc, pid, kind, a, b, ticks_per_s, window, max_threads):
    argv = proc_argv(pid, proc) or []
    p = {"pid": pid, "kind": kind, "argv0": os.path.basename(argv[0]) if argv else None,
         "comm": None, "threads_total": 0, "states": {}, "threads": []}
    try:
        p["comm"] = host_text("%s/%d/comm" % (proc, pid)).strip()[:64]
    except OSError:
        pass
    try:  # proc(5): "VmRSS:    123456 kB", the resident set (host memory the process holds now)
        rss = num(kv_lines(host_text("%s/%d/status" % (proc, pid))).get("VmRSS"))
        p["rss_bytes"] = int(rss * 1024) if rss is not None else None
    except OSError:
        pass
    ta, tb = a.get("tasks") or {}, b.get("tasks") or {}
    total_cpu = 0.0
    rows = []
    for tid, (comm, state, ticks, vol, invol, majflt, last_cpu) in tb.items():
        p["states"][state] = p["states"].get(state, 0) + 1
        prev = ta.get(tid)
        if prev is None:
            continue
        # one thread runs on one core at a time: a reading above it is the two clocks' jitter, not work
        cpu = min(1.0, (ticks - prev[2]) / ticks_per_s)
        total_cpu += cpu
        rows.append({"tid": tid, "comm": comm, "state": state, "cpu_pct": round(100.0 * cpu, 1),
                     "voluntary_ctxt_per_s": round((vol - prev[3]) / window, 1),
                     "involuntary_ctxt_per_s": round((invol - prev[4]) / window, 1),
                     "majflt_per_s": round((majflt - prev[5]) / window, 1)})
        if cpu >= 0.5 and last_cpu is not None:
            rows[-1].update(cpu_clock(last_cpu))
    p["threads_total"] = len(tb)
    rows.sort(key=lambda r: -r["cpu_pct"])
    p["threads"] = rows[:max_threads]
    p["cpu_pct"] = round(100.0 * total_cpu, 1)
    p["majflt_per_s"] = round(sum(r["majflt_per_s"] for r in rows), 1)
    ia, ib = a.get("io"), b.get("io")
    if ia and ib:
        p["read_bytes_per_s"] = round((ib.get("read_bytes", 0) - ia.get("read_bytes", 0)) / window)
        p["rchar_per_s"] = round((ib.get("rchar", 0) - ia.get("rchar", 0)) / window)
    p["io_readable"] = bool(ib)
    allowed = cpus_allowed(proc, pid)
    if allowed:
        p["cpus_allowed"] = allowed[:200]
        p["cpus_allowed_count"] = cpu_list_count(allowed)
    return p


# --- GPUs --------------------------------------------------------------------------------------------------------


def start_smi(interval_ms):
    argv = ["nvidia-smi", "--query-gpu=" + SMI_FIELDS, "--format=csv,noheader,nounits", "-lms", str(interval_ms)]
    try:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE), " ".join(argv)
    except OSError as exc:
        return exc, " ".join(argv)


def gpu_pids_of():
    """pid -> [GPU bus ids] of the compute processes nvidia-smi lists."""
    try:
        proc = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_bus_id,used_memory",
                               "--format=csv,noheader,nounits"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    pids = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) >= 2 and f[0].isdigit():
            pids.setdefault(int(f[0]), []).append(f[1])
    return pids


def smi_samples(text):
    """Rows of the -lms query grouped into samples (a sample ends when a GPU index repeats)."""
    samples, cur = [], {}
    for line in text.splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) < 8 or not f[0].isdigit():
            continue
        idx = int(f[0])
        if idx in cur:
            samples.append(cur)
            cur = {}
        cur[idx] = f
    if cur:
        samples.append(cur)
    return samples


def gpu_account(samples):
    gpus = {}
    for s in samples:
        for idx, f in s.items():
            g = gpus.setdefault(idx, {"index": idx, "bus_id": f[1], "util": [], "mem_util": [], "power": [],
                                      "sm_clock": [], "memory_used_mib": None, "memory_total_mib": None})
            for key, v in (("util", f[2]), ("mem_util", f[3]), ("power", f[6]), ("sm_clock", f[7])):
                x = num(v)
                if x is not None:
                    g[key].append(x)
            used, total = num(f[4]), num(f[5])
            if used is not None:
                g["memory_used_mib"] = used
            if total is not None:
                g["memory_total_mib"] = total
    out = []
    for idx in sorted(gpus):
        g = gpus[idx]
        u = g.pop("util")
        out.append({"index": idx, "bus_id": g["bus_id"], "samples": len(u),
                    "busy_pct": round(sum(u) / len(u), 1) if u else None,
                    "busy_min_pct": min(u) if u else None, "busy_max_pct": max(u) if u else None,
                    "mem_bw_util_pct": round(sum(g["mem_util"]) / len(g["mem_util"]), 1) if g["mem_util"] else None,
                    "power_w": round(sum(g["power"]) / len(g["power"]), 1) if g["power"] else None,
                    "sm_clock_mhz": round(sum(g["sm_clock"]) / len(g["sm_clock"])) if g["sm_clock"] else None,
                    "memory_used_mib": g["memory_used_mib"], "memory_total_mib": g["memory_total_mib"],
                    "series": u[:64]})
    return out


def amd_busy_files():
    """(card, path) of the amdgpu driver's gpu_busy_percent files (Documentation/gpu/amdgpu/driver-misc.rst)."""
    base = hp("/sys/class/drm")
    out = []
    for card in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        path = os.path.join(base, card, "device", "gpu_busy_percent")
        if re.match(r"card\d+$", card) and os.path.exists(path):
            out.append((card, path))
    return out


def amd_account(series):
    """One GpuBusy-shaped entry per amdgpu card from its polled gpu_busy_percent."""
    out = []
    for i, (card, vals) in enumerate(sorted(series.items())):
        out.append({"index": i, "bus_id": card, "samples": len(vals),
                    "busy_pct": round(sum(vals) / len(vals), 1) if vals else None,
                    "busy_min_pct": min(vals) if vals else None, "busy_max_pct": max(vals) if vals else None,
                    "series": vals[:64]})
    return out


# --- the window --------------------------------------------------------------------------------------------------


def snapshot_processes(proc, pids, cgroups):
    snap = {}
    for pid in pids:
        snap[pid] = {"tasks": task_snapshot(proc, pid), "io": io_snapshot(proc, pid)}
    cg = {}
    for key, (v2, v1) in cgroups.items():
        cg[key] = cgroup_snapshot(v2, v1)
    return snap, cg


def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    sample_s = max(0.2, float(params.get("sample_s", 3.0)))
    interval_ms = max(50, int(params.get("interval_ms", 200)))
    max_threads = int(params.get("max_threads", 24))
    out = {"version": 1, "root": ROOT, "gaps": [], "commands": []}
    try:
        clk = os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError, AttributeError):
        clk = 100
    out["clk_tck"] = clk
    smi, smi_cmd = start_smi(interval_ms)
    out["commands"].append(smi_cmd)
    gpu_map = gpu_pids_of() if not isinstance(smi, Exception) else {}
    proc, tagged = proc_dir()
    kinds = select_processes(proc, tagged, set(gpu_map))
    cgroups = {}
    for pid in kinds:
        v2, v1 = cgroup_path(proc, pid)
        if v2 is not None or v1 is not None:
            cgroups[(v2, v1)] = (v2, v1)
    amd = amd_busy_files() if isinstance(smi, Exception) else []
    amd_series = dict((card, []) for card, _ in amd)
    ha = host_snapshot(out, True)
    pa, ca = snapshot_processes(proc, list(kinds), cgroups)
    # /proc/stat right after the threads: their CPU is measured against the kernel's clock over the same span
    ha["stat"] = try_read(out, hp("/proc/stat"), "/proc/stat")
    t0 = time.monotonic()
    while True:  # without nvidia-smi, poll the amdgpu busy files through the window (nvidia-smi -lms does its own)
        for card, path in amd:
            v = num((try_read(out, path) or "").strip())
            if v is not None:
                amd_series[card].append(v)
        left = sample_s - (time.monotonic() - t0)
        if left <= 0:
            break
        time.sleep(min(left, interval_ms / 1000.0) if amd else left)
    window = time.monotonic() - t0
    hb = host_snapshot(out, False)
    pb, cb = snapshot_processes(proc, list(kinds), cgroups)
    hb["stat"] = try_read(out, hp("/proc/stat"))
    out["window_s"] = round(window, 3)
    # the host's counters (vmstat, PSI, NICs) over the kernel's clock read beside them; the processes' over the one
    # read right after their threads
    host_window = kernel_span(ha["clock"], hb["clock"], window, clk)
    window = kernel_span(ha["stat"], hb["stat"], window, clk)
    out["host"] = host_account(out, ha, hb, host_window)
    # thread CPU against the kernel's own clock when /proc/stat was read (ticks per CPU over the window), else wall
    ticks = out["host"].pop("cpu_ticks_per_cpu", None)
    ticks_per_window = ticks if ticks else clk * window
    # GPUs
    if isinstance(smi, Exception):
        gap(out, "nvidia-smi", "not installed (not on PATH)" if isinstance(smi, FileNotFoundError) else why_not(smi))
        out["gpus"] = amd_account(amd_series)
        if amd:
            out["commands"].append("/sys/class/drm/card*/device/gpu_busy_percent (polled)")
        else:
            gap(out, "/sys/class/drm/card*/device/gpu_busy_percent", "no amdgpu card either: no GPU busy share over "
                "the window")
    else:
        smi.terminate()
        try:
            so, se = smi.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            smi.kill()
            so, se = smi.communicate()
        text = so.decode("utf-8", "replace")
        out["gpus"] = gpu_account(smi_samples(text))
        if not out["gpus"]:
            why = (se.decode("utf-8", "replace").strip() or text.strip() or "no rows").splitlines()[-1][:200]
            gap(out, smi_cmd, why)
    bus_to_index = {g["bus_id"]: g["index"] for g in out["gpus"]}
    # processes
    procs = []
    cg_out = {}
    for key in cgroups:
        if cb.get(key):
            cg_out[key] = cgroup_account(ca.get(key) or {}, cb[key], window)
    for pid, kind in sorted(kinds.items()):
        if pb[pid]["tasks"] is None:
            gap(out, "/proc/%d/task" % pid, "not readable (the process ended, or another user's)")
            continue
        p = process_account(proc, pid, kind, pa[pid], pb[pid], ticks_per_window, window, max_threads)
        p["gpus"] = sorted(set(bus_to_index.get(b, b) for b in gpu_map.get(pid, [])), key=str)
        v2, v1 = cgroup_path(proc, pid)
        p["cgroup"] = cg_out.get((v2, v1))
        mounts = mounts_of(proc, pid)
        shm = shm_of(proc, pid)
        if shm:
            p["shm"] = shm
        lock, verbs = memlock_of(proc, pid), rdma_fds(proc, pid)
        if lock is not None:
            p["memlock_bytes"] = None if lock == "unlimited" else lock
            p["memlock_unlimited"] = lock == "unlimited"
        if verbs:
            p["rdma_fds"] = verbs
        files = weight_files(proc, pid)
        model = model_arg(proc_argv(pid, proc))
        if model and model.startswith("/"):
            files.append(model)
        p["files"] = []
        if mounts is None:
            gap(out, "/proc/%d/mountinfo" % pid, "not readable: filesystems behind the weights unknown")
        else:
            seen = set()
            for f in files:
                m = mount_for(mounts, f)
                if m and m[0] not in seen:
                    seen.add(m[0])
                    p["files"].append({"path": f, "mount_point": m[0], "fstype": m[1], "source": m[2],
                                       "network": m[1].split(".")[0] in NETWORK_FS, "fuse": m[1].startswith("fuse")})
        if not p["io_readable"]:
            gap(out, "/proc/%d/io" % pid, "not readable (another user's process): bytes read unknown")
        procs.append(p)
    out["processes"] = procs
    if not kinds:
        gap(out, "serving processes", "no serving or GPU-holding process found: per-thread CPU not accounted")
    print(json.dumps(out))


main()
