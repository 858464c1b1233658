"""Traces found on the investigated host: the serving engine's torch-profiler directory (its environment or its
`--profiler-config`, knowledge/profiler_dirs.yaml), or a directory the user names with `--trace host:PATH`.

The directory is listed on the host (scripts/trace_files.py: regular files only, no symlink followed), each path
passes the host's read policy (no devices, no credentials), and the newest trace per rank is copied here through
`Host.read_file` within a byte budget (a `.json.gz` as it is: it is read compressed); what was left, and why, is
said. The copies are then read like a local `--trace`.
"""

from __future__ import annotations

import functools
import json
import posixpath
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from pydantic import BaseModel, Field

from orchestrator.hosts.base import Host
from orchestrator.hosts.policy import secret_path, unsafe_read
from orchestrator.probes import runner
from orchestrator.prongs.serving_engine.models import EngineInstance

TRACE_SUFFIXES = (".json", ".json.gz")
BUDGET_BYTES = 2_000_000_000
"""Bytes copied from the host per run (all ranks together): a Kineto trace of a few steps is 50-500 MB gzipped."""
MAX_LISTED = 200


class HostTrace(BaseModel):
    path: str
    """On the host."""
    size: int
    mtime: float
    rank: int | None = None
    local: str = ""
    """Where the copy is, on this machine (empty: not copied)."""
    skipped: str = ""
    """Why it was not copied (an older trace of the same rank, over the budget, refused by the read policy)."""


class HostTraces(BaseModel):
    host: str
    dirs: list[str] = Field(default_factory=list)
    """The directories listed, each with where it came from (`VLLM_TORCH_PROFILER_DIR of pid 1234`, `--trace`)."""
    errors: list[str] = Field(default_factory=list)
    traces: list[HostTrace] = Field(default_factory=list)
    budget_bytes: int = BUDGET_BYTES

    @property
    def copied(self) -> list[str]:
        return [t.local for t in self.traces if t.local]

    def summary(self) -> str:
        # one line of "; "-separated parts: a gap or a note shows it on one line, and its parts must stay apart
        lines = [f"traces on {self.host}: listed {', '.join(self.dirs) or 'nothing'}"]
        lines += list(self.errors)
        for t in self.traces:
            what = f"copied ({t.size / 1e6:.1f} MB)" if t.local else f"skipped: {t.skipped}"
            lines.append(f"rank {t.rank if t.rank is not None else '?'} {t.path}: {what}")
        return "; ".join(lines)


@functools.lru_cache(maxsize=1)
def _sources() -> tuple[dict, ...]:
    raw = yaml.safe_load((resources.files("orchestrator.knowledge") / "profiler_dirs.yaml").read_text("utf-8"))
    return tuple(raw)


def _flag_value(argv: list[str], flag: str, key: str) -> str | None:
    """KEY of a JSON option (`--flag '{"key": ...}'`, `--flag={...}`) or its dotted form (`--flag.key=V`, `--flag.key V`)."""
    for i, a in enumerate(argv):
        if a == f"{flag}.{key}" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(f"{flag}.{key}="):
            return a.split("=", 1)[1]
        if a == flag:
            head, rest = "", argv[i + 1:]
        elif a.startswith(flag + "="):
            head, rest = a[len(flag) + 1:], argv[i + 1:]
        else:
            continue
        # the probe reports the command line joined with spaces: a JSON value with spaces spans several words
        words = ([head] if head else []) + rest[:64]
        for k in range(1, len(words) + 1):
            try:
                doc = json.loads(" ".join(words[:k]))
            except ValueError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get(key), str):
                return str(doc[key])
            break
    return None


class TraceDir(NamedTuple):
    """A directory to list for traces, where it came from, and the process that named it (None: the user did, with
    `--trace host:PATH`). A process's directory is listed only if it is that process's user's, and only that user's
    files in it (scripts/trace_files.py): another user's engine may name root's directory in its environment."""

    dir: str
    why: str
    pid: int | None = None


def profiler_dirs(engines: list[EngineInstance]) -> list[TraceDir]:
    """(directory, where it came from, pid) for each running engine started with a torch profiler directory."""
    out: list[TraceDir] = []
    for e in engines:
        if e.origin != "process":
            continue
        argv = e.command.split()  # the probe joined the command line with spaces (not shell-quoted)
        for src in _sources():
            if src.get("engine") != e.name:
                continue
            d = None
            if "env" in src and e.env.get(src["env"]):
                d, why = e.env[src["env"]], f"{src['env']} of {e.where or e.name}"
            elif "flag" in src:
                d = _flag_value(argv, src["flag"], src["key"])
                why = f"{src['flag']} {src['key']} of {e.where or e.name}"
            if d and "://" not in d and all(d != x.dir for x in out):
                out.append(TraceDir(d, why, e.pid))
    return out


