"""Match log files against the failure-mode catalog's log signatures, and keep what nothing classified.

stdlib only, Python >= 3.8. Params (JSON, argv[1]): {"paths": [...], "signatures": [{"id", "pattern"}],
"max_matches": int, "max_line_chars": int, "max_unclassified": int, "max_log_bytes": int}. Prints {"files": [...],
"missing": [...], "lines": n, "matches": [...], "truncated": bool, "unclassified": [{"path", "line_no", "line",
"count", "level"}], "unclassified_total": n, "skipped": [{"path", "bytes", "lines", "from_line"}]}: a log larger
than max_log_bytes is read at its start and its end (the prelude's `log_lines`), the middle skipped and said so.

`unclassified`: WARNING/ERROR lines, and lines of known inference libraries that report a failure or fallback,
that match no signature; deduplicated on their text with numbers, hex ids and timestamps masked, counted, capped.
"""
import json
import os
import re
import sys

LEVEL = re.compile(r"\b(WARNING|WARN|ERROR|CRITICAL|FATAL)\b|^[WEF]\d{4} |Traceback \(most recent call last\)"
                   r"|\b\w*(Error|Exception): ")
LIBRARY = re.compile(r"vllm|sglang|flashinfer|nccl|cutlass|triton|tensorrt|trtllm|torch|cuda|deepgemm|marlin|autotun",
                     re.IGNORECASE)
TROUBLE = re.compile(r"fail|fall(ing|s)? ?back|not (supported|available|found)|unsupported|disabled|sub-?optimal"
                     r"|skipp|slow|deprecat|mismatch|timed? ?out", re.IGNORECASE)
VARYING = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-f]{8,}\b|\d+(\.\d+)*")
# An engine's dump of its own configuration at start (vLLM's "Initializing a V1 LLM engine ... with config: ...",
# "non-default args: {...}", SGLang's "server_args=ServerArgs(...)") names every setting, trouble words among them
# (disable_fallback=False, ...): a list of settings, not a report of trouble
CONFIG_DUMP = re.compile(r"with config: |non-default args: |\bServerArgs\(|\bargs=Namespace\(|\bEngineArgs\(")


def level_of(line):
    """'error', 'warning' or 'library' for a line worth keeping unclassified, else None."""
    m = LEVEL.search(line)
    if m:
        word = (m.group(1) or "").upper()
        if word in ("WARNING", "WARN") or (not word and m.group(0).startswith("W")):
            return "warning"
        return "error"
    if LIBRARY.search(line) and TROUBLE.search(line) and not CONFIG_DUMP.search(line):
        return "library"
    return None


def dedupe_key(line):
    """The line with timestamps, pids, counts and ids masked, so repeats of one message count as one."""
    return VARYING.sub("#", line.strip())[:300]


class Unclassified(object):
    """Counted, deduplicated, capped unclassified lines."""

    def __init__(self, cap):
        self.cap = cap
        self.items = {}
        self.order = []
        self.total = 0

    def add(self, path, no, line, level, width):
        self.total += 1
        key = dedupe_key(line)
        item = self.items.get(key)
        if item is not None:
            item["count"] += 1
            return
        if len(self.order) >= self.cap:
            return
        item = {"path": path, "line_no": no, "line": line.rstrip("\n")[:width], "count": 1, "level": level}
        self.items[key] = item
        self.order.append(key)

    def out(self):
        return [self.items[k] for k in self.order]


def scan_line(raw, no, line, sigs, out, unclassified, max_matches, width):
    hit = False
    for sid, rx in sigs:
        if rx.search(line):
            hit = True
            if len(out["matches"]) >= max_matches:
                out["truncated"] = True
                break
            out["matches"].append({"path": raw, "line_no": no, "line": line.rstrip("\n")[:width], "signature_id": sid})
    if not hit:
        level = level_of(line)
        if level:
            unclassified.add(raw, no, line, level, width)


def main():
    params = json.loads(sys.argv[1])
    sigs = []
    for s in params.get("signatures") or []:
        try:
            sigs.append((s["id"], re.compile(s["pattern"])))
        except re.error:
            continue
    max_matches = int(params.get("max_matches", 500))
    width = int(params.get("max_line_chars", 400))
    unclassified = Unclassified(int(params.get("max_unclassified", 50)))
    max_bytes = int(params.get("max_log_bytes", 16000000))
    out = {"files": [], "missing": [], "lines": 0, "matches": [], "truncated": False, "skipped": []}
    real = params.get("real") or {}
    for raw in params.get("paths") or []:
        path = real.get(raw) or os.path.expanduser(raw)
        try:
            fd = open_host_file(path, resolve=True)
        except OSError:
            out["missing"].append(raw)
            continue
        no = 0
        skipped = {}
        try:
            for no, line in log_lines(fd, max_bytes, skipped):  # the descriptor opened once (open_host_file)
                out["lines"] += 1
                scan_line(raw, no, line, sigs, out, unclassified, max_matches, width)
        except OSError:
            if no == 0:
                out["missing"].append(raw)
                continue
        if skipped:
            out["skipped"].append(dict(skipped, path=raw))
        out["files"].append(raw)
    out["unclassified"] = unclassified.out()
    out["unclassified_total"] = unclassified.total
    print(json.dumps(out))


if __name__ == "__main__":
    main()
