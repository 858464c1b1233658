"""The read-only command policy for free-form commands a model asks to run on a host.

Pure: a command line in, a decision out. Commands run without a shell (argv locally, each argument quoted for the
remote shell over SSH), so anything that only means something to a shell is refused rather than silently passed on
as a literal, and only allowlisted programs that cannot write run, with their writing options refused.
"""

from __future__ import annotations

import fnmatch
import functools
import posixpath
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel

from orchestrator.hosts.options import GREP, REFUSED, SPECS, getopt_parse, getopt_scan

# Characters a shell would treat as operators, expansions or redirections.
_SHELL_META = {
    "\n": "a newline",
    "\r": "a carriage return",
    ";": "`;`",
    "&": "`&` (and `&&`)",
    "|": "`|` (and `||`)",
    "`": "a backtick",
    "$": "`$` (variables and `$(...)`)",
    ">": "`>` redirection",
    "<": "`<` redirection",
}
_GLOB_CHARS = set("*?[]{}~")
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")

# Programs that only read. Value: options refused for that program (exact, or prefix when ending in "="), for the
# programs that do not parse with getopt_long; those (options.SPECS) are parsed as they parse and checked there.
_ALLOWED: dict[str, frozenset[str]] = {
    "cat": frozenset(),
    "head": frozenset(),
    "tail": frozenset(),
    "ls": frozenset(),
    "stat": frozenset(),
    "wc": frozenset(),
    "file": frozenset(),  # options of getopt_long programs: options.py (SPECS, REFUSED)
    "grep": frozenset(),
    "egrep": frozenset(),
    "fgrep": frozenset(),
    "du": frozenset(),
    "df": frozenset(),
    "uname": frozenset(),
    "ps": frozenset(),
    "lscpu": frozenset(),
    "lspci": frozenset(),
    "lsmod": frozenset(),
    "free": frozenset(),
    "nproc": frozenset(),
    "uptime": frozenset(),
    "which": frozenset(),
    "whoami": frozenset(),
    "id": frozenset(),
    "readlink": frozenset(),
    "realpath": frozenset(),
    "basename": frozenset(),
    "dirname": frozenset(),
    "md5sum": frozenset(),
    "sha256sum": frozenset(),
    "find": frozenset({
        "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls", "-files0-from",
    }),
    "dmesg": frozenset(),
    "nvidia-smi": frozenset(),  # checked by _check_nvidia_smi
    "pip": frozenset(),  # checked by _check_pip
    "pip3": frozenset(),
    "nvcc": frozenset(),  # only --version, checked below
    "cuobjdump": frozenset(),  # only listing, checked below
    "numactl": frozenset(),  # only --hardware / --show
    "hostname": frozenset(),  # only without arguments: `hostname NAME` sets it
    "date": frozenset(),  # only without arguments: `date -s` sets the clock
}

_NVSMI_FLAGS = {"-q", "--query", "-x", "--xml-format", "-L", "--list-gpus", "-h", "--help", "--help-query-gpu",
                "--help-query-compute-apps", "-u", "--unit"}
_NVSMI_VALUE_FLAGS = {"-i", "--id", "-d", "--display", "--format", "--query-gpu", "--query-compute-apps",
                      "--query-supported-clocks"}
# pip subcommands: the options each may take (optparse: clusters of the flag letters, unique long prefixes). Anything
# else is refused: `--log`/`--local-log` and `--cache-dir` write files, `--python` runs another interpreter, index
# options and `--outdated` go to the network.
_PIP_COMMON_FLAGS = {"-v", "--verbose", "-q", "--quiet", "--isolated", "--no-input", "--no-color", "--no-cache-dir",
                     "--disable-pip-version-check", "--no-python-version-warning", "-h", "--help", "-V", "--version"}
_PIP: dict[str, tuple[set[str], set[str]]] = {
    "list": ({"-e", "--editable", "-l", "--local", "--user", "--pre", "--not-required", "--exclude-editable",
              "--include-editable"}, {"--path", "--format", "--exclude"}),
    "show": ({"-f", "--files"}, set()),
    "freeze": ({"-l", "--local", "--user", "--all", "--exclude-editable"}, {"--path", "--exclude", "-r", "--requirement"}),
}

