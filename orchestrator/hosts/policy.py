"""The read-only command policy for free-form commands a model asks to run on a host.

Pure: a command line in, a decision out. Commands run without a shell (argv locally, each argument quoted for the
remote shell over SSH), so anything that only means something to a shell is refused rather than silently passed on
as a literal, and only allowlisted programs that cannot write run, with their writing options refused.
"""

from __future__ import annotations

import posixpath
import re
import shlex

from pydantic import BaseModel

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

# Programs that only read. Value: options refused for that program (exact, or prefix when ending in "=").
_ALLOWED: dict[str, frozenset[str]] = {
    "cat": frozenset(),
    "head": frozenset(),
    "tail": frozenset(),
    "ls": frozenset(),
    "stat": frozenset(),
    "wc": frozenset(),
    "file": frozenset({"-C", "--compile"}),
    "grep": frozenset(),
    "egrep": frozenset(),
    "fgrep": frozenset(),
    "du": frozenset({"--files0-from", "--files0-from="}),
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
    "printenv": frozenset(),
    "readlink": frozenset(),
    "realpath": frozenset(),
    "basename": frozenset(),
    "dirname": frozenset(),
    "md5sum": frozenset(),
    "sha256sum": frozenset(),
    "find": frozenset({
        "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls", "-files0-from",
    }),
    "dmesg": frozenset({"-c", "-C", "--clear", "--read-clear", "-D", "--console-off", "-E", "--console-on",
                        "-n", "--console-level"}),  # and inside clusters / abbreviated: see _GETOPT
    "nvidia-smi": frozenset(),  # checked by _check_nvidia_smi
    "pip": frozenset(),  # checked by _check_pip
    "pip3": frozenset(),
    "nvcc": frozenset(),  # only --version, checked below
    "cuobjdump": frozenset(),  # only listing, checked below
    "numactl": frozenset(),  # only --hardware / --show
    "env": frozenset(),  # only without arguments: `env CMD` would run anything
    "hostname": frozenset(),  # only without arguments: `hostname NAME` sets it
    "date": frozenset(),  # only without arguments: `date -s` sets the clock
}

_NVSMI_FLAGS = {"-q", "--query", "-x", "--xml-format", "-L", "--list-gpus", "-h", "--help", "--help-query-gpu",
                "--help-query-compute-apps", "-u", "--unit"}
_NVSMI_VALUE_FLAGS = {"-i", "--id", "-d", "--display", "--format", "--query-gpu", "--query-compute-apps",
                      "--query-supported-clocks"}
# getopt_long programs: short options cluster (`-Tc` is `-T -c`) and long options abbreviate (`--read-c`), so their
# refused options are also looked for inside clusters and as prefixes. Value: (refused short letters, short letters
# that take a value, so the rest of the cluster is that value).
_GETOPT: dict[str, tuple[str, str]] = {
    "dmesg": ("cCDEn", "lfsFn"),
    "file": ("C", "eFfmP"),
}

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
_PROC_LINKS = re.compile(r"^/proc/[^/]+/(root|cwd|fd|map_files)(/|$)")
_CONSUMING_FILES = {"kmsg", "trace_pipe", "trace_pipe_raw"}

_NVSMI_SUBCOMMANDS = {"topo": {"-m", "--matrix"}, "nvlink": {"-s", "--status", "-c", "--capabilities", "-i"}}


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
    if posixpath.basename(norm) in _CONSUMING_FILES:
        return f"{path!r} is consumed by reading it: other readers (syslog, tracers) would lose what it returns"
    if not norm.startswith("/") and ".." in norm.split("/"):
        return f"{path!r} climbs out of the working directory: give an absolute path"
    return None


# Credentials an investigation never needs, and whose content must not reach a model provider or a transcript.
_SECRET_PARTS = ("/.ssh/", "/.aws/", "/.gnupg/", "/.docker/config.json", "/.kube/config", "/.config/gcloud/",
                 "/.netrc", "/.git-credentials", "/.pgpass", "/.vault-token", "/etc/shadow", "/etc/gshadow",
                 "/etc/ssh/ssh_host_", "/.cache/huggingface/token", "/.huggingface/token", "/.pypirc")
