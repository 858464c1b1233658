# --- prelude (orchestrator/probes/scripts/_prelude.py): helpers every probe script shares, sent ahead of each one ---
# stdlib only, Python >= 3.8, read-only. One reviewed copy instead of drifting ones: a script never redefines these
# names (tests/probes/test_probe_scripts.py checks it).
import errno
import fnmatch
import os

# A server is recognized by its entry point, not by a word anywhere in its command line (grep, editors, tests).
MODULES = (("sglang.launch_server", "sglang"), ("sglang.srt", "sglang"), ("tensorrt_llm", "tensorrt_llm"),
           ("vllm.entrypoints", "vllm"), ("vllm.", "vllm"))
SCRIPTS = {"vllm": "vllm", "sglang": "sglang", "trtllm-serve": "tensorrt_llm", "trtllm-llmapi-launch": "tensorrt_llm"}


def server_kind(argv):
    """vllm / sglang / tensorrt_llm when argv starts one of their servers, else None."""
    for i, arg in enumerate(argv[:-1]):
        if arg == "-m":
            mod = argv[i + 1]
            for prefix, kind in MODULES:
                if mod.startswith(prefix):
                    return kind
    # the program itself, or the script a Python interpreter runs (`python3 /usr/bin/vllm serve`); never an argument
    # of another program (`grep vllm`)
    starts = argv[:2] if argv and os.path.basename(argv[0]).startswith("python") else argv[:1]
    for arg in starts:
        kind = SCRIPTS.get(os.path.basename(arg))
        if kind:
            return kind
    return None