# Programs that never open the files they are given (they stat, list or only print names): a device path is harmless
# to them. Every other program reads what it is given, and reading some files has effects: opening /dev/watchdog arms
# the watchdog (the machine reboots), /proc/kmsg and tracing's trace_pipe consume what they return, ttys steal input.
_NAME_ONLY = {"ls", "stat", "find", "du", "df", "which", "readlink", "realpath", "basename", "dirname"}
_PROC_LINKS = re.compile(r"^/proc/[^/]+/(?:task/[^/]+/)?(root|cwd|fd|map_files)(/|$)")
_CONSUMING_FILES = {"kmsg", "trace_pipe", "trace_pipe_raw"}
# sysfs files of a PCI device that read its configuration space, option ROM or BARs (Documentation/PCI/sysfs-pci.rst:
# https://www.kernel.org/doc/Documentation/PCI/sysfs-pci.rst), by the /sys/bus/pci name or the /sys/devices path
_PCI_SPACE = re.compile(r"^/sys/(?:bus/pci/devices/[^/]+|devices/pci[^/]*(?:/[^/]+)*)/"
                        r"(?:config|rom|resource[0-9]*(?:_wc)?|vpd)$")

_NVSMI_SUBCOMMANDS = {"topo": {"-m", "--matrix"}, "nvlink": {"-s", "--status", "-c", "--capabilities", "-i"}}


# Process-environment listings: free-form commands never print environments (a fixed probe reads the serving
# processes' NCCL_*/engine variables, filtered on the host).
_ENVIRONMENT_LISTINGS = frozenset({"env", "printenv", "set", "export", "declare"})


class PolicyDecision(BaseModel):
    """Whether a command may run, the argv it runs as, and why, in one line."""

    allowed: bool
    argv: list[str] = []
    reason: str


def _refuse(reason: str, argv: list[str] | None = None) -> PolicyDecision:
    return PolicyDecision(allowed=False, argv=argv or [], reason=reason)


def _refused_option(args: list[str], refused: frozenset[str]) -> str | None:
    for arg in args:
        if arg in refused or any(arg.startswith(r) for r in refused if r.endswith("=")):
            return arg
        if arg.startswith("--") and "=" in arg and arg.split("=", 1)[0] in refused:
            return arg
    return None


def _normpath(path: str) -> str:
    norm = posixpath.normpath(path)
    return re.sub(r"^/+", "/", norm)


def unsafe_read(path: str) -> str | None:
    """Why opening path to read it could change the machine (a device, a consuming file), or None.

    Pure, so it cannot follow symlinks: hosts still refuse anything that is not a regular file before opening it.
    """
    norm = _normpath(path)
    if norm == "/dev" or norm.startswith("/dev/") or _PROC_LINKS.match(norm):
        return f"{path!r} is a device or a link into one: reading devices can arm a watchdog or steal input"
    if _PCI_SPACE.match(norm):
        return (f"{path!r} is a PCI device's configuration space or memory (what `lspci -xxx` reads: some devices "
                "crash or hang when it is read): refused")
    if posixpath.basename(norm) in _CONSUMING_FILES:
        return f"{path!r} is consumed by reading it: other readers (syslog, tracers) would lose what it returns"
    if not norm.startswith("/") and ".." in norm.split("/"):
        return f"{path!r} climbs out of the working directory: give an absolute path"
    return None


@dataclass(frozen=True)
class CredentialRule:
    kind: str
    match: str
    what: str
    examples: tuple[str, ...]


