#!/usr/bin/env bash
# One device call (repo in the cwd, our wheels in .whl, the code of this round's start (cc582d7) in .device/before,
# both carried): an offline investigation of the GPU box, before and after this round, bytecode compiled as a pip
# install leaves it. Each run's timeline is read back from its transcript (bench/device/run_timeline.py): the run's
# wall time, when the resource account's result came back (its 2 s sampling window closes just before), how long
# the run went on after it, the lead's turns and the agents of its second round.
#
#   bash bench/device/round6_run.sh        (OUT must be set; the device tool sets it)
#
# Two inputs: the observations of bench/device/h200_obs.yaml (no measured figure), and the same with a vLLM
# bench result (tests/engine/data/bench/...: a request account with figures on both sides of the run).
set -u
OUT="${OUT:?set OUT}"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || { echo "wheel install failed"; exit 1; }
nvidia-smi -L; python3 -VV; nproc
HERE="$PWD"
OBS="$HERE/bench/device/h200_obs.yaml"
BENCH="$HERE/tests/engine/data/bench/vllm-infqps-concurrency64-Llama-3.1-8B-Instruct-20251130-101500.json"
for d in "$HERE/.device/before" "$HERE"; do
  (cd "$d" && PYTHONPATH="/tmp/site:$d" python3 -m compileall -q orchestrator > /dev/null) || echo "compileall failed in $d"
done
run() {  # code label i extra-args...
  local code="$1" label="$2" i="$3"; shift 3
  local dir="$HERE"; [ "$code" = before ] && dir="$HERE/.device/before"
  local t="/tmp/t_${code}_${label}_$i.jsonl"
  (cd "$dir" && PYTHONPATH="/tmp/site:$dir" timeout 120 python3 -m orchestrator.cli "why is FP8 slow at small batch" \
     --offline --observations "$OBS" --no-progress --transcript "$t" "$@" > "/tmp/out_${code}_${label}_$i.txt" \
     2> "/tmp/err_${code}_${label}_$i.txt") || { echo "$code $label $i failed"; tail -3 "/tmp/err_${code}_${label}_$i.txt"; }
  python3 "$HERE/bench/device/run_timeline.py" "$t" "$code $label $i"
}
{
for i in 1 2 3 4 5; do
  run before plain "$i"
  run after plain "$i"
done
for i in 1 2 3; do
  run before bench "$i" --bench "$BENCH"
  run after bench "$i" --bench "$BENCH"
done
} 2>&1 | tee "$OUT/round6_timeline.txt"
head -c 4000 /tmp/out_after_bench_1.txt > "$OUT/after_bench_diagnosis.txt"
tar czf "$OUT/transcripts.tgz" -C /tmp $(cd /tmp && ls t_after_*_1.jsonl t_before_*_1.jsonl)
