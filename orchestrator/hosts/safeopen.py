"""Open a checked path once, without following a symlink anywhere on it, and read or hand on what was opened.

`LocalHost.read_file` calls `open_checked`; `SshHost.read_file` and hosts that only run commands send this file to
`python3 -I -S -c` (stdlib-only, Python >= 3.8, Linux). The policy checks a path resolved on the host (symlinks
followed) before anything opens it; between that check and the open, a name can be swapped for a symlink to
/etc/shadow or for a FIFO. So the resolved path is opened one component at a time from `/` with O_NOFOLLOW (a
component that is now a symlink fails: the path changed since it was checked), the last as O_PATH (opening a
device or a FIFO for reading has effects: a watchdog arms, the open blocks), the descriptor is fstat-ed (a regular
file, or a directory where one is allowed), and only then reopened for reading through /proc/self/fd, which reopens
that same inode, never a name. Everything read comes from that descriptor.

Command line: `read PATH MAX_BYTES` prints up to MAX_BYTES of the file; `exec JSON` runs {"argv": [...], "open":
{index: path}} with each argv[index] replaced by /dev/fd/N of its opened descriptor (the program reads what was
checked, whatever the name points at by then), numbered from FIRST_FD in the order of the indices. Exit codes: 44 missing, 45 not a regular file (or directory), 46 a
symlink on the path (changed since it was checked), 47 not permitted, 48 not absolute.
"""

import errno
import json
import os
import stat
import sys

MISSING, NOT_REGULAR, SYMLINK, DENIED, RELATIVE = 44, 45, 46, 47, 48
FIRST_FD = 10
"""`exec` hands the k-th opened path to the program as /dev/fd/(FIRST_FD + k), so the caller can name it back."""
_O_PATH = getattr(os, "O_PATH", 0)


class Refused(Exception):
    """The path cannot be opened as checked; `code` is the exit code above, the message one line."""

    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code


def _os_error(exc, path):
    if exc.errno == errno.ENOENT:
        return Refused(MISSING, "%s does not exist" % path)
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return Refused(SYMLINK, "%s has a symlink on its path (it changed since it was checked): not opened" % path)
    if exc.errno in (errno.EACCES, errno.EPERM):
        return Refused(DENIED, "%s: permission denied" % path)
    return Refused(NOT_REGULAR, "%s: %s" % (path, exc.strerror or exc))


def open_checked(path, allow_dir=False):
    """A descriptor open for reading on the regular file (or directory, if allow_dir) at the absolute path, never
    through a symlink; raises Refused."""
    if not path.startswith("/"):
        raise Refused(RELATIVE, "%s is not an absolute path" % path)
    parts = [p for p in path.split("/") if p]
    if any(p == ".." for p in parts):
        raise Refused(RELATIVE, "%s climbs with '..'" % path)
    fd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_NOFOLLOW | os.O_CLOEXEC | (_O_PATH if last and _O_PATH else os.O_RDONLY)
            if not last:
                flags |= os.O_DIRECTORY
            elif not _O_PATH:
                flags |= os.O_NONBLOCK | os.O_NOCTTY
            try:
                nxt = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                raise _os_error(exc, path) from None
            os.close(fd)
            fd = nxt
        st = os.fstat(fd)
        if stat.S_ISLNK(st.st_mode):
            raise Refused(SYMLINK, "%s is a symlink, not a regular file (opened without following it): not read" % path)
        if not (stat.S_ISREG(st.st_mode) or (allow_dir and stat.S_ISDIR(st.st_mode))):
            raise Refused(NOT_REGULAR, "%s is not a regular file (a directory, device, pipe or socket): not opened"
                          % path)
        if _O_PATH and parts:
            # reopen the inode the O_PATH descriptor holds (not a name): read access is checked here
            flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
            try:
                real = os.open("/proc/self/fd/%d" % fd, flags)
            except OSError as exc:
                raise _os_error(exc, path) from None
            st2 = os.fstat(real)
            if (st2.st_dev, st2.st_ino) != (st.st_dev, st.st_ino):
                os.close(real)
                raise Refused(SYMLINK, "%s changed while it was opened: not read" % path)
            os.close(fd)
            fd = real
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_checked(path, max_bytes):
    """Up to max_bytes of the regular file at path, read from the one descriptor `open_checked` returned."""
    fd = open_checked(path)
    try:
        chunks, left = [], max_bytes
        while left > 0:
            try:
                got = os.read(fd, min(left, 1 << 20))
            except BlockingIOError:
                break
            if not got:
                break
            chunks.append(got)
            left -= len(got)
        return b"".join(chunks)
    finally:
        os.close(fd)


def main(argv):
    try:
        if argv[1] == "read":
            sys.stdout.buffer.write(read_checked(argv[2], int(argv[3])))
            sys.stdout.flush()
            return 0
        if argv[1] == "exec":
            spec = json.loads(argv[2])
            args = list(spec["argv"])
            for k, (index, path) in enumerate(sorted(spec.get("open", {}).items(), key=lambda kv: int(kv[0]))):
                fd = open_checked(path, allow_dir=True)
                os.dup2(fd, FIRST_FD + k)  # inheritable
                os.close(fd)
                args[int(index)] = "/dev/fd/%d" % (FIRST_FD + k)
            os.execvp(args[0], args)
    except Refused as exc:
        sys.stderr.write(str(exc) + "\n")
        return exc.code
    except OSError as exc:
        sys.stderr.write("%s\n" % exc)
        return 127 if argv[1:2] == ["exec"] else 1
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
