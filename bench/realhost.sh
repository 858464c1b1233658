#!/usr/bin/env bash
# Issue 17: wall times of the probes and of whole runs on a real GPU box (the device tool's H200 machine), plus the
# evidence checks that go with them. Run in a copy of the repository, with our wheels in .whl (see the README's
# performance section), on a machine whose python3 is the serving environment:
#
#   bash bench/realhost.sh            (OUT: where results go; the device tool sets it)
#
# Prints: the offline investigation with and without the resource account's sampling window (issue 26; SKIP_ACCOUNT=1
# leaves it out), each probe alone, `investigate probe` and an offline investigation (3 runs each, per-tool and per-probe
# times from the transcript); the fatbin reader against cuobjdump; the GEMM probe's default sweep against an
# independent timing, with its held points' power and clock. Everything lands in $OUT/realhost.tgz.
set -u
OUT="${OUT:?set OUT}"
W="$OUT/realhost"; mkdir -p "$W"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed"; exit 1; }
  export PYTHONPATH="/tmp/site:$PWD"
else
  export PYTHONPATH="$PWD"
fi
{ echo "date $(date -u +%FT%TZ)"; echo "nproc $(nproc)"; python3 -VV; which python3 cuobjdump; nvidia-smi -L; uname -r
  cat COMMIT 2>/dev/null || git log -1 --format='commit %H %s' 2>/dev/null; } 2>&1 | tee "$W/env.txt"
OBS=bench/device/h200_obs.yaml
echo "== probes and runs (default settings)"
python3 bench/realhost.py --runs "${RUNS:-3}" --out "$W/default" --observations "$OBS" 2>&1 | tee "$W/realhost.txt"
if [ -n "${POWER_VARIANT:-}" ]; then
  echo "== the same runs with INVESTIGATE_POWER_SAMPLE_S=$POWER_VARIANT"
  INVESTIGATE_POWER_SAMPLE_S="$POWER_VARIANT" python3 bench/realhost.py --skip-alone --runs 2 --out "$W/power$POWER_VARIANT" \
    --observations "$OBS" 2>&1 | tee "$W/realhost_power.txt"
fi
if [ -z "${SKIP_ACCOUNT:-}" ]; then
  # Issue 26: the resource account samples the host for a window (default 3 s) beside the other probes; it must add
  # at most 0.5 s to an offline investigation. "before": the same runs with the resource-account agent overridden by
  # one that has no tools and no plan (nothing sampled, nothing prefetched); "after" is the default section above.
  NOACCT="$W/no_account_agents"; mkdir -p "$NOACCT"
  printf '%s\n' '---' 'name: resource-account' 'description: "disabled for the window measurement"' 'model: inherit' \
    'tools: []' 'max_turns: 1' 'timeout_s: 60' 'max_tokens_budget: 1000' 'plan: []' '---' 'Disabled.' > "$NOACCT/resource-account.md"
  echo "== the account's window: the same runs without the resource account (compare 'run s' with the table above)"
  INVESTIGATE_AGENTS_DIR="$NOACCT" python3 bench/realhost.py --skip-alone --runs "${RUNS:-3}" --out "$W/no_account" \
    --observations "$OBS" 2>&1 | tee "$W/realhost_no_account.txt"
  echo "== and with a 1 s window (INVESTIGATE_ACCOUNT_SAMPLE_S=1)"
  INVESTIGATE_ACCOUNT_SAMPLE_S=1 python3 bench/realhost.py --skip-alone --runs 2 --out "$W/account_1s" \
    --observations "$OBS" 2>&1 | tee "$W/realhost_account_1s.txt"
fi
echo "== start-up: what importing the CLI and the run's modules costs (python -X importtime, slowest self times)"
python3 -X importtime -c "import orchestrator.cli, orchestrator.api, orchestrator.tools.registry, orchestrator.analysis.synthesis" \
  2> "$W/importtime.txt"; sort -t'|' -k1.13n "$W/importtime.txt" | tail -12
for i in 1 2 3; do python3 -c "import time; t = time.perf_counter()
import orchestrator.cli, orchestrator.api, orchestrator.tools.registry, orchestrator.analysis.synthesis
print('import of the CLI and the run modules: %.3f s' % (time.perf_counter() - t))"; done
TIMEFORMAT="investigate --help: %R s wall, %U s user"
for i in 1 2 3; do time python3 -m orchestrator.cli --help > /dev/null; done
if [ -n "${SKIP_CHECKS:-}" ]; then  # only the timings (the checks below do not depend on start-up)
  tar czf "$OUT/realhost.tgz" -C "$OUT" realhost && rm -rf "$W"; exit 0
fi
echo "== fatbin reader vs cuobjdump"
python3 bench/device/fatbin_check.py "$W" "${FATBIN_BUDGET_S:-45}" 2>&1 | tee "$W/fatbin_check.txt" | tail -25
echo "== GEMM probe vs independent timing"
python3 bench/device/gemm_check.py "$W" "$OBS" 2>&1 | tee "$W/gemm_check.txt"
tar czf "$OUT/realhost.tgz" -C "$OUT" realhost && rm -rf "$W"
ls -la "$OUT"
