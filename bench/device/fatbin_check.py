"""The kernel inventory's fatbin-header reader against `cuobjdump --list-elf`, on every shared object with GPU code
under site-packages (torch, triton, nvidia-*, cupy, jax ...), largest first, within a time budget.

    python3 bench/device/fatbin_check.py OUTDIR [BUDGET_S]

Prints one line per file (the reader's time and archs, cuobjdump's time and archs, same or not) and writes
OUTDIR/fatbin_check.json.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(HERE))


def entry_flags(k, path: str) -> dict[str, int]:
    """"kind:arch:flags" -> count over the file's fatbin entries (to tie each flag bit to cuobjdump's names)."""
    import mmap
    import struct

    off, size = k.elf_section(path, b".nv_fatbin")
    out: dict[str, int] = {}
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        pos, end = off, off + size
        while pos + 16 <= end:
            magic, _v, hsz, fsz = struct.unpack_from("<IHHQ", mm, pos)
            if magic not in k.FATBIN_MAGICS:
                pos += 8
                continue
            e, cend = pos + hsz, pos + hsz + fsz
            while e + 64 <= cend:
                kind, _u, ehs, esize = struct.unpack_from("<HHIQ", mm, e)
                arch, = struct.unpack_from("<I", mm, e + 28)
                flags, = struct.unpack_from("<Q", mm, e + 40)
                key = f"{kind}:{arch}:{flags:#x}"
                out[key] = out.get(key, 0) + 1
                if ehs < 64:
                    break
                e += ehs + esize
            pos = cend
        mm.close()
    return out


def main() -> int:
    from orchestrator.probes import scripts

    k = types.ModuleType("kernels_script")
    exec(compile(scripts.load("kernels"), "kernels.py", "exec"), k.__dict__)
    outdir = Path(sys.argv[1])
    budget = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
    cuobjdump = shutil.which("cuobjdump")
    site = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    files = []
    for root in site:
        for dirpath, _dirs, names in os.walk(root):
            for n in names:
                if n.endswith(".so") or ".so." in n:
                    p = os.path.join(dirpath, n)
                    try:
                        if not os.path.islink(p) and k.elf_section(p, b".nv_fatbin"):
                            files.append(p)
                    except Exception:
                        pass
    files.sort(key=lambda p: -os.path.getsize(p))
    started = time.time()
    rows = []
    for p in files:
        row = {"path": p, "mb": os.path.getsize(p) >> 20}
        t = time.time()
        try:
            archs, images = k.fatbin_archs(p)
            row.update(reader=archs, images=images)
        except Exception as exc:
            row["reader_error"] = f"{type(exc).__name__}: {exc}"
        row["reader_s"] = round(time.time() - t, 4)
        if cuobjdump and time.time() - started < budget:
            t = time.time()
            proc = subprocess.run([cuobjdump, "--list-elf", p], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=120)
            text = proc.stdout.decode("utf-8", "replace")
            row["cuobjdump"] = sorted(set(re.findall(r"\bsm_\d+[a-z]?\b", text)))
            row["cuobjdump_images"] = sum(1 for ln in text.splitlines() if ln.startswith("ELF file"))
            row["cuobjdump_s"] = round(time.time() - t, 3)
            row["same"] = row.get("reader") == row["cuobjdump"] and row.get("images") == row["cuobjdump_images"]
        try:
            flags = entry_flags(k, p)
            if not row.get("same", True) or any(int(key.split(":")[2], 16) & 0x200000 for key in flags):
                row["entry_flags"] = flags
        except Exception as exc:
            row["entry_flags_error"] = str(exc)
        rows.append(row)
        short = os.path.relpath(p, os.path.dirname(os.path.dirname(p)))
        print(f"{short[-50:]:<50} {row['mb']:>5} MB reader {row['reader_s']:.3f}s "
              f"cuobjdump {row.get('cuobjdump_s', '-')}s same={row.get('same', '-')} "
              f"{row.get('reader') or row.get('reader_error')}" + ("" if row.get("same", True) else
                                                                f" vs {row.get('cuobjdump')}"))
    for r in rows:
        if "entry_flags" in r:
            elf = {key: n for key, n in r["entry_flags"].items() if key.split(":")[0] != "1"}
            print(f"  {os.path.basename(r['path'])}: ELF entries kind:arch:flags {elf} -> cuobjdump {r.get('cuobjdump')}")
    checked = [r for r in rows if "same" in r]
    print(f"{len(files)} files with GPU code; {len(checked)} compared with cuobjdump: "
          f"{sum(r['same'] for r in checked)} the same; reader total {sum(r['reader_s'] for r in rows):.2f}s, "
          f"cuobjdump total {sum(r.get('cuobjdump_s', 0) for r in rows):.1f}s")
    (outdir / "fatbin_check.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
