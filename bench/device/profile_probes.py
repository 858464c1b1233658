"""Where the kernel_inventory and python_env probes spend their time on a real GPU box (issue 17 profiling).

    python3 bench/device/profile_probes.py OUTDIR

Stdlib only. For the libraries the kernels script looks at: files walked, source files read, each shared object's
size, whether it has a .nv_fatbin section, `cuobjdump --list-elf` time and archs, and a fatbin-header read of the
same file (time, archs, entry kinds/flags) to compare with cuobjdump. For python_env: the dist-info scan and
`import torch` + get_arch_list, and whether torch's arch-flags string can be read from its binary without importing.
Writes OUTDIR/profile.json and prints a summary.
"""
import json
import mmap
import os
import re
import shutil
import struct
import subprocess
import sys
import time

LIBS = ["flashinfer", "vllm", "sglang", "sgl_kernel", "tensorrt_llm", "cutlass", "cutlass_library", "deep_gemm",
        "torch", "triton"]
SOURCE_EXT = (".py", ".h", ".hpp", ".cuh", ".cu", ".cpp", ".cc", ".inl", ".jinja")
NAME_HINT = re.compile(r"heuristic|config|tile|gemm|moe|cutlass|sm\d+", re.I)


def elf_sections(path):
    """{name: (offset, size)} of an ELF64 little-endian file's sections, or None."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            return None
        shoff, = struct.unpack_from("<Q", head, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
        f.seek(shoff)
        table = f.read(shentsize * shnum)
        secs = [struct.unpack_from("<IIQQQQIIQQ", table, i * shentsize) for i in range(shnum)]
        stroff, strsize = secs[shstrndx][4], secs[shstrndx][5]
        f.seek(stroff)
        names = f.read(strsize)
        out = {}
        for s in secs:
            end = names.find(b"\0", s[0])
            out[names[s[0]:end].decode("ascii", "replace")] = (s[4], s[5])
        return out


def fatbin_entries(path, sec):
    """(kind, arch, flags, header_size) of every entry in the .nv_fatbin section."""
    off, size = sec
    out = []
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            pos, end = off, off + size
            while pos + 16 <= end:
                magic, ver, hsz, fsz = struct.unpack_from("<IHHQ", mm, pos)
                if magic not in (0xBA55ED50, 0x466243B1):
                    pos += 8  # containers are 8-aligned in the section
                    continue
                e, cend = pos + hsz, pos + hsz + fsz
                while e + 64 <= cend:
                    kind, _u, ehs, esize = struct.unpack_from("<HHIQ", mm, e)
                    arch, = struct.unpack_from("<I", mm, e + 28)
                    flags, = struct.unpack_from("<Q", mm, e + 40)
                    if ehs == 0:
                        break
                    out.append((kind, arch, flags, ehs))
                    e += ehs + esize
                pos = cend
        finally:
            mm.close()
    return out


def main():
    outdir = sys.argv[1]
    res = {"libraries": [], "python": sys.executable}
    cuobjdump = shutil.which("cuobjdump")
    res["cuobjdump"] = cuobjdump
    for lib in LIBS:
        root = next((os.path.join(e, lib) for e in sys.path if e and os.path.isdir(os.path.join(e, lib))), None)
        if root is None:
            continue
        t = time.time()
        files = sources = 0
        sos = []
        src_bytes = 0
        by_top = {}
        for dirpath, _dirnames, filenames in os.walk(root):
            top = os.path.relpath(dirpath, root).split(os.sep)[0]
            for fn in filenames:
                files += 1
                by_top[top] = by_top.get(top, 0) + 1
                p = os.path.join(dirpath, fn)
                if fn.endswith(SOURCE_EXT) and NAME_HINT.search(fn):
                    sources += 1
                    try:
                        src_bytes += os.path.getsize(p)
                    except OSError:
                        pass
                elif fn.endswith(".so") or ".so." in fn:
                    sos.append(p)
        walk_s = time.time() - t
        info = {"name": lib, "root": root, "files": files, "sources": sources, "source_bytes": src_bytes,
                "walk_s": round(walk_s, 3), "top_dirs": sorted(by_top.items(), key=lambda kv: -kv[1])[:12], "so": []}
        for so in sorted(sos, key=lambda s: -os.path.getsize(s))[:40]:
            row = {"path": os.path.relpath(so, root), "size": os.path.getsize(so)}
            t = time.time()
            try:
                secs = elf_sections(so)
            except Exception as exc:
                secs, row["elf_error"] = None, str(exc)
            row["elf_s"] = round(time.time() - t, 4)
            fat = (secs or {}).get(".nv_fatbin")
            row["fatbin_bytes"] = fat[1] if fat else 0
            if fat:
                t = time.time()
                try:
                    ents = fatbin_entries(so, fat)
                    row["parse_s"] = round(time.time() - t, 4)
                    row["entries"] = len(ents)
                    kinds = {}
                    for kind, arch, flags, ehs in ents:
                        key = "%d:%d:%x:%d" % (kind, arch, flags & 0xFFFFFFFF, ehs)
                        kinds[key] = kinds.get(key, 0) + 1
                    row["entry_kinds"] = sorted(kinds.items(), key=lambda kv: -kv[1])[:40]
                    row["parsed_elf_archs"] = sorted({"sm_%d" % a for k, a, _f, _h in ents if k in (2, 0x10)})
                except Exception as exc:
                    row["parse_error"] = "%s: %s" % (type(exc).__name__, exc)
            if cuobjdump and (fat or row["size"] < 50_000_000):
                t = time.time()
                p = subprocess.run([cuobjdump, "--list-elf", so], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   timeout=120)
                row["cuobjdump_s"] = round(time.time() - t, 3)
                text = p.stdout.decode("utf-8", "replace")
                row["cuobjdump_archs"] = sorted(set(re.findall(r"\bsm_\d+[a-z]?\b", text)))
                row["cuobjdump_lines"] = text.count("\n")
                row["cuobjdump_rc"] = p.returncode
                row["cuobjdump_sample"] = text.splitlines()[:3]
            info["so"].append(row)
        res["libraries"].append(info)

    # python_env: dist-info scan and the torch import
    t = time.time()
    n = 0
    for e in sys.path:
        if e and os.path.isdir(e):
            for d in os.listdir(e):
                if d.endswith(".dist-info"):
                    n += 1
                    try:
                        with open(os.path.join(e, d, "METADATA"), "rb") as f:
                            f.read(2048)
                    except OSError:
                        pass
    res["dist_info"] = {"count": n, "scan_s": round(time.time() - t, 3)}
    code = ("import time; t=time.time(); import torch; t1=time.time(); a=torch.cuda.get_arch_list(); "
            "print(repr(torch._C._cuda_getArchFlags()) if hasattr(torch._C,'_cuda_getArchFlags') else None); "
            "print(a, torch.version.cuda, round(t1-t,3), round(time.time()-t1,3))")
    for attempt in (1, 2):
        t = time.time()
        p = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        res["torch_import_%d" % attempt] = {"wall_s": round(time.time() - t, 3),
                                            "out": p.stdout.decode().strip().splitlines(),
                                            "err": p.stderr.decode()[-300:]}
    torch_root = next((os.path.join(e, "torch") for e in sys.path if e and os.path.isdir(os.path.join(e, "torch"))), None)
    scans = []
    if torch_root:
        pat = re.compile(rb"(?:sm|compute)_\d+[a-z]?(?:[ ;](?:sm|compute)_\d+[a-z]?){2,}")
        for name in sorted(n for n in os.listdir(torch_root) if n.startswith("_C.") and n.endswith(".so")) + ["lib/libtorch_python.so", "lib/libtorch_cuda.so"]:
            p = os.path.join(torch_root, name)
            if not os.path.exists(p):
                continue
            t = time.time()
            with open(p, "rb") as f:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                found = sorted({m.group(0).decode() for m in pat.finditer(mm)})[:10]
                mm.close()
            scans.append({"file": name, "size": os.path.getsize(p), "s": round(time.time() - t, 3), "found": found})
    res["torch_arch_string_scan"] = scans
    # nvidia-smi costs
    for argv in (["nvidia-smi", "--query-gpu=index,power.draw,power.limit,clocks.sm,clocks.max.sm,utilization.gpu",
                  "--format=csv"], ["nvidia-smi", "-q", "-x"], ["nvidia-smi", "topo", "-m"]):
        t = time.time()
        try:
            subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        except Exception:
            pass
        res.setdefault("nvidia_smi", []).append({"argv": " ".join(argv[:3]), "s": round(time.time() - t, 3)})
    with open(os.path.join(outdir, "profile.json"), "w") as f:
        json.dump(res, f, indent=1)
    for lib in res["libraries"]:
        print("%s: %d files, %d sources (%d MB), walk %.2fs, %d .so" % (
            lib["name"], lib["files"], lib["sources"], lib["source_bytes"] >> 20, lib["walk_s"], len(lib["so"])))
        for r in lib["so"][:12]:
            print("   %-45s %6d MB fat %6d MB elf %.3fs parse %s cuobjdump %s  parsed=%s cuobj=%s" % (
                r["path"][-45:], r["size"] >> 20, r["fatbin_bytes"] >> 20, r["elf_s"], r.get("parse_s"),
                r.get("cuobjdump_s"), r.get("parsed_elf_archs"), r.get("cuobjdump_archs")))
    print("dist-info", res["dist_info"])
    for k in ("torch_import_1", "torch_import_2"):
        print(k, res[k]["wall_s"], res[k]["out"])
    print("arch-string scan", json.dumps(scans)[:1500])
    print("nvidia-smi", res.get("nvidia_smi"))


main()
