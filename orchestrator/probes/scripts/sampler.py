"""Sample GPU power, SM clock and utilization with nvidia-smi every interval for a duration.

stdlib only, Python >= 3.8. Params (JSON, argv[1]): {"duration_s": float, "interval_s": float, "fields": str}.
Prints {"samples": [{"t_s": float, "csv": str}], "errors": [...]} where csv is nvidia-smi's raw output.
"""
import json
import subprocess
import sys
import time


def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    duration = float(params.get("duration_s", 3.0))
    interval = float(params.get("interval_s", 0.5))
    fields = params.get("fields") or "index,power.draw,power.limit,clocks.sm,clocks.max.sm,utilization.gpu"
    argv = ["nvidia-smi", "--query-gpu=" + fields, "--format=csv"]
    out = {"samples": [], "errors": []}
    start = time.monotonic()
    while True:
        t = time.monotonic() - start
        try:
            proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=max(interval * 4, 5))
            if proc.returncode == 0:
                out["samples"].append({"t_s": round(t, 3), "csv": proc.stdout.decode("utf-8", "replace")})
            else:
                out["errors"].append((proc.stdout + proc.stderr).decode("utf-8", "replace").strip()[:300])
        except (OSError, subprocess.TimeoutExpired) as exc:
            out["errors"].append("%s: %s" % (type(exc).__name__, exc))
            break
        if time.monotonic() - start + interval > duration:
            break
        time.sleep(max(0.0, interval - (time.monotonic() - start - t)))
    print(json.dumps(out))


main()
