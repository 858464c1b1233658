"""Find the interpreters of running inference servers (vLLM, SGLang, TensorRT-LLM) from /proc.

stdlib only, Python >= 3.8. Params (JSON, argv[1]): {"env_keys": [...]} names of environment variables to copy
from each server process's environ when readable. Prints {"servers": [...], "python3": sys.executable}.
"""
import json
import os
import sys



def interpreter_path(argv, exe, cwd, path_var):
    """The interpreter path the server was started with.

    /proc/PID/exe has symlinks resolved, so a virtualenv's bin/python (a symlink to the base interpreter) reads as
    the base interpreter, which does not see the virtualenv's packages. argv[0] keeps the path as invoked (for a
    console script it is the shebang's interpreter), so it wins when it names the same binary.
    """
    first = argv[0]
    cand = None
    if "python" in os.path.basename(first):
        if os.path.isabs(first):
            cand = first
        elif "/" in first and cwd:
            cand = os.path.join(cwd, first)
        else:
            for d in (path_var or "").split(os.pathsep):
                if d and os.path.isabs(d) and os.path.exists(os.path.join(d, first)):
                    cand = os.path.join(d, first)
                    break
    if cand and os.path.exists(cand):
        if not exe or os.path.realpath(cand) == os.path.realpath(exe):
            return cand
    if exe and "python" in os.path.basename(exe):
        return exe
    if "python" in os.path.basename(first):
        return cand or first
    return exe


def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    keys = set(params.get("env_keys") or [])
    # A staged test host (tests/support) tags its processes: then only the servers carrying the same tag are its own,
    # as in the node and engine probes. Unset on a real host.
    tag = os.environ.get("INVESTIGATE_STAGED_TAG")
    servers = []
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        pids = []
    for pid in sorted(pids, key=int):
        if int(pid) == os.getpid():
            continue
        argv = proc_argv(pid)
        if not argv:
            continue
        joined = " ".join(mask_argv(argv))
        kind = server_kind(argv)
        if kind is None:
            continue
        try:
            exe = os.readlink("/proc/%s/exe" % pid)
        except OSError:
            exe = None
        env = {}
        path_var = None
        tagged = False
        try:
            raw = read_host_file("/proc/%s/environ" % pid, 1 << 20)[0]
        except OSError:
            raw = b""
        for item in raw.split(b"\0"):
            k, _, v = item.decode("utf-8", "replace").partition("=")
            if k in keys:
                env[k] = v
            if k == "PATH":
                path_var = v
            if k == "INVESTIGATE_STAGED_TAG" and v == tag:
                tagged = True
        if tag and not tagged:
            continue
        try:
            cwd = os.readlink("/proc/%s/cwd" % pid)
        except OSError:
            cwd = None
        exe = interpreter_path(argv, exe, cwd, path_var)
        servers.append({"pid": int(pid), "kind": kind, "exe": exe, "cmdline": joined[:300], "env": env, "cwd": cwd})
    print(json.dumps({"servers": servers, "python3": sys.executable}))


main()
