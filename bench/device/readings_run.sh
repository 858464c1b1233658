#!/usr/bin/env bash
# One device call (kind nvidia-h200; repo in the cwd, our wheels in .whl, the code before the readings change in
# .device/before, carried): how many times an offline investigation of the box runs nvidia-smi, and how long the run
# takes, before and after a live reading serves the callers of its moment (orchestrator/probes/session.py).
#
#   bash bench/device/readings_run.sh        (OUT must be set; the device tool sets it)
#
# nvidia-smi is counted by a shim first on PATH that logs its arguments and runs the real one.
set -u
OUT="${OUT:?set OUT}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "wheel install failed"; exit 1; }
REAL="$(command -v nvidia-smi)" || { echo "no nvidia-smi"; exit 1; }
mkdir -p /tmp/shim
printf '#!/bin/sh\necho "$*" >> "$SMI_LOG"\nexec %s "$@"\n' "$REAL" > /tmp/shim/nvidia-smi
chmod +x /tmp/shim/nvidia-smi
nvidia-smi -L; python3 -VV; nproc
for code in before after; do
  dir="$PWD"; [ "$code" = before ] && dir="$PWD/.device/before"
  for i in 1 2 3 4; do
    log="$OUT/smi_${code}_$i.log"; : > "$log"
    (cd "$dir" && SMI_LOG="$log" PATH="/tmp/shim:$PATH" PYTHONPATH="/tmp/site:$dir" timeout 120 python3 -m orchestrator.cli \
      "why is FP8 slow at small batch" --offline --observations "$PWD/bench/device/h200_obs.yaml" --no-progress \
      --transcript "/tmp/t_${code}_$i.jsonl" > /dev/null 2> "$OUT/err_${code}_$i.txt")
    python3 - "$code" "$i" "/tmp/t_${code}_$i.jsonl" "$log" <<'PY'
import collections, datetime, json, sys
code, i, path, log = sys.argv[1:]
ts = [json.loads(l)["ts"] for l in open(path) if '"ts"' in l]
t = [datetime.datetime.fromisoformat(x.replace("Z", "+00:00")) for x in ts]
calls = [l.strip() for l in open(log) if l.strip()]
kinds = collections.Counter(c.split(" ")[0] if not c.startswith("--query") else c.split("=")[0] for c in calls)
print(f"{code} run {i}: run {(t[-1] - t[0]).total_seconds():.2f} s, nvidia-smi {len(calls)} times: {dict(kinds)}")
PY
  done
done 2>&1 | tee "$OUT/readings.txt"
