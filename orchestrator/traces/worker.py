"""Trace analysis in a child process, so that what bounds it is the kernel's: an address-space limit (RLIMIT_AS), a
CPU-time limit (RLIMIT_CPU), and a kill when the caller's deadline passes or the user presses Ctrl-C. In the caller's
own process a thread doing the same work could only be abandoned, and went on burning CPU and memory for up to an
hour after its result was no longer wanted.

Protocol: the parent writes one JSON line on stdin ({"paths", "baseline", "include_host", "memory_bytes", "cpu_s",
"timeout_s", "max_step_rows"}) and keeps stdin open; the child writes the `TraceReport` as JSON on stdout and exits 0,
or writes one line on stderr and exits `EXIT_INPUT` (the traces cannot be used) or `EXIT_MEMORY` (past its memory
bound). When stdin closes (the parent is gone) the child exits at once.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading

EXIT_INPUT = 3
EXIT_MEMORY = 4
EXIT_ORPHANED = 70


def _watch_parent() -> None:
    while os.read(0, 1 << 16):  # the raw descriptor: no buffer lock held at interpreter shutdown
        pass
    os._exit(EXIT_ORPHANED)


def main() -> int:
    line = b""
    while not line.endswith(b"\n") and (chunk := os.read(0, 1 << 16)):
        line += chunk
    req = json.loads(line)
    for what, key in ((resource.RLIMIT_AS, "memory_bytes"), (resource.RLIMIT_CPU, "cpu_s")):
        if req.get(key):
            _, hard = resource.getrlimit(what)
            want = int(req[key])
            resource.setrlimit(what, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))
    threading.Thread(target=_watch_parent, daemon=True).start()

    from orchestrator.traces.analyze import analyze
    from orchestrator.traces.inputs import TraceInputError
    from orchestrator.traces.kineto import TraceFormatError
    from orchestrator.traces.nsys import NsysFormatError

    try:
        report = analyze(req["paths"], req.get("baseline") or None, bool(req.get("include_host")),
                         timeout_s=float(req.get("timeout_s") or 0) or None)
        rows = int(req.get("max_step_rows") or 0)
        if rows:
            for a in report.ranks:
                a.steps = a.steps[:rows]
        out = report.model_dump_json()
    except (TraceInputError, TraceFormatError, NsysFormatError) as e:
        print(" ".join(str(e).split()), file=sys.stderr)
        return EXIT_INPUT
    except MemoryError:
        return EXIT_MEMORY
    sys.stdout.write(out)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
