"""List what installed inference libraries carry for one GPU architecture.

stdlib only, Python >= 3.8. Params (JSON, argv[1]): {"arch": "sm_120" or null, "libraries": [...],
"home": path or null, "max_source_files": int, "max_so": int, "cuobjdump_timeout_s": float, "budget_s": float}.
Looks at per-arch tile candidate functions in installed sources (e.g. flashinfer's get_candidate_configs_sm120),
FlashInfer JIT-cache arch directories, `@supported_compute_capability([...])` backends, and, when cuobjdump is on
PATH, the sm_XX ELF images inside the libraries' shared objects. Prints one JSON object.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

SOURCE_EXT = (".py", ".h", ".hpp", ".cuh", ".cu", ".cpp", ".cc", ".inl", ".jinja")
NAME_HINT = re.compile(r"heuristic|config|tile|gemm|moe|cutlass|sm\d+", re.I)
TILE = re.compile(r"(?:CtaShape|TileShape|Tile_|tile_)(\d+x\d+(?:x\d+)?)", re.I)
SUPPORTED = re.compile(r"@supported_compute_capability\(\s*\[([\d,\s]*)\]\s*\)\s*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)")


def listdir(path):
    """Sorted names in a directory; [] when it cannot be listed (permissions, vanished)."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def size_of(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


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


def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    arch = params.get("arch")
    digits = re.sub(r"\D", "", arch or "") or None
    cc = int(digits) if digits else None
    libs = params.get("libraries") or ["flashinfer", "vllm", "sglang", "sgl_kernel", "tensorrt_llm", "cutlass",
                                        "cutlass_library", "deep_gemm", "torch", "triton"]
    max_src = int(params.get("max_source_files", 4000))
    max_so = int(params.get("max_so", 30))
    budget_s = float(params.get("budget_s", 60))
    cuobjdump = shutil.which("cuobjdump")
    started = time.time()
    home = params.get("home") or os.path.expanduser("~")
    out = {"arch": arch, "cuobjdump": bool(cuobjdump), "libraries": []}
    for lib in libs:
        root = None
        for entry in sys.path:
            if entry and os.path.isdir(os.path.join(entry, lib)):
                root = os.path.join(entry, lib)
                break
        if root is None:
            continue
        info = {"name": lib, "path": root, "tile_candidates": [], "tile_functions": [], "arch_files": [],
                "backends_for_arch": [], "compiled_archs": [], "so_scanned": 0, "jit_arch_dirs": [], "notes": []}
        sources, sos = [], []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for f in sorted(filenames):
                p = os.path.join(dirpath, f)
                if f.endswith(SOURCE_EXT) and NAME_HINT.search(f):
                    sources.append(p)
                elif f.endswith(".so") or ".so." in f:
                    sos.append(p)
        if len(sources) > max_src:
            info["notes"].append("only the first %d of %d source files read" % (max_src, len(sources)))
            sources = sources[:max_src]
        fn_name = "get_candidate_configs_sm%s" % digits if digits else None
        tiles = []
        for p in sources:
            try:
                if os.path.getsize(p) > 2000000:
                    continue
                with open(p, "r", encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError:
                continue
            if digits and re.search(r"(?i)\bsm_?%s[a-z]?\b" % digits, text):
                if len(info["arch_files"]) < 30:
                    info["arch_files"].append(os.path.relpath(p, root))
            if fn_name and fn_name in text:
                body = function_body(text, fn_name)
                if body:
                    found = TILE.findall(body)
                    info["tile_functions"].append(os.path.relpath(p, root) + ":" + fn_name)
                    for t in found:
                        if t not in tiles:
                            tiles.append(t)
            if cc is not None and p.endswith(".py") and "supported_compute_capability" in text:
                for m in SUPPORTED.finditer(text):
                    ccs = [int(x) for x in re.findall(r"\d+", m.group(1))]
                    if cc in ccs and m.group(2) not in info["backends_for_arch"]:
                        info["backends_for_arch"].append(m.group(2))
        info["tile_candidates"] = tiles
        if cuobjdump and sos:
            sos.sort(key=lambda s: -size_of(s))
            archs = set()
            for so in sos[:max_so]:
                if time.time() - started > budget_s:
                    info["notes"].append("cuobjdump budget of %gs spent" % budget_s)
                    break
                try:
                    proc = subprocess.run([cuobjdump, "--list-elf", so], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, timeout=float(params.get("cuobjdump_timeout_s", 20)))
                except (OSError, subprocess.TimeoutExpired):
                    continue
                info["so_scanned"] += 1
                archs.update(re.findall(r"\bsm_\d+[a-z]?\b", proc.stdout.decode("utf-8", "replace")))
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
    print(json.dumps(out))


main()
