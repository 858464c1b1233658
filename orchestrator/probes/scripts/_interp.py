# --- interpreter check (orchestrator/probes/scripts/_interp.py): which programs probe scripts may run under. Imported
# by probes/interpreter.py, which runs the check as its own command; sent with the scripts that run it on the host
# (pyenv_chain, in the host survey), so there is one check. stdlib only, Python >= 3.8.
import json
import posixpath
import re

# An interpreter is named python, python3 or python3.N; whatever else a model (or a hostile process table) names
# would become the program our probes run (`tee`, `rm`, ...).
INTERP_NAME = re.compile(r"python(?:3(?:\.[0-9]{1,2})?)?")
# what a name may resolve to on the host (symlinks followed): the same, or a free-threaded/debug build (python3.13t)
INTERP_REAL = "python|python3|python3.[0-9]|python3.[0-9][0-9]|python3.[0-9]t|python3.[0-9][0-9]t|python3.[0-9][0-9]d"
INTERP_MIN_VERSION = (3, 8)
FOREIGN = "interpreter %r not started"
"""How a refusal for ownership starts (interp_verdict, exit 46): the caller still reads that environment as files."""
# Fixed shell code (part of INTERP_VERIFY, before the interpreter is ever started): the interpreter as named ($p) and
# as resolved ($r), a virtualenv's pyvenv.cfg (its `home` moves the standard library) and the installation's lib
# directory, and every directory above each of them, are owned by root or by the SSH user and not writable by group
# or others (a sticky directory such as /tmp excepted), as OpenSSH checks a key file's path. Otherwise another user
# could put code where this interpreter runs it (a .pth file, the stdlib, the binary itself), and starting it would
# run that code as the SSH user: exit 46 with the path and why on the third line. `ls -ldn` is POSIX, as is `id -u`.
INTERP_OWNERS = (
    'set -f; me=$(id -u); for f in "$p" "$r" "${p%/*}/pyvenv.cfg" "${p%/*/*}/pyvenv.cfg" "${r%/*/*}/lib"; do '
    '[ -e "$f" ] || [ -L "$f" ] || continue; d=$f; while :; do '
    'set -- $(LC_ALL=C ls -ldn -- "$d" 2>/dev/null); '
    'if [ $# -lt 3 ]; then printf "%s\\n" "$d cannot be listed"; exit 46; fi; '
    'case $3 in 0|"$me") ;; *) printf "%s\\n" "$d is owned by uid $3"; exit 46 ;; esac; '
    'case $1 in l*) ;; ?????w???[!tT]*|????????w[!tT]*) printf "%s\\n" "$d is writable by group or others"; exit 46 ;; '
    'esac; [ "$d" = / ] && break; d=$(dirname -- "$d"); done; done; '
)
# Fixed shell code: PATH-resolve the name, refuse anything that is not an executable regular file whose real name is
# an interpreter's, and only then ask it for its version (isolated mode, no site, stdin /dev/null). Arguments:
# sh -c INTERP_VERIFY sh NAME.
INTERP_VERIFY = (
    'p=$1; case $p in /*) ;; *) p=$(command -v -- "$p") || exit 44 ;; esac; '
    'case $p in /*) ;; *) exit 44 ;; esac; [ -f "$p" ] && [ -x "$p" ] || exit 44; '
    'r=$(readlink -f -- "$p" 2>/dev/null) || r=$p; printf "%s\\n%s\\n" "$p" "$r"; '
    'case ${r##*/} in ' + INTERP_REAL + ') ;; *) exit 45 ;; esac; '
    + INTERP_OWNERS +
    'exec "$p" -I -S -c "import sys, json; print(json.dumps(list(sys.version_info[:3])))" </dev/null'
)


def interp_name_refusal(python):
    """Why `python` cannot name an interpreter (the name alone), or None."""
    base = posixpath.basename(python)
    if not python or any(ord(c) < 32 or c == "\x7f" for c in python):
        return "interpreter %r refused: give an interpreter path such as /usr/bin/python3" % (python,)
    if "/" in python and not python.startswith("/"):
        return "interpreter %r refused: a path must be absolute (or give a bare name found on PATH)" % (python,)
    if not INTERP_NAME.fullmatch(base):
        return ("interpreter %r refused: only python, python3 or python3.N (absolute or on PATH) run probe "
                "scripts" % (python,))
    return None


def interp_verdict(python, exit_code, stdout, host_name):
    """(absolute path, None) when INTERP_VERIFY passed for `python`, else (None, why it is refused: one line)."""
    lines = stdout.splitlines()
    if exit_code == 44:
        return None, "interpreter %r not found on %s (not an executable file on PATH)" % (python, host_name)
    if exit_code == 45:
        real = lines[1] if len(lines) > 1 else "?"
        return None, "interpreter %r refused: on %s it is %r, not a python" % (python, host_name, real)
    if exit_code == 46:
        where = lines[2] if len(lines) > 2 else "its path"
        return None, (FOREIGN % (python,) + ": on %s %s (neither root nor the SSH user): starting it would run code "
                      "another user controls as the SSH user"
                      % (host_name, where))
    version = None
    try:
        got = json.loads(lines[2]) if exit_code == 0 and len(lines) >= 3 else None
        if isinstance(got, list) and len(got) == 3 and all(type(x) is int for x in got):
            version = got
    except ValueError:
        pass
    if version is None or tuple(version[:2]) < INTERP_MIN_VERSION:
        shown = ".".join(map(str, version)) if version else "no version"
        return None, ("interpreter %r refused: on %s it did not report a Python >= %d.%d (%s)"
                      % (python, host_name, INTERP_MIN_VERSION[0], INTERP_MIN_VERSION[1], shown))
    return lines[0], None


# --- end of interpreter check ------------------------------------------------------------------------------------
