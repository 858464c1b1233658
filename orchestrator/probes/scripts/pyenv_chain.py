"""The serving interpreter's Python environment, in the host survey right after `discover` (one round trip, where
the check of the interpreter and the pyenv script would each cost one more).

stdlib only, Python >= 3.8, read-only. Runs as a part of the survey bundle (scripts/_bundle.py), which hands it what
`discover` printed (BUNDLE_RESULTS) and the text of scripts/pyenv.py (BUNDLE_SOURCES). Params (JSON, argv[1]):
{"host": the host's label (for messages), "pyenv": pyenv.py's params, "timeout_s": seconds for pyenv.py}.

The interpreter is chosen as probes/interpreter.py chooses it with no --python: every running server's executable
passes the interpreter check (_interp.py, sent with this script) or is refused with why, the first that passes is
chosen, else `python3` on PATH (reading, as files, the environment of the first server whose interpreter was refused
for its owner: "target"). pyenv.py then runs under it isolated (`INTERPRETER -I -S - PARAMS`, the script on stdin,
as a probe's own command would). Prints one JSON object: {"checked": {exe: path}, "refused": {exe: why}, "foreign":
[exe refused for its owner], "interpreter", "target", "source", "pyenv": {"rc", "stdout", "stderr", "timed_out"}}
or {"error": why} when it has nothing to work from.
"""
import json
import subprocess
import sys


def check(exe, host):
    """(absolute path, None), or (None, why exe may not run probe scripts): the interpreter check, on this host."""
    why = interp_name_refusal(exe)
    if why is not None:
        return None, why
    try:
        proc = subprocess.run(["/bin/sh", "-c", INTERP_VERIFY, "sh", exe], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    except subprocess.TimeoutExpired:
        return interp_verdict(exe, None, "", host)
    return interp_verdict(exe, proc.returncode, proc.stdout.decode("utf-8", "replace"), host)


def run_pyenv(python, source, params, timeout):
    try:
        proc = subprocess.run([python, "-I", "-S", "-", json.dumps(params)], input=source.encode(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout)
    except FileNotFoundError:
        return {"rc": 127, "stdout": "", "stderr": "%s: not found" % python, "timed_out": False}
    except subprocess.TimeoutExpired:
        return {"rc": None, "stdout": "", "stderr": "", "timed_out": True}
    except OSError as exc:
        return {"rc": 126, "stdout": "", "stderr": "%s: %s" % (python, exc), "timed_out": False}
    return {"rc": proc.returncode, "stdout": proc.stdout.decode("utf-8", "replace")[:8000000],
            "stderr": proc.stderr.decode("utf-8", "replace")[-4000:], "timed_out": False}


def main():
    params = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    results = globals().get("BUNDLE_RESULTS") or {}
    sources = globals().get("BUNDLE_SOURCES") or {}
    disc = results.get("discover") or {}
    if "pyenv" not in sources or disc.get("error") or not disc.get("stdout"):
        print(json.dumps({"error": "no discover output to choose an interpreter from"}))
        return
    lines = [ln for ln in disc["stdout"].splitlines() if ln.strip()]
    servers = (json.loads(lines[-1]) if lines else {}).get("servers") or []
    host = params.get("host") or "this host"
    checked, refused, foreign = {}, {}, []
    for s in servers:
        exe = s.get("exe") if isinstance(s, dict) else None
        if exe and exe not in checked and exe not in refused:
            path, why = check(str(exe), host)
            if why is None:
                checked[exe] = path
            else:
                refused[exe] = why
                if why.startswith(FOREIGN % (str(exe),)):
                    foreign.append(exe)
    first = next((s for s in servers if isinstance(s, dict) and s.get("exe") in checked), None)
    other = next((s for s in servers if isinstance(s, dict) and s.get("exe") in foreign), None)
    pyenv = dict(params.get("pyenv") or {})
    target = None
    if first is not None:
        python, source = first["exe"], "%s process %s" % (first.get("kind"), first.get("pid"))
    elif other is not None:
        python, source, target = "python3", "python3 on PATH", other["exe"]
        pyenv["target"] = target
    else:
        python, source = "python3", "python3 on PATH"
    out = {"checked": checked, "refused": refused, "foreign": foreign, "interpreter": python, "target": target,
           "source": source,
           "pyenv": run_pyenv(python, sources["pyenv"], pyenv, float(params.get("timeout_s", 120)))}
    print(json.dumps(out))


main()
