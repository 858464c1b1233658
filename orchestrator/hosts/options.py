"""The option tables of the allowlisted programs that parse their command line with GNU getopt_long, and that parse.

Pure data and one pure function. The read-only policy (policy.py) decides on what the program itself will see: GNU
getopt_long takes any unambiguous prefix of a long option (`du --files0-fr=F` is `--files0-from=F`), a long option's
value after `=` or as the next argument, clustered short options (`-abc`), a short option's value attached (`-ovalue`)
or as the next argument, and permutes options and operands. An option not in a program's table is refused (the
program would reject it, or it is one we do not know), so a new version's option cannot slip through.

Sources: the `long_options[]` tables and short-option strings of GNU coreutils 9.x (src/cat.c, head.c, tail.c, ls.c,
stat.c, wc.c, du.c, df.c, uname.c, nproc.c, whoami.c, id.c, readlink.c, realpath.c, basename.c, dirname.c,
md5sum.c: https://github.com/coreutils/coreutils/tree/master/src), GNU grep 3.x (src/grep.c), file 5.x
(src/file_opts.h: https://github.com/file/file/blob/master/src/file_opts.h), util-linux (sys-utils/dmesg.c,
sys-utils/lscpu.c: https://github.com/util-linux/util-linux), procps-ng (src/free.c, src/uptime.c:
https://gitlab.com/procps-ng/procps) and debianutils (which: `-a`, `-s`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GetoptSpec:
    """A getopt_long program's options: short letters without / with / with an optional (attached only) value, and
    long names without / with / with an optional (`=` only) value."""

    short_flags: str = ""
    short_values: str = ""
    long_flags: frozenset[str] = frozenset()
    long_values: frozenset[str] = frozenset()
    long_optional: frozenset[str] = frozenset()
    short_optional: str = ""


def _f(names: str) -> frozenset[str]:
    return frozenset(names.split())


_HV = "help version"

SPECS: dict[str, GetoptSpec] = {
    "cat": GetoptSpec("AbeEnstTuv", long_flags=_f("show-all number-nonblank show-ends number squeeze-blank show-tabs "
                                                  "show-nonprinting " + _HV)),
    "head": GetoptSpec("qvz0123456789", "cn", _f("quiet silent verbose zero-terminated " + _HV), _f("bytes lines")),
    "tail": GetoptSpec("fFqvz0123456789", "cns", _f("quiet retry silent verbose zero-terminated debug " + _HV),
                       _f("bytes lines max-unchanged-stats pid sleep-interval"), _f("follow")),
    "ls": GetoptSpec(
        "abcdfghiklmnopqrstuvxABCDFGHLNQRSUXZ1", "wIT",
        _f("all almost-all author escape ignore-backups directory dired file-type full-time group-directories-first "
           "no-group human-readable si dereference-command-line dereference-command-line-symlink-to-dir inode "
           "kibibytes dereference numeric-uid-gid literal hide-control-chars show-control-chars quote-name reverse "
           "recursive size context zero " + _HV),
        _f("block-size format hide indicator-style ignore quoting-style sort time time-style tabsize width"),
        _f("color classify hyperlink")),
    "stat": GetoptSpec("fLt", "c", _f("dereference file-system terse " + _HV), _f("format printf cached")),
    "wc": GetoptSpec("clLmw", "", _f("bytes chars lines max-line-length words " + _HV), _f("files0-from total")),
    "file": GetoptSpec(
        "0bcCdEhiklLnNprsSvzZ", "eFfmP",
        _f("apple extension mime-type mime-encoding brief checking-printout compile debug mime keep-going list "
           "dereference no-dereference no-buffer no-pad print0 preserve-date raw special-files no-sandbox "
           "uncompress uncompress-noreport " + _HV),
        _f("exclude exclude-quiet files-from separator magic-file parameter")),
    "du": GetoptSpec(
        "0abchHklLmPsSxD", "BdtX",
        _f("null all apparent-size bytes total count-links dereference dereference-args human-readable inodes "
           "no-dereference one-file-system separate-dirs si summarize " + _HV),
        _f("block-size exclude exclude-from files0-from max-depth threshold time-style"), _f("time")),
    "df": GetoptSpec("aHhiklmPTv", "BFtx",
                     _f("all inodes human-readable si local portability print-type sync no-sync total " + _HV),
                     _f("block-size type exclude-type"), _f("output")),
    "uname": GetoptSpec("asnrvmpio", "", _f("all kernel-name nodename kernel-release kernel-version machine processor "
                                            "hardware-platform operating-system sysname release " + _HV)),
    "nproc": GetoptSpec("", "", _f("all " + _HV), _f("ignore")),
    "whoami": GetoptSpec("", "", _f(_HV)),
    "id": GetoptSpec("agGnruzZ", "", _f("context group groups name real user zero " + _HV)),
    "readlink": GetoptSpec("efmnqsvz", "", _f("canonicalize canonicalize-existing canonicalize-missing no-newline "
                                              "quiet silent verbose zero " + _HV)),
    "realpath": GetoptSpec("eLmPqsz", "", _f("canonicalize-existing canonicalize-missing logical physical quiet strip "
                                             "no-symlinks zero " + _HV), _f("relative-to relative-base")),
    "basename": GetoptSpec("az", "s", _f("multiple zero " + _HV), _f("suffix")),
    "dirname": GetoptSpec("z", "", _f("zero " + _HV)),
    "md5sum": GetoptSpec("bctwz", "", _f("binary check tag text ignore-missing quiet status strict warn zero " + _HV)),
    "dmesg": GetoptSpec(
        "CcDdEeHhiJkPprStTuVwWx", "Fflns", _f(
            "clear read-clear console-off console-on decode human json kernel nopager noescape raw syslog show-delta "
            "ctime notime userspace follow follow-new force-prefix reltime " + _HV),
        _f("console-level file facility level since until time-format buffer-size"), _f("color"), short_optional="L"),
    "lscpu": GetoptSpec("aBbcJxyhV", "s", _f("all online offline bytes json hex physical output-all " + _HV),
                        _f("sysroot"), _f("caches extended parse"), short_optional="Cep"),
    "free": GetoptSpec("bkmghltvwL", "sc", _f("bytes kilo mega giga tera peta kibi mebi gibi tebi pebi human si lohi "
                                              "line total committed wide " + _HV), _f("seconds count")),
    "uptime": GetoptSpec("pshVcr", "", _f("pretty since container raw " + _HV)),
    "which": GetoptSpec("as"),
    "lsmod": GetoptSpec(),
}
SPECS["sha256sum"] = SPECS["md5sum"]

# GNU grep 3.x (grep.c long_options and short_options "0123456789A:B:C:D:EFGHIJLNPRTUVX:abcd:e:f:hiLlm:noqRrsuvwxyZz")
GREP = GetoptSpec(
    short_flags="0123456789EFGHILNPRTUVZabchilnoqrsuvwxyz",
    short_values="ABCDXdefm",
    long_flags=frozenset({
        "basic-regexp", "extended-regexp", "fixed-regexp", "fixed-strings", "perl-regexp", "ignore-case",
        "no-ignore-case", "word-regexp", "line-regexp", "null-data", "no-messages", "invert-match", "version", "help",
        "byte-offset", "line-number", "line-buffered", "with-filename", "no-filename", "only-matching", "quiet",
        "silent", "recursive", "dereference-recursive", "files-without-match", "files-with-matches", "count",
        "initial-tab", "null", "text", "binary", "no-group-separator", "unix-byte-offsets",
    }),
    long_values=frozenset({
        "regexp", "file", "max-count", "after-context", "before-context", "context", "label", "binary-files",
        "devices", "directories", "exclude", "exclude-from", "exclude-dir", "include", "group-separator",
    }),
    long_optional=frozenset({"color", "colour"}),
)
for _grep in ("grep", "egrep", "fgrep"):
    SPECS[_grep] = GREP

# Options refused by program, as the program names them once parsed (short and long spellings of each), and why.
_FILE_LIST = "opens a list of file names or checksums from a file (any file, a FIFO)"
REFUSED: dict[str, dict[str, str]] = {
    "du": {"--files0-from": _FILE_LIST, "-X": "reads patterns from a named file",
           "--exclude-from": "reads patterns from a named file"},
    "wc": {"--files0-from": _FILE_LIST},
    "md5sum": {"-c": _FILE_LIST, "--check": _FILE_LIST},
    "sha256sum": {"-c": _FILE_LIST, "--check": _FILE_LIST},
    "file": {"-C": "writes a compiled magic file", "--compile": "writes a compiled magic file",
             "-f": _FILE_LIST, "--files-from": _FILE_LIST, "-m": "reads a named magic file",
             "--magic-file": "reads a named magic file", "-s": "reads block and character devices",
             "--special-files": "reads block and character devices", "-p": "changes files' access times back",
             "--preserve-date": "changes files' access times back"},
    "dmesg": {"-c": "clears the kernel ring buffer", "--read-clear": "clears the kernel ring buffer",
              "-C": "clears the kernel ring buffer", "--clear": "clears the kernel ring buffer",
              "-D": "turns console logging off", "--console-off": "turns console logging off",
              "-E": "turns console logging on", "--console-on": "turns console logging on",
              "-n": "sets the console log level", "--console-level": "sets the console log level",
              "-F": "reads a named file", "--file": "reads a named file"},
    "lscpu": {"-s": "reads another root's /proc and /sys", "--sysroot": "reads another root's /proc and /sys"},
    "grep": {"-f": _FILE_LIST.replace("file names or checksums", "patterns"), "--file": "reads patterns from a file",
             "--exclude-from": "reads patterns from a file"},
}
REFUSED["egrep"] = REFUSED["fgrep"] = REFUSED["grep"]


def getopt_parse(spec: GetoptSpec, args: list[str]) -> tuple[list[tuple[str, str | None]], list[str]] | str:
    """Parse args as GNU getopt_long does (permuted operands, clusters, attached values, unique long prefixes).

    Returns (options as (full name, value), operands), or why the real program would not accept the line (an
    unknown or ambiguous option, a missing value)."""
    got = getopt_scan(spec, args)
    if isinstance(got, str):
        return got
    return got[0], [args[i] for i in got[1]]


def getopt_scan(spec: GetoptSpec, args: list[str]) -> tuple[list[tuple[str, str | None]], list[int], int] | str:
    """`getopt_parse`, with the operands as their indices in args, and the index of the `--` that ends the options
    (len(args) when there is none; a `--` that is an option's value does not end them)."""
    opts: list[tuple[str, str | None]] = []
    operands: list[int] = []
    longs = spec.long_flags | spec.long_values | spec.long_optional
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            operands.extend(range(i, len(args)))
            return opts, operands, i - 1
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if name in longs:
                full = name
            else:
                matches = sorted(n for n in longs if n.startswith(name)) if name else []
                if len(matches) != 1:
                    return f"option {arg!r} is {'ambiguous' if matches else 'unknown'}"
                full = matches[0]
            if full in spec.long_values and not eq:
                if i >= len(args):
                    return f"option {arg!r} needs a value"
                value, i = args[i], i + 1
            elif full in spec.long_flags and eq:
                return f"option {arg!r} takes no value"
            opts.append(("--" + full, value if (eq or full in spec.long_values) else None))
        elif arg.startswith("-") and arg != "-":
            j = 1
            while j < len(arg):
                letter = arg[j]
                j += 1
                if letter in spec.short_values:
                    if j < len(arg):
                        value = arg[j:]
                    elif i < len(args):
                        value, i = args[i], i + 1
                    else:
                        return f"option -{letter} needs a value"
                    opts.append(("-" + letter, value))
                    break
                if letter in spec.short_optional:
                    opts.append(("-" + letter, arg[j:] or None))
                    break
                if letter not in spec.short_flags:
                    return f"option -{letter} is unknown"
                opts.append(("-" + letter, None))
        else:
            operands.append(i - 1)
    return opts, operands, len(args)
