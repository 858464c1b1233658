"""List what installed inference libraries carry for one GPU architecture.

stdlib only, Python >= 3.8. Params (JSON, argv[1]): {"arch": "sm_120" or null, "libraries": [...],
"home": path or null, "max_source_files": int, "max_walk_files": int, "max_so": int, "cuobjdump_timeout_s": float,
"budget_s": float, "known": {path: [size, mtime_ns, [archs], how]}, "target": an interpreter not started (another
user's: its package directories are read from this one)}. Run isolated (`-I -S`): the libraries are looked for in
the package directories found as files (_sitepath.py), never imported.
Looks at per-arch tile candidate functions in installed sources (e.g. flashinfer's get_candidate_configs_sm120),
FlashInfer JIT-cache arch directories, `@supported_compute_capability([...])` backends, and the sm_XX GPU code
images inside the libraries' shared objects. Those are read from the fatbin headers of each shared object's
.nv_fatbin section (a few ms for a 400 MB library, where `cuobjdump --list-elf` takes seconds); `cuobjdump` lists a
file only when its headers carry flags this script does not know. A listing in `known` whose file still has the
same size and mtime is reused as is (the caller's in-memory cache; nothing is written on the host). Prints one
JSON object, with "listings" (what was listed, for the caller's cache) and "timings" (phase -> seconds).
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

SOURCE_EXT = (".py", ".h", ".hpp", ".cuh", ".cu", ".cpp", ".cc", ".inl", ".jinja")
NAME_HINT = re.compile(r"heuristic|config|tile|gemm|moe|cutlass|sm\d+", re.I)
TILE = re.compile(r"(?:CtaShape|TileShape|Tile_|tile_)(\d+x\d+(?:x\d+)?)", re.I)
SUPPORTED = re.compile(r"@supported_compute_capability\(\s*\[([\d,\s]*)\]\s*\)\s*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)")
SKIP_DIRS = {"__pycache__", "tests", "test", "testing", ".git"}
"""Directories never walked: nothing in them is shipped kernels or their configs."""

FATBIN_MAGICS = (0xBA55ED50, 0x466243B1)
ELF_KINDS = (2, 0x10)
PTX_KIND = 1
ARCH_SPECIFIC = 0x100000
"""Entry flag of an arch-specific image (sm_90a, sm_100a): seen against `cuobjdump --list-elf` names on an H200
machine's torch 2.11 (libtorch_cuda.so: 2,789 images, the same names and counts either way)."""
KNOWN_FLAGS = 0x1 | 0x2 | 0x10 | 0x2000 | 0x8000 | ARCH_SPECIFIC | 0x200000 | 0x1000000
"""64-bit, debug, Linux, compressed (two codecs), arch-specific, and two bits that do not change the name
cuobjdump gives the image (0x1000000 on torch's plain sm_100/sm_120 images, 0x200000 in cuDNN 9 and CuPy 14)."""


class UnknownFatbin(Exception):
    """The fatbin headers say something this reader does not know: let cuobjdump list the file."""


