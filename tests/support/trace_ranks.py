"""Per-rank Kineto traces built from one real single-GPU trace (a 2-GPU machine was not lent): each steady step of
the real trace followed by an all-reduce kernel, rank 1 starting every step late by a host sleep (the straggler),
rank 0's all-reduce waiting for it; a second all-reduce on a side stream overlaps the step's first kernels."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def _steps(doc: dict[str, Any]) -> list[tuple[float, float]]:
    marks = sorted((e["ts"], e["ts"] + e["dur"]) for e in doc["traceEvents"]
                   if e.get("cat") == "user_annotation" and e.get("name", "").startswith("ProfilerStep#"))
    return marks


def build(src: Path, out_dir: Path, sleep_us: float = 2000.0, comm_us: float = 300.0,
          side_us: float = 150.0) -> list[Path]:
    doc = json.load(gzip.open(src))
    marks = _steps(doc)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    meta = [e for e in doc["traceEvents"] if e.get("ph") != "X"]

    def step_of(e: dict[str, Any]) -> int:
        for i, (a, b) in enumerate(marks):
            if a <= e["ts"] < b:
                return i
        return -1

    gpu = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"}
    # the step a GPU activity belongs to is the step of its launch (correlation)
    launch_step = {e["args"]["correlation"]: step_of(e) for e in events
                   if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in (e.get("args") or {})}
    paths = []
    for rank in (0, 1):
        out: list[dict[str, Any]] = []
        corr = 10_000_000
        offset = 0.0
        for i, (a, b) in enumerate(marks):
            mine = [e for e in events if (launch_step.get((e.get("args") or {}).get("correlation"), -2) == i
                                          if e.get("cat") in gpu else step_of(e) == i)]
            if not mine:
                continue
            late = sleep_us if rank == 1 else 0.0
            kernels = [e for e in mine if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
            end = max(e["ts"] + e["dur"] for e in kernels) if kernels else b
            first = min(e["ts"] for e in kernels) if kernels else a
            for e in mine:
                e2 = copy.deepcopy(e)
                e2["ts"] = e["ts"] + offset + late
                out.append(e2)
            if rank == 1:
                out.append({"ph": "X", "cat": "user_annotation", "name": "planted_host_sleep", "pid": mine[0]["pid"],
                            "tid": mine[0]["tid"], "ts": a + offset, "dur": sleep_us, "args": {}})
            tid = next((e["tid"] for e in mine if e.get("cat") == "cuda_runtime"), 0)
            pid = next((e["pid"] for e in mine if e.get("cat") == "kernel"), 0)
            # the step's all-reduce: launched after the last kernel, ends when the last rank has arrived
            start = end + offset + late
            stop = end + offset + sleep_us + comm_us
            for name, ts, dur, stream in ((ALLREDUCE, start, stop - start, 7),
                                          (ALLREDUCE, first + offset + late, side_us, 99)):
                corr += 1
                out.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": mine[0]["pid"],
                            "tid": tid, "ts": ts - 5.0, "dur": 4.0, "args": {"correlation": corr}})
                out.append({"ph": "X", "cat": "kernel", "name": name, "pid": pid, "tid": stream, "ts": ts, "dur": dur,
                            "args": {"device": 0, "stream": stream, "correlation": corr, "External id": -1}})
            offset += sleep_us + comm_us
        rank_doc = {k: v for k, v in doc.items() if k != "traceEvents"}
        rank_doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": 2}
        rank_doc["traceEvents"] = meta + out
        p = out_dir / f"synthetic-TP-{rank}-DP-0-PP-0-EP-0.trace.json.gz"
        with gzip.open(p, "wt") as f:
            json.dump(rank_doc, f)
        paths.append(p)
    return paths
