"""Measure all-reduce latency and bandwidth with torch.distributed across local processes; print one JSON document.

stdlib + torch, Python >= 3.8. Run as `python - PARAMS_JSON` with this file on stdin, or as a file with flags
(`--backend gloo --world 2 --sizes 4096,65536 --group-sizes 2,1 --budget-s 20`). Params: {"backend": "auto"|"nccl"|
"gloo", "world": N (default: every visible GPU; 2 on CPU), "group_sizes": [8, 4] (default [world, world/2]), "sizes":
[bytes] (default 4 KiB .. 256 MiB, powers of 2), "dtype": "bf16"|"fp32", "iters": 20, "warmup": 5, "repeats": 5,
"budget_s": 60}.

One rank per GPU (rank r on cuda:r) is started as `python -c WORKER` with MASTER_ADDR=127.0.0.1 and a free port;
WORKER is the fixed source below (stdin cannot be re-imported by multiprocessing's spawn). For each message size and
group size, the world is split into world/g groups of g consecutive ranks that all-reduce at the same time (as TP
groups of one model replica do). Every child runs with NVLink multicast off (NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1); nothing here changes GPU settings. Reported time: the
slowest rank's mean per all-reduce in each trial, median over trials. Bus bandwidth follows NCCL-tests
(busbw = algbw * 2(n-1)/n).
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
DEFAULT_SIZES = [4096 << i for i in range(17)]  # 4 KiB .. 256 MiB

WORKER = r'''
import datetime, json, os, sys, time
cfg = json.loads(sys.argv[1])
rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])

def emit(d):
    d["rank"] = rank
    sys.stdout.write(json.dumps(d) + "\n"); sys.stdout.flush()

import torch
import torch.distributed as dist
nccl = cfg["backend"] == "nccl"
timeout = datetime.timedelta(seconds=cfg["init_timeout_s"])
if nccl:
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    try:
        dist.init_process_group("nccl", rank=rank, world_size=world, timeout=timeout, device_id=dev)
    except TypeError:  # torch without device_id
        dist.init_process_group("nccl", rank=rank, world_size=world, timeout=timeout)
else:
    dev = torch.device("cpu")
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timeout)
dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[cfg["dtype"]]
esize = torch.tensor([], dtype=dtype).element_size()

groups = {}
for g in cfg["group_sizes"]:
    if g == world:
        groups[g] = (None, list(range(world)))
        continue
    for start in range(0, world, g):  # every rank creates every group, in the same order
        ranks = list(range(start, start + g))
        pg = dist.new_group(ranks)
        if rank in ranks:
            groups[g] = (pg, ranks)

def sync(pg):
    t = torch.ones(1, device=dev)
    dist.all_reduce(t, group=pg)
    if nccl:
        torch.cuda.synchronize()

flag = torch.zeros(1, device=dev)
last = 0.0
for nbytes in cfg["sizes"]:
    for g in cfg["group_sizes"]:
        pg, ranks = groups[g]
        numel = max(1, nbytes // esize)
        # Rank 0 decides whether the next point fits the budget; everyone follows (collectives must match).
        if rank == 0:
            flag.fill_(1.0 if time.time() + 2.0 * last < cfg["deadline"] else 0.0)
        dist.broadcast(flag, src=0)
        if flag.item() == 0.0:
            if rank == 0:
                emit({"stopped": True, "bytes": nbytes, "group_size": g})
            break
        started = time.time()
        x = torch.full((numel,), float(rank + 1), dtype=dtype, device=dev)
        dist.all_reduce(x, group=pg)
        expected = float(sum(r + 1 for r in ranks))
        correct = bool((x == expected).all().item())
        # Timing buffer of zeros: a repeated in-place sum of anything else overflows, and the reduction's speed
        # does not depend on the values.
        buf = torch.zeros(numel, dtype=dtype, device=dev)
        for _ in range(cfg["warmup"]):
            dist.all_reduce(buf, group=pg)
        trials = []
        for _ in range(cfg["repeats"]):
            sync(pg)
            if nccl:
                a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
                a.record()
                for _ in range(cfg["iters"]):
                    dist.all_reduce(buf, group=pg)
                b.record(); b.synchronize()
                trials.append(a.elapsed_time(b) / cfg["iters"])
            else:
                t = time.perf_counter()
                for _ in range(cfg["iters"]):
                    dist.all_reduce(buf, group=pg)
                trials.append((time.perf_counter() - t) * 1e3 / cfg["iters"])
        last = time.time() - started
        emit({"group_size": g, "groups": world // g, "bytes": numel * esize, "dtype": cfg["dtype"], "trials": trials,
          "correct": correct})
        del x, buf
    else:
        continue
    break
ver = None
if nccl:
    try:
        v = torch.cuda.nccl.version()
        ver = ".".join(str(p) for p in v) if isinstance(v, tuple) else str(v)
    except Exception:
        pass
seen = {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")}
name = str(torch.cuda.get_device_name(rank)) if nccl else "cpu"
emit({"done": True, "nccl_version": ver, "env": seen, "device": name})
dist.destroy_process_group()
'''


def parse_args(argv):
    if len(argv) > 1 and argv[1].lstrip().startswith("{"):
        return json.loads(argv[1])
    import argparse

    ap = argparse.ArgumentParser(prog="comm_bench")
    ap.add_argument("--backend", choices=["auto", "nccl", "gloo"])
    ap.add_argument("--world", type=int)
    ap.add_argument("--group-sizes", type=str)
    ap.add_argument("--sizes", type=str)
    ap.add_argument("--dtype", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--iters", type=int)
    ap.add_argument("--repeats", type=int)
    ap.add_argument("--budget-s", type=float)
    ns = ap.parse_args(argv[1:])
    params = {k: v for k, v in vars(ns).items() if v is not None}
    for key in ("group_sizes", "sizes"):
        if key in params:
            params[key] = [int(x) for x in params[key].split(",") if x]
    return params


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def topology():
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        p = subprocess.run(["nvidia-smi", "topo", "-m"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=20)
        return p.stdout
    except Exception as exc:
        return "nvidia-smi topo -m failed: %s" % exc


def median(xs):
    s = sorted(xs)
    h = len(s) // 2
    return s[h] if len(s) % 2 else (s[h - 1] + s[h]) / 2.0


def default_groups(world):
    out = [world]
    if world > 1 and world % 2 == 0:
        out.append(world // 2)
    return out


def merge(lines_by_rank, world):
    """Points from every rank's lines: per trial the slowest rank, then the median over trials."""
    by_key = {}
    for lines in lines_by_rank:
        for d in lines:
            if "trials" in d:
                by_key.setdefault((d["bytes"], d["group_size"]), []).append(d)
    points = []
    for (nbytes, g), ds in sorted(by_key.items()):
        if len(ds) < world:
            continue  # a rank did not finish this point
        n = min(len(d["trials"]) for d in ds)
        worst = [max(d["trials"][i] for d in ds) for i in range(n)]
        points.append({"group_size": g, "groups": ds[0]["groups"], "bytes": nbytes, "dtype": ds[0]["dtype"],
                       "ms": median(worst),
                       "ms_min": min(worst), "repeats": n, "correct": all(d["correct"] for d in ds)})
    return points