def elf_section(path, wanted):
    """(offset, size) of section `wanted` in a 64-bit little-endian ELF file; None when absent; raises
    UnknownFatbin when the file is no such ELF file."""
    with os.fdopen(open_host_file(path), "rb") as f:
        head = f.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            raise UnknownFatbin("not a 64-bit little-endian ELF file")
        shoff, = struct.unpack_from("<Q", head, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
        if shentsize < 64 or shnum == 0 or shstrndx >= shnum:
            raise UnknownFatbin("no ELF section table")
        f.seek(shoff)
        table = f.read(min(shentsize * shnum, 1 << 22))
        if len(table) < shentsize * shnum:
            raise UnknownFatbin("truncated ELF section table")
        stroff, strsize = struct.unpack_from("<QQ", table, shstrndx * shentsize + 0x18)
        f.seek(stroff)
        names = f.read(min(strsize, 1 << 20))
        for i in range(shnum):
            name_off, = struct.unpack_from("<I", table, i * shentsize)
            end = names.find(b"\0", name_off)
            if names[name_off:end if end >= 0 else None] == wanted:
                return struct.unpack_from("<QQ", table, i * shentsize + 0x18)
    return None


def fatbin_archs(path):
    """Sorted sm_XX[a] names of the GPU code (ELF) images in the file's .nv_fatbin section, and how many there are.

    A fatbin section is a run of containers (16-byte header: magic, version, header size, payload size), each a run
    of entries (kind, header size at 4, payload size at 8, arch at 28, flags at 40) followed by their payload: only
    the headers are read."""
    sec = elf_section(path, b".nv_fatbin")
    if sec is None:
        return [], 0
    off, size = sec
    archs, images = set(), 0
    if size == 0:
        return [], 0
    with os.fdopen(open_host_file(path), "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            if off + size > len(mm):
                raise UnknownFatbin(".nv_fatbin runs past the end of the file")
            pos, end = off, off + size
            while pos + 16 <= end:
                magic, _version, hsz, fsz = struct.unpack_from("<IHHQ", mm, pos)
                if magic not in FATBIN_MAGICS:
                    pos += 8  # padding between containers
                    continue
                e, cend = pos + hsz, pos + hsz + fsz
                if cend > end or hsz < 16:
                    raise UnknownFatbin("fatbin container overruns its section")
                while e + 64 <= cend:
                    kind, _u, ehs, esize = struct.unpack_from("<HHIQ", mm, e)
                    arch, = struct.unpack_from("<I", mm, e + 28)
                    flags, = struct.unpack_from("<Q", mm, e + 40)
                    if ehs < 64:
                        raise UnknownFatbin("fatbin entry header of %d bytes" % ehs)
                    if kind in ELF_KINDS:
                        if flags & ~KNOWN_FLAGS:
                            raise UnknownFatbin("fatbin entry flags %#x" % flags)
                        images += 1
                        archs.add("sm_%d%s" % (arch, "a" if flags & ARCH_SPECIFIC else ""))
                    elif kind != PTX_KIND:
                        raise UnknownFatbin("fatbin entry kind %d" % kind)
                    e += ehs + esize
                if e > cend:
                    raise UnknownFatbin("a fatbin entry overruns its container")
                pos = cend
        finally:
            mm.close()
    return sorted(archs), images


def list_with_cuobjdump(cuobjdump, path, timeout):
    proc = subprocess.run([cuobjdump, "--list-elf", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)
    return sorted(set(re.findall(r"\bsm_\d+[a-z]?\b", proc.stdout.decode("utf-8", "replace"))))


def list_archs(path, stat, known, cuobjdump, timeout):
    """(archs, how) for one shared object: reused from `known` when its size and mtime are unchanged, else read
    from its fatbin headers, else listed by cuobjdump; archs None when nothing could list it."""
    prev = known.get(path)
    if prev and len(prev) >= 3 and [prev[0], prev[1]] == [stat[0], stat[1]]:
        return list(prev[2]), "cached"
    try:
        archs, _images = fatbin_archs(path)
        return archs, "fatbin"
    except (UnknownFatbin, OSError, ValueError, struct.error):
        pass
    if not cuobjdump:
        return None, "unlisted"
    try:
        return list_with_cuobjdump(cuobjdump, path, timeout), "cuobjdump"
    except (OSError, subprocess.TimeoutExpired):
        return None, "unlisted"


def function_body(text, name):
    """The text of a C++ or Python function `name` (from its name to the matching close or the next def)."""
    i = text.find(name)
    while i >= 0:
        j = text.find("{", i)
        k = text.find(";", i)
        colon = text.find(":", i)
        if j >= 0 and (k < 0 or j < k):
            depth = 0
            for pos in range(j, min(len(text), j + 20000)):
                if text[pos] == "{":
                    depth += 1
                elif text[pos] == "}":
                    depth -= 1
                    if depth == 0:
                        return text[i:pos + 1]
            return text[i:j + 20000]
        if colon >= 0 and text.startswith("def ", max(0, i - 4)):
            end = text.find("\ndef ", i + 1)
            return text[i:end if end > 0 else i + 8000]
        i = text.find(name, i + len(name))
    return None


def stat_of(path):
    """[size, mtime_ns] of a file, or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, getattr(st, "st_mtime_ns", int(st.st_mtime * 1e9))]


def walk_library(root, max_files):
    """(source files worth reading, shared objects, files seen, whether max_files stopped the walk)."""
    sources, sos, seen = [], [], 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for f in sorted(filenames):
            seen += 1
            if seen > max_files:
                return sources, sos, seen - 1, True
            p = os.path.join(dirpath, f)
            if f.endswith(SOURCE_EXT) and NAME_HINT.search(f):
                sources.append(p)
            elif f.endswith(".so") or ".so." in f:
                sos.append(p)
    return sources, sos, seen, False


def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    arch = params.get("arch")
    digits = re.sub(r"\D", "", arch or "") or None
    cc = int(digits) if digits else None
    libs = params.get("libraries") or ["flashinfer", "vllm", "sglang", "sgl_kernel", "tensorrt_llm", "cutlass",
                                        "cutlass_library", "deep_gemm", "torch", "triton"]
    max_src = int(params.get("max_source_files", 4000))
    max_walk = int(params.get("max_walk_files", 60000))
    max_so = int(params.get("max_so", 30))
    budget_s = float(params.get("budget_s", 60))
    known = params.get("known") or {}
    timeout = float(params.get("cuobjdump_timeout_s", 20))
    cuobjdump = shutil.which("cuobjdump")
    started = time.time()
    timings = {"walk": 0.0, "sources": 0.0, "listing": 0.0}
    home = params.get("home") or os.path.expanduser("~")
    out = {"arch": arch, "cuobjdump": bool(cuobjdump), "libraries": [], "listings": {}, "timings": timings}
    path, _venv = env_path(params.get("target") or None)  # the packages' directories, found as files (_sitepath)
    for lib in libs:
        root = None
        for entry in path:
            if entry and os.path.isdir(os.path.join(entry, lib)):
                root = os.path.join(entry, lib)
                break
        if root is None:
            continue
        info = {"name": lib, "path": root, "tile_candidates": [], "tile_functions": [], "arch_files": [],
                "backends_for_arch": [], "compiled_archs": [], "so_scanned": 0, "jit_arch_dirs": [], "notes": [],
                "listed_by": {}}
        t = time.time()
        sources, sos, seen, capped = walk_library(root, max_walk)
        timings["walk"] += time.time() - t
        if capped:
            info["notes"].append("walk stopped after %d files" % seen)
        if len(sources) > max_src:
            info["notes"].append("only the first %d of %d source files read" % (max_src, len(sources)))
            sources = sources[:max_src]
        fn_name = "get_candidate_configs_sm%s" % digits if digits else None
        tiles = []
        t = time.time()
        for p in sources if digits else []:  # every check below is about one architecture
            try:
                text, truncated = read_host_file(p, 2000000)
                if truncated:
                    continue
                text = text.decode("utf-8", "replace")
            except OSError:
                continue
            if re.search(r"(?i)\bsm_?%s[a-z]?\b" % digits, text):
                if len(info["arch_files"]) < 30:
                    info["arch_files"].append(os.path.relpath(p, root))
            if fn_name in text:
                body = function_body(text, fn_name)
                if body:
                    found = TILE.findall(body)
                    info["tile_functions"].append(os.path.relpath(p, root) + ":" + fn_name)
                    for t2 in found:
                        if t2 not in tiles:
                            tiles.append(t2)
            if cc is not None and p.endswith(".py") and "supported_compute_capability" in text:
                for m in SUPPORTED.finditer(text):
                    ccs = [int(x) for x in re.findall(r"\d+", m.group(1))]
                    if cc in ccs and m.group(2) not in info["backends_for_arch"]:
                        info["backends_for_arch"].append(m.group(2))
        timings["sources"] += time.time() - t
        info["tile_candidates"] = tiles
        t = time.time()
        stats = [(so, stat_of(so)) for so in sos]
        stats = sorted((x for x in stats if x[1] is not None), key=lambda x: -x[1][0])
        archs = set()
        for so, st in stats[:max_so]:
            if time.time() - started > budget_s:
                info["notes"].append("listing budget of %gs spent" % budget_s)
                break
            found, how = list_archs(so, st, known, cuobjdump, timeout)
            if found is None:
                continue
            info["so_scanned"] += 1
            info["listed_by"][how] = info["listed_by"].get(how, 0) + 1
            if how != "cached":
                out["listings"][so] = [st[0], st[1], found, how]
            archs.update(found)
        timings["listing"] += time.time() - t
        info["compiled_archs"] = sorted(archs)
        out["libraries"].append(info)
    # FlashInfer JIT cache: ~/.cache/flashinfer/<version>/<arch>/cached_ops (FLASHINFER_WORKSPACE_BASE moves it).
    base = os.environ.get("FLASHINFER_WORKSPACE_BASE") or home
    jit = os.path.join(base, ".cache", "flashinfer")
    dirs = []
    if os.path.isdir(jit):
        for ver in listdir(jit):
            if os.path.isdir(os.path.join(jit, ver)):
                for a in listdir(os.path.join(jit, ver)):
                    ops = os.path.join(jit, ver, a, "cached_ops")
                    n = len(listdir(ops)) if os.path.isdir(ops) else 0
                    dirs.append({"dir": ver + "/" + a, "cached_ops": n})
    out["flashinfer_jit"] = {"root": jit, "dirs": dirs}
    for k in timings:
        timings[k] = round(timings[k], 4)
    timings["total"] = round(time.time() - started, 4)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
