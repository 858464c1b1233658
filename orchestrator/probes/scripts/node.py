"""Node health in one round trip: GPU state, links, kernel log, interconnect and the serving processes' NCCL env.

stdlib only, Python >= 3.8, read-only. Params (JSON, argv[1]):
  {"logs": [paths to scan for NCCL INFO/WARN lines], "max_kernel_lines": int, "max_nccl_lines": int}
Prints one JSON object: the health fields of nvidia-smi -q -x (read here by _smi.py), raw outputs (nvlink -s/-e, topo -m),
filtered outputs (lspci -vv link/ACS lines, kernel-log NVRM/Xid lines, NCCL lines), serving processes with their
environment FILTERED HERE (allowlisted prefixes only, secret-looking names and values dropped), RDMA devices,
libibverbs, IOMMU settings, NUMA nodes, and `gaps`: every command that was missing, refused or failed, with why.

INVESTIGATE_NODE_ROOT, when set, is a directory the host's files (/proc/cmdline, /sys, /var/log, library dirs) are
read under instead of / (a container that mounts the host under /host; the staged test hosts). Processes are always
read from this machine's /proc; with a staged root only nvidia-smi's GPU processes count, plus server processes
carrying this environment's INVESTIGATE_STAGED_TAG (the staged test hosts of tests/support).
"""
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.environ.get("INVESTIGATE_NODE_ROOT") or "/"

MAX_VALUE = 300

# A server is recognized by its entry point (the prelude's server_kind), a worker by its process title.
ENGINE_NAME = re.compile(r"^(VLLM|vllm|sglang|SGLang|trtllm|TRTLLM)|::(Worker|EngineCore|scheduler|TP\d)", re.I)

KERNEL_LINE = re.compile(r"NVRM|Xid|SXid|nvidia|nvlink|nvswitch|fallen off the bus|NVSwitch|AER:.{0,1000}(?:Corrected|Uncorrected)"
                         r"|pcieport.{0,1000}(?:error|Error)|DMAR: DRHD|iommu.{0,1000}\bfault|mlx5_core.{0,1000}(?:error|Error|down)")
NCCL_LINE = re.compile(r"\bNCCL (?:INFO|WARN)\b|\bNCCL version\b")
LSPCI_KEEP = re.compile(r"^\s+(LnkCap|LnkSta|LnkCtl2|ACSCap|ACSCtl|NUMA node):")


def host_path(path):
    return os.path.join(ROOT, path.lstrip("/")) if ROOT != "/" else path


def run(argv, out, timeout=45):
    """(exit code, stdout, stderr) of argv, or None when the command is not installed (recorded as a gap)."""
    out["commands"].append(" ".join(argv))
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except FileNotFoundError:
        gap(out, " ".join(argv), "%s is not installed (not on PATH)" % argv[0])
        return None
    except PermissionError as exc:
        gap(out, " ".join(argv), "not permitted: %s" % exc)
        return None
    except subprocess.TimeoutExpired:
        gap(out, " ".join(argv), "timed out after %d s" % timeout)
        return None
    except OSError as exc:
        gap(out, " ".join(argv), "%s: %s" % (type(exc).__name__, exc))
        return None
    stdout = proc.stdout.decode("utf-8", "replace")
    stderr = proc.stderr.decode("utf-8", "replace")
    if proc.returncode == 127:
        gap(out, " ".join(argv), "%s is not installed (exit 127)" % argv[0])
        return None
    return proc.returncode, stdout, stderr


def gap(out, what, why):
    out["gaps"].append({"what": what, "why": why.strip()[:300]})


def tail(text):
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no output"


# --- nvidia-smi --------------------------------------------------------------------------------------------------


