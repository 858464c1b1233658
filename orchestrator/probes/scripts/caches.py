"""Inventory every autotune cache and tuned-config location in one round trip.

stdlib only, Python >= 3.8. Params (JSON, argv[1]):
  {"env": {...}          environment of the serving process (overrides this process's for cache variables),
   "cwds": [...]         working directories of serving processes (TunableOp writes relative to them),
   "extra": [...]        more files or directories to look at (e.g. a flashinfer.autotune(cache=...) path),
   "device_names": [...] GPU names; fused-MoE config bodies are returned only for these devices,
   "max_walk": int, "max_content_bytes": int, "max_total_bytes": int, "max_files": int}
Prints {"env", "user", "home", "locations": [...], "files": [...]}: counts for every location, and the text of
the small files the parsers on the other side understand (never whole binary trees).
"""
import fnmatch
import getpass
import json
import os
import sys

ENV_KEYS = (
    "HOME", "XDG_CACHE_HOME", "FLASHINFER_WORKSPACE_BASE", "FLASHINFER_AUTOTUNER_LOAD_FROM_FILE",
    "TLLM_AUTOTUNER_CACHE_PATH", "VLLM_TUNED_CONFIG_FOLDER", "VLLM_CACHE_ROOT", "VLLM_FLASHINFER_AUTOTUNE_CACHE_DIR",
    "SGLANG_MOE_CONFIG_DIR", "TRITON_CACHE_DIR", "TRITON_HOME", "TRITON_CACHE_AUTOTUNING", "TORCHINDUCTOR_CACHE_DIR",
    "PYTORCH_TUNABLEOP_ENABLED", "PYTORCH_TUNABLEOP_FILENAME", "PYTORCH_TUNABLEOP_TUNING",
)


class Budget(object):
    def __init__(self, total):
        self.left = total


def walk(root, max_walk):
    """All file paths under root (bounded), or [] when root is not a directory."""
    out = []
    if not os.path.isdir(root):
        return out, False
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for f in sorted(filenames):
            out.append(os.path.join(dirpath, f))
            if len(out) >= max_walk:
                return out, True
    return out, False


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
        return None


def read_small(path, cap, budget):
    size = size_of(path)
    if size is None:
        return None, size, "unreadable"
    if not os.path.isfile(path):
        return None, size, "not a regular file"
    if size > cap:
        return None, size, "larger than %d bytes" % cap
    if size > budget.left:
        return None, size, "output budget spent"
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            text = f.read(cap)
    except OSError as exc:
        return None, size, str(exc)
    budget.left -= len(text)
    return text, size, None


