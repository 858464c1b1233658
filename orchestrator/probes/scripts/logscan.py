"""Match log files against known-issue signatures, with line numbers.

stdlib only, Python >= 3.8. Params (JSON, argv[1]): {"paths": [...], "signatures": [{"id", "pattern"}],
"max_matches": int, "max_line_chars": int}. Prints {"files": [...], "missing": [...], "lines": n, "matches": [...]}.
"""
import json
import os
import re
import sys


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
    out = {"files": [], "missing": [], "lines": 0, "matches": [], "truncated": False}
    for raw in params.get("paths") or []:
        path = os.path.expanduser(raw)
        if not os.path.isfile(path):
            out["missing"].append(raw)
            continue
        try:
            f = open(path, "r", encoding="utf-8", errors="replace")
        except OSError:
            out["missing"].append(raw)
            continue
        no = 0
        try:
            with f:
                while True:
                    # Bounded reads: a log with no newlines (or a binary file) must not be read into one string.
                    line = f.readline(1 << 20)
                    if not line:
                        break
                    if not line.endswith("\n"):
                        while True:
                            rest = f.readline(1 << 20)
                            if not rest or rest.endswith("\n"):
                                break
                    no += 1
                    out["lines"] += 1
                    for sid, rx in sigs:
                        if rx.search(line):
                            if len(out["matches"]) >= max_matches:
                                out["truncated"] = True
                                break
                            out["matches"].append({"path": raw, "line_no": no, "line": line.rstrip("\n")[:width],
                                                   "signature_id": sid})
        except OSError:
            if no == 0:
                out["missing"].append(raw)
                continue
        out["files"].append(raw)
    print(json.dumps(out))


main()
