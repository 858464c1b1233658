# --- site path (orchestrator/probes/scripts/_sitepath.py): where an interpreter's packages are, found as files ---
# The scripts that read an environment's packages (pyenv, kernels, caches) run isolated (`python -I -S`): nothing the
# environment holds is imported or executed as the SSH user (a .pth file's `import` lines are code that `site` runs
# for whoever starts the interpreter, and a running server's virtualenv may belong to another user). These helpers
# find the directories `site` would add by reading pyvenv.cfg and .pth files as text. stdlib only, Python >= 3.8.
import os
import re
import stat
import sys


def read_pyvenv(path):
    """The `key = value` lines of a pyvenv.cfg (PEP 405), lower-case keys; {} when unreadable."""
    out = {}
    try:
        text = host_text(path, 65536)
    except OSError:
        return out
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq:
            out[key.strip().lower()] = value.strip()
    return out


def venv_of(exe):
    """(prefix, pyvenv.cfg settings) of the virtualenv interpreter `exe` belongs to (pyvenv.cfg next to it or one
    directory up, as PEP 405 looks), else (None, {})."""
    bindir = os.path.dirname(exe)
    for d in (bindir, os.path.dirname(bindir)):
        cfg = os.path.join(d, "pyvenv.cfg")
        if os.path.isfile(cfg):
            return d, read_pyvenv(cfg)
    return None, {}


def python_version_of(exe, cfg):
    """"3.11" for interpreter exe: this interpreter's own, else pyvenv.cfg's version, else its real file's name."""
    if exe == sys.executable:
        return "%d.%d" % sys.version_info[:2]
    for key in ("version_info", "version"):
        m = re.match(r"(3\.\d+)", cfg.get(key) or "")
        if m:
            return m.group(1)
    m = re.search(r"python(3\.\d+)", os.path.basename(os.path.realpath(exe)))
    return m.group(1) if m else None


def prefix_site_dirs(prefix, version):
    """The package directories of an installation prefix that exist (site's layouts, Debian's dist-packages)."""
    versions = [version] if version else sorted(
        d[6:] for d in (os.listdir(os.path.join(prefix, "lib")) if os.path.isdir(os.path.join(prefix, "lib")) else [])
        if re.match(r"python3\.\d+$", d))
    out = []
    for v in versions:
        for rel in ("lib/python%s/site-packages" % v, "lib64/python%s/site-packages" % v,
                    "local/lib/python%s/dist-packages" % v, "lib/python%s/dist-packages" % v, "lib/python3/dist-packages"):
            path = os.path.join(prefix, rel)
            if os.path.isdir(path) and path not in out:
                out.append(path)
    return out


def pth_dirs(site_dir):
    """Directories a site directory's .pth files add (their path lines; `import` lines are code and never run)."""
    out = []
    try:
        names = sorted(n for n in os.listdir(site_dir) if n.endswith(".pth") and not n.startswith("."))
    except OSError:
        return out
    for name in names:
        try:
            lines = host_text(os.path.join(site_dir, name), 1 << 20).splitlines()
        except OSError:
            continue
        for line in lines:
            if not line.strip() or line.startswith("#") or line.startswith(("import ", "import\t")):
                continue
            path = os.path.normpath(os.path.join(site_dir, line.rstrip()))
            if os.path.isdir(path) and path not in out:
                out.append(path)
    return out


def site_dirs(exe=None):
    """(package directories, virtualenv prefix or None) of interpreter exe (default: this one) as `site` would set
    them up, found as files: the virtualenv's site-packages (and the base installation's when pyvenv.cfg includes
    them), else the installation's; then the directories their .pth files name."""
    exe = exe or sys.executable
    venv, cfg = venv_of(exe)
    version = python_version_of(exe, cfg)
    if exe == sys.executable:
        base = getattr(sys, "base_prefix", sys.prefix)
    elif cfg.get("home"):
        base = os.path.dirname(cfg["home"].rstrip("/")) or "/"
    else:
        base = os.path.dirname(os.path.dirname(os.path.realpath(exe)))
    prefixes = [venv] if venv else [base]
    if venv and cfg.get("include-system-site-packages", "false").lower() == "true":
        prefixes.append(base)
    dirs = []
    for prefix in prefixes:
        dirs += [d for d in prefix_site_dirs(prefix, version) if d not in dirs]
    for d in list(dirs):
        dirs += [p for p in pth_dirs(d) if p not in dirs]
    return dirs, venv


def env_path(target=None):
    """Where to look for the packages of `target` (an interpreter not started: its site directories), else of this
    isolated interpreter (its sys.path, then the site directories it would have without -S)."""
    dirs, venv = site_dirs(target)
    own = [] if target else [e for e in sys.path if e]
    return [d for d in own if d not in dirs] + dirs, venv


def safely_owned(path):
    """None when path and every directory above it are owned by root or this user and not writable by group or
    others (sticky directories excepted), else why not: code there is safe to import as this user."""
    me = os.geteuid()
    d = os.path.abspath(path)
    while True:
        try:
            st = os.lstat(d)
        except OSError:
            return "%s cannot be examined" % d
        if st.st_uid not in (0, me):
            return "%s is owned by uid %d" % (d, st.st_uid)
        if not stat.S_ISLNK(st.st_mode) and st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return "%s is writable by group or others" % d
        if d == "/":
            return None
        d = os.path.dirname(d)


# --- end of site path ------------------------------------------------------------------------------------------------