def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    max_walk = int(params.get("max_walk", 200000))
    cap = int(params.get("max_content_bytes", 256 * 1024))
    budget = Budget(int(params.get("max_total_bytes", 3 * 1024 * 1024)))
    max_files = int(params.get("max_files", 200))
    devices = [d.replace(" ", "_") for d in params.get("device_names") or []]
    env = dict((k, v) for k, v in os.environ.items() if k in ENV_KEYS)
    for k, v in (params.get("env") or {}).items():
        if k in ENV_KEYS:
            env[k] = v
    home = env.get("HOME") or os.path.expanduser("~")
    try:
        user = getpass.getuser()
    except Exception:
        user = str(os.getuid())
    xdg = env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    locations = []
    files = []

    def location(fmt, path, env_var=None):
        loc = {"format": fmt, "path": path, "env_var": env_var, "exists": os.path.exists(path), "files": 0,
               "truncated": False, "devices": [], "subdirs": []}
        locations.append(loc)
        return loc

    def add_file(fmt, path, content=True):
        if len(files) >= max_files:
            return
        entry = {"format": fmt, "path": path, "size": size_of(path), "content": None, "skipped": None}
        if content:
            entry["content"], entry["size"], entry["skipped"] = read_small(path, cap, budget)
        files.append(entry)

    # FlashInfer JIT cache and any persisted flashinfer autotune JSON beside it.
    fi_base = env.get("FLASHINFER_WORKSPACE_BASE")
    fi_root = os.path.join(fi_base or home, ".cache", "flashinfer")
    loc = location("flashinfer_jit", fi_root, "FLASHINFER_WORKSPACE_BASE" if fi_base else None)
    paths, loc["truncated"] = walk(fi_root, max_walk)
    loc["files"] = len(paths)
    if os.path.isdir(fi_root):
        for ver in listdir(fi_root):
            vdir = os.path.join(fi_root, ver)
            if os.path.isdir(vdir):
                for arch in listdir(vdir):
                    if os.path.isdir(os.path.join(vdir, arch)):
                        loc["subdirs"].append(ver + "/" + arch)
    for p in paths:
        if p.endswith(".json") and "cached_ops" not in p.split(os.sep):
            add_file("flashinfer_autotune", p)

    # TensorRT-LLM autotuner cache: one file named by the variable.
    trt = env.get("TLLM_AUTOTUNER_CACHE_PATH")
    if trt:
        loc = location("trtllm_autotuner", trt, "TLLM_AUTOTUNER_CACHE_PATH")
        if os.path.isfile(trt):
            loc["files"] = 1
            add_file("trtllm_autotuner", trt)

    # Fused-MoE tuned configs: the override folder first, then the installed package's.
    # vLLM looks up every H200-family GPU (H200 NVL, ...) as NVIDIA_H200; SGLang uses the exact name.
    vllm_devices = ["NVIDIA_H200" if "H200" in d.split("_") else d for d in devices]

    def moe_dir(fmt, path, env_var):
        wanted = vllm_devices if fmt == "vllm_fused_moe" else devices
        loc = location(fmt, path, env_var)
        paths, loc["truncated"] = walk(path, max_walk)
        names = [p for p in paths if p.endswith(".json") and os.path.basename(p).startswith("E=")]
        loc["files"] = len(names)
        seen = set()
        for p in names:
            base = os.path.basename(p)
            for part in base[:-5].split(","):
                if part.startswith("device_name="):
                    seen.add(part[len("device_name="):])
            if any(("device_name=" + d + ",") in base or ("device_name=" + d + ".json") == base or
                   ("device_name=" + d + "_down.json") == base or ("device_name=" + d + "_up.json") == base
                   for d in wanted):
                add_file(fmt, p)
        loc["devices"] = sorted(seen)
        for p in paths:
            rel = os.path.relpath(os.path.dirname(p), path)
            if rel != "." and rel not in loc["subdirs"]:
                loc["subdirs"].append(rel)

    if env.get("VLLM_TUNED_CONFIG_FOLDER"):
        moe_dir("vllm_fused_moe", env["VLLM_TUNED_CONFIG_FOLDER"], "VLLM_TUNED_CONFIG_FOLDER")
    if env.get("SGLANG_MOE_CONFIG_DIR"):
        moe_dir("sglang_fused_moe", env["SGLANG_MOE_CONFIG_DIR"], "SGLANG_MOE_CONFIG_DIR")
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        vdir = os.path.join(entry, "vllm", "model_executor", "layers", "fused_moe", "configs")
        if os.path.isdir(vdir):
            moe_dir("vllm_fused_moe", vdir, None)
        sdir = os.path.join(entry, "sglang", "srt", "layers", "moe", "fused_moe_triton", "configs")
        if os.path.isdir(sdir):
            moe_dir("sglang_fused_moe", sdir, None)

    # vLLM's persisted FlashInfer autotune results.
    vfi = env.get("VLLM_FLASHINFER_AUTOTUNE_CACHE_DIR")
    vroot = env.get("VLLM_CACHE_ROOT") or os.path.join(xdg, "vllm")
    vpath = vfi or os.path.join(vroot, "flashinfer_autotune_cache")
    var = "VLLM_FLASHINFER_AUTOTUNE_CACHE_DIR" if vfi else ("VLLM_CACHE_ROOT" if env.get("VLLM_CACHE_ROOT") else None)
    loc = location("vllm_flashinfer_autotune", vpath, var)
    paths, loc["truncated"] = walk(vpath, max_walk)
    loc["files"] = len(paths)
    for p in paths:
        rel = os.path.relpath(os.path.dirname(p), vpath)
        top = "/".join(rel.split(os.sep)[:2])  # <flashinfer version>/<arch>
        if rel != "." and top not in loc["subdirs"]:
            loc["subdirs"].append(top)
        if p.endswith(".json"):
            add_file("vllm_flashinfer_autotune", p)

    # Triton's cache: *.autotune.json among the compiled kernels.
    tdir = env.get("TRITON_CACHE_DIR")
    tvar = "TRITON_CACHE_DIR" if tdir else ("TRITON_HOME" if env.get("TRITON_HOME") else None)
    tdir = tdir or os.path.join(env.get("TRITON_HOME") or home, ".triton", "cache")
    loc = location("triton_autotune", tdir, tvar)
    paths, loc["truncated"] = walk(tdir, max_walk)
    loc["files"] = len(paths)
    for p in paths:
        if p.endswith(".autotune.json"):
            add_file("triton_autotune", p)

    # Inductor: count compiled artefacts; its own Triton cache and autotune results live inside.
    idir = env.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join("/tmp", "torchinductor_" + user)
    loc = location("inductor", idir, "TORCHINDUCTOR_CACHE_DIR" if env.get("TORCHINDUCTOR_CACHE_DIR") else None)
    paths, loc["truncated"] = walk(idir, max_walk)
    loc["files"] = len(paths)
    if os.path.isdir(idir):
        loc["subdirs"] = [d for d in listdir(idir) if os.path.isdir(os.path.join(idir, d))]
    for p in paths:
        if p.endswith(".autotune.json"):
            add_file("triton_autotune", p)
        elif p.endswith(".best_config"):
            add_file("inductor", p)

    # TunableOp results: relative file names land in the working directory of the process that tuned.
    tname = env.get("PYTORCH_TUNABLEOP_FILENAME") or "tunableop_results.csv"
    pattern = os.path.basename(tname).replace("%d", "*")
    if pattern.endswith(".csv"):
        pattern = pattern[:-4] + "*.csv"
    dirs = []
    if os.path.isabs(tname):
        dirs.append(os.path.dirname(tname))
    else:
        dirs.extend(params.get("cwds") or [])
        try:
            dirs.append(os.getcwd())
        except OSError:  # the working directory was removed
            pass
        dirs.append(home)
    seen_dirs = set()
    for d in dirs:
        if d in seen_dirs:
            continue
        seen_dirs.add(d)
        loc = location("tunableop", os.path.join(d, os.path.basename(tname)),
                       "PYTORCH_TUNABLEOP_FILENAME" if env.get("PYTORCH_TUNABLEOP_FILENAME") else None)
        names = [n for n in listdir(d) if fnmatch.fnmatch(n, pattern)]
        loc["files"] = len(names)
        loc["exists"] = bool(names)
        for n in names:
            add_file("tunableop", os.path.join(d, n))

    # Anything the caller named (flashinfer.autotune(cache=...) files, copied caches).
    for extra in params.get("extra") or []:
        loc = location("flashinfer_autotune", extra, None)
        paths = [extra] if os.path.isfile(extra) else walk(extra, max_walk)[0]
        loc["files"] = len(paths)
        for p in paths:
            if p.endswith(".json"):
                add_file("flashinfer_autotune", p)
            elif p.endswith(".csv"):
                add_file("tunableop", p)

    print(json.dumps({"env": env, "user": user, "home": home, "locations": locations, "files": files,
                      "files_capped": len(files) >= max_files, "packages": installed()}))


def installed():
    """Versions the caches' metadata is compared with: dist-info of a few libraries, torch's CUDA version."""
    wanted = ("flashinfer-python", "flashinfer", "tensorrt-llm", "torch", "triton", "vllm", "sglang")
    out = {}
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for d in names:
            if not d.endswith(".dist-info"):
                continue
            name = version = None
            try:
                with open(os.path.join(entry, d, "METADATA"), "r", encoding="utf-8", errors="replace") as f:
                    for line in f:
                        if not line.strip():
                            break
                        if line.startswith("Name:") and name is None:
                            name = line[5:].strip()
                        elif line.startswith("Version:") and version is None:
                            version = line[8:].strip()
            except OSError:
                continue
            if name:
                key = name.lower().replace("_", "-").replace(".", "-")
                if key in wanted and key not in out:
                    out[key] = version
        if "torch_cuda" not in out:
            try:
                with open(os.path.join(entry, "torch", "version.py"), "r", encoding="utf-8", errors="replace") as f:
                    for line in f:
                        if line.startswith("cuda") and "=" in line:
                            value = line.split("=", 1)[1].strip().strip("'\"")
                            out["torch_cuda"] = None if value == "None" else value
            except OSError:
                pass
    return out


main()
