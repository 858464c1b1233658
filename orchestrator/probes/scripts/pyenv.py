"""Report the interpreter and the versions of the inference libraries installed for it.

stdlib only, Python >= 3.8. Params (JSON, argv[1]): {"packages": [...normalized names], "import_torch": bool,
"import_timeout_s": float}. Reads dist-info/egg-info METADATA on sys.path (no imports), torch/version.py, and
optionally asks torch for its CUDA arch list in a subprocess with a timeout. Prints one JSON object.
"""
import json
import os
import re
import subprocess
import sys


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def read_metadata(path):
    name = version = None
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break
                if line.startswith("Name:") and name is None:
                    name = line[5:].strip()
                elif line.startswith("Version:") and version is None:
                    version = line[8:].strip()
    except OSError:
        pass
    return name, version


def distributions():
    found = {}
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for d in names:
            if d.endswith(".dist-info"):
                meta = os.path.join(entry, d, "METADATA")
            elif d.endswith(".egg-info"):
                meta = os.path.join(entry, d, "PKG-INFO") if os.path.isdir(os.path.join(entry, d)) else os.path.join(entry, d)
            else:
                continue
            name, version = read_metadata(meta)
            if name and norm(name) not in found:
                found[norm(name)] = {"version": version, "location": entry}
    return found


def torch_version_py(location):
    out = {}
    path = os.path.join(location, "torch", "version.py")
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            text = f.read()
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


def torch_arch(timeout):
    try:
        proc = subprocess.run(
            [sys.executable, "-c", ARCH_CODE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout
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
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    wanted = [norm(p) for p in params.get("packages") or []]
    dists = distributions()
    packages = {}
    locations = {}
    for name in wanted:
        if name in dists:
            packages[name] = dists[name]["version"]
            locations[name] = dists[name]["location"]
    venv = os.environ.get("VIRTUAL_ENV") or os.environ.get("CONDA_PREFIX")
    if sys.prefix != getattr(sys, "base_prefix", sys.prefix):
        venv = sys.prefix
    result = {
        "interpreter": sys.executable,
        "python_version": "%d.%d.%d" % sys.version_info[:3],
        "virtualenv": venv,
        "prefix": sys.prefix,
        "packages": packages,
        "locations": locations,
        "distributions": len(dists),
        "torch_version_py": None,
        "torch_arch": None,
    }
    if "torch" in locations:
        result["torch_version_py"] = torch_version_py(locations["torch"])
        if params.get("import_torch", True):
            result["torch_arch"] = torch_arch(float(params.get("import_timeout_s", 30)))
    print(json.dumps(result))


main()
