"""Read an Nsight Systems SQLite export (`nsys export --type sqlite`) into `RankColumns`, row by row.

Tables (created lazily, one per data type, so any may be absent; times in ns): CUPTI_ACTIVITY_KIND_KERNEL (start,
end, deviceId, streamId, correlationId, demangledName/shortName -> StringIds.id, graphNodeId),
CUPTI_ACTIVITY_KIND_RUNTIME (start, end, globalTid, correlationId, nameId), CUPTI_ACTIVITY_KIND_MEMCPY (copyKind,
srcKind, dstKind, bytes), CUPTI_ACTIVITY_KIND_MEMSET, NVTX_EVENTS (start, end, text or textId, globalTid),
StringIds (id, value), TARGET_INFO_GPU (name). Sources: https://docs.nvidia.com/nsight-systems/UserGuide/index.html
(exporter schema) and the CUPTI record the kernel table mirrors,
https://docs.nvidia.com/cupti/api/structCUpti__ActivityKernel.html; copy and memory kinds:
https://docs.nvidia.com/cupti/api/group__CUPTI__ACTIVITY__API.html (CUpti_ActivityMemcpyKind, CUpti_ActivityMemoryKind).
Memcpy / memset rows are named the way Kineto names them ("Memcpy DtoH (Device -> Pageable)") so the account treats
both formats alike.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from orchestrator.traces.kineto import rank_from_name
from orchestrator.traces.store import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, Annotation, RankColumns

COPY_KIND = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD", 9: "HtoH",
             10: "PtoP"}
MEMORY_KIND = {1: "Pageable", 2: "Pinned", 3: "Device", 4: "Array", 5: "Managed", 6: "Device", 7: "Managed"}

SQLITE_MAGIC = b"SQLite format 3\x00"


class NsysFormatError(ValueError):
    """The SQLite file is not an Nsight Systems export this reader understands."""


def is_sqlite(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(16) == SQLITE_MAGIC


def _tables(db: sqlite3.Connection) -> set[str]:
    return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def memcpy_name(copy_kind: int | None, src: int | None, dst: int | None) -> str:
    kind = COPY_KIND.get(copy_kind or 0, "Unknown")
    return f"Memcpy {kind} ({MEMORY_KIND.get(src or 0, 'Unknown')} -> {MEMORY_KIND.get(dst or 0, 'Unknown')})"


def read_nsys(path: Path) -> RankColumns:
    """Read one process's (rank's) export. Kernels, copies and sets become GPU activities, runtime calls launches,
    NVTX ranges host ranges (step markers among them)."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        tables = _tables(db)
    except sqlite3.DatabaseError as e:
        raise NsysFormatError(f"{path}: not a readable SQLite file ({e})") from None
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables or "StringIds" not in tables:
        raise NsysFormatError(f"{path}: no CUPTI_ACTIVITY_KIND_KERNEL / StringIds tables: not an Nsight Systems "
                              "export with CUDA traced (record with `nsys profile -t cuda` and export with "
                              "`nsys export --type sqlite`)")
    cols = RankColumns(source=str(path), fmt="nsys", rank=rank_from_name(path.name))
    try:
        strings = dict(db.execute("SELECT id, value FROM StringIds"))
        if "TARGET_INFO_GPU" in tables and "name" in _columns(db, "TARGET_INFO_GPU"):
            row = db.execute("SELECT name FROM TARGET_INFO_GPU LIMIT 1").fetchone()
            cols.gpu_name = row[0] if row else None
        kcols = _columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
        name_col = "demangledName" if "demangledName" in kcols else "shortName"
        for start, end, dev, stream, corr, nid in db.execute(
                f"SELECT start, end, deviceId, streamId, correlationId, {name_col} FROM CUPTI_ACTIVITY_KIND_KERNEL"):
            cols.add_gpu(KIND_KERNEL, strings.get(nid, f"kernel#{nid}"), start / 1e3, (end - start) / 1e3, stream,
                         dev, corr, -1)
        if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
            mcols = _columns(db, "CUPTI_ACTIVITY_KIND_MEMCPY")
            src = "srcKind" if "srcKind" in mcols else "NULL"
            dst = "dstKind" if "dstKind" in mcols else "NULL"
            for start, end, dev, stream, corr, kind, s, d in db.execute(
                    f"SELECT start, end, deviceId, streamId, correlationId, copyKind, {src}, {dst} "
                    "FROM CUPTI_ACTIVITY_KIND_MEMCPY"):
                cols.add_gpu(KIND_MEMCPY, memcpy_name(kind, s, d), start / 1e3, (end - start) / 1e3, stream, dev,
                             corr, -1)
        if "CUPTI_ACTIVITY_KIND_MEMSET" in tables:
            for start, end, dev, stream, corr in db.execute(
                    "SELECT start, end, deviceId, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET"):
                cols.add_gpu(KIND_MEMSET, "Memset (Device)", start / 1e3, (end - start) / 1e3, stream, dev, corr, -1)
        if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
            for start, end, corr, nid, tid in db.execute(
                    "SELECT start, end, correlationId, nameId, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
                name = strings.get(nid, f"runtime#{nid}")
                cols.add_runtime(name.split("_v", 1)[0] if name.startswith("cuda") else name, start / 1e3,
                                 (end - start) / 1e3, corr, tid or 0)
        if "NVTX_EVENTS" in tables:
            ncols = _columns(db, "NVTX_EVENTS")
            text_id = "textId" if "textId" in ncols else "NULL"
            for start, end, text, tid_, gtid in db.execute(
                    f"SELECT start, end, text, {text_id}, globalTid FROM NVTX_EVENTS WHERE end IS NOT NULL"):
                name = text if text is not None else strings.get(tid_, "")
                if name:
                    cols.annotations.append(Annotation(name, start / 1e3, end / 1e3, gtid or 0))
    except sqlite3.DatabaseError as e:
        raise NsysFormatError(f"{path}: the export does not have the documented columns ({e})") from None
    finally:
        db.close()
    cols.events_read = cols.n_gpu + cols.n_runtime + len(cols.annotations)
    if cols.n_gpu == 0:
        raise NsysFormatError(f"{path}: no GPU activity in the export (was CUDA traced? `nsys profile -t cuda`)")
    return cols
