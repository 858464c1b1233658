# --- prelude (orchestrator/probes/scripts/_prelude.py): helpers every probe script shares, sent ahead of each one ---
# stdlib only, Python >= 3.8, read-only. One reviewed copy instead of drifting ones: a script never redefines these
# names (tests/probes/test_probe_scripts.py checks it).
import errno
import fnmatch
import json
import os
import re

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
        ppid = int(host_text("/proc/%s/stat" % pid, 4096).rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        ppid = None
    return exe, cwd, ppid


def proc_argv(pid, proc="/proc"):
    """A process's command line as a list (from proc/PID/cmdline); None when it cannot be read."""
    try:
        raw = read_host_file("%s/%s/cmdline" % (proc, pid), 1 << 20)[0]
    except OSError:
        return None
    return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]


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


def log_lines(fd, max_bytes, skipped):
    """(line number, text) of a log file (a descriptor from open_host_file, which it closes), reading at most about
    max_bytes of it: all of a smaller file; of a larger
    one the first eighth of the budget (the engine's start-up: its arguments and configuration) and the last seven
    eighths (its latest state). The lines between are counted (for exact line numbers), not read or matched, and
    `skipped` (a dict) gets {"bytes", "lines", "from_line"}. Lines are bounded at 1 MiB (a file with no newline is
    not read into one string); the file is read up to its size when opened (a live log keeps growing). A read
    that fails raises OSError."""
    end = os.fstat(fd).st_size or max_bytes  # /proc and /sys files say 0 bytes: read them up to the budget
    with os.fdopen(fd, "rb") as f:
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
# the bytes asked for. CREDENTIAL_LOCATIONS (kind, match, what) is orchestrator/hosts/credentials.yaml, the host
# policy's list, written after this prelude when it is sent (scripts.prelude). No probe script opens a file any other
# way (tests/security/test_host_one_reader.py walks them).
import stat
import struct

KERNEL_TREES = ("/proc/", "/sys/")
# Kernel files whose reading has effects (hosts/policy.py unsafe_read): consumed by reading, or a PCI device's
# configuration space, option ROM or BARs (some devices hang when it is read).
CONSUMED = ("kmsg", "trace_pipe", "trace_pipe_raw")
PCI_SPACE = re.compile(r"^/sys/(?:bus/pci/devices/[^/]+|devices/pci[^/]*(?:/[^/]+)*)/"
                       r"(?:config|rom|resource[0-9]*(?:_wc)?|vpd)$")


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


def unsafe_location(real):
    """Why reading the kernel file at real (a resolved path) would have effects, or None."""
    if os.path.basename(real) in CONSUMED:
        return "consumed by reading it"
    if PCI_SPACE.match(real):
        return "a PCI device's configuration space or memory"
    return None


def proc_creds(pid, proc="/proc", ref="self"):
    """(uid, gids, elsewhere): whom to check a file that process pid names against, from proc/PID/status; None when
    they cannot be read (the process is gone).

    - uid, gids: its real uid and gid (and supplementary groups), not the effective ones the kernel checks its own
      opens against: a set-user-ID or set-group-ID program runs with its owner's access, but its command line is
      whoever started it (`exec -a "nginx: master process nginx -c /root/x" su` is the caller's words in a process
      whose file uid is root's). Where the real ids are root's (a root daemon that lowered its effective uid), the
      effective (file-system) ones are taken: the lesser of the two either way.
    - elsewhere: why the paths it names are not this host's, or None: its root directory or mount namespace is not
      that of process `ref` (this probe; the host's init where the host is mounted elsewhere). A container's or a
      chroot's `/etc/x` is a file of its own tree, and the host's `/etc/x` is another one (root's, for a container
      that runs as root)."""
    uid = gid = None
    gids = set()
    try:
        for line in host_text("%s/%s/status" % (proc, int(pid)), 1 << 16).splitlines():
            key, _, rest = line.partition(":")
            if key == "Uid":
                real, _eff, _saved, fs = [int(x) for x in rest.split()[:4]]
                uid = real if real != 0 else fs
            elif key == "Gid":
                real, _eff, _saved, fs = [int(x) for x in rest.split()[:4]]
                gid = real if real != 0 else fs
            elif key == "Groups":
                gids.update(int(g) for g in rest.split())
    except (OSError, ValueError, IndexError):
        return None
    if uid is None or gid is None:
        return None
    gids.add(gid)
    return uid, frozenset(gids), fs_elsewhere(pid, proc, ref)


