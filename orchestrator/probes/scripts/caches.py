"""Inventory every autotune cache, tuned-config location and JIT cache in one round trip.

stdlib only, Python >= 3.8. Knows no location itself: where to look comes in the parameters, built from
orchestrator/knowledge/caches.yaml. Params (JSON, argv[1]):
  {"caches": [{"name", "format", "mode": "first"|"all", "locations": [{"path", "list", "ordinal"}],
               "collect": [{"glob", "format", "not_under": [...], "moe": bool}], "subdirs": int,
               "devices": [...]}]   device spellings whose fused-MoE configs are read (moe collect rules),
   "env_keys": [...]      environment variables worth reporting (the caches' variables),
   "env": {...}           environment of the serving process (overrides this process's for those keys),
   "cwds": [...]          working directories of serving processes (relative cache paths resolve against them),
   "server_pids": [...]   the serving processes whose environment and working directories these are: a location
                          or file is read only if every one of them could read it (the prelude's unreachable and
                          read_host_file with their uid and groups): a local user's process naming root's directory
                          in its environment gets nothing of it listed or read,
   "extra": [...]         more files or directories to look at ({extra}),
   "packages": [...]      distributions whose versions cache metadata is compared with (normalized names),
   "target": an interpreter not started (another user's): its package directories are used for {site},
   "max_walk": int, "max_content_bytes": int, "max_total_bytes": int, "max_files": int}
Run isolated (`-I -S`): {site} is the environment's package directories found as files (_sitepath.py).
Path templates: ${VAR} (a candidate naming an unset variable is skipped), ~ (home), {xdg_cache}, {tmp}, {user},
{site} (each package directory; kept only where it exists), {cwd}, {extra}. A `*` or `%d` in the last component
globs files in that directory. A location is `in_tmp` on a tmpfs/ramfs, or under /tmp, /dev/shm, /run or $TMPDIR
outside the home directory.
Prints {"env", "user", "home", "locations": [...], "files": [...], "packages"}: counts, bytes, the file system
under every location, and the text of the small files the parsers on the other side understand (never whole
binary trees).
"""
import fnmatch
import getpass
import json
import os
import re
import sys

BASE_KEYS = ("HOME", "XDG_CACHE_HOME", "TMPDIR")
VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
MOE_DEVICE = re.compile(r"device_name=([^,]{1,255}?)(?:,|(?:_down|_up)?\.json$)")
VOLATILE_FS = ("tmpfs", "ramfs")
VOLATILE_DIRS = ("/tmp", "/dev/shm", "/run")


class Budget(object):
    def __init__(self, total):
        self.left = total


def walk(root, max_walk, creds=()):
    """(file paths under root, bytes, truncated) bounded by max_walk; ([], 0, False) when root is not a directory.
    Directories a process of creds could not list are not entered."""
    out = []
    total = 0
    if not os.path.isdir(root):
        return out, total, False
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not any(unreachable(os.path.join(dirpath, d), c) for c in creds))
        for f in sorted(filenames):
            p = os.path.join(dirpath, f)
            out.append(p)
            total += size_of(p) or 0
            if len(out) >= max_walk:
                return out, total, True
    return out, total, False


def read_small(path, cap, budget, creds=()):
    size = size_of(path)
    if size is None:
        return None, size, "unreadable"
    for c in creds[1:]:
        why = unreachable(path, c)
        if why:
            return None, size, why
    if size > cap:
        return None, size, "larger than %d bytes" % cap
    if size > budget.left:
        return None, size, "output budget spent"
    try:
        text = host_text(path, cap, creds[0] if creds else None)
    except OSError as exc:
        return None, size, str(exc.strerror or exc)
    budget.left -= len(text)
    return text, size, None


def mounts():
    """(mount point, fstype) pairs from /proc/mounts, longest mount point first; [] where there is none."""
    out = []
    try:
        text = host_text("/proc/mounts", 8 << 20)
    except OSError:
        text = ""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            out.append((parts[1].replace("\\040", " "), parts[2]))
    out.sort(key=lambda m: -len(m[0]))
    return out


