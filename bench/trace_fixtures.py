"""Make the trace test fixtures from the traces recorded on the H200 (bench/trace_record.py, run on the device).

Extracts: the same Kineto JSON with python functions, flow arrows and CPU ops dropped (GEMM CPU ops with their
Input Dims kept), every GPU activity, runtime call and annotation kept as recorded. The nsys SQLite fixture is built
with the Nsight Systems export schema (documented tables and columns) from the same run's kernels, copies, sets,
runtime calls and annotations: nsys was not on the device. Usage: python bench/trace_fixtures.py SRC_DIR OUT_DIR
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import sys
from pathlib import Path

KEEP = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "user_annotation",
        "gpu_user_annotation", "Trace"}
GEMM_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::linear", "aten::matmul"}


def extract(src: Path, dst: Path) -> None:
    doc = json.load(gzip.open(src))
    events = [e for e in doc["traceEvents"]
              if e.get("ph") == "M" or e.get("cat") in KEEP or (e.get("cat") == "cpu_op" and e.get("name") in GEMM_OPS)]
    doc["traceEvents"] = events
    with gzip.open(dst, "wt", compresslevel=9) as f:
        json.dump(doc, f, separators=(",", ":"))


MEMCPY_KIND = {"HtoD": 1, "DtoH": 2, "DtoD": 8, "HtoH": 9, "PtoP": 10}
MEMORY_KIND = {"Pageable": 1, "Pinned": 2, "Device": 3}


def to_nsys(src: Path, dst: Path) -> None:
    """The documented export schema (https://docs.nvidia.com/nsight-systems/UserGuide/index.html, SQLite export):
    times in ns, names through StringIds."""
    doc = json.load(gzip.open(src))
    dst.unlink(missing_ok=True)
    db = sqlite3.connect(dst)
    db.executescript("""
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, busLocation TEXT, totalMemory INTEGER, smCount INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
      contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
      demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER,
      cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
      gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
      staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
      localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
      sharedMemoryLimitConfig INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
      globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
      contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,
      copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER,
      srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER);
    CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
      contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL,
      bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);
    CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
      category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
      domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
      int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
    """)
    strings: dict[str, int] = {}

    def sid(s: str) -> int:
        if s not in strings:
            strings[s] = len(strings) + 1
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[s], s))
        return strings[s]

    props = doc.get("deviceProperties") or [{}]
    db.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, ?, '0000:00:00.0', ?, ?)",
               (props[0].get("name"), props[0].get("totalGlobalMem"), props[0].get("numSms")))

    def ns(us: float) -> int:
        return int(round(us * 1000))

    for e in doc["traceEvents"]:
        cat, a = e.get("cat"), e.get("args") or {}
        if e.get("ph") != "X":
            continue
        t0, t1 = ns(e["ts"]), ns(e["ts"] + e.get("dur", 0))
        if cat == "kernel":
            g, b = a.get("grid", [1, 1, 1]), a.get("block", [1, 1, 1])
            n = sid(e["name"])
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId,"
                       " globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY,"
                       " blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId)"
                       " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,0,0,0)",
                       (t0, t1, a.get("device", 0), a.get("context", 1), a.get("stream", 7), a.get("correlation"),
                        e.get("pid"), n, n, a.get("registers per thread", 0), *g, *b, a.get("shared memory", 0), 0))
        elif cat == "gpu_memcpy":
            kind = e["name"].split()[1]
            src, dst_ = e["name"].split("(")[1].rstrip(")").split(" -> ")
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId,"
                       " globalPid, bytes, copyKind, srcKind, dstKind) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                       (t0, t1, a.get("device", 0), a.get("context", 1), a.get("stream", 7), a.get("correlation"),
                        e.get("pid"), a.get("bytes", 0), MEMCPY_KIND.get(kind, 0), MEMORY_KIND.get(src, 0),
                        MEMORY_KIND.get(dst_, 0)))
        elif cat == "gpu_memset":
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, correlationId,"
                       " globalPid, value, bytes) VALUES (?,?,?,?,?,?,?,0,?)",
                       (t0, t1, a.get("device", 0), a.get("context", 1), a.get("stream", 7), a.get("correlation"),
                        e.get("pid"), a.get("bytes", 0)))
        elif cat in ("cuda_runtime", "cuda_driver"):
            name = e["name"] + ("_v3020" if e["name"].startswith("cuda") else "")  # nsys names carry the API version
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,0,?,?,?,0,NULL)",
                       (t0, t1, e.get("tid"), a.get("correlation"), sid(name)))
        elif cat == "user_annotation":
            db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?,?,59,?,?)",
                       (t0, t1, e["name"], e.get("tid")))
    db.commit()
    db.close()


def main() -> None:
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    for name in ("decode_eager_sleep", "decode_eager_sync", "prefill_eager", "prefill_eager_collective",
                 "decode_graph_capture", "prefill_graph"):
        extract(src / f"{name}.json.gz", out / f"{name}.json.gz")
    to_nsys(src / "prefill_eager_collective.json.gz", out / "prefill_eager_collective.sqlite")


if __name__ == "__main__":
    main()