def _fs_view(proc, pid):
    try:
        st = os.stat("%s/%s/root" % (proc, pid))
        return st.st_dev, st.st_ino, os.readlink("%s/%s/ns/mnt" % (proc, pid))
    except OSError:
        return None


def fs_elsewhere(pid, proc="/proc", ref="self"):
    """Why process pid sees another file system than process ref (a container, a chroot), or None (the same one, or
    ours cannot be told)."""
    ours = _fs_view(proc, ref)
    if ours is None:
        return None
    theirs = _fs_view(proc, pid)
    if theirs == ours:
        return None
    if theirs is None:
        return "named by pid %s, whose root directory and mount namespace cannot be read" % pid
    return ("named by pid %s, which runs in another %s (a container or a chroot): the host's file of that name is not "
            "the one it named" % (pid, "mount namespace" if theirs[2] != ours[2] else "root directory"))


def elsewhere(creds):
    """proc_creds' `elsewhere`, for creds of any length (a (uid, gids) pair has none)."""
    return creds[2] if creds is not None and len(creds) > 2 else None


ACL_USER_OBJ, ACL_USER, ACL_GROUP_OBJ, ACL_GROUP, ACL_MASK = 0x01, 0x02, 0x04, 0x08, 0x10


def _acl(path):
    """The POSIX access ACL of path (the kernel's xattr: a version word, then (tag, perm, id) entries), [] without
    one, None when there is one this cannot read."""
    try:
        raw = os.getxattr(path, "system.posix_acl_access")
    except (OSError, AttributeError):
        return []
    if len(raw) < 4 or (len(raw) - 4) % 8 or struct.unpack_from("<I", raw)[0] != 2:
        return None
    return [struct.unpack_from("<HHI", raw, 4 + 8 * i) for i in range((len(raw) - 4) // 8)]


def may_access(st, creds, bit, path):
    """Whether a process of creds (uid, gids) has permission `bit` (4 read, 1 search) on the file of stat st at path
    (a name that reaches the same inode: /proc/self/fd/N), as the kernel decides it: the owner's mode bits; else, with
    a POSIX ACL, its named-user entry, else its owning-group and named-group entries (each under the ACL's mask: a
    `user:NAME:---` entry refuses a user the others' bits would let in), else the others' bits. Root may."""
    uid, gids = creds[0], creds[1]
    if uid == 0:
        return True
    if st.st_uid == uid:
        return bool(st.st_mode & (bit << 6))
    acl = _acl(path)
    if acl is None:
        return False
    if acl:
        mask = next((perm for tag, perm, _ in acl if tag == ACL_MASK), 7)
        for tag, perm, who in acl:
            if tag == ACL_USER and who == uid:
                return bool(perm & mask & bit)
        groups = [perm for tag, perm, who in acl
                  if (tag == ACL_GROUP_OBJ and st.st_gid in gids) or (tag == ACL_GROUP and who in gids)]
        if groups:
            return any(perm & mask & bit for perm in groups)
    elif st.st_gid in gids:
        return bool(st.st_mode & (bit << 3))
    return bool(st.st_mode & bit)


def search_refused(real, creds):
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


def unreachable(path, creds):
    """Why a process of creds (None: no process) could not list the directory, or read the file, at path (links
    resolved), or None."""
    if elsewhere(creds):
        return elsewhere(creds)
    if creds is None or creds[0] == 0:
        return None
    real = os.path.realpath(path)
    why = search_refused(real, creds)
    if why:
        return why
    try:
        st = os.stat(real)
    except OSError as exc:
        return "%s: %s" % (real, exc.strerror or exc)
    if not may_access(st, creds, 4, real) or (stat.S_ISDIR(st.st_mode) and not may_access(st, creds, 1, real)):
        return "%s is not readable by uid %d (owner uid %d, mode %o)" % (real, creds[0], st.st_uid,
                                                                       stat.S_IMODE(st.st_mode))
    return None


def open_host_file(path, creds=None, resolve=False):
    """A read descriptor on the regular file at path; OSError with a one-line reason otherwise.

    - The name is opened as O_PATH with O_NOFOLLOW (nothing is opened for reading yet: a FIFO, a device or a directory
      is refused by fstat), then that inode reopened through /proc/self/fd: what was checked is what is read.
    - A final symlink is followed only to a file of the link's own owner (a Hugging Face snapshot's config.json links
      to its blob, a ConfigMap's file to its ..data): another user's link to root's file is refused. `resolve`: the
      path is a user's choice of a log file (--log): its links are resolved first, and it is never a kernel file.
    - creds (uid, gids[, elsewhere]), when the path came from a process (proc_creds): the file is read only if that
      process could read it itself (the file's owner and mode, and search permission on every directory above it),
      never a kernel file (/proc, /sys, /dev), and nothing at all for a process that sees another file system (a
      container's or a chroot's path names a file of its own tree, not the host's).
    - Credential locations (hosts/credentials.yaml) are refused, by the name given and by where it leads; so are
      kernel files whose reading has effects (unsafe_location).
    """
    if elsewhere(creds):
        raise OSError("%s: not read" % elsewhere(creds))
    if resolve:
        path = os.path.realpath(path)
    kernel = path.startswith(KERNEL_TREES)  # the probes' own reads of /proc and /sys: no credential lives there
    why = None if kernel else credential_location(path)
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
            refused = search_refused(real, creds)
            if refused:
                raise OSError(refused + ": not read")
            if not may_access(st, creds, 4, name):
                raise OSError("not readable by uid %d, whose process named it (owner uid %d, mode %o): not read"
                              % (creds[0], st.st_uid, stat.S_IMODE(st.st_mode)))
        if link is not None and st.st_uid != link.st_uid and link.st_uid != 0:
            raise OSError("a symlink to another user's file: not followed")
        if not stat.S_ISREG(st.st_mode):
            raise OSError("not a regular file (a FIFO, device, socket or directory): not opened")
        if (creds is not None or resolve) and real.startswith(KERNEL_TREES + ("/dev/",)):
            raise OSError("a kernel file (/proc, /sys, /dev), not a %s: not read" % ("log" if resolve else "config"))
        why = unsafe_location(real) if real.startswith(KERNEL_TREES) else credential_location(real)
        if why:
            raise OSError("%s (%s): not read" % ("leads to a credential location" if not real.startswith(KERNEL_TREES)
                                                 else "a kernel file whose reading has effects", why))
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


def list_host_dir(path, creds=None):
    """(sorted names, None) of the directory at path (links followed), or ([], why) when a process of creds (None:
    this probe) could not list it; ([], None) when there is no directory there. What is checked is what is listed: the
    directory is opened once and its place read back from the descriptor (a link swapped after the check lists
    nothing else)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return [], None
    try:
        why = unreachable(os.readlink("/proc/self/fd/%d" % fd), creds) if creds is not None else None
        return ([], why) if why else (sorted(os.listdir(fd)), None)
    except OSError as exc:
        return [], str(exc.strerror or exc)
    finally:
        os.close(fd)


def proc_environ(pid, proc="/proc"):
    """The environment of process pid as a dict (the first of a repeated name, as getenv finds it), or None when it
    cannot be read. Read as root reads it: the caller keeps what leaves the host to what it allows."""
    try:
        raw = read_host_file("%s/%s/environ" % (proc, pid), 1 << 20)[0]
    except OSError:
        return None
    env = {}
    for item in raw.split(b"\0"):
        k, _, v = item.decode("utf-8", "replace").partition("=")
        if k:
            env.setdefault(k, v)
    return env


def read_host_file(path, limit, creds=None, resolve=False):
    """(bytes, truncated) of the regular file at path, at most limit bytes (open_host_file says what is refused)."""
    fd = open_host_file(path, creds, resolve)
    try:
        parts, got = [], 0
        while got <= limit:  # in pieces: a buffer of `limit` bytes for a 200-byte /proc file costs more than the read
            piece = os.read(fd, min(limit + 1 - got, 1 << 16))
            if not piece:
                break
            parts.append(piece)
            got += len(piece)
    finally:
        os.close(fd)
    data = b"".join(parts)
    return data[:limit], len(data) > limit


def host_text(path, limit=1 << 20, creds=None, resolve=False):
    """The text of the regular file at path (UTF-8, bad bytes replaced), at most limit bytes; OSError when refused."""
    return read_host_file(path, limit, creds, resolve)[0].decode("utf-8", "replace")


# --- an HTTP GET on this host's loopback (an engine's /metrics, Triton's metrics port) -------------------------------
def loopback_get(port, path, timeout_s, limit, accept="text/plain"):
    """GET http://127.0.0.1:PORT/PATH within timeout_s in all: {"url", "status", "content_type", "body" (at most
    limit + 1 bytes), "location"} or {"url", "error"}. Whoever listens on the port answers (any local user's process
    names its own port): the socket's timeout bounds each read, and a server that sends a byte every few seconds
    would hold the probe for as long as it liked, so a timer closes the connection at the deadline. A redirect is an
    answer (its status and Location), never followed; no proxy is used (http.client reads no proxy variables)."""
    import http.client
    import socket
    import threading

    url = "http://127.0.0.1:%d%s" % (int(port), path)
    conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=timeout_s)
    late = []

    def cut():
        late.append(True)
        try:
            if conn.sock is not None:
                conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    timer = threading.Timer(timeout_s, cut)
    timer.daemon = True
    timer.start()
    try:
        conn.request("GET", path, headers={"Accept": accept})
        res = conn.getresponse()
        body = res.read(limit + 1)
        if late:
            raise socket.timeout("no whole answer in %g s" % timeout_s)
        return {"url": url, "status": res.status, "content_type": res.getheader("Content-Type", ""), "body": body,
                "location": res.getheader("Location")}
    except Exception as exc:  # refused, timed out, cut off, a bad answer: recorded, not fatal
        err = socket.timeout("no whole answer in %g s" % timeout_s) if late else exc
        return {"url": url, "error": "%s: %s" % (type(err).__name__, str(err)[:200])}
    finally:
        timer.cancel()
        conn.close()


# --- what of a command line may leave the host: the one masker (engine, settings, discover, launches) ---------------
MASK = "<redacted on host>"
# A name part that says "secret" (HF_TOKEN, SERVER_API_KEY), not one that merely contains the letters
# (MAX_NUM_BATCHED_TOKENS, NCCL_IB_PKEY); and words that say it anywhere in the name (SERVER_SECRETKEY).
SECRET_NAME = re.compile(r"(^|_)(TOKEN|PASS|KEY|APIKEY|AUTH|SESSION|SIGNATURE)(_|$)"
                         r"|SECRET|PASSW|CREDENTIAL|PRIVATE|COOKIE", re.I)
# Values that are credentials whatever they are called; a URL with any userinfo (`https://TOKEN@proxy`) is one.
SECRET_VALUE = re.compile(r"hf_[A-Za-z0-9]{8,}|sk-[A-Za-z0-9_\-]{8,}|(?:AKIA|ASIA)[A-Z0-9]{12,}|gh[pousr]_[A-Za-z0-9]{8,}"
                          r"|xox[bpase]-|-----BEGIN|://[^/\s@]+@|eyJ[A-Za-z0-9_\-]{10,512}\.")
SECRET_FLAG = re.compile(r"^--?([\w]+[-_])*(token|secret|password|passwd|pass|key|api[-_]?key|credentials?|auth|"
                         r"cookie|private[-_]key)$", re.I)
SECRET_WORDS = ("token", "secret", "password", "passwd", "pass", "key", "apikey", "credential", "credentials", "auth",
                "cookie")
# Words before a secret word's abbreviation that make it one (`--api-k`, `--hf-tok`); `--top-k`, `--min-p` stay.
SECRET_QUALIFIERS = ("api", "hf", "auth", "access", "admin", "secret", "private", "client", "bearer", "session", "db",
                     "ssl", "refresh", "bot", "master", "root")
# Options of other programs whose value is a password (redis-cli -a, sshpass -p; mysql -pVALUE attached).
PROGRAM_SECRETS = {"redis-cli": ("-a",), "redis-benchmark": ("-a",), "keydb-cli": ("-a",), "sshpass": ("-p",)}
ATTACHED_SECRETS = {"mysql": "-p", "mysqldump": "-p", "mysqladmin": "-p", "mariadb": "-p", "sshpass": "-p"}
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def secret_flag(name):
    """Whether a command-line option names a secret: --api-key, --hf-token, --db-password, --redis-secret, or an
    abbreviation argparse accepts of one (--api-k, --hf-tok, --admin-pass)."""
    if not name.startswith("-") or len(name) > 100:
        return False
    if SECRET_FLAG.match(name):
        return True
    if not name.startswith("--"):
        return False
    words = re.split(r"[-_]", name.strip("-_").lower())
    last = words[-1]
    if not last or not any(w.startswith(last) for w in SECRET_WORDS):
        return False
    return len(last) >= 3 or (len(words) > 1 and words[-2] in SECRET_QUALIFIERS) or last in SECRET_QUALIFIERS


def mask_argv(argv):
    """argv with the values of secret-looking options, secret-looking values and `pass:` passwords (openssl's
    -passin/-passout) replaced, here on the host."""
    prog = os.path.basename(argv[0]) if argv else ""
    takes = PROGRAM_SECRETS.get(prog, ())
    attached = ATTACHED_SECRETS.get(prog)
    out, skip = [], False
    for a in argv:
        if skip:
            out.append(MASK)
            skip = False
            continue
        name, eq, value = a.partition("=")
        if a in takes or secret_flag(name) and not eq:
            out.append(a)
            skip = True
        elif secret_flag(name) or (eq and ENV_NAME.match(name) and SECRET_NAME.search(name)):
            out.append(name + "=" + MASK)
        elif attached and a.startswith(attached) and len(a) > len(attached) and not a.startswith("--"):
            out.append(attached + MASK)
        elif a.startswith("pass:"):
            out.append("pass:" + MASK)
        elif SECRET_VALUE.search(a):
            out.append(name + "=" + MASK if eq and name.startswith("-") and not SECRET_VALUE.search(name) else MASK)
        else:
            out.append(a)
    return out


def secret_key(key):
    """Whether a config key or variable name says its value is a secret (api-key, hf_token, password...)."""
    return secret_flag("--" + str(key)) or bool(SECRET_NAME.search(str(key)))


def mask_value(value, depth=0):
    """A parsed value (a config file's) with secret-looking keys' values and secret-looking strings replaced, bounded
    in depth, items and string length."""
    if depth > 8:
        return MASK
    if isinstance(value, dict):
        return dict((str(k)[:200], MASK if secret_key(k) else mask_value(v, depth + 1))
                    for k, v in list(value.items())[:200])
    if isinstance(value, list):
        return [mask_value(v, depth + 1) for v in value[:200]]
    if isinstance(value, str):
        return MASK if SECRET_VALUE.search(value) else value[:2000]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)  # JSON has no NaN or infinity
    return value


# --- a config file a served process names, parsed here: its text never leaves the host (settings, engine) ------------
YAML_INT = re.compile(r"^[-+]?(?:0|[1-9][0-9_]*)$")
YAML_BASED = re.compile(r"^([-+]?)0(?:([0-7_]+)|x([0-9a-fA-F_]+)|b([01_]+))$")
YAML_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?$|^[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?$")
YAML_BOOL = {"yes": True, "true": True, "on": True, "no": False, "false": False, "off": False}
MAX_NODES, MAX_DEPTH = 20000, 32


class NotPlain(ValueError):
    """YAML beyond plain mappings, lists and scalars (anchors, aliases, tags, multi-line flow): not read here."""


def yaml_scalar(text):
    """A plain or quoted YAML scalar as PyYAML's safe_load resolves the common cases (YAML 1.1 booleans, ints,
    floats, nulls); a flow list or mapping only when it is JSON."""
    t = text.strip()
    if not t or t in ("~", "null", "Null", "NULL"):
        return None
    if t[0] in "&*!|>%@`":
        raise NotPlain("anchors, aliases, tags and block scalars are not read on the host")
    if t[0] == '"':
        if not t.endswith('"') or len(t) < 2:
            raise NotPlain("an unterminated quoted value")
        return json.loads(t)
    if t[0] == "'":
        if not t.endswith("'") or len(t) < 2:
            raise NotPlain("an unterminated quoted value")
        return t[1:-1].replace("''", "'")
    if t[0] in "[{":
        try:
            return json.loads(t)
        except ValueError:
            pass
        inner = t[1:-1]
        if t[-1] != "]}"[t[0] == "{"] or any(c in inner for c in "[]{}\"'"):
            raise NotPlain("a flow collection that is neither JSON nor flat")
        items = [x.strip() for x in inner.split(",") if x.strip()]
        if t[0] == "[":
            return [yaml_scalar(x) for x in items]
        pairs = [yaml_key(x) for x in items]
        if None in pairs:
            raise NotPlain("a flow mapping that is not `key: value` pairs")
        return dict((k, yaml_scalar(v)) for k, v in pairs)
    if t in ("yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE", "on", "On",
             "ON", "off", "Off", "OFF"):
        return YAML_BOOL[t.lower()]
    if YAML_INT.match(t):
        return int(t.replace("_", ""))
    m = YAML_BASED.match(t)
    if m:
        digits, base = [(d, b) for d, b in zip(m.group(2, 3, 4), (8, 16, 2)) if d is not None][0]
        return (-1 if m.group(1) == "-" else 1) * int(digits.replace("_", ""), base)
    if YAML_FLOAT.match(t):
        return float(t.replace("_", ""))
    return t


def yaml_key(body):
    """(key, the rest of the line) of a `key: value` line of a block mapping, else None. By hand, not a regex: a
    line of host text is read once whatever its shape."""
    if body[:1] in ("'", '"'):
        end = body.find(body[0], 1)
        if end < 0:
            return None
        key, after = body[1:end], body[end + 1:].lstrip(" ")
        if not after.startswith(":"):
            return None
        rest = after[1:]
    else:
        if not body or body[0] in "#{[&*!|>%@`" or body == "-" or body.startswith("- "):
            return None
        i = body.find(": ")
        if i < 0:
            if not body.endswith(":"):
                return None
            i = len(body) - 1
        key, rest = body[:i].rstrip(), body[i + 1:]
    if rest and not rest[0].isspace():
        return None  # `a:b` is a plain scalar, not a mapping
    return key, rest.strip()


def strip_comment(line):
    """The line without a trailing ` # comment` outside quotes."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def parse_yaml(text):
    """The plain YAML of a served config (block mappings and lists of scalars or mappings, quoted and plain scalars,
    JSON flow values), bounded in nodes and depth; NotPlain for anything else (an alias could not be a bomb here)."""
    lines = []
    for raw in text.splitlines():
        line = strip_comment(raw)
        if not line.strip() or line.strip() in ("---", "..."):
            continue
        body = line.lstrip(" ")
        if body.startswith("\t"):
            raise NotPlain("tab indentation")
        lines.append([len(line) - len(body), body])
    nodes = [0]

    def block(i, indent, depth):
        if depth > MAX_DEPTH:
            raise NotPlain("nested deeper than %d" % MAX_DEPTH)
        if lines[i][1] == "-" or lines[i][1].startswith("- "):
            return seq(i, indent, depth)
        return mapping(i, indent, depth)

    def value_after(i, indent, rest, depth, item=False):
        """The value of a key (or of a list item) whose line ends at rest: inline, or the block under it (i is the
        next line; a key's list may sit at the key's own indentation, an item's sibling there is not its value)."""
        nodes[0] += 1
        if nodes[0] > MAX_NODES:
            raise NotPlain("more than %d values" % MAX_NODES)
        if rest:
            return yaml_scalar(rest), i
        if i < len(lines) and (lines[i][0] > indent or (not item and lines[i][0] == indent and (
                lines[i][1] == "-" or lines[i][1].startswith("- ")))):
            return block(i, lines[i][0], depth + 1)
        return None, i

    def mapping(i, indent, depth):
        out = {}
        while i < len(lines) and lines[i][0] == indent:
            kv = yaml_key(lines[i][1])
            if kv is None:
                raise NotPlain("line not a `key: value` (multi-line values are not read on the host)")
            out[kv[0]], i = value_after(i + 1, indent, kv[1], depth)
        if i < len(lines) and lines[i][0] > indent:
            raise NotPlain("unexpected indentation")
        return out, i

    def seq(i, indent, depth):
        out = []
        while i < len(lines) and lines[i][0] == indent and (lines[i][1] == "-" or lines[i][1].startswith("- ")):
            rest = lines[i][1][1:].lstrip(" ")
            if rest and (yaml_key(rest) or rest == "-" or rest.startswith("- ")):
                # `- key: value` (a mapping) or `- - x` (a list) whose lines sit where `key` or the inner `-` does
                lines[i] = [indent + len(lines[i][1]) - len(rest), rest]
                item, i = block(i, lines[i][0], depth + 1)
            else:
                item, i = value_after(i + 1, indent, rest, depth, item=True)
            out.append(item)
        return out, i

    if not lines:
        return None
    data, i = block(0, lines[0][0], 0)
    if i != len(lines):
        raise NotPlain("unexpected indentation")
    return data


