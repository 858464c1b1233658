"""The trace files a run names: files, directories of per-rank files, or globs; checked before any work."""

from __future__ import annotations

import glob as globmod
import os
import stat
from pathlib import Path

from orchestrator.limits import NSYS_CHECK_TIMEOUT_S
from orchestrator.validate import file_kind

TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite", ".db")
HOST_PREFIX = "host:"
"""`--trace host:PATH`: a profiler directory (or trace file) on the investigated host; `host:` alone: the serving
processes' torch-profiler directories. Copied here by the trace tool, then read like a local trace."""


class TraceInputError(ValueError):
    """A trace path that cannot be used; the message names it and the fix (one line)."""


def _sniff(path: Path) -> str:
    """The format by the file's first bytes, read without blocking: a FIFO or a device put in place of the file after
    the path was checked is refused by fstat, never waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise TraceInputError(f"trace {path}: not a regular file; pass a Kineto .json/.json.gz or an nsys "
                                      ".sqlite export")
            head = os.read(fd, 16)
        finally:
            os.close(fd)
    except OSError as e:
        raise TraceInputError(f"trace {path}: cannot be read ({e.strerror}); check the path and its permissions") from None
    if head.startswith(b"\x1f\x8b"):
        return "kineto"
    if head == b"SQLite format 3\x00":
        return "nsys"
    if head.lstrip()[:1] == b"{":
        return "kineto"
    if path.suffix == ".nsys-rep" or path.suffix == ".qdrep":
        raise TraceInputError(f"trace {path}: an Nsight Systems report; export it first with "
                              f"`nsys export --type sqlite {path}` and pass the .sqlite file")
    raise TraceInputError(f"trace {path}: neither a Kineto/PyTorch-profiler JSON (.json, .json.gz) nor an Nsight "
                          "Systems SQLite export; pass the profiler's trace file or `nsys export --type sqlite` output")


def _check_head(path: Path, fmt: str) -> None:
    """The cheap part of reading: a Kineto file's keys before traceEvents, an nsys export's tables."""
    if fmt == "kineto":
        from orchestrator.traces.kineto import TraceFormatError, read_header

        try:
            read_header(path)
        except TraceFormatError as e:
            raise TraceInputError(f"trace {e}; pass the file torch.profiler's export_chrome_trace (or vLLM/SGLang's "
                                  "profiler directory) wrote") from None
    else:
        import sqlite3

        from orchestrator.traces.nsys import NsysFormatError, check_schema, connect, one_line

        try:
            db = connect(path, NSYS_CHECK_TIMEOUT_S)
            try:
                tables = check_schema(db, path)
            finally:
                db.close()
        except NsysFormatError as e:
            raise TraceInputError(f"trace {e}") from None
        except (sqlite3.DatabaseError, UnicodeDecodeError) as e:
            raise TraceInputError(f"trace {path}: not a readable SQLite file ({one_line(e)})") from None
        if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:
            raise TraceInputError(f"trace {path}: an SQLite file without CUPTI_ACTIVITY_KIND_KERNEL; export a report "
                                  "recorded with `nsys profile -t cuda` using `nsys export --type sqlite`")


def _in_dir(d: Path) -> list[Path]:
    files = sorted(p for p in d.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
    per_rank = [p for p in files if not p.name.startswith("merged-")]
    return per_rank or files  # SGLang writes merged-{id}.trace.json.gz beside the per-rank files it merges


def expand(paths: list[str]) -> list[tuple[Path, str]]:
    """(file, format) for each trace named: a file, a directory of per-rank files, or a glob (`host:` paths are
    checked for their form only: they are on the host)."""
    out: list[tuple[Path, str]] = []
    for raw in paths:
        if raw.startswith(HOST_PREFIX):
            rest = raw[len(HOST_PREFIX):]
            if rest and not rest.startswith("/"):
                raise TraceInputError(f"trace {raw}: a path on the host must be absolute (host:/path/to/profiler_dir), "
                                      "or `host:` alone for the serving processes' profiler directories")
            continue  # read on the host by the trace tool (prongs/trace/host.py), not here
        if any(c in raw for c in "*?["):
            hits = sorted(Path(p) for p in globmod.glob(raw) if Path(p).is_file())
            if not hits:
                raise TraceInputError(f"trace glob {raw!r} matches no file; check the pattern (quote it so the "
                                      "shell does not expand it)")
            files = hits
        else:
            p = Path(raw).expanduser()
            if not p.exists():
                raise TraceInputError(f"trace {raw}: no such file or directory; pass a Kineto .json/.json.gz, an "
                                      "nsys .sqlite export, or a directory of per-rank traces")
            kind = file_kind(p)
            if kind is not None and kind != "a directory":
                raise TraceInputError(f"trace {raw} is {kind}, not a file; pass a Kineto .json/.json.gz, an nsys "
                                      ".sqlite export, or a directory of per-rank traces")
            files = _in_dir(p) if p.is_dir() else [p]
            if not files:
                raise TraceInputError(f"trace directory {raw} holds no .json, .json.gz or .sqlite trace")
        for f in files:
            fmt = _sniff(f)
            _check_head(f, fmt)
            out.append((f, fmt))
    unique: dict[Path, tuple[Path, str]] = {}
    for f, k in out:
        unique.setdefault(f.resolve(), (f, k))
    return list(unique.values())
