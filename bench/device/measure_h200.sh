#!/usr/bin/env bash
# Measure GEMM efficiency and all-reduce on the lent H200 machine (kind nvidia-h200-x2): one device call, repo in cwd.
#
#   OUT=/some/dir bash bench/device/measure_h200.sh
#
# Needs only the stdlib + torch there (python3.12, torch 2.11). Writes into $OUT:
#   gemm_h200.json   gemm_bench.py: DeepSeek-V3/GLM-like expert shapes (gate_up N=4096 K=7168, down N=7168 K=2048),
#                    bf16 and fp8 (torch._scaled_mm, e4m3, per-tensor scales), M = 16..16384, power/clock samples
#   comm_h200.json   comm_bench.py: NCCL all-reduce on 2 GPUs, groups of 2 vs 1, 4 KiB..256 MiB, nvidia-smi topo -m
#   env.txt          interpreter, torch, nvidia-smi query (what the fixtures' README quotes)
#   *.stderr         each script's stderr
# Locally (no GPU): COMM_BACKEND=gloo COMM_WORLD=2 exercises the same commands on the CPU.
set -u
OUT="${OUT:?set OUT to the output folder}"
PY="${PYTHON:-python3}"
GEMM_BUDGET_S="${GEMM_BUDGET_S:-150}"
COMM_BUDGET_S="${COMM_BUDGET_S:-150}"
COMM_BACKEND="${COMM_BACKEND:-nccl}"
COMM_WORLD="${COMM_WORLD:-2}"
COMM_SIZES="${COMM_SIZES:-}"
HERE="$(cd "$(dirname "$0")/../.." && pwd)"
SCRIPTS="$HERE/orchestrator/probes/scripts"
mkdir -p "$OUT"

# NVLink multicast stays off in this shell too (comm_bench sets it in every rank regardless).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "python: $("$PY" -c 'import sys; print(sys.executable, sys.version.split()[0])' 2>&1)"
  echo "torch: $("$PY" -c 'import torch; print(torch.__version__, torch.version.cuda)' 2>&1)"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,compute_cap,memory.total,power.draw,power.limit,clocks.sm,clocks.max.sm --format=csv 2>&1
  else
    echo "nvidia-smi: not found"
  fi
} > "$OUT/env.txt"

# Sent on stdin as the probe does in production (`python - PARAMS_JSON`).
"$PY" - '{"shapes": [{"name": "gate_up", "n": 4096, "k": 7168}, {"name": "down", "n": 7168, "k": 2048}],
          "m": [16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384], "dtypes": ["bf16", "fp8"],
          "budget_s": '"$GEMM_BUDGET_S"', "repeats": 15, "warmup": 3, "sample_interval_s": 0.1}' \
  < "$SCRIPTS/gemm_bench.py" > "$OUT/gemm_h200.json" 2> "$OUT/gemm_h200.stderr"
echo "gemm_bench exit $?"

args=(--backend "$COMM_BACKEND" --world "$COMM_WORLD" --group-sizes "$COMM_WORLD,$((COMM_WORLD / 2))"
      --budget-s "$COMM_BUDGET_S" --iters 20 --repeats 5)
[ -n "$COMM_SIZES" ] && args+=(--sizes "$COMM_SIZES")
"$PY" "$SCRIPTS/comm_bench.py" "${args[@]}" > "$OUT/comm_h200.json" 2> "$OUT/comm_h200.stderr"
echo "comm_bench exit $?"

"$PY" - "$OUT" <<'PY'
import json, sys, os
out = sys.argv[1]
for name in ("gemm_h200.json", "comm_h200.json"):
    try:
        d = json.load(open(os.path.join(out, name)))
    except Exception as exc:
        print(name, "unreadable:", exc); continue
    print(name, "available:", d.get("available"), "points:", len(d.get("points") or []), "reason:", d.get("reason"))
    for p in (d.get("points") or [])[:60]:
        if "tflops" in p:
            print("  %-8s %-5s M=%-6d %8.4f ms %7.1f TFLOPS %7.0f GB/s" % (p["shape"], p["dtype"], p["m"], p["ms"], p["tflops"], p["gbps"]))
        else:
            print("  g=%d bytes=%-10d %9.1f us ok=%s" % (p["group_size"], p["bytes"], p["ms"] * 1e3, p["correct"]))
PY
