#!/usr/bin/env bash
# One device call (kind nvidia-h200; repo in the cwd, our wheels in .whl, the landed code of the round's start in
# .devbefore, carried): the figures this round's issues ask for on a real H200.
#
#   bash bench/device/round5_run.sh        (OUT must be set; the device tool sets it)
#   SKIP_BEFORE=1 SKIP_SHARED=1 ...        (only this code's timings and the transcript, e.g. after a change)
#
# 1. Issue 26: the resource account's window against an offline investigation of this box — the landed code
#    (c989be3, .devbefore) and this code, 3 runs each, and this code without the account (bench/realhost.sh).
# 2. Issue 24: --measure beside another process's bf16 matmul loop (bench/device/measure_shared.sh).
# 3. The shipped H200 transcript re-recorded with the current tools on this machine (bench/device/h200_run.sh,
#    step 2 only; one GPU, so the all-reduce sweep has no group to measure).
set -u
OUT="${OUT:?set OUT}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD"
python3 -c "import orchestrator, pydantic, paramiko, anthropic; print('imports ok', pydantic.VERSION)" || exit 1
nvidia-smi -L; python3 -VV; nproc

echo "===== 1a. the landed code (before): offline investigation, 3 runs"
if [ -d .devbefore ] && [ -z "${SKIP_BEFORE:-}" ]; then
  (cd .devbefore && PYTHONPATH="/tmp/site:$PWD" timeout 240 python3 bench/realhost.py --skip-alone --runs 3 \
     --out /tmp/before --observations bench/device/h200_obs.yaml 2>&1 | tail -25) | tee "$OUT/before.txt"
fi
echo "===== 1b. this code: realhost.sh timings (with and without the account, and a 1 s window)"
RUNS=3 SKIP_CHECKS=1 timeout 420 bash bench/realhost.sh 2>&1 | grep -v "^import of\|investigate --help" | tail -80 \
  | tee "$OUT/after.txt"
echo "===== 2. --measure on a shared GPU"
[ -n "${SKIP_SHARED:-}" ] || {
mkdir -p /tmp/shared
OUT=/tmp/shared LOOP_S="${LOOP_S:-120}" timeout 400 bash bench/device/measure_shared.sh 2>&1 | tail -60 \
  | tee "$OUT/measure_shared.txt"
tar czf "$OUT/shared.tgz" -C /tmp shared; }
echo "===== 3. the shipped H200 transcript, re-recorded"
SKIP_FIXTURES=1 timeout 300 bash bench/device/h200_run.sh 2>&1 | tail -30
ls -la "$OUT"  # at most 8 files come back: before.txt after.txt realhost.tgz measure_shared.txt shared.tgz and h200_run's 3
