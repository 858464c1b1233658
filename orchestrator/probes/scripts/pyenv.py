"""Report the interpreter and the versions of the inference libraries installed for it.

stdlib only, Python >= 3.8, run isolated (`-I -S`). Params (JSON, argv[1]): {"packages": [...normalized names],
"import_torch": bool, "import_timeout_s": float, "target": an interpreter not started (another user's: its
environment is read as files from this one), else absent}. Reads dist-info/egg-info METADATA in the environment's
package directories (_sitepath.py: found as files; nothing imported), torch/version.py, and
torch's CUDA arch list: the string torch.cuda.get_arch_list() splits (torch._C._cuda_getArchFlags, compiled into
libtorch_python.so as one "sm_75 sm_80 ... sm_120" string), read from the library's read-only data; only when that
string is not found exactly once is torch imported (in an isolated subprocess with a timeout, if import_torch, and
only when torch's files are owned by root or this user: importing runs them) to ask it.
Importing torch takes seconds on a serving box; reading the string takes milliseconds. Prints one JSON object with
"timings" (phase -> seconds).
"""
import json
import mmap
import os
import re
import struct
import subprocess
import sys
import time


def torch_version_py(location):
    out = {}
    try:
        text = host_text(os.path.join(location, "torch", "version.py"), 1 << 16)
    except OSError:
        return out
    for key in ("__version__", "cuda", "hip", "git_version"):
        m = re.search(r"^%s\s*(?::\s*[^=]+)?=\s*['\"]([^'\"]*)['\"]" % re.escape(key), text, re.M)
        if m:
            out[key] = m.group(1)
    return out


ARCH_CODE = (
    "import json, torch\n"
    "print(json.dumps({'arch_list': torch.cuda.get_arch_list(), 'cuda': torch.version.cuda,"
    " 'available': torch.cuda.is_available()}))\n"
)


ARCH_FLAGS = re.compile(rb"\x00((?:sm|compute)_\d+[a-z]?(?: (?:sm|compute)_\d+[a-z]?)+)\x00")
"""A NUL-terminated run of two or more space-separated arch names: how CUDA_ARCH_FLAGS sits in the binary."""


def rodata(f):
    """(offset, size) of the .rodata section of a 64-bit little-endian ELF file (open), else None (then read it all)."""
    try:
        f.seek(0)
        head = f.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            return None
        shoff, = struct.unpack_from("<Q", head, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
        if shentsize < 64 or shstrndx >= shnum:
            return None
        f.seek(shoff)
        table = f.read(min(shentsize * shnum, 1 << 22))
        stroff, strsize = struct.unpack_from("<QQ", table, shstrndx * shentsize + 0x18)
        f.seek(stroff)
        names = f.read(min(strsize, 1 << 20))
        for i in range(shnum):
            name_off, = struct.unpack_from("<I", table, i * shentsize)
            if names[name_off:name_off + 8] == b".rodata\x00":
                return struct.unpack_from("<QQ", table, i * shentsize + 0x18)
    except (OSError, struct.error):
        return None
    return None


def torch_arch_from_binary(location):
    """torch's arch list read from libtorch_python.so without importing torch, or None when not found once."""
    path = os.path.join(location, "torch", "lib", "libtorch_python.so")
    if not os.path.isfile(path):
        return None
    try:
        with os.fdopen(open_host_file(path), "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                sec = rodata(f)
                start, end = (sec[0], sec[0] + sec[1]) if sec and sec[0] + sec[1] <= len(mm) else (0, len(mm))
                found = set(m.group(1) for m in ARCH_FLAGS.finditer(mm, max(0, start - 1), end + 1))
            finally:
                mm.close()
    except (OSError, ValueError):
        return None
    if len(found) != 1:
        return None
    return {"arch_list": found.pop().decode("ascii").split(), "source": path}


def torch_arch(timeout, path, location):
    why = safely_owned(os.path.join(location, "torch"))
    if why is not None:
        return {"error": "torch not imported: %s (importing it would run that code as this user)" % why}
    code = "import sys, json; sys.path.extend(json.loads(sys.argv[1]))\n" + ARCH_CODE
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", code, json.dumps(path)], stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": "%s: %s" % (type(exc).__name__, exc)}
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        return {"error": "exit %d: %s" % (proc.returncode, tail[0][:200])}
    try:
        return json.loads(proc.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "unreadable output"}


def main():
    started = time.time()
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    wanted = [dist_key(p) for p in params.get("packages") or []]
    target = params.get("target") or None
    path, venv = env_path(target)
    dists = distributions(path)
    timings = {"distributions": round(time.time() - started, 4)}
    packages = {}
    locations = {}
    for name in wanted:
        if name in dists:
            packages[name] = dists[name]["version"]
            locations[name] = dists[name]["location"]
    if venv is None and not target:
        venv = sys.prefix if os.path.isdir(os.path.join(sys.prefix, "conda-meta")) else None  # a conda environment
    result = {
        "interpreter": target or sys.executable,
        "python_version": (python_version_of(target, venv_of(target)[1]) if target
                           else "%d.%d.%d" % sys.version_info[:3]),
        "virtualenv": venv,
        "prefix": venv or (None if target else sys.prefix),
        "read_as_files": bool(target),
        "packages": packages,
        "locations": locations,
        "distributions": len(dists),
        "torch_version_py": None,
        "torch_arch": None,
        "timings": timings,
    }
    if "torch" in locations:
        result["torch_version_py"] = torch_version_py(locations["torch"])
        t = time.time()
        tv = result["torch_version_py"] or {}
        if tv.get("__version__") and not tv.get("cuda") and not tv.get("hip"):
            # a CPU build: torch.cuda.get_arch_list() is [] there (CUDA is never available)
            arch = {"arch_list": [], "cuda": None, "available": False, "source": "torch/version.py (CPU build)"}
        else:
            arch = torch_arch_from_binary(locations["torch"])
        timings["torch_arch_read"] = round(time.time() - t, 4)
        if arch is None and params.get("import_torch", True) and not target:
            t = time.time()
            arch = torch_arch(float(params.get("import_timeout_s", 30)), path, locations["torch"])
            timings["torch_import"] = round(time.time() - t, 4)
        if arch is not None:
            arch.setdefault("cuda", (result["torch_version_py"] or {}).get("cuda"))
        result["torch_arch"] = arch
    timings["total"] = round(time.time() - started, 4)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
