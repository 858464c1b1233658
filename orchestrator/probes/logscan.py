"""Log scan: `--log` files on the investigated host matched against known-issue signatures, with line numbers."""

from __future__ import annotations

import re
from typing import Any, Iterable

from orchestrator.hosts.base import Host
from orchestrator.probes.models import LogMatch, LogScan
from orchestrator.probes.runner import ProbeUnavailable, run_script

MAX_MATCHES = 500


def _sig_dicts(signatures: Iterable[Any]) -> list[dict[str, str]]:
    out = []
    for s in signatures:
        if isinstance(s, dict):
            out.append({"id": s["id"], "pattern": s["pattern"]})
        else:
            out.append({"id": s.id, "pattern": s.pattern})
    return out


def scan_text(path: str, text: str, signatures: list[dict[str, str]], width: int = 400) -> tuple[int, list[LogMatch]]:
    """Pure: (lines scanned, matches) of one log's text."""
    compiled = [(s["id"], re.compile(s["pattern"])) for s in signatures]
    matches = []
    lines = text.splitlines()
    for no, line in enumerate(lines, 1):
        for sid, rx in compiled:
            if rx.search(line):
                matches.append(LogMatch(path=path, line_no=no, line=line[:width], signature_id=sid))
    return len(lines), matches


async def scan_logs(host: Host, paths: list[str], signatures: Iterable[Any]) -> LogScan:
    """Match each log (read on the host) against the signatures; missing files are listed, not fatal."""
    sigs = _sig_dicts(signatures)
    if not paths:
        return LogScan(host=host.name, available=False, reason="no log files given (--log PATH)")
    try:
        data = await run_script(host, "python3", "logscan",
                                {"paths": paths, "signatures": sigs, "max_matches": MAX_MATCHES}, timeout_s=120)
    except ProbeUnavailable:
        return await _scan_by_reading(host, paths, sigs)
    scan = LogScan(
        host=host.name, files=data.get("files") or [], missing=data.get("missing") or [],
        lines_scanned=int(data.get("lines") or 0), matches=[LogMatch(**m) for m in data.get("matches") or []],
        commands=[f"python3 - < logscan.py {' '.join(paths)}"],
    )
    if data.get("truncated"):
        scan.reason = f"more than {MAX_MATCHES} matching lines; the first {MAX_MATCHES} kept"
    return scan


async def _scan_by_reading(host: Host, paths: list[str], sigs: list[dict[str, str]]) -> LogScan:
    # Without python3 on the host, read each log (capped) and match here.
    scan = LogScan(host=host.name, commands=[f"read {p}" for p in paths])
    for p in paths:
        try:
            raw = await host.read_file(p, max_bytes=50_000_000)
        except OSError:  # missing, unreadable, a directory: listed, not fatal
            scan.missing.append(p)
            continue
        n, matches = scan_text(p, raw.decode("utf-8", "replace"), sigs)
        scan.files.append(p)
        scan.lines_scanned += n
        scan.matches.extend(matches[: MAX_MATCHES - len(scan.matches)])
    return scan