def nvidia_smi(out):
    res = run(["nvidia-smi", "-q", "-x"], out, timeout=60)
    if res is None:
        return ""
    rc, stdout, stderr = res
    if rc != 0 or "<nvidia_smi_log" not in stdout:
        gap(out, "nvidia-smi -q -x", "exit %d: %s" % (rc, tail(stderr or stdout)))
        return ""
    # Read here (_smi.py, sent with this script): the health fields leave the host, not ~12 KB of XML per GPU.
    try:
        out["smi"] = smi_health(stdout)
    except Exception as exc:  # noqa: BLE001 - whatever the reading hit is this part's gap, never the probe's end
        gap(out, "nvidia-smi -q -x", str(exc) if isinstance(exc, SmiFormatError) else
            "could not read the XML: %s: %s" % (type(exc).__name__, exc))
    for key, argv in (("nvlink_s", ["nvidia-smi", "nvlink", "-s"]), ("nvlink_e", ["nvidia-smi", "nvlink", "-e"]),
                      ("topo", ["nvidia-smi", "topo", "-m"])):
        res = run(argv, out)
        if res is None:
            continue
        rc, so, se = res
        if rc != 0:
            gap(out, " ".join(argv), "exit %d: %s" % (rc, tail(se or so)))
            continue
        out[key] = so[:400000]
        if key == "nvlink_e" and "Errors:" in so:  # counters to read again (PCIe-only GPUs print none)
            out["nvlink_e_at"] = time.monotonic()
    return stdout


def nvlink_second_read(out, window_s):
    """Read the NVLink error counters again, at least `window_s` after the first read: DCGM judges them as a change
    over a window (CRC errors per second, any new replay or recovery), never as a count since the driver loaded."""
    first = out.get("nvlink_e_at")
    if first is None:
        return
    wait = window_s - (time.monotonic() - first)
    if wait > 0:
        time.sleep(wait)
    res = run(["nvidia-smi", "nvlink", "-e"], out)
    if res is None:
        return
    rc, so, se = res
    if rc != 0:
        gap(out, "nvidia-smi nvlink -e (second read)", "exit %d: %s" % (rc, tail(se or so)))
        return
    out["nvlink_e2"] = so[:400000]
    out["nvlink_window_s"] = round(time.monotonic() - first, 3)


# --- lspci ---------------------------------------------------------------------------------------------------------


def lspci(out):
    res = run(["lspci", "-vv"], out, timeout=60)
    if res is None:
        return
    rc, stdout, stderr = res
    if rc != 0:
        gap(out, "lspci -vv", "exit %d: %s" % (rc, tail(stderr or stdout)))
        return
    kept, block, denied = [], None, False
    for line in stdout.splitlines():
        if line and not line[0].isspace():
            block = line if re.search(r"NVIDIA|PCI bridge|Mellanox|Infiniband|InfiniBand|Ethernet controller", line) else None
            if block is not None:
                kept.append(line[:200])
            continue
        if block is None:
            continue
        if "<access denied>" in line:
            denied = True
        if LSPCI_KEEP.match(line):
            kept.append(line.rstrip()[:300])
    out["lspci"] = "\n".join(kept[:4000])
    if denied:
        gap(out, "lspci -vv", "capabilities (LnkSta, ACSCtl) need root: lspci printed <access denied>")


# --- kernel log ---------------------------------------------------------------------------------------------------


def kernel_log(out, limit):
    restrict = None
    try:
        restrict = host_text(host_path("/proc/sys/kernel/dmesg_restrict")).strip()
    except OSError:
        pass
    out["dmesg_restrict"] = restrict
    sources = [("dmesg", ["dmesg"]), ("journalctl -k", ["journalctl", "-k", "-b", "--no-pager", "-q"])]
    for name, argv in sources:
        res = run(argv, out)
        if res is None:
            continue
        rc, stdout, stderr = res
        text = stdout
        if rc != 0 or (not text.strip() and stderr.strip()):
            why = tail(stderr or stdout)
            if name == "dmesg" and restrict == "1":
                why += " (kernel.dmesg_restrict = 1)"
            gap(out, " ".join(argv), "exit %d: %s" % (rc, why))
            continue
        if name == "journalctl -k" and not text.strip():
            gap(out, " ".join(argv), "no kernel messages visible to this user")
            continue
        return keep_kernel(out, name, text, limit)
    path = host_path("/var/log/kern.log")
    out["commands"].append("read /var/log/kern.log")
    try:
        text = host_text(path, 64 << 20)
    except FileNotFoundError:
        gap(out, "/var/log/kern.log", "absent")
        return
    except OSError as exc:
        gap(out, "/var/log/kern.log", "not readable: %s" % (exc.strerror or exc))
        return
    keep_kernel(out, "/var/log/kern.log", text, limit)