@functools.lru_cache(maxsize=1)
def credential_rules() -> tuple[CredentialRule, ...]:
    """The credential locations of `credentials.yaml` (data, one entry per kind of file, each with examples)."""
    raw = yaml.load((Path(__file__).with_name("credentials.yaml")).read_text(),
                    Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: start-up
    return tuple(CredentialRule(kind=e["kind"], match=e["match"], what=e["what"], examples=tuple(e.get("examples", ())))
                 for e in raw)


def _credential_hit(norm: str) -> CredentialRule | None:
    parts = [p for p in norm.split("/") if p]
    base = parts[-1] if parts else ""
    slashed = "/" + "/".join(parts) + "/"
    for rule in credential_rules():
        if rule.kind == "dir" and f"/{rule.match}/" in slashed:
            return rule
        if rule.kind == "suffix" and slashed.endswith(f"/{rule.match}/"):
            return rule
        if rule.kind == "name" and base == rule.match:
            return rule
        if rule.kind == "glob" and fnmatch.fnmatchcase(base, rule.match):
            return rule
        if rule.kind == "path" and (norm == rule.match or norm.startswith(rule.match)):
            return rule
    return None


# Recursive searches rooted here would sweep credentials (homes, /etc) or kernel/process state into the output.
_BROAD_ROOTS = frozenset({"/", "/root", "/home", "/etc", "~", ".", "/proc", "/sys", "/dev", "/run", "/var/run", "/tmp",
                          "/var", "/var/lib", "/srv", "/opt", "/usr", "/mnt", "/media"})


def secret_path(path: str) -> str | None:
    """Why path names credentials the investigation must not read, or None (the list is `credentials.yaml`)."""
    norm = _normpath(path)
    rule = _credential_hit(norm)
    if rule is not None:
        return f"{path!r} holds credentials ({rule.what}): investigations never read keys, tokens or password files"
    why = _proc_secret(norm)
    if why is not None:
        return f"{path!r} {why}"
    return None


# /proc entries that hand out another process's memory, environment or whole filesystem view
_PROC_SECRET = re.compile(
    r"^/proc/(?:[^/]+/)?(?:task/[^/]+/)?(?:mem|environ|pagemap|map_files|root|cwd|fd|fdinfo|auxv|syscall|stack|"
    r"personality|timers|clear_refs)(?:/|$)|^/proc/(?:kcore|kmem|kpagecount|kpageflags|kpagecgroup)$"
)


def _proc_secret(norm: str) -> str | None:
    if _PROC_SECRET.match(norm):
        return ("is a process's memory, environment or filesystem view (credentials): never read by free-form "
                "commands")
    return None


def log_refusal(path: str) -> str | None:
    """Why `log_scan` must not read path (given, or as resolved on the host), or None: only log-like files, never
    kernel or process state (/proc: another process's environ, /proc/kmsg consumed by reading), sysfs or devices,
    nor credentials."""
    norm = _normpath(path)
    if re.match(r"^/(?:proc|sys|dev)(?:/|$)", norm):
        return f"{path!r} is kernel, process or device state, not a log file: log_scan reads log files only"
    return unsafe_read(path) or secret_path(path)


def broad_root(path: str) -> str | None:
    """Why a recursive walk from path would sweep too much (credentials, kernel state), or None."""
    norm = _normpath(path).rstrip("/") or "/"
    if norm in _BROAD_ROOTS or not norm.startswith("/") or re.fullmatch(r"/home/[^/]+|/proc/.*|/sys/.*|/dev/.*", norm):
        return (f"a recursive walk of {path!r} would sweep credentials or kernel state into the output; name a "
                "narrower absolute directory (e.g. /var/log/vllm)")
    return None


def extra_path_refusal(path: str) -> str | None:
    """Why an extra cache path (walked recursively on the host) is refused, or None."""
    return unsafe_read(path) or secret_path(path) or broad_root(path)


def _read_operands(arg: str) -> list[str]:
    """The strings in one argument that a program could open: the argument, an `--opt=VALUE`, a `-fVALUE`."""
    out = [arg]
    if arg.startswith("-") and "=" in arg:
        out.append(arg.split("=", 1)[1])
    if arg.startswith("-") and not arg.startswith("--") and len(arg) > 2:
        out.append(arg[2:])
    return out


def _check_grep(program: str, args: list[str]) -> str | None:
    parsed = getopt_parse(GREP, args)
    if isinstance(parsed, str):
        return f"{program}: {parsed}"
    opts, operands = parsed
    names = {n for n, _ in opts}
    recursive = bool(names & {"-r", "-R", "--recursive", "--dereference-recursive"}) or any(
        n in ("-d", "--directories") and v and "recurse".startswith(v) for n, v in opts)
    if not names & {"-e", "--regexp", "-f", "--file"}:
        operands = operands[1:]  # the first operand is the pattern
    if recursive:
        if not operands:
            return (f"{program}: a recursive search without a directory searches the working directory (the home "
                    "directory, credentials included); name a narrower absolute directory (e.g. /var/log/vllm)")
        for path in operands:
            why = broad_root(path)
            if why is not None:
                return f"{program}: {why}"
        if names & {"-R", "--dereference-recursive"}:
            return f"{program} -R follows symlinks (a link can lead into ~/.ssh or /proc): use -r, which does not"
    return None


def grep_excludes() -> list[str]:
    """Options that keep a recursive grep out of every credential location of `credentials.yaml`."""
    out: list[str] = []
    for rule in credential_rules():
        if rule.kind == "dir":
            out.append(f"--exclude-dir={rule.match.rsplit('/', 1)[-1]}")
        elif rule.kind == "suffix":
            out.append(f"--exclude={rule.match.rsplit('/', 1)[-1]}")
        elif rule.kind in ("name", "glob"):
            out.append(f"--exclude={rule.match}")
        else:
            base = posixpath.basename(rule.match.rstrip("/"))
            out += [f"--exclude={base}*", f"--exclude-dir={base}"]
    return out


def with_grep_excludes(argv: list[str]) -> list[str]:
    """A recursive grep's argv with the credential excludes after every option of the caller's: for --include and
    --exclude "the last matching one wins" (GNU grep manual), so a caller's `--include=*` must come before them. They
    go just before a `--` (after it they would be operands); grep permutes, so options after operands still count."""
    got = getopt_scan(GREP, argv[1:])
    cut = 1 + got[2] if not isinstance(got, str) else len(argv)
    return [*argv[:cut], *grep_excludes(), *argv[cut:]]


def _is_recursive_grep(args: list[str]) -> bool:
    parsed = getopt_parse(GREP, args)
    if isinstance(parsed, str):
        return False
    return any(n in ("-r", "--recursive") or (n in ("-d", "--directories") and v and "recurse".startswith(v))
               for n, v in parsed[0])


def _check_ps(args: list[str]) -> str | None:
    """`ps e`/`ps auxe` (BSD `e`) print every process's environment: refused. Values of -o/-p/... are skipped."""
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg.startswith("--"):
            skip = "=" not in arg and arg[2:] in {"format", "pid", "ppid", "sort", "user", "User", "group", "Group",
                                                    "tty", "sid", "cols", "columns", "rows", "width", "quick-pid"}
            continue
        letters = arg[1:] if arg.startswith("-") else arg
        if not arg.startswith("-") and "e" in letters:
            return ("ps with the BSD option `e` prints every process's environment (tokens, keys): refused; "
                    "`ps aux` or `ps -ef` list processes")
        skip = bool(letters) and letters[-1] in ("oOpqugGtCUsk" if arg.startswith("-") else "oOpUtk")
    return None


def _check_reads(program: str, args: list[str]) -> str | None:
    if program in _NAME_ONLY:
        return None
    for arg in args:
        for candidate in _read_operands(arg):
            path_like = "/" in candidate or candidate in (".", "..")
            why = (unsafe_read(candidate) if path_like else None) or secret_path(candidate)
            if why is not None:
                return f"{program}: {why}"
    return None


def _check_getopt(program: str, args: list[str]) -> str | None:
    """Why the options of a getopt_long program are refused once parsed as it parses them (options.py), or None."""
    parsed = getopt_parse(SPECS[program], args)
    if isinstance(parsed, str):
        return (f"{program}: {parsed} (options are read as {program} reads them, prefixes and clusters included; "
                "only its known options run)")
    refused = REFUSED.get(program, {})
    for name, _value in parsed[0]:
        if name in refused:
            return (f"{program} option {name} {refused[name]}: refused (however it is spelled: an abbreviation, "
                    "a cluster, an attached value)")
    return None


def _check_pip(program: str, args: list[str]) -> str | None:
    if not args or args[0] not in _PIP:
        return f"{program} may only run `list`, `show` or `freeze`"
    flags, valued = _PIP[args[0]]
    flags = flags | _PIP_COMMON_FLAGS
    rest = args[1:]
    i = 0
    while i < len(rest):
        arg = rest[i]
        i += 1
        if arg == "--":
            break
        if arg.startswith("--"):
            name = arg.split("=", 1)[0]
            if name not in flags | valued:  # exact names only: optparse would take `--local-` as `--local-log`
                return f"{program} {args[0]} option {arg!r} is not allowed (it writes files, installs, runs another interpreter or goes to the network)"
            if name in valued and "=" not in arg:
                i += 1
        elif arg.startswith("-") and len(arg) > 1:
            letters = arg[1:]
            for j, letter in enumerate(letters):
                opt = "-" + letter
                if opt in valued:
                    if j == len(letters) - 1:
                        i += 1
                    break
                if opt not in flags:
                    return f"{program} {args[0]} option {arg!r} is not allowed (it writes files, installs, runs another interpreter or goes to the network)"
    return None


def _check_nvidia_smi(args: list[str]) -> str | None:
    if args and args[0] in _NVSMI_SUBCOMMANDS:
        allowed = _NVSMI_SUBCOMMANDS[args[0]]
        rest = args[1:]
        i = 0
        while i < len(rest):
            if rest[i] not in allowed:
                return f"nvidia-smi {args[0]} option {rest[i]!r} is not allowed (read-only forms: {', '.join(sorted(allowed))})"
            if rest[i] == "-i" and i + 1 < len(rest) and rest[i + 1].startswith("-"):
                return f"nvidia-smi {args[0]} option -i needs a GPU index, not the option {rest[i + 1]!r}"
            i += 2 if rest[i] == "-i" else 1
        return None
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.split("=", 1)[0]
        if arg in _NVSMI_FLAGS:
            i += 1
        elif name in _NVSMI_VALUE_FLAGS:
            value = arg.split("=", 1)[1] if "=" in arg else (args[i + 1] if i + 1 < len(args) else "")
            if value.startswith("-"):
                return f"nvidia-smi option {name} needs a value, not the option {value!r}"
            i += 1 if "=" in arg else 2
        else:
            return (f"nvidia-smi option {arg!r} is not allowed: only query forms (-q, -x, -L, -i, -d, --query-gpu=, "
                    "--format=, topo -m, nvlink -s) run, never ones that change settings or write files")
    return None


def _check_program(program: str, args: list[str]) -> str | None:
    """Why this allowlisted program with these arguments is refused, or None."""
    why = _check_reads(program, args)
    if why is not None:
        return why
    if program in SPECS:
        why = _check_getopt(program, args)
        if why is not None:
            return why
    if program in ("grep", "egrep", "fgrep"):
        why = _check_grep(program, args)
        if why is not None:
            return why
    if program == "ps":
        return _check_ps(args)
    if program == "nvidia-smi":
        return _check_nvidia_smi(args)
    if program in ("pip", "pip3"):
        return _check_pip(program, args)
    if program == "lspci":
        shorts = [a for a in args if a.startswith("-") and not a.startswith("--")]
        if (any(("H" in a or "A" in a or "O" in a) for a in shorts) or sum(a.count("x") for a in shorts) >= 3
                or any(a.startswith(("--A", "--O", "--H")) for a in args)):
            return ("lspci options -xxx/-xxxx (config space some devices crash on when read), -H and -A (direct "
                    "hardware access, e.g. -A intel-conf1) and -O are not allowed")
    if program in ("hostname", "date"):
        return f"{program} runs only without arguments" if args else None
    if program == "nvcc":
        return None if args in (["--version"], ["-V"]) else "nvcc runs only as `nvcc --version`"
    if program == "cuobjdump":
        listing = {"--list-elf", "-lelf", "--list-ptx", "-lptx", "--list-text", "-ltext"}
        flags = [a for a in args if a.startswith("-")]
        if not flags or any(f not in listing for f in flags):
            return "cuobjdump runs only with listing options (--list-elf, --list-ptx): others extract files"
        return None
    if program == "numactl":
        return None if args in (["--hardware"], ["-H"], ["--show"], ["-s"]) else "numactl runs only as --hardware or --show"
    bad = _refused_option(args, _ALLOWED[program])
    if bad is not None:
        return f"{program} option {bad!r} executes, deletes or writes"
    return None


def check_command(command: str) -> PolicyDecision:
    """Decide whether a free-form command line may run on a host, read-only."""
    if not command.strip():
        return _refuse("empty command: give one program and its arguments, e.g. `nvidia-smi -q`")
    for char, what in _SHELL_META.items():
        if char in command:
            return _refuse(f"{what} is not allowed: commands run without a shell, one program with its arguments")
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        return _refuse(f"cannot parse the command ({exc}): balance the quotes")
    return check_argv(argv)


def check_argv(argv: list[str]) -> PolicyDecision:
    """Decide whether an argv may run on a host, read-only."""
    if not argv:
        return _refuse("empty command: give one program and its arguments")
    for arg in argv:
        for char, what in _SHELL_META.items():
            if char in arg:
                return _refuse(f"{what} is not allowed: commands run without a shell, one program with its arguments")
    first = argv[0]
    if _ENV_ASSIGNMENT.match(first):
        return _refuse(f"environment assignment {first.split('=', 1)[0]}= is not allowed: run the program itself")
    if _GLOB_CHARS & set(first):
        return _refuse(f"program name {first!r} contains glob characters: name the program exactly")
    if "/" in first:
        # a path could name any binary that happens to be called `cat`
        return _refuse(f"program {first!r} is a path: name an allowed program bare, e.g. `cat`", argv)
    program = first
    if program in _ENVIRONMENT_LISTINGS:
        return _refuse(f"{program} prints environment variables (tokens, keys) and runs programs: refused; "
                       "the probes report the serving processes' relevant variables", argv)
    if program not in _ALLOWED:
        return _refuse(
            f"{first!r} is not an allowed read-only program; allowed: {', '.join(sorted(_ALLOWED))}", argv
        )
    why = _check_program(program, argv[1:])
    if why is not None:
        return _refuse(why, argv)
    if program in ("grep", "egrep", "fgrep") and _is_recursive_grep(argv[1:]):
        argv = with_grep_excludes(argv)
    return PolicyDecision(allowed=True, argv=argv, reason="read-only program " + program)


FILE_READERS = frozenset({"cat", "head", "tail", "wc", "file", "md5sum", "sha256sum", "grep", "egrep", "fgrep"})
"""Programs whose operands are files they open and read: run on what was checked, opened once (hosts/safeopen.py)."""


def file_operand_indices(argv: list[str]) -> list[int]:
    """The indices in argv of the operands a FILE_READERS program opens (the pattern of grep left out; `-` is
    its standard input), as its getopt reads the line; [] for any other program."""
    program, args = argv[0], argv[1:]
    if program not in FILE_READERS:
        return []
    got = getopt_scan(SPECS[program], args)
    if isinstance(got, str):
        return []
    opts, operands, _end = got
    if program in ("grep", "egrep", "fgrep") and not {n for n, _ in opts} & {"-e", "--regexp", "-f", "--file"}:
        operands = operands[1:]
    return [i + 1 for i in operands if args[i] != "-"]


def read_operands(argv: list[str]) -> list[str]:
    """The strings of an allowed argv that its program could open as files (resolved on the host before it runs)."""
    program, args = argv[0], argv[1:]
    if program in _NAME_ONLY:
        return []
    if program in SPECS and program not in ("grep", "egrep", "fgrep"):
        got = getopt_parse(SPECS[program], args)
        return list(dict.fromkeys(got[1])) if not isinstance(got, str) else []
    if program in ("grep", "egrep", "fgrep"):
        parsed = getopt_parse(GREP, args)
        if isinstance(parsed, str):
            return []
        opts, operands = parsed
        if not {n for n, _ in opts} & {"-e", "--regexp", "-f", "--file"}:
            operands = operands[1:]  # the pattern
        files = [v for n, v in opts if n in ("-f", "--file", "--exclude-from") and v]
        return list(dict.fromkeys(files + operands))
    out: list[str] = []
    for arg in args:
        if arg == "--":
            continue
        if arg.startswith("-"):
            out += [c for c in _read_operands(arg)[1:] if c]
        else:
            out.append(arg)
    return list(dict.fromkeys(out))


def resolved_refusal(argv: list[str], given: str, kind: str, real: str) -> str | None:
    """Why a file argv's program would open is refused once the host resolved it (symlinks followed), or None.

    kind: f regular file, d directory, o anything else that exists (device, FIFO, socket), n missing."""
    program = argv[0]
    if kind == "n" or not real:
        return None
    where = repr(given) if real == given else f"{given!r} (on the host: {real!r})"
    if kind == "o" and program not in _NAME_ONLY:
        return f"{program}: {where} is a device, pipe or socket: reading it can change or hang the machine"
    why = unsafe_read(real) or secret_path(real)
    if why is not None:
        return f"{program}: {where} is refused: {why}"
    if kind == "d" and program in ("grep", "egrep", "fgrep") and _is_recursive_grep(argv[1:]):
        why = broad_root(real)
        if why is not None:
            return f"{program}: {where}: {why}"
    return None
