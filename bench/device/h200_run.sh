#!/usr/bin/env bash
# One device call on kind nvidia-h200-x2 (repo copied to the cwd, our wheels in .whl): the measurement fixtures and a
# real recorded investigation on the H200 host itself.
#
#   bash bench/device/h200_run.sh        (OUT must be set; the device tool sets it)
set -u
OUT="${OUT:?set OUT}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD"
python3 -c "import orchestrator, pydantic, paramiko, anthropic; print('imports ok', pydantic.VERSION)" || exit 1

# 1. Measurement fixtures (issue 7 and 8): bf16/fp8 GEMM sweep and NCCL all-reduce on 2 GPUs.
#    SKIP_FIXTURES=1 re-records only the investigation (step 2), e.g. after tool definitions changed.
if [ "${SKIP_FIXTURES:-0}" != 1 ]; then
  GEMM_BUDGET_S=100 COMM_BUDGET_S=60 bash bench/device/measure_h200.sh
fi

# 2. A real investigation of this H200 host, offline backend, with measurements, recorded.
timeout 300 python3 -m orchestrator.cli "why is FP8 slow at small batch?" --offline --measure --no-progress --json \
  --observations bench/device/h200_obs.yaml --transcript "$OUT/h200-fp8-small-batch.jsonl" \
  > "$OUT/h200-diagnosis.json" 2> "$OUT/h200-investigate.stderr"
echo "investigate exit $?"
tail -5 "$OUT/h200-investigate.stderr"
python3 -c "import json; d=json.load(open('$OUT/h200-diagnosis.json')); print(d['verdict']); print(d['bound'], d['bound_reasoning'][:300]); [print('-', c['title'], c['evidence']) for c in d['causes']]"
ls -la "$OUT"