def parse_config(text):
    """A served config (JSON, or the plain YAML of parse_yaml) as a dict; ValueError (NotPlain for YAML beyond plain
    mappings) with the reason otherwise."""
    try:
        doc = json.loads(text) if text.lstrip()[:1] in ("{", "[") else parse_yaml(text)
    except NotPlain:
        raise
    except (ValueError, RecursionError):
        raise ValueError("not valid JSON or YAML") from None
    if not isinstance(doc, dict):
        raise ValueError("not a mapping of settings")
    return doc


# --- installed distributions, read as files (their METADATA headers): pyenv, caches, settings -----------------------
def dist_key(name):
    """A distribution's name as pip compares them (`Flash_Attn` = `flash-attn`)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def dist_metadata(path):
    """(name, version) from a METADATA / PKG-INFO file's headers; (None, None) when it cannot be read."""
    name = version = None
    try:
        text = host_text(path, 1 << 16)
    except OSError:
        return None, None
    for line in text.splitlines():
        if not line.strip():
            break
        if line.startswith("Name:") and name is None:
            name = line[5:].strip()
        elif line.startswith("Version:") and version is None:
            version = line[8:].strip()
    return name, version


def distributions(path, wanted=None):
    """{dist_key(name): {"version", "location"}} of the .dist-info and .egg-info in the directories of path (the first
    one found wins, as for imports); only those whose directory name says they are in `wanted` (dist_keys), if
    given."""
    found = {}
    for entry in path:
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
            if wanted is not None and dist_key(d.split("-", 1)[0]) not in wanted:
                continue
            name, version = dist_metadata(meta)
            if name and dist_key(name) not in found:
                found[dist_key(name)] = {"version": version, "location": entry}
    return found


# --- end of prelude ---------------------------------------------------------------------------------------------------
