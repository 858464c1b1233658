#!/usr/bin/env bash
# Real-GPU capture for the probes (issue 3 item 4). Run from the repository root on the GPU machine:
#   bash tests/probes/capture/capture.sh
# Writes $OUT/h200_capture.tgz (raw nvidia-smi outputs, distribution metadata, cache trees and small cache files,
# and the probe scripts' own JSON output) and $OUT/capture.log.
set -u
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/capture-out}
mkdir -p "$OUT"
W=/tmp/investigate-capture
rm -rf "$W"; mkdir -p "$W/c/meta" "$W/c/probe" "$W/c/files" "$W/tunableop"
C=$W/c
LOG=$OUT/capture.log
S=orchestrator/probes/scripts
HERE=tests/probes/capture
log() { echo "== $*" >>"$LOG"; }
export TRITON_CACHE_DIR=$W/triton TORCHINDUCTOR_CACHE_DIR=$W/inductor
export PYTORCH_TUNABLEOP_FILENAME=$W/tunableop/tunableop_results%d.csv
log start "$(date -u +%FT%TZ)"; nvidia-smi -L 2>&1 | sed 's/UUID: [^)]*/UUID: redacted/' >>"$LOG"

log nvidia-smi
nvidia-smi -q -x >"$C/nvidia-smi-q.xml" 2>>"$LOG"
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,compute_cap,memory.total,power.draw,power.limit,clocks.sm,clocks.max.sm,utilization.gpu,temperature.gpu --format=csv >"$C/nvidia-smi-query.csv" 2>>"$LOG"
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,compute_cap,memory.total,memory.used,power.draw,power.limit,clocks.sm,clocks.max.sm,utilization.gpu,temperature.gpu --format=csv >"$C/nvidia-smi-query-probe.csv" 2>>"$LOG"
nvidia-smi --query-gpu=name,compute_cap --format=csv,noheader >"$C/nvidia-smi-name-cc.csv" 2>>"$LOG"
nvidia-smi topo -m >"$C/nvidia-smi-topo.txt" 2>>"$LOG"

log workload
PYTORCH_TUNABLEOP_ENABLED=1 PYTORCH_TUNABLEOP_MAX_TUNING_DURATION_MS=30 PYTORCH_TUNABLEOP_MAX_WARMUP_DURATION_MS=5 \
  timeout 200 python3 "$HERE/workload.py" >"$C/workload.json" 2>>"$LOG"; log "workload exit $?"

log power under load
timeout 60 python3 "$HERE/load.py" 8 2>>"$LOG" &
LOAD=$!
sleep 3
timeout 30 python3 - '{"duration_s": 3.0, "interval_s": 0.5}' <"$S/sampler.py" >"$C/probe/sampler.json" 2>>"$LOG"
nvidia-smi -q -x >"$C/nvidia-smi-q-load.xml" 2>>"$LOG"
wait $LOAD

log metadata
python3 -c 'import importlib.metadata as m; print("\n".join(sorted("%s==%s" % (d.metadata["Name"], d.version) for d in m.distributions())))' >"$C/meta/distributions.txt" 2>>"$LOG"
SITE=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>>"$LOG")
echo "$SITE" >"$C/meta/site.txt"
for d in "$SITE"/torch-*.dist-info "$SITE"/triton-*.dist-info; do [ -f "$d/METADATA" ] && cp "$d/METADATA" "$C/meta/$(basename "$d").METADATA"; done
cp "$SITE/torch/version.py" "$C/meta/torch_version.py" 2>>"$LOG"
command -v cuobjdump >"$C/meta/cuobjdump.txt" 2>&1

log cache trees
(cd "$W" && find triton inductor tunableop -printf '%y\t%s\t%p\n' 2>/dev/null | sort -k3) >"$C/cache-tree.tsv"
(cd "$W" && find triton inductor tunableop -type f \( -name '*.json' -o -name '*.csv' -o -name '*.best_config' \) -size -256k -print0 | tar --null -T - -cf - ) | tar -xf - -C "$C/files"

log probes
P='{"packages": ["torch","triton","pytorch-triton","flashinfer-python","vllm","sglang","tensorrt-llm","nvidia-cutlass","nvidia-cutlass-dsl","deep-gemm","nvidia-nccl-cu12","nvidia-nccl-cu13"], "import_torch": true}'
timeout 60 python3 - "$P" <"$S/pyenv.py" >"$C/probe/pyenv.json" 2>>"$LOG"
timeout 30 python3 - '{"env_keys": ["HOME","TRITON_CACHE_DIR"]}' <"$S/discover.py" >"$C/probe/discover.json" 2>>"$LOG"
timeout 120 python3 - '{"device_names": ["NVIDIA H200"]}' <"$S/caches.py" >"$C/probe/caches.json" 2>>"$LOG"
timeout 150 python3 - '{"arch": "sm_90", "budget_s": 40}' <"$S/kernels.py" >"$C/probe/kernels.json" 2>>"$LOG"
log orchestrator
timeout 150 python3 "$HERE/run_probes.py" >"$C/probe/run_probes.json" 2>>"$LOG"; log "run_probes exit $?"

log redact
sed -i -E 's#<serial>[^<]*</serial>#<serial>0000000000000</serial>#; s#<uuid>[^<]*</uuid>#<uuid>GPU-00000000-0000-0000-0000-000000000000</uuid>#; s#<(board_id|pdi|gpu_fabric_guid|chassis_serial_number)>0x[0-9a-fA-F]+<#<\1>0x0<#' "$C"/nvidia-smi-q*.xml
sed -i -E 's#GPU-[0-9a-f]{8}-[0-9a-f-]{27}#GPU-00000000-0000-0000-0000-000000000000#g' "$C"/probe/*.json
du -sh "$C" >>"$LOG"
tar -czf "$OUT/h200_capture.tgz" -C "$W" c
log done "$(date -u +%FT%TZ)"