def main(argv):
    t0 = time.time()
    result = {"kind": "comm_sweep", "available": False, "reason": None, "points": [], "stopped_early": False,
              "env": dict(NO_MULTICAST), "rank_errors": []}
    try:
        params = parse_args(argv)
    except SystemExit:
        result["reason"] = "bad parameters: %s" % " ".join(argv[1:])
        return result
    budget = float(params.get("budget_s", 60.0))
    result["budget_s"] = budget
    result["topology_raw"] = topology()
    if params.get("require_gpu") and not gpu_present():
        result["reason"] = ("no GPU on this host (no /dev/nvidia0, /dev/kfd or /dev/dxg device file and no nvidia-smi, rocm-smi or amd-smi): no all-reduce "
                            "to measure; torch was not imported")
        return result
    # before any load: what else runs on the GPUs (_quiet.py), waiting up to `measure_wait_s` for it to go
    gpu_check = wait_for_quiet(None, float(params.get("measure_wait_s", 0) or 0))
    result["gpu_activity"] = gpu_check
    result["shared_gpu"] = gpu_check.get("shared_gpu")
    t0 = time.time()  # the budget is for the measurement, not the wait
    try:
        import torch
        import torch.distributed as dist
    except Exception as exc:
        result["reason"] = "torch does not import under %s: %s" % (sys.executable, exc)
        return result
    result["torch_version"] = torch.__version__
    if not dist.is_available():
        result["reason"] = "torch %s was built without torch.distributed" % torch.__version__
        return result
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    backend = params.get("backend", "auto")
    if backend == "auto":
        backend = "nccl" if gpus > 0 and dist.is_nccl_available() else "gloo"
    if backend == "nccl":
        if gpus == 0 or not dist.is_nccl_available():
            result["reason"] = "NCCL needs CUDA GPUs and a torch built with NCCL (GPUs seen: %d)" % gpus
            return result
        world = int(params.get("world") or gpus)
        if world > gpus:
            result["reason"] = "world %d asks for more GPUs than the %d visible" % (world, gpus)
            return result
    else:
        if not dist.is_gloo_available():
            result["reason"] = "torch %s has no gloo backend" % torch.__version__
            return result
        world = int(params.get("world") or 2)
    groups = [g for g in (params.get("group_sizes") or default_groups(world)) if 0 < g <= world and world % g == 0]
    dropped = [g for g in (params.get("group_sizes") or []) if g not in groups]
    sizes = [int(s) for s in (params.get("sizes") or DEFAULT_SIZES)]
    dtype = params.get("dtype") or ("bf16" if backend == "nccl" else "fp32")
    result.update(backend=backend, world_size=world, group_sizes=groups, sizes=sizes)
    cfg = {"backend": backend, "group_sizes": groups, "sizes": sizes, "dtype": dtype,
           "iters": int(params.get("iters", 20)), "warmup": int(params.get("warmup", 5)),
           "repeats": int(params.get("repeats", 5)), "deadline": t0 + budget,
           "init_timeout_s": float(params.get("init_timeout_s", 60.0))}
    port = free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ)
        env.update(NO_MULTICAST)
        env.update({"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
                    "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world), "LOCAL_WORLD_SIZE": str(world)})
        if backend == "gloo":
            env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # single host: loopback, whatever the hostname resolves to
        procs.append(subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(cfg)], env=env,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      universal_newlines=True))
    lines = [[] for _ in procs]
    errs = [[] for _ in procs]

    def read_out(i, p):
        for line in p.stdout:
            try:
                lines[i].append(json.loads(line))
            except ValueError:
                pass

    def read_err(i, p):
        for line in p.stderr:
            errs[i].append(line.rstrip())
            del errs[i][:-20]

    threads = [threading.Thread(target=f, args=(i, p), daemon=True)
               for i, p in enumerate(procs) for f in (read_out, read_err)]
    for t in threads:
        t.start()
    hard_deadline = t0 + budget + cfg["init_timeout_s"]
    killed = False
    for p in procs:
        try:
            p.wait(timeout=max(1.0, hard_deadline - time.time()))
        except subprocess.TimeoutExpired:
            killed = True
            for q in procs:  # only the ranks this script started
                if q.poll() is None:
                    q.kill()
            for q in procs:
                q.wait()
            break
    for t in threads:
        t.join(timeout=5)
    for i, p in enumerate(procs):
        if p.returncode != 0 and not killed:
            tail = [e for e in errs[i] if e.strip()]
            result["rank_errors"].append("rank %d exit %s: %s" % (i, p.returncode, tail[-1] if tail else ""))
    done = [d for ls in lines for d in ls if d.get("done")]
    if done:
        result["nccl_version"] = done[0].get("nccl_version")
        seen = {k: v for k, v in (done[0].get("env") or {}).items() if v is not None}
        result["env"] = seen  # what the ranks actually saw
        result["devices"] = [d.get("device") for d in sorted(done, key=lambda d: d["rank"])]
    result["points"] = [dict(p, iters=cfg["iters"]) for p in merge(lines, world)]
    stopped = [d for d in lines[0] if d.get("stopped")]
    reasons = []
    if stopped:
        result["stopped_early"] = True
        reasons.append("time budget of %gs reached before %d bytes in groups of %d"
                       % (budget, stopped[0]["bytes"], stopped[0]["group_size"]))
    if killed:
        result["stopped_early"] = True
        reasons.append("ranks killed after %gs without finishing" % (hard_deadline - t0))
    if dropped:
        reasons.append("group sizes %s do not divide the world of %d and were skipped" % (dropped, world))
    if result["rank_errors"]:
        reasons.append(result["rank_errors"][0])
    result["reason"] = "; ".join(reasons) or None
    result["available"] = bool(result["points"])
    result["elapsed_s"] = round(time.time() - t0, 3)
    return result


if __name__ == "__main__":
    try:
        out = main(sys.argv)
    except Exception as exc:  # one JSON document whatever happens
        out = {"kind": "comm_sweep", "available": False, "reason": "comm_bench failed: %s: %s" % (
            type(exc).__name__, exc)}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
