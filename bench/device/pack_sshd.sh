#!/usr/bin/env bash
# Pack this machine's OpenSSH server (Debian's openssh-server) for a lent machine that has none: the sshd and
# ssh-keygen binaries, the shared libraries they link (but libc and the loader), and wrappers that point the loader at
# them. The result goes to .device/sshd (ignored by git), which `run` carries: see bench/device/hosts_run.sh.
#
#   bash bench/device/pack_sshd.sh
set -eu
out=.device/sshd
rm -rf "$out" && mkdir -p "$out/bin" "$out/lib"
for b in /usr/sbin/sshd /usr/bin/ssh-keygen; do
  cp "$b" "$out/bin/$(basename "$b").real"
  ldd "$b" | awk '/=>/ {print $3}' | grep -Ev 'libc\.so|ld-linux|libm\.so|libresolv|libpthread|libdl' \
    | xargs -r -I{} cp -L {} "$out/lib/"
  printf '#!/bin/sh\nd=$(dirname "$(readlink -f "$0")")\nLD_LIBRARY_PATH="$d/../lib" exec "$d/%s.real" "$@"\n' \
    "$(basename "$b")" > "$out/bin/$(basename "$b")"
  chmod +x "$out/bin/$(basename "$b")"
done
"$out/bin/sshd" -V 2>&1 | head -1
du -sh "$out"