_SECRET_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".kdbx")
_SECRET_NAMES = frozenset({"id_rsa", "id_ecdsa", "id_ed25519", "id_dsa", "credentials", ".env"})
# Recursive searches rooted here would sweep credentials into the output.
_BROAD_ROOTS = frozenset({"/", "/root", "/home", "/etc", "~", "."})


def secret_path(path: str) -> str | None:
    """Why path names credentials the investigation must not read, or None."""
    norm = _normpath(path)
    probe = norm if norm.startswith("/") else "/" + norm
    base = posixpath.basename(norm)
    if (any(part in probe + ("/" if not probe.endswith("/") else "") for part in _SECRET_PARTS)
            or base.endswith(_SECRET_SUFFIXES) or base in _SECRET_NAMES):
        return f"{path!r} holds credentials: investigations never read keys, tokens or password files"
    return None


def _read_operands(arg: str) -> list[str]:
    """The strings in one argument that a program could open: the argument, an `--opt=VALUE`, a `-fVALUE`."""
    out = [arg]
    if arg.startswith("-") and "=" in arg:
        out.append(arg.split("=", 1)[1])
    if arg.startswith("-") and not arg.startswith("--") and len(arg) > 2:
        out.append(arg[2:])
    return out


def _check_reads(program: str, args: list[str]) -> str | None:
    if program in _NAME_ONLY:
        return None
    recursive = program in ("grep", "egrep", "fgrep") and any(
        a in ("-r", "-R", "--recursive", "--dereference-recursive")
        or (a.startswith("-") and not a.startswith("--") and ("r" in a[1:] or "R" in a[1:])) for a in args)
    for arg in args:
        if recursive and not arg.startswith("-") and _normpath(arg).rstrip("/") in _BROAD_ROOTS | {""}:
            return f"{program}: a recursive search of {arg!r} would sweep credentials into the output; search a narrower directory (e.g. /var/log)"
        for candidate in _read_operands(arg):
            path_like = "/" in candidate or candidate in (".", "..")
            why = (unsafe_read(candidate) if path_like else None) or secret_path(candidate)
            if why is not None:
                return f"{program}: {why}"
    return None


def _getopt_refused(args: list[str], refused_short: str, value_short: str, refused_long: frozenset[str]) -> str | None:
    for arg in args:
        if arg == "--":
            return None
        if arg.startswith("--"):
            name = arg.split("=", 1)[0]
            if len(name) > 2 and any(r.startswith(name) for r in refused_long if r.startswith("--")):
                return arg
        elif arg.startswith("-") and len(arg) > 1:
            for letter in arg[1:]:
                if letter in refused_short:
                    return arg
                if letter in value_short:
                    break
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
    if program == "nvidia-smi":
        return _check_nvidia_smi(args)
    if program in ("pip", "pip3"):
        return _check_pip(program, args)
    if program in _GETOPT:
        refused_short, value_short = _GETOPT[program]
        bad = _getopt_refused(args, refused_short, value_short, _ALLOWED[program])
        if bad is not None:
            return f"{program} option {bad!r} executes, deletes or writes"
    if program == "lspci":
        shorts = [a for a in args if a.startswith("-") and not a.startswith("--")]
        if any("H" in a for a in shorts) or sum(a.count("x") for a in shorts) >= 3:
            return ("lspci options -xxx/-xxxx (config space some devices crash on when read) and -H (direct hardware "
                    "access) are not allowed")
    if program in ("env", "hostname", "date"):
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
    if program not in _ALLOWED:
        return _refuse(
            f"{first!r} is not an allowed read-only program; allowed: {', '.join(sorted(_ALLOWED))}", argv
        )
    why = _check_program(program, argv[1:])
    if why is not None:
        return _refuse(why, argv)
    return PolicyDecision(allowed=True, argv=argv, reason="read-only program " + program)