def copy_error(message: str, found: Sequence[HostTraces | None]) -> str:
    """A trace reader's error about a copy from the host, as the tool may say it: naming the host's file, not the
    removed copy, and without the parser's quote of the file (yajl's message goes on with the text around the fault,
    and the file may be another user's); a message about no copy is kept whole."""
    hit = False
    for f in found:
        for t in (f.traces if f else []):
            if t.local and t.local in message:
                message, hit = message.replace(t.local, f"{f.host}:{t.path}" if f else t.path), True
    if not hit or "\n" not in message:
        return message
    first = message.split("\n", 1)[0].rstrip()
    return first + ")" * (first.count("(") - first.count(")")) + " (the parser's quote of the file left out)"


def _refused(path: str) -> str | None:
    if not path.startswith("/"):
        return f"{path!r} is not an absolute path on the host"
    return unsafe_read(path) or secret_path(path)


def _rank(name: str) -> int | None:
    from orchestrator.traces.kineto import rank_from_name

    return rank_from_name(name)


async def fetch(host: Host, dirs: Sequence[tuple[str, str] | TraceDir], dest: Path, *,
                budget_bytes: int = BUDGET_BYTES, python: str = "python3") -> HostTraces:
    """List the trace files in `dirs` on the host (a path that is a file is taken as it is), keep the newest per
    rank, and copy those into `dest` within the byte budget."""
    out = HostTraces(host=host.name, budget_bytes=budget_bytes)
    listed: list[HostTrace] = []
    to_list: list[dict[str, Any]] = []
    named_by: dict[str, int | None] = {}
    for item in dirs:
        d, why, pid = TraceDir(*item)
        d = posixpath.normpath(d)
        bad = _refused(d)
        if bad:
            out.errors.append(f"{d} ({why}) not read: {bad}")
            continue
        out.dirs.append(f"{d} ({why})")
        to_list.append({"dir": d, "pid": pid} if pid is not None else {"dir": d})
        named_by[d] = pid
    if to_list:
        try:
            res = await runner.run_script(host, python, "trace_files", {"dirs": to_list, "suffixes": list(TRACE_SUFFIXES),
                                                                         "max_files": MAX_LISTED}, isolated=True)
        except runner.ProbeUnavailable as exc:
            out.errors.append(f"listing the trace directories failed: {exc}")
            res = {"dirs": []}
        for entry in res.get("dirs") or []:
            if entry.get("error"):
                # a file named directly: list its directory and keep that file only
                parent = posixpath.dirname(entry["dir"])
                one = await _one_file(host, python, entry["dir"], parent, named_by.get(entry["dir"]))
                if one is None:
                    out.errors.append(f"{entry['dir']}: {entry['error']}")
                else:
                    listed.append(one)
                continue
            for f in entry.get("files") or []:
                name = posixpath.basename(f["path"])
                if name.startswith("merged-"):
                    continue  # SGLang's merge of the per-rank files beside them
                listed.append(HostTrace(path=f["path"], size=int(f["size"]), mtime=float(f["mtime"]),
                                        rank=_rank(name)))
            if entry.get("more"):
                out.errors.append(f"{entry['dir']}: {entry['more']} older trace files not listed")
    listed.sort(key=lambda t: (-t.mtime, t.path))
    newest: dict[int | None, HostTrace] = {}
    for t in listed:
        if t.rank in newest:
            t.skipped = f"an older trace of rank {t.rank if t.rank is not None else '?'} (newest: {newest[t.rank].path})"
        else:
            newest[t.rank] = t
    dest.mkdir(parents=True, exist_ok=True)
    used = 0
    for t in sorted(newest.values(), key=lambda t: (t.rank is None, t.rank or 0, t.path)):
        bad = _refused(t.path)
        if bad:
            t.skipped = f"refused by the read policy: {bad}"
            continue
        if used + t.size > budget_bytes:
            t.skipped = (f"over the copy budget ({t.size / 1e6:.0f} MB; {used / 1e6:.0f} of "
                         f"{budget_bytes / 1e6:.0f} MB used)")
            continue
        try:
            data = await host.read_file(t.path, max_bytes=t.size + 1)
        except (OSError, TimeoutError) as exc:
            t.skipped = f"could not be read: {exc}"
            continue
        if len(data) != t.size:
            t.skipped = f"changed while copied ({len(data)} of {t.size} bytes): the profiler was still writing it"
            continue
        local = dest / f"{len(out.copied):03d}-{posixpath.basename(t.path)}"
        local.write_bytes(data)
        del data
        used += t.size
        t.local = str(local)
    out.traces = sorted(listed, key=lambda t: (t.local == "", t.rank is None, t.rank or 0, -t.mtime))
    return out


async def _one_file(host: Host, python: str, path: str, parent: str, pid: int | None) -> HostTrace | None:
    if not path.endswith(TRACE_SUFFIXES) or _refused(parent):
        return None
    listed = {"dir": parent, "pid": pid} if pid is not None else parent
    try:
        res = await runner.run_script(host, python, "trace_files", {"dirs": [listed], "suffixes": [posixpath.basename(path)],
                                                                     "max_files": 1}, isolated=True)
    except runner.ProbeUnavailable:
        return None
    for entry in res.get("dirs") or []:
        for f in entry.get("files") or []:
            if f["path"] == path:
                return HostTrace(path=path, size=int(f["size"]), mtime=float(f["mtime"]),
                                 rank=_rank(posixpath.basename(path)))
    return None
