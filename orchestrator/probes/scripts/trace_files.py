"""List the profiler trace files in a few directories: name, size and modification time, newest first.

stdlib only, Python >= 3.8. Params (JSON, argv[1]): {"dirs": [DIR or {"dir": DIR, "pid": PID}, ...], "suffixes":
[...], "max_files": int}. Prints {"dirs": [{"dir", "error"?, "files": [{"path", "size", "mtime"}], "more": n}]}. A
directory is listed, not walked (vLLM's torch profiler and SGLang write their per-rank traces straight into it); only
regular files, never through a symlink; the newest max_files per directory are kept and the rest counted.

A directory a process named (its VLLM_TORCH_PROFILER_DIR, its --profiler-config) is listed only if it belongs to
that process's user and the process could list it, and only the files of that user are listed (the prelude's
proc_creds): another user's process naming root's directory gets nothing of it listed, or copied.
"""
import json
import os
import stat
import sys


def list_dir(d, suffixes, max_files, pid=None):
    out = {"dir": d, "files": [], "more": 0}
    creds = None
    if pid is not None:
        creds = proc_creds(pid)
        if creds is None:
            out["error"] = "the process that named it (pid %s) is gone: not listed" % pid
            return out
        if elsewhere(creds):
            out["error"] = "%s: not listed" % elsewhere(creds)
            return out
    owner = creds[0] if creds is not None and creds[0] != 0 else None
    # a process's directory: first whether its user could reach it at all, so that nothing of root's directory (not
    # even whether a name exists there) is told about one it could not
    why = search_refused(os.path.realpath(d), creds) if owner is not None else None
    if why:
        out["error"] = "%s: not listed" % why
        return out
    try:
        st = os.lstat(d)
    except OSError as e:
        out["error"] = e.strerror or str(e)
        return out
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        out["error"] = "not a directory (symlinks are not followed)"
        return out
    if owner is not None:
        why = None if st.st_uid == owner else "owned by uid %d, not by uid %d whose process named it" % (st.st_uid, owner)
        why = why or unreachable(d, creds)
        if why:
            out["error"] = "%s: not listed" % why
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
                if stat.S_ISREG(s.st_mode) and (owner is None or s.st_uid == owner):
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
    dirs = [d if isinstance(d, dict) else {"dir": d} for d in params.get("dirs") or []]
    print(json.dumps({"dirs": [list_dir(d["dir"], suffixes, n, d.get("pid")) for d in dirs]}))


if __name__ == "__main__":
    main()
