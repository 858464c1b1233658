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

The file is untrusted: an SQLite schema can make reading do arbitrary work (a generated column computing a 50 MB
value per row, a virtual table). `connect` opens it read-only by a URI built from the resolved path (a file name is
never read as URI syntax), with the schema untrusted, every value capped (SQLITE_LIMIT_LENGTH) and a deadline checked
as the query runs; `check_schema` refuses read tables that are virtual or have generated or hidden columns.
"""

from __future__ import annotations

import math
import sqlite3
import time
from pathlib import Path
from typing import Any

from orchestrator.limits import (NSYS_MAX_VALUE_BYTES, NSYS_PROGRESS_OPS, NSYS_STRINGS_MAX_BYTES, NSYS_STRINGS_MAX_ROWS,
                                 TRACE_ANALYSIS_TIMEOUT_S, TRACE_NAME_MAX_CHARS, TRACE_TIME_MAX_US)
from orchestrator.traces.kineto import BAD_TIME, _int, rank_from_name
from orchestrator.traces.store import KIND_KERNEL, KIND_MEMCPY, KIND_MEMSET, Annotation, RankColumns, clip_name

COPY_KIND = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA", 8: "DtoD", 9: "HtoH",
             10: "PtoP"}
MEMORY_KIND = {1: "Pageable", 2: "Pinned", 3: "Device", 4: "Array", 5: "Managed", 6: "Device", 7: "Managed"}

SQLITE_MAGIC = b"SQLite format 3\x00"
READ_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
               "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "StringIds", "TARGET_INFO_GPU")
"""The tables this reader selects from (every other table is never read)."""


class NsysFormatError(ValueError):
    """The SQLite file is not an Nsight Systems export this reader understands."""


def is_sqlite(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(16) == SQLITE_MAGIC


def connect(path: Path, timeout_s: float) -> sqlite3.Connection:
    """The export opened read-only and bounded (see the module); reading past `timeout_s` raises OperationalError
    ("interrupted")."""
    db = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
    db.text_factory = _text  # text that is not UTF-8 is read with replacement characters, not an exception
    try:
        db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, NSYS_MAX_VALUE_BYTES)
        db.execute("PRAGMA trusted_schema=OFF")
        db.execute("PRAGMA query_only=ON")
        deadline = time.monotonic() + timeout_s
        db.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, NSYS_PROGRESS_OPS)
    except (sqlite3.DatabaseError, UnicodeDecodeError):
        db.close()
        raise
    return db


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def one_line(e: BaseException) -> str:
    """An SQLite error as one short line (a damaged schema's error quotes its SQL, newlines and all; sqlite3 raises
    UnicodeDecodeError for an error text that is not UTF-8, so both are caught where the export is read)."""
    return " ".join(str(e).split())[:200]


def check_schema(db: sqlite3.Connection, path: Path) -> set[str]:
    """The export's tables; NsysFormatError when a table this reader selects from is virtual or has a generated or
    hidden column (reading it would run the schema's expressions, e.g. a 50 MB value computed per row)."""
    rows = db.execute("SELECT name, sql FROM sqlite_master WHERE type='table'").fetchall()
    tables = {str(name) for name, _ in rows}
    for name, sql in rows:
        if name not in READ_TABLES:
            continue
        if isinstance(sql, str) and sql.lstrip()[:14].upper().replace(" ", "").startswith("CREATEVIRTUAL"):
            raise NsysFormatError(f"{path}: table {name} is a virtual table, which Nsight Systems never writes; "
                                  "pass the file `nsys export --type sqlite` wrote")
        for col in db.execute(f"PRAGMA table_xinfo({name})"):
            if col[6] != 0:
                raise NsysFormatError(f"{path}: table {name} has a generated or hidden column ({str(col[1])[:40]}), "
                                      "which Nsight Systems never writes; pass the file `nsys export --type sqlite` "
                                      "wrote")
    return tables


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def memcpy_name(copy_kind: int | None, src: int | None, dst: int | None) -> str:
    kind = COPY_KIND.get(copy_kind or 0, "Unknown") if isinstance(copy_kind, int) else "Unknown"
    s = MEMORY_KIND.get(src or 0, "Unknown") if isinstance(src, int) else "Unknown"
    d = MEMORY_KIND.get(dst or 0, "Unknown") if isinstance(dst, int) else "Unknown"
    return f"Memcpy {kind} ({s} -> {d})"


def _span(start: Any, end: Any) -> tuple[float, float] | None:
    """(ts, dur) in microseconds of a row's start/end in nanoseconds; None when they are not finite numbers within
    TRACE_TIME_MAX_US."""
    if not isinstance(start, (int, float)) or not isinstance(end, (int, float)):
        return None
    try:
        ts, te = start / 1e3, end / 1e3
    except OverflowError:
        return None
    if not (math.isfinite(ts) and math.isfinite(te)) or abs(ts) > TRACE_TIME_MAX_US or abs(te) > TRACE_TIME_MAX_US:
        return None
    return ts, te - ts


def _strings(db: sqlite3.Connection, path: Path) -> dict[int, str]:
    """StringIds, each value cut at TRACE_NAME_MAX_CHARS, within NSYS_STRINGS_MAX_ROWS / _BYTES."""
    out: dict[int, str] = {}
    size = 0
    for sid, value in db.execute(f"SELECT id, substr(value, 1, {TRACE_NAME_MAX_CHARS}) FROM StringIds"):
        text = value if isinstance(value, str) else "" if value is None else str(value)[:TRACE_NAME_MAX_CHARS]
        size += len(text)
        if len(out) >= NSYS_STRINGS_MAX_ROWS or size > NSYS_STRINGS_MAX_BYTES:
            raise NsysFormatError(f"{path}: StringIds holds more than {NSYS_STRINGS_MAX_ROWS:,} strings or "
                                  f"{NSYS_STRINGS_MAX_BYTES >> 20:,} MiB; not an export this reader takes")
        if isinstance(sid, int):
            out[sid] = clip_name(text)
    return out


def read_nsys(path: Path, timeout_s: float = TRACE_ANALYSIS_TIMEOUT_S) -> RankColumns:
    """Read one process's (rank's) export. Kernels, copies and sets become GPU activities, runtime calls launches,
    NVTX ranges host ranges (step markers among them)."""
    try:
        db = connect(path, timeout_s)
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        raise NsysFormatError(f"{path}: not a readable SQLite file ({one_line(e)})") from None
    try:
        try:
            tables = check_schema(db, path)
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            raise NsysFormatError(f"{path}: not a readable SQLite file ({one_line(e)})") from None
        if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables or "StringIds" not in tables:
            raise NsysFormatError(f"{path}: no CUPTI_ACTIVITY_KIND_KERNEL / StringIds tables: not an Nsight Systems "
                                  "export with CUDA traced (record with `nsys profile -t cuda` and export with "
                                  "`nsys export --type sqlite`)")
        cols = RankColumns(source=str(path), fmt="nsys", rank=rank_from_name(path.name))
        _read(db, path, tables, cols)
    except sqlite3.OperationalError as e:
        if "interrupt" in str(e):
            raise NsysFormatError(f"{path}: reading the export took longer than {timeout_s:,.0f} s") from None
        raise NsysFormatError(f"{path}: the export does not have the documented columns ({one_line(e)})") from None
    except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
        raise NsysFormatError(f"{path}: the export does not have the documented columns ({one_line(e)})") from None
    finally:
        db.close()
    cols.events_read = cols.n_gpu + cols.n_runtime + len(cols.annotations)
    if cols.n_gpu == 0:
        raise NsysFormatError(f"{path}: no GPU activity in the export (was CUDA traced? `nsys profile -t cuda`)")
    return cols


def _read(db: sqlite3.Connection, path: Path, tables: set[str], cols: RankColumns) -> None:
    strings = _strings(db, path)
    if "TARGET_INFO_GPU" in tables and "name" in _columns(db, "TARGET_INFO_GPU"):
        row = db.execute(f"SELECT substr(name, 1, {TRACE_NAME_MAX_CHARS}) FROM TARGET_INFO_GPU LIMIT 1").fetchone()
        cols.gpu_name = row[0] if row and isinstance(row[0], str) else None
    kcols = _columns(db, "CUPTI_ACTIVITY_KIND_KERNEL")
    name_col = "demangledName" if "demangledName" in kcols else "shortName"
    for start, end, dev, stream, corr, nid in db.execute(
            f"SELECT start, end, deviceId, streamId, correlationId, {name_col} FROM CUPTI_ACTIVITY_KIND_KERNEL"):
        if (span := _span(start, end)) is None:
            cols.skip(BAD_TIME)
            continue
        cols.add_gpu(KIND_KERNEL, strings.get(nid, f"kernel#{_int(nid)}"), span[0], span[1], _int(stream), _int(dev),
                     _int(corr), -1)
    if "CUPTI_ACTIVITY_KIND_MEMCPY" in tables:
        mcols = _columns(db, "CUPTI_ACTIVITY_KIND_MEMCPY")
        src = "srcKind" if "srcKind" in mcols else "NULL"
        dst = "dstKind" if "dstKind" in mcols else "NULL"
        for start, end, dev, stream, corr, kind, s, d in db.execute(
                f"SELECT start, end, deviceId, streamId, correlationId, copyKind, {src}, {dst} "
                "FROM CUPTI_ACTIVITY_KIND_MEMCPY"):
            if (span := _span(start, end)) is None:
                cols.skip(BAD_TIME)
                continue
            cols.add_gpu(KIND_MEMCPY, memcpy_name(kind, s, d), span[0], span[1], _int(stream), _int(dev), _int(corr),
                         -1)
    if "CUPTI_ACTIVITY_KIND_MEMSET" in tables:
        for start, end, dev, stream, corr in db.execute(
                "SELECT start, end, deviceId, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET"):
            if (span := _span(start, end)) is None:
                cols.skip(BAD_TIME)
                continue
            cols.add_gpu(KIND_MEMSET, "Memset (Device)", span[0], span[1], _int(stream), _int(dev), _int(corr), -1)
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
        for start, end, corr, nid, tid in db.execute(
                "SELECT start, end, correlationId, nameId, globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME"):
            if (span := _span(start, end)) is None:
                cols.skip(BAD_TIME)
                continue
            name = strings.get(nid, f"runtime#{_int(nid)}")
            cols.add_runtime(name.split("_v", 1)[0] if name.startswith("cuda") else name, span[0], span[1],
                             _int(corr), _int(tid, 0))
    if "NVTX_EVENTS" in tables:
        ncols = _columns(db, "NVTX_EVENTS")
        text_id = "textId" if "textId" in ncols else "NULL"
        for start, end, text, tid_, gtid in db.execute(
                f"SELECT start, end, substr(text, 1, {TRACE_NAME_MAX_CHARS}), {text_id}, globalTid FROM NVTX_EVENTS "
                "WHERE end IS NOT NULL"):
            if (span := _span(start, end)) is None:
                cols.skip(BAD_TIME)
                continue
            name = text if isinstance(text, str) else strings.get(tid_, "")
            if name:
                cols.annotations.append(Annotation(clip_name(name), span[0], span[0] + span[1], _int(gtid, 0)))
