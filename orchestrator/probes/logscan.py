"""Log scan: `--log` files on the investigated host matched against the failure-mode catalog's log signatures, with
line numbers; WARNING/ERROR lines nothing matched come back too, deduplicated and counted ("unclassified")."""

from __future__ import annotations

import re
from typing import Any, Iterable

from orchestrator.hosts.base import Host
from orchestrator.hosts.policy import log_refusal
from orchestrator.hosts.resolve import ResolveFailed, resolve_paths
from orchestrator.probes.results import MAX_LOG_BYTES, LogMatch, LogScan, LogSkip, UnclassifiedLine
from orchestrator.probes.runner import ProbeUnavailable, run_script
from orchestrator.probes.scripts import logscan as _script

MAX_MATCHES = 500
MAX_UNCLASSIFIED = 50


def _sig_dicts(signatures: Iterable[Any]) -> list[dict[str, str]]:
    out = []
    for s in signatures:
        if isinstance(s, dict):
            out.append({"id": s["id"], "pattern": s["pattern"]})
        else:
            out.append({"id": s.id, "pattern": s.pattern})
    return out


def scan_text(path: str, text: str, signatures: list[dict[str, str]], width: int = 400,
              unclassified: "_script.Unclassified | None" = None) -> tuple[int, list[LogMatch]]:
    """Pure: (lines scanned, matches) of one log's text; unclassified lines go to `unclassified` when given."""
    compiled = [(s["id"], re.compile(s["pattern"])) for s in signatures]
    out: dict[str, Any] = {"matches": [], "truncated": False}
    sink = unclassified if unclassified is not None else _script.Unclassified(0)
    lines = text.splitlines()
    for no, line in enumerate(lines, 1):
        _script.scan_line(path, no, line, compiled, out, sink, 10**9, width)
    return len(lines), [LogMatch(**m) for m in out["matches"]]


async def checked_logs(host: Host, paths: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """(path -> its real path on the host, path -> why refused) for the paths `log_scan` was given: each judged
    as given and as resolved on the host (a log that is a link to /proc/1/environ or a key is refused); a path that
    does not resolve (missing) keeps its name, and the script's own checks apply when it is opened."""
    refused = {p: why for p in paths if (why := log_refusal(p)) is not None}
    rest = [p for p in paths if p not in refused and not p.startswith("~")]
    real: dict[str, str] = {}
    try:
        resolved = await resolve_paths(host, rest) if rest else []
    except ResolveFailed as exc:
        return {}, {**refused, **{p: f"{p!r} not resolved on the host ({exc}): not read" for p in rest}}
    for p, (kind, path) in zip(rest, resolved):
        if kind == "n":
            continue
        why = log_refusal(path) if path != p else None
        if why is None and kind != "f":
            why = f"{p!r} is not a regular file (a directory, device, pipe or socket): log_scan reads log files"
        if why is not None:
            refused[p] = why
        else:
            real[p] = path
    return real, refused


async def scan_logs(host: Host, paths: list[str], signatures: Iterable[Any]) -> LogScan:
    """Match each log (read on the host) against the signatures; missing files are listed, not fatal; paths that
    are not log files (kernel or process state, devices, FIFOs, credentials) are refused, with why."""
    sigs = _sig_dicts(signatures)
    if not paths:
        return LogScan(host=host.name, available=False, reason="no log files given (--log PATH)")
    real, refused = await checked_logs(host, paths)
    paths = [p for p in paths if p not in refused]
    if not paths:
        return LogScan(host=host.name, refused=refused, reason="no log file left to read: " + "; ".join(refused.values()))
    try:
        data = await run_script(host, "python3", "logscan",
                                {"paths": paths, "real": real, "signatures": sigs, "max_matches": MAX_MATCHES,
                                 "max_unclassified": MAX_UNCLASSIFIED, "max_log_bytes": MAX_LOG_BYTES},
                                timeout_s=120, isolated=True)
    except ProbeUnavailable:
        scan = await _scan_by_reading(host, paths, sigs, real)
        scan.refused = refused
        return scan
    scan = LogScan(
        host=host.name, files=data.get("files") or [], missing=data.get("missing") or [],
        lines_scanned=int(data.get("lines") or 0), matches=[LogMatch(**m) for m in data.get("matches") or []],
        unclassified=[UnclassifiedLine(**u) for u in data.get("unclassified") or []],
        unclassified_total=int(data.get("unclassified_total") or 0),
        skipped=[LogSkip(**k) for k in data.get("skipped") or []],
        commands=[f"python3 - < logscan.py {' '.join(paths)}"], refused=refused,
    )
    if data.get("truncated"):
        scan.reason = f"more than {MAX_MATCHES} matching lines; the first {MAX_MATCHES} kept"
    return scan


async def _scan_by_reading(host: Host, paths: list[str], sigs: list[dict[str, str]], real: dict[str, str]) -> LogScan:
    # Without python3 on the host, read each log (capped) and match here.
    scan = LogScan(host=host.name, commands=[f"read {p}" for p in paths])
    unclassified = _script.Unclassified(MAX_UNCLASSIFIED)
    for p in paths:
        try:
            raw = await host.read_file(real.get(p, p), max_bytes=MAX_LOG_BYTES)
        except OSError:  # missing, unreadable, a directory: listed, not fatal
            scan.missing.append(p)
            continue
        n, matches = scan_text(p, raw.decode("utf-8", "replace"), sigs, unclassified=unclassified)
        scan.files.append(p)
        scan.lines_scanned += n
        scan.matches.extend(matches[: MAX_MATCHES - len(scan.matches)])
    scan.unclassified = [UnclassifiedLine(**u) for u in unclassified.out()]
    scan.unclassified_total = unclassified.total
    return scan
