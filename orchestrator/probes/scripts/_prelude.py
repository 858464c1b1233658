# --- prelude (orchestrator/probes/scripts/_prelude.py): helpers every probe script shares, sent ahead of each one ---
# stdlib only, Python >= 3.8, read-only. One reviewed copy instead of drifting ones: a script never redefines these
# names (tests/probes/test_probe_scripts.py checks it).
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


# --- end of prelude ---------------------------------------------------------------------------------------------------