def listdir(path):
    """Sorted names in a directory; [] when it cannot be listed (permissions, vanished)."""
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def size_of(path):
    """The file's size in bytes; None when it cannot be read (a missing size is not a zero size)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def gpu_device_files():
    """The GPU device files of this host: /dev/nvidia0.. (NVIDIA's driver, also inside containers given GPUs),
    /dev/kfd (AMD ROCm), /dev/dxg (CUDA under WSL2). [] means no GPU a framework could use: the measurement scripts
    then say so without importing torch (which costs tens of seconds and hundreds of MB to find nothing)."""
    names = [n for n in listdir("/dev") if (n.startswith("nvidia") and n[6:].isdigit()) or n in ("kfd", "dxg")]
    return ["/dev/" + n for n in names]


def proc_identity(pid):
    """(executable, working directory, parent pid) of a process from /proc; None for what cannot be read."""
    try:
        exe = os.readlink("/proc/%s/exe" % pid)
    except OSError:
        exe = None
    try:
        cwd = os.readlink("/proc/%s/cwd" % pid)
    except OSError:
        cwd = None
    try:
        with open("/proc/%s/stat" % pid) as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        ppid = None
    return exe, cwd, ppid


def gpu_present():
    """Whether this host shows a GPU at all: its device files, or a vendor tool on PATH that lists GPUs
    (nvidia-smi, rocm-smi, amd-smi: a container or a test host may expose the tool's view without /dev entries)."""
    if gpu_device_files():
        return True
    for tool in ("nvidia-smi", "rocm-smi", "amd-smi"):
        for d in (os.environ.get("PATH") or "").split(os.pathsep):
            if d and os.access(os.path.join(d, tool), os.X_OK):
                return True
    return False


def log_lines(path, max_bytes, skipped):
    """(line number, text) of a log file (a path, or a descriptor, which it closes), reading at most about max_bytes of it: all of a smaller file; of a larger
    one the first eighth of the budget (the engine's start-up: its arguments and configuration) and the last seven
    eighths (its latest state). The lines between are counted (for exact line numbers), not read or matched, and
    `skipped` (a dict) gets {"bytes", "lines", "from_line"}. Lines are bounded at 1 MiB (a file with no newline is
    not read into one string); the file is read up to its size when opened (a live log keeps growing). A read
    that fails raises OSError."""
    if isinstance(path, int):  # a descriptor the caller opened once and checked (O_NOFOLLOW, fstat): read from it
        end = os.fstat(path).st_size or max_bytes
        opened = os.fdopen(path, "rb")
    else:
        end = os.path.getsize(path) or max_bytes  # /proc and /sys files say 0 bytes: read them up to the budget
        opened = open(path, "rb")
    with opened as f:
        head_end = end if end <= max_bytes else max_bytes // 8
        tail_start = end - (max_bytes - head_end) if end > max_bytes else end
        no = 0

        def one_line():
            line = f.readline(1 << 20)
            if line and not line.endswith(b"\n"):
                while True:  # the rest of an overlong line is dropped
                    rest = f.readline(1 << 20)
                    if not rest or rest.endswith(b"\n"):
                        break
            return line

        while f.tell() < head_end:
            line = one_line()
            if not line:
                return
            no += 1
            yield no, line.decode("utf-8", "replace")
        if end > max_bytes and f.tell() < tail_start:
            start, newlines = f.tell(), 0
            while f.tell() < tail_start:
                chunk = f.read(min(1 << 20, tail_start - f.tell()))
                if not chunk:
                    break
                newlines += chunk.count(b"\n")
            newlines += 1 if one_line() else 0  # the line the tail starts inside of
            skipped.update({"bytes": f.tell() - start, "lines": newlines, "from_line": no + 1})
            no += newlines
        while f.tell() < end:
            line = one_line()
            if not line:
                return
            no += 1
            yield no, line.decode("utf-8", "replace")


# --- reading a host file: the one way every probe script opens a file on the host --------------------------------
# A path may come from another user (a served process's command line or environment names it): opened once without
# following a link to someone else's file, only a regular file (a FIFO blocks whoever opens it, opening some devices
# has effects), only what the process that named it could read itself, never a credential location, never more than
# the bytes asked for. CREDENTIAL_LOCATIONS (kind, match) is orchestrator/hosts/credentials.yaml, the host policy's
# list, written after this prelude when it is sent (scripts.load).
import stat


def credential_location(path):
    """The credential location (hosts/credentials.yaml) path is, as a short phrase, or None."""
    norm = os.path.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    parts = [p for p in norm.split("/") if p]
    base = parts[-1] if parts else ""
    slashed = "/" + "/".join(parts) + "/"
    for kind, match, what in CREDENTIAL_LOCATIONS:
        if ((kind == "dir" and "/" + match + "/" in slashed) or (kind == "suffix" and slashed.endswith("/" + match + "/"))
                or (kind == "name" and base == match) or (kind == "glob" and fnmatch.fnmatchcase(base, match))
                or (kind == "path" and norm.startswith(match))):
            return what
    return None


def proc_creds(pid):
    """(uid, gids) the kernel checks file access of process pid against (its filesystem uid and gid, and its
    supplementary groups, from /proc/PID/status); None when they cannot be read (the process is gone)."""
    uid, gids = None, set()
    try:
        with open("/proc/%d/status" % int(pid), "rb") as f:
            for line in f.read(1 << 16).decode("ascii", "replace").splitlines():
                key, _, rest = line.partition(":")
                if key == "Uid":
                    uid = int(rest.split()[3])
                elif key == "Gid":
                    gids.add(int(rest.split()[3]))
                elif key == "Groups":
                    gids.update(int(g) for g in rest.split())
    except (OSError, ValueError, IndexError):
        return None
    return None if uid is None else (uid, frozenset(gids))


def _has_acl(path):
    try:
        return bool(os.getxattr(path, "system.posix_acl_access"))
    except (OSError, AttributeError):
        return False


def may_access(st, creds, bit, path):
    """Whether a process of creds (uid, gids) has permission `bit` (4 read, 1 search) on the file of stat st at path
    (a name that reaches the same inode: /proc/self/fd/N). The owner's and others' mode bits are exact; the group's
    are trusted only without a POSIX ACL (with one, they are its mask, not the owning group's right). Root may."""
    uid, gids = creds
    if uid == 0:
        return True
    if st.st_uid == uid:
        return bool(st.st_mode & (bit << 6))
    if st.st_gid in gids and st.st_mode & (bit << 3) and not _has_acl(path):
        return True
    return bool(st.st_mode & bit)


def _search_refused(real, creds):
    """Why a process of creds could not reach the file at real (a directory above it it may not search), or None."""
    d = os.path.dirname(real)
    while True:
        try:
            st = os.stat(d)
        except OSError as exc:
            return "%s: %s" % (d, exc.strerror or exc)
        if not may_access(st, creds, 1, d):
            return "its directory %s may not be searched by uid %d (owner uid %d, mode %o)" % (
                d, creds[0], st.st_uid, stat.S_IMODE(st.st_mode))
        if d == "/":
            return None
        d = os.path.dirname(d)


def open_host_file(path, creds=None, resolve=False):
    """A read descriptor on the regular file at path; OSError with a one-line reason otherwise.

    - The name is opened as O_PATH with O_NOFOLLOW (nothing is opened for reading yet: a FIFO, a device or a directory
      is refused by fstat), then that inode reopened through /proc/self/fd: what was checked is what is read.
    - A final symlink is followed only to a file of the link's own owner (a Hugging Face snapshot's config.json links
      to its blob, a ConfigMap's file to its ..data): another user's link to root's file is refused. `resolve`: the
      path is the investigating user's own choice (a --log path): its links are resolved first.
    - creds (uid, gids), when the path came from a process (proc_creds): the file is read only if that process could
      read it itself: the file's owner and mode, and search permission on every directory above it.
    - Credential locations (hosts/credentials.yaml) are refused, by the name given and by where it leads.
    """
    if resolve:
        path = os.path.realpath(path)
    why = credential_location(path)
    if why:
        raise OSError("a credential location (%s): not read" % why)
    o_path = getattr(os, "O_PATH", 0)
    flags = (o_path or (os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)) | os.O_CLOEXEC
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW)
        link = os.fstat(fd) if stat.S_ISLNK(os.fstat(fd).st_mode) else None
    except OSError as exc:
        if exc.errno != errno.ELOOP:  # without O_PATH, O_NOFOLLOW on a link fails with ELOOP
            raise
        fd, link = -1, os.lstat(path)
    try:
        if link is not None:
            if resolve:
                raise OSError("changed into a symlink while it was opened: not read")
            if fd >= 0:
                os.close(fd)
                fd = -1
            fd = os.open(path, flags)
        st = os.fstat(fd)
        name = "/proc/self/fd/%d" % fd
        try:
            real = os.readlink(name)
        except OSError:
            real, name = os.path.realpath(path), path
        # in this order, so that a refusal tells the process's user nothing they could not find out themselves
        if creds is not None and creds[0] != 0:
            refused = _search_refused(real, creds)
            if refused:
                raise OSError(refused + ": not read")
            if not may_access(st, creds, 4, name):
                raise OSError("not readable by uid %d, whose process named it (owner uid %d, mode %o): not read"
                              % (creds[0], st.st_uid, stat.S_IMODE(st.st_mode)))
        if link is not None and st.st_uid != link.st_uid and link.st_uid != 0:
            raise OSError("a symlink to another user's file: not followed")
        if not stat.S_ISREG(st.st_mode):
            raise OSError("not a regular file (a FIFO, device, socket or directory): not opened")
        why = credential_location(real) if real.startswith("/") else None
        if why:
            raise OSError("leads to a credential location (%s): not read" % why)
        if not o_path:
            fd, keep = -1, fd
            return keep
        got = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        if (os.fstat(got).st_ino, os.fstat(got).st_dev) != (st.st_ino, st.st_dev):
            os.close(got)
            raise OSError("changed while it was opened: not read")
        return got
    finally:
        if fd >= 0:
            os.close(fd)


def read_host_file(path, limit, creds=None, resolve=False):
    """(bytes, truncated) of the regular file at path, at most limit bytes (open_host_file says what is refused)."""
    with os.fdopen(open_host_file(path, creds, resolve), "rb") as f:
        data = f.read(limit + 1)
    return data[:limit], len(data) > limit


# --- end of prelude ---------------------------------------------------------------------------------------------------