def keep_kernel(out, source, text, limit):
    lines = []
    total = 0
    for no, line in enumerate(text.splitlines(), 1):
        total += 1
        if KERNEL_LINE.search(line):
            lines.append([no, line[:500]])
    out["kernel_log"] = {"source": source, "lines_total": total, "lines": lines[-limit:],
                         "dropped": max(0, len(lines) - limit)}


# --- processes ---------------------------------------------------------------------------------------------------


def process_kind(argv):
    kind = server_kind(argv)
    if kind:
        return kind
    if argv and ENGINE_NAME.search(argv[0]):  # a worker named by setproctitle (VLLM::Worker_TP0, sglang::scheduler)
        low = argv[0].lower()
        for word, kind in (("vllm", "vllm"), ("sglang", "sglang"), ("trtllm", "tensorrt_llm")):
            if word in low:
                return kind
        return "engine worker"
    return None


def parent(pid):
    try:
        stat = host_text("/proc/%s/stat" % pid)
        return int(stat.rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def filtered_env(pid):
    """The allowlisted part of /proc/PID/environ; (env, dropped count, readable). Nothing else leaves this function."""
    try:
        raw = read_host_file("/proc/%s/environ" % pid, 1 << 20)[0]
    except OSError:
        return {}, 0, False
    env, dropped = {}, 0
    for item in raw.split(b"\0"):
        if not item:
            continue
        name, _, value = item.decode("utf-8", "replace").partition("=")
        if not keep_env(name, value):
            dropped += 1
            continue
        env[name] = value[:MAX_VALUE]
    return env, dropped, True


def has_tag(pid, tag):
    try:
        return ("INVESTIGATE_STAGED_TAG=" + tag).encode() in read_host_file("/proc/%s/environ" % pid, 1 << 20)[0].split(b"\0")
    except OSError:
        return False


def status_field(pid, field):
    try:
        for line in host_text("/proc/%s/status" % pid).splitlines():
            if line.startswith(field + ":"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def processes(out, xml):
    gpu_pids = set(int(p) for p in re.findall(r"<pid>\s*(\d+)\s*</pid>", xml or ""))
    kinds = {}
    # A staged test host: only the processes its nvidia-smi names, and engines staged with its tag, are its own.
    tag = os.environ.get("INVESTIGATE_STAGED_TAG")
    if ROOT == "/" or tag:
        try:
            pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        except OSError:
            pids = []
        for pid in pids:
            if pid == os.getpid():
                continue
            argv = proc_argv(pid)
            kind = process_kind(argv) if argv else None
            if kind and not ENGINE_NAME.search(argv[0]) and (not tag or has_tag(pid, tag)):
                kinds[pid] = kind
    result = []
    for pid in sorted(gpu_pids | set(kinds)):
        argv = proc_argv(pid)
        visible = argv is not None
        kind = kinds.get(pid) or (process_kind(argv) if argv else None)
        # a worker that an engine started is part of the engine (vLLM's VLLM::Worker, spawn_main children)
        chain, p = 0, pid
        while kind is None and visible and chain < 12:
            p = parent(p)
            if not p or p <= 1:
                break
            pargv = proc_argv(p)
            pk = process_kind(pargv) if pargv else None
            if pk:
                kind = pk
            chain += 1
        env, dropped, readable = filtered_env(pid) if visible else ({}, 0, False)
        comm = None
        try:
            comm = host_text("/proc/%d/comm" % pid).strip()[:64]
        except OSError:
            pass
        result.append({"pid": pid, "visible": visible, "on_gpu": pid in gpu_pids, "kind": kind, "comm": comm,
                       "env": env, "env_dropped": dropped, "env_readable": readable,
                       "cpus_allowed": status_field(pid, "Cpus_allowed_list") if visible else None,
                       "mems_allowed": status_field(pid, "Mems_allowed_list") if visible else None})
    out["processes"] = result
    if any(p["visible"] and not p["env_readable"] for p in result):
        gap(out, "/proc/PID/environ", "not readable for some serving processes (another user's): NCCL env unknown")


# --- fabric, RDMA, IOMMU, NUMA ------------------------------------------------------------------------------------


def host_listdir(path):
    """Sorted names under the host root; None when the directory cannot be listed."""
    try:
        return sorted(os.listdir(host_path(path)))
    except OSError:
        return None


def rdma(out):
    devices = []
    names = host_listdir("/sys/class/infiniband")
    for name in names or []:
        ports = []
        for port in host_listdir("/sys/class/infiniband/%s/ports" % name) or []:
            base = "/sys/class/infiniband/%s/ports/%s/" % (name, port)
            item = {"port": port}
            for key in ("state", "rate", "link_layer"):
                try:
                    item[key] = host_text(host_path(base + key)).strip()[:80]
                except OSError:
                    item[key] = None
            ports.append(item)
        devices.append({"name": name, "ports": ports})
    out["rdma_devices"] = devices
    found = None
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu", "/lib64",
              "/usr/lib/aarch64-linux-gnu", "/lib/aarch64-linux-gnu"):
        for lib in ("libibverbs.so.1", "libibverbs.so"):
            if os.path.exists(host_path(os.path.join(d, lib))):
                found = os.path.join(d, lib)
                break
        if found:
            break
    if not found:
        try:
            if b"libibverbs.so" in read_host_file(host_path("/etc/ld.so.cache"), 8 << 20)[0]:
                found = "ld.so.cache"
        except OSError:
            pass
    out["libibverbs"] = found


def iommu(out):
    try:
        cmdline = host_text(host_path("/proc/cmdline")).strip()
    except OSError as exc:
        gap(out, "/proc/cmdline", "not readable: %s" % exc)
        cmdline = None
    if cmdline is not None:
        # only the IOMMU-related words leave the host (a command line can carry anything)
        out["cmdline_iommu"] = [w for w in cmdline.split() if re.match(r"(intel_iommu|amd_iommu|iommu)[=.]", w)]
    out["iommu_devices"] = host_listdir("/sys/class/iommu")
    groups = host_listdir("/sys/kernel/iommu_groups")
    out["iommu_groups"] = None if groups is None else len(groups)


def numa(out):
    nodes = [n for n in (host_listdir("/sys/devices/system/node") or []) if re.match(r"node\d+$", n)]
    cpus = {}
    for n in nodes:
        try:
            cpus[n[4:]] = host_text(host_path("/sys/devices/system/node/%s/cpulist" % n)).strip()
        except OSError:
            pass
    out["numa_nodes"] = cpus


def fabric_manager(out, xml):
    # Only NVSwitch systems need it; the GPU's fabric state in -q -x says whether it applies.
    states = re.findall(r"<fabric>\s*<state>([^<]*)</state>", xml or "")
    if not states or all(s.strip() in ("N/A", "Not Supported") for s in states):
        return
    res = run(["systemctl", "is-active", "nvidia-fabricmanager"], out, timeout=15)
    if res is not None:
        out["fabricmanager"] = tail(res[1]) if res[1].strip() else "exit %d" % res[0]
    running = False
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if host_text("/proc/%s/comm" % p).strip() in ("nv-fabricmanager", "nvidia-fabricmanager"):
                    running = True
                    break
            except OSError:
                continue
    out["fabricmanager_process"] = running


# --- NCCL lines in logs -------------------------------------------------------------------------------------------


def nccl_lines(out, paths, limit):
    lines = []
    for raw in paths:
        path = os.path.expanduser(raw)
        try:
            f = os.fdopen(open_host_file(path, resolve=True), "r", encoding="utf-8", errors="replace")
        except OSError as exc:
            gap(out, raw, "log not readable: %s" % (exc.strerror or exc))
            continue
        with f:
            no = 0
            while True:
                line = f.readline(1 << 16)
                if not line:
                    break
                no += 1
                if NCCL_LINE.search(line):
                    if len(lines) < limit:
                        lines.append([raw, no, line.rstrip("\n")[:400]])
                    else:
                        out["nccl_dropped"] = out.get("nccl_dropped", 0) + 1
    out["nccl_lines"] = lines


def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    out = {"version": 1, "root": ROOT, "commands": [], "gaps": []}
    xml = nvidia_smi(out)
    lspci(out)
    kernel_log(out, int(params.get("max_kernel_lines", 400)))
    processes(out, xml)
    rdma(out)
    iommu(out)
    numa(out)
    fabric_manager(out, xml)
    nccl_lines(out, params.get("logs") or [], int(params.get("max_nccl_lines", 2000)))
    nvlink_second_read(out, float(params.get("nvlink_window_s", 1.0)))
    out.pop("nvlink_e_at", None)
    print(json.dumps(out))


main()
