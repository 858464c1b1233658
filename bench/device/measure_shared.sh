#!/usr/bin/env bash
# Issue 24, measurement hygiene on a real GPU: one device call (kind nvidia-h200; repo in the cwd, our wheels in
# .whl). A background process loops bf16 8192^3 matmuls on GPU 0 (the real box's `python3` at 100 % and ~690 W);
# then `investigate ... --measure` runs against localhost twice: without waiting (figures must come back marked
# shared_gpu, the other workload named, its load not read as the user's) and with --measure-wait shorter than the
# loop (it waits, then measures anyway, still marked). A third run after the loop ended must measure a quiet GPU.
#
#   bash bench/device/measure_shared.sh        (OUT must be set; the device tool sets it)
#
# Prints, per run: shared_gpu of the GEMM sweep, the other processes it saw, how long it waited, the diagnosis's
# verdict, bound and first causes, and whether any cause or the bound reads the other process's load as the workload's.
set -u
OUT="${OUT:?set OUT}"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed"; exit 1; }
  export PYTHONPATH="/tmp/site:$PWD"
else
  export PYTHONPATH="$PWD"
fi
python3 -c "import orchestrator, torch; print('imports ok, torch', torch.__version__, 'cuda', torch.cuda.is_available())" \
  || exit 1

LOOP_S="${LOOP_S:-150}"
cat > /tmp/matmul_loop.py <<'PY'
import sys, time, torch
end = time.time() + float(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda:0", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda:0", dtype=torch.bfloat16)
n = 0
while time.time() < end:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
    n += 20
print("matmuls", n, flush=True)
PY
python3 /tmp/matmul_loop.py "$LOOP_S" > "$OUT/loop.stdout" 2>&1 &
LOOP_PID=$!
trap 'kill $LOOP_PID 2>/dev/null' EXIT
sleep 10
nvidia-smi --query-gpu=index,utilization.gpu,power.draw,memory.used --format=csv | tee "$OUT/busy-query.csv"
nvidia-smi --query-compute-apps=gpu_bus_id,pid,process_name,used_memory --format=csv | tee "$OUT/busy-apps.csv"

Q="why is my FP8 GEMM slower than the spec sheet?"
report() {  # $1: name of the run
  python3 - "$OUT/$1.json" "$OUT/$1.jsonl" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
sweeps = []
for line in open(sys.argv[2]):
    ev = json.loads(line)
    data = (ev.get("data") or {}) if ev.get("type") == "tool_result" else {}
    if data.get("kind") in ("gemm_sweep", "comm_sweep"):
        sweeps.append(data)
for s in sweeps:
    act = s.get("gpu_activity") or {}
    print(f"  {s['kind']}: shared_gpu={s.get('shared_gpu')} waited {act.get('waited_s')} s of {act.get('wait_s')} s; "
          f"others={[(o.get('name'), o.get('pid'), o.get('used_memory_mib')) for o in act.get('others', [])]}; "
          f"points={len(s.get('points') or [])} available={s.get('available')}")
print("  verdict:", d["verdict"])
print("  bound:", d["bound"], "-", d["bound_reasoning"][:200])
for c in d["causes"][:5]:
    print("  cause:", c["title"])
for g in d["gaps"]:
    if "shared the GPU" in g["what"]:
        print("  gap:", g["what"])
misread = re.search(r"primary limiter is compute: \d+ W of \d+ W", d["verdict"])
print("  reads the other load as the workload's:", bool(misread))
PY
}

echo "== 1. --measure while the loop runs (no wait)"
timeout 400 python3 -m orchestrator.cli "$Q" --offline --measure --no-progress --json \
  --transcript "$OUT/shared-nowait.jsonl" > "$OUT/shared-nowait.json" 2> "$OUT/shared-nowait.stderr"
echo "  exit $?"; report shared-nowait

echo "== 2. --measure --measure-wait 20 while the loop runs (waits, then measures anyway)"
timeout 400 python3 -m orchestrator.cli "$Q" --offline --measure --measure-wait 20 --no-progress --json \
  --transcript "$OUT/shared-wait.jsonl" > "$OUT/shared-wait.json" 2> "$OUT/shared-wait.stderr"
echo "  exit $?"; report shared-wait

kill "$LOOP_PID" 2>/dev/null; wait "$LOOP_PID" 2>/dev/null
sleep 5
echo "== 3. --measure on the quiet GPU"
timeout 400 python3 -m orchestrator.cli "$Q" --offline --measure --no-progress --json \
  --transcript "$OUT/quiet.jsonl" > "$OUT/quiet.json" 2> "$OUT/quiet.stderr"
echo "  exit $?"; report quiet
ls -la "$OUT"
