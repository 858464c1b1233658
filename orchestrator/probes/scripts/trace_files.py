"""List the profiler trace files in a few directories: name, size and modification time, newest first.

stdlib only, Python >= 3.8. Params (JSON, argv[1]): {"dirs": [...], "suffixes": [...], "max_files": int}. Prints
{"dirs": [{"dir", "error"?, "files": [{"path", "size", "mtime"}], "more": n}]}. A directory is listed, not walked
(vLLM's torch profiler and SGLang write their per-rank traces straight into it); only regular files, never through a
symlink; the newest max_files per directory are kept and the rest counted.
"""
import json
import os
import stat
import sys


def list_dir(d, suffixes, max_files):
    out = {"dir": d, "files": [], "more": 0}
    try:
        st = os.lstat(d)
    except OSError as e:
        out["error"] = e.strerror or str(e)
        return out
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        out["error"] = "not a directory (symlinks are not followed)"
        return out
    files = []
    try:
        with os.scandir(d) as it:
            for ent in it:
                if not ent.name.endswith(tuple(suffixes)):
                    continue
                try:
                    s = ent.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(s.st_mode):
                    files.append({"path": os.path.join(d, ent.name), "size": s.st_size, "mtime": s.st_mtime})
    except OSError as e:
        out["error"] = e.strerror or str(e)
        return out
    files.sort(key=lambda f: (-f["mtime"], f["path"]))
    out["files"] = files[:max_files]
    out["more"] = max(0, len(files) - max_files)
    return out


def main():
    params = json.loads(sys.argv[1])
    suffixes = params.get("suffixes") or [".json", ".json.gz"]
    n = int(params.get("max_files") or 200)
    print(json.dumps({"dirs": [list_dir(d, suffixes, n) for d in params.get("dirs") or []]}))


if __name__ == "__main__":
    main()
