# --- is the GPU quiet? (orchestrator/probes/scripts/_quiet.py): sent after the prelude with the measurement
# scripts (gemm_bench, comm_bench). Before they load a GPU they read each target GPU's utilization and its compute
# processes; another process there means the figures would be shared with it: wait (bounded) for it to finish, or
# measure and say so (`shared_gpu`). stdlib only, Python >= 3.8.
#
# Formats: `nvidia-smi --query-gpu=index,pci.bus_id,utilization.gpu,power.draw,memory.used --format=csv,noheader,
# nounits` prints `0, 00000000:00:06.0, 100, 692.98, 1011`; `--query-compute-apps=gpu_bus_id,pid,process_name,
# used_memory --format=csv,noheader,nounits` prints `00000000:00:06.0, 1297, python3, 1002` (nvidia-smi's help:
# `nvidia-smi --help-query-compute-apps`).
import os as _q_os
import subprocess as _q_subprocess
import time as _q_time

QUIET_UTIL_PCT = 10.0
"""Utilization above which a GPU with no visible process is busy (a process in another PID namespace)."""


def _q_rows(argv):
    try:
        out = _q_subprocess.run(argv, stdout=_q_subprocess.PIPE, stderr=_q_subprocess.PIPE, timeout=15)
    except Exception as exc:
        return None, "%s: %s" % (argv[0], exc)
    if out.returncode != 0:
        return None, (out.stderr or out.stdout).decode("utf-8", "replace").strip()[:200] or "exit %d" % out.returncode
    rows = []
    for line in out.stdout.decode("utf-8", "replace").splitlines():
        if line.strip():
            rows.append([c.strip() for c in line.split(",")])
    return rows, None


def _q_num(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def gpu_activity(indices, own_pids):
    """What runs on the GPUs `indices` (nvidia-smi's numbering; None: every GPU) now: utilization, power and memory per GPU, and the
    compute processes that are not ours."""
    gpus, err = _q_rows(["nvidia-smi", "--query-gpu=index,pci.bus_id,utilization.gpu,power.draw,memory.used",
                         "--format=csv,noheader,nounits"])
    if gpus is None:
        return {"read": False, "error": err}
    apps, err2 = _q_rows(["nvidia-smi", "--query-compute-apps=gpu_bus_id,pid,process_name,used_memory",
                          "--format=csv,noheader,nounits"])
    bus = {}
    state = {}
    for r in gpus:
        if len(r) < 5 or not r[0].isdigit():
            continue
        i = int(r[0])
        bus[r[1].lower()] = i
        if indices is None or i in indices:
            state[i] = {"index": i, "utilization_pct": _q_num(r[2]), "power_w": _q_num(r[3]), "memory_used_mib": _q_num(r[4])}
    others = []
    for r in apps or []:
        if len(r) < 4 or not r[1].isdigit():
            continue
        i = bus.get(r[0].lower())
        pid = int(r[1])
        if i is not None and (indices is None or i in indices) and pid not in own_pids:
            others.append({"gpu_index": i, "pid": pid, "name": r[2], "used_memory_mib": _q_num(r[3])})
    out = {"read": True, "gpus": [state[i] for i in sorted(state)], "others": others}
    if apps is None:
        out["apps_error"] = err2
    return out


def wait_for_quiet(indices, wait_s, own_pids=None, poll_s=2.0):
    """Read the target GPUs; while another process uses one (or one is busy with none visible), wait up to
    `wait_s` seconds for it to go. Returns the last reading with `shared_gpu` (measuring now shares a GPU),
    `waited_s` and `busy` (the indices still in use)."""
    own = set(own_pids or ()) | {_q_os.getpid()}
    t0 = _q_time.monotonic()
    while True:
        act = gpu_activity(None if indices is None else set(indices), own)
        if not act.get("read"):
            act.update(shared_gpu=None, waited_s=round(_q_time.monotonic() - t0, 1), busy=[])
            return act
        busy = sorted({o["gpu_index"] for o in act["others"]} | {
            g["index"] for g in act["gpus"] if (g["utilization_pct"] or 0) > QUIET_UTIL_PCT})
        waited = _q_time.monotonic() - t0
        if not busy or waited + poll_s > wait_s:
            act.update(shared_gpu=bool(busy), waited_s=round(waited, 1), busy=busy, wait_s=wait_s)
            return act
        _q_time.sleep(poll_s)
