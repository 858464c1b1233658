#!/usr/bin/env bash
# One device call (a 16-core machine): bench/hosts.py with 64 staged hosts behind real sshds, where the hosts'
# probes do not all share two cores. Debian's OpenSSH travels in .device/sshd (`bash bench/device/pack_sshd.sh` packs
# the binaries and the libraries they link), our wheels in .whl; carry both. The privilege-separation user sshd needs
# is added when missing.
#
#   bash bench/device/hosts_run.sh [N [--in-flight K]]   (OUT must be set; the device tool sets it; RUNS=4 pairs)
set -u
OUT="${OUT:?set OUT}"
N="${1:-64}"; shift || true   # further arguments go to bench/hosts.py (e.g. --in-flight 32)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  $(ls .whl/*.whl | grep -v anthropic) || { echo "wheel install failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD"

export PATH="$PWD/.device/sshd/bin:$PATH"
export INVESTIGATE_TEST_SSHD="$PWD/.device/sshd/bin/sshd"
id sshd >/dev/null 2>&1 || useradd -r -d /run/sshd -s /usr/sbin/nologin sshd
mkdir -p /run/sshd && chmod 755 /run/sshd
"$INVESTIGATE_TEST_SSHD" -V 2>&1 | head -1
python3 -c "import orchestrator, pydantic, paramiko, anyio, httpx, yaml, typer, rich; print('imports ok')" || exit 1
nproc
python3 bench/hosts.py "$N" --repeat "${RUNS:-4}" "$@" 2>&1 | tee -a "$OUT/hosts_bench.txt" | grep -E "x the time|^over"