def fs_of(path, table, tmpdirs, home):
    """(fstype, volatile) of the file system holding path (or its nearest existing parent). Volatile: a tmpfs or
    ramfs, or a path under /tmp, /dev/shm, /run or $TMPDIR (wiped at boot, or with the container's writable layer)
    that is not inside the home directory."""
    p = os.path.abspath(path)
    while not os.path.exists(p) and p != os.path.dirname(p):
        p = os.path.dirname(p)
    try:
        p = os.path.realpath(p)
    except OSError:
        pass
    fstype = None
    for mnt, fs in table:
        if p == mnt or p.startswith(mnt.rstrip("/") + "/"):
            fstype = fs
            break
    def under(d):
        return p == d or p.startswith(d.rstrip("/") + "/")

    in_home = bool(home) and under(os.path.realpath(home))
    under_tmp = not in_home and any(under(d) for d in tmpdirs)
    return fstype, bool(under_tmp or fstype in VOLATILE_FS)


def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    max_walk = int(params.get("max_walk", 200000))
    cap = int(params.get("max_content_bytes", 256 * 1024))
    budget = Budget(int(params.get("max_total_bytes", 3 * 1024 * 1024)))
    max_files = int(params.get("max_files", 200))
    keys = set(BASE_KEYS) | set(params.get("env_keys") or [])
    env = dict((k, v) for k, v in os.environ.items() if k in keys)
    for k, v in (params.get("env") or {}).items():
        if k in keys:
            env[k] = v
    home = env.get("HOME") or os.path.expanduser("~")
    try:
        user = getpass.getuser()
    except Exception:
        user = str(os.getuid())
    cwds = list(params.get("cwds") or [])
    try:
        cwds.append(os.getcwd())
    except OSError:  # the working directory was removed
        pass
    cwds.append(home)
    cwds = list(dict.fromkeys(cwds))
    pkg_dirs, _venv = env_path(params.get("target") or None)  # the packages' directories, found as files (_sitepath)
    creds = [c for c in (proc_creds(p) for p in params.get("server_pids") or []) if c is not None]
    if params.get("server_pids") and not creds:
        creds = [(-1, frozenset())]  # the servers are gone: nothing they named is read (uid -1 may read only o+r)
    places = {
        "xdg_cache": [env.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")],
        "tmp": [env.get("TMPDIR") or "/tmp"],
        "user": [user],
        "site": [e for e in pkg_dirs if e and os.path.isdir(e)],
        "cwd": cwds,
        "extra": list(params.get("extra") or []),
    }
    table = mounts()
    tmpdirs = list(VOLATILE_DIRS) + ([env["TMPDIR"]] if env.get("TMPDIR") else [])
    locations = []
    files = []

    def add_file(cache, fmt, path, content=True):
        if len(files) >= max_files:
            return
        entry = {"cache": cache, "format": fmt, "path": path, "size": size_of(path), "content": None,
                 "skipped": None}
        if content:
            entry["content"], entry["size"], entry["skipped"] = read_small(path, cap, budget, creds)
        files.append(entry)

    def expand(cand):
        """[(path, env_var or None, keep_if_absent)] for one candidate; [] when a variable it names is unset."""
        template = cand["path"]
        names = VAR.findall(template)
        if any(not env.get(n) for n in names):
            return []
        values = [template]
        if names and cand.get("list"):
            n = names[0]
            values = [template.replace("${%s}" % n, part) for part in env[n].split(":") if part]
        out = []
        for v in values:
            for n in names:
                v = v.replace("${%s}" % n, env[n])
            if v == "~" or v.startswith("~/"):
                v = home + v[1:]
            paths = [v]
            for key, subs in places.items():
                token = "{%s}" % key
                if any(token in p for p in paths):
                    paths = [p.replace(token, s) for p in paths for s in subs]
            for p in paths:
                if not os.path.isabs(p):  # a relative file name lands in the working directory of the process
                    out.extend((os.path.join(d, p), names[0] if names else None, "{site}" not in template)
                               for d in cwds)
                else:
                    out.append((p, names[0] if names else None, "{site}" not in template))
        return out

    def resolve(spec):
        cands = spec.get("locations") or []
        if spec.get("mode") == "all":
            return [(x, c) for c in cands for x in expand(c)]
        for c in cands:
            if VAR.search(c["path"]):
                got = expand(c)
                if got:
                    return [(x, c) for x in got]
        return [(x, c) for c in cands if not VAR.search(c["path"]) for x in expand(c)]

    def rule_for(spec, path, root):
        rel_dirs = os.path.relpath(os.path.dirname(path), root).split(os.sep) if root != path else []
        base = os.path.basename(path)
        for rule in spec.get("collect") or []:
            if fnmatch.fnmatch(base, rule["glob"]) and not any(d in rel_dirs for d in rule.get("not_under") or []):
                return rule
        return None

    for spec in params.get("caches") or []:
        devices = spec.get("devices") or []
        seen_paths = set()
        for (path, env_var, keep), cand in resolve(spec):
            if path in seen_paths:
                continue
            seen_paths.add(path)
            last = os.path.basename(path)
            globbed = "*" in last or "%d" in last or cand.get("ordinal")
            refused = [w for w in (unreachable(os.path.dirname(path) if globbed else path, c) for c in creds)
                       if w and os.path.lexists(os.path.dirname(path) if globbed else path)]
            if refused:  # a serving process could not use what it cannot read: absent for it, and never listed
                root, paths, nbytes, truncated, exists = path, [], 0, False, False
            elif globbed:
                root = os.path.dirname(path)
                pattern = last.replace("%d", "*")
                if cand.get("ordinal") and "%d" not in last:
                    stem, dot, ext = pattern.rpartition(".")
                    pattern = (stem + "*." + ext) if dot else pattern + "*"
                names = [n for n in listdir(root) if fnmatch.fnmatch(n, pattern)]
                paths = [os.path.join(root, n) for n in names if os.path.isfile(os.path.join(root, n))]
                nbytes, truncated, exists = sum(size_of(p) or 0 for p in paths), False, bool(paths)
            elif os.path.isfile(path):
                root, paths, nbytes, truncated, exists = os.path.dirname(path), [path], size_of(path) or 0, False, True
            else:
                root = path
                paths, nbytes, truncated = walk(path, max_walk, creds)
                exists = os.path.exists(path)
            if not exists and not keep:
                continue
            fstype, volatile = fs_of(path if not globbed else root, table, tmpdirs, home)
            loc = {"cache": spec.get("name"), "format": spec.get("format"), "path": path, "env_var": env_var,
                   "exists": exists, "files": len(paths), "bytes": nbytes, "truncated": truncated, "devices": [],
                   "subdirs": [], "fstype": fstype, "in_tmp": volatile}
            locations.append(loc)
            depth = int(spec.get("subdirs") or 0)
            seen = set()
            for p in paths:
                rule = rule_for(spec, p, root)
                if depth and not globbed and os.path.isdir(path):
                    rel = os.path.relpath(os.path.dirname(p), path)
                    if rel != ".":
                        top = "/".join(rel.split(os.sep)[:depth])
                        if top not in loc["subdirs"] and len(loc["subdirs"]) < 50:
                            loc["subdirs"].append(top)
                if rule is None:
                    continue
                if rule.get("moe"):
                    m = MOE_DEVICE.search(os.path.basename(p))
                    if m:
                        seen.add(m.group(1))
                    if not m or m.group(1) not in devices:
                        continue
                add_file(spec.get("name"), rule["format"], p)
            loc["devices"] = sorted(seen)

    print(json.dumps({"env": env, "user": user, "home": home, "locations": locations, "files": files,
                      "files_capped": len(files) >= max_files,
                      "packages": installed(params.get("packages") or [], pkg_dirs)}))


def installed(wanted, path):
    """Versions the caches' metadata is compared with (dist-info of the named distributions), torch's CUDA version."""
    dists = distributions(path, wanted=set(dist_key(w) for w in wanted))
    out = dict((key, d["version"]) for key, d in dists.items() if key in wanted)
    for entry in path:
        if "torch_cuda" in out:
            break
        try:
            text = host_text(os.path.join(entry, "torch", "version.py"), 1 << 16)
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("cuda") and "=" in line:
                value = line.split("=", 1)[1].strip().strip("'\"")
                out["torch_cuda"] = None if value == "None" else value
                break
    return out


main()
