#!/usr/bin/env bash
# Issue 17, first device call: where the probes spend their time, before any change (kind nvidia-h200).
#   cd <repo copy> && bash bench/device/profile_run.sh      (OUT set by the device tool; our wheels in .whl)
set -u
OUT="${OUT:?set OUT}"
W="$OUT/work"; mkdir -p "$W"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
WHL="${WHL:-.whl}"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHL"/*.whl \
  || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD"
{ echo "nproc $(nproc)"; python3 -VV; which python3 cuobjdump; nvidia-smi -L; uname -r; } 2>&1 | tee "$W/env.txt"
python3 bench/device/profile_probes.py "$W" 2>&1 | tee "$W/profile.txt"
# what is sent to a host: the shared prelude, then the script (orchestrator/probes/scripts/__init__.py load())
for s in kernels pyenv; do python3 -c "import sys; from orchestrator.probes import scripts; print(scripts.load(sys.argv[1]))" "$s" > "$W/$s.py"; done
python3 -m cProfile -o "$W/kernels.prof" "$W/kernels.py" '{"arch": "sm_90", "budget_s": 60}' \
  > "$W/kernels_out.json" 2> "$W/kernels.stderr"
python3 -c "import pstats,sys; pstats.Stats(sys.argv[1]).sort_stats('cumulative').print_stats(30)" "$W/kernels.prof" \
  > "$W/kernels_prof.txt" 2>&1; head -70 "$W/kernels_prof.txt" | tail -45
python3 -m cProfile -o "$W/pyenv.prof" "$W/pyenv.py" \
  '{"packages": ["torch", "triton", "transformers"], "import_torch": true}' > "$W/pyenv_out.json" 2>&1
python3 bench/realhost.py --runs "${RUNS:-2}" --out "$W/rh" 2>&1 | tee "$W/realhost.txt"
tar czf "$OUT/profile.tgz" -C "$OUT" work && rm -rf "$W"
ls -la "$OUT"
