"""Serious #5 of issue 23: allowlisted programs' options are read the way their own getopt_long reads them.

`du --files0-fr=FILE` is `du --files0-from=FILE` to GNU getopt (any unambiguous prefix of a long option), and du then
prints the file's contents in its error messages. Every refused option is enumerated here in every spelling getopt
accepts (each prefix, `=VALUE` and a separate value, inside a cluster of short options, an attached value), the real
programs installed here confirm they take those spellings, and the attack runs through the `shell` tool against a
real sshd.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from orchestrator.hosts.options import REFUSED, SPECS, getopt_parse
from orchestrator.hosts.policy import _ALLOWED, check_argv, check_command
from orchestrator.hosts.ssh import SshHost
from orchestrator.settings import Settings
from orchestrator.tools.base import execute
from support.security import REGISTRY, CountingHost, make_ctx

VALUE = "/var/log/x.list"
CUSTOM = {"ps", "find", "nvidia-smi", "pip", "pip3", "nvcc", "cuobjdump", "numactl", "hostname", "date", "lspci"}
"""Allowlisted programs that do not parse with getopt_long: each has an exact-match checker of its own in policy.py."""


def _spellings(program: str, name: str) -> list[list[str]]:
    """Every command line GNU getopt_long reads as option `name` of program (with a value where it takes one)."""
    spec = SPECS[program]
    out: list[list[str]] = []
    if name.startswith("--"):
        long = name[2:]
        valued = long in spec.long_values
        longs = spec.long_flags | spec.long_values | spec.long_optional
        for k in range(1, len(long) + 1):
            if long[:k] in longs and k < len(long):
                continue  # the exact name of another option: getopt takes that one
            prefix = "--" + long[:k]
            if valued:
                out += [[prefix + "=" + VALUE], [prefix, VALUE], ["-" + (spec.short_flags[:1] or ""), prefix + "=" + VALUE]
                        if spec.short_flags else [prefix + "=" + VALUE, "/var/log"]]
            else:
                out += [[prefix], [prefix, "/var/log/syslog"]]
    else:
        letter = name[1]
        valued = letter in spec.short_values
        flags = [f for f in spec.short_flags if f.isalpha() and "-" + f not in REFUSED.get(program, {})][:2]
        cluster = "".join(flags)
        if valued:
            out += [["-" + letter, VALUE], ["-" + letter + VALUE], ["-" + cluster + letter + VALUE],
                    ["-" + cluster + letter, VALUE]]
        else:
            out += [["-" + letter], ["-" + cluster + letter], ["-" + letter + cluster], ["/var/log/syslog", "-" + letter]]
    return out


CASES = [(program, name, argv) for program in sorted(REFUSED) for name in sorted(REFUSED[program])
         for argv in _spellings(program, name)]


def test_every_allowlisted_program_has_its_option_table_or_a_checker_of_its_own():
    assert set(_ALLOWED) <= set(SPECS) | CUSTOM, set(_ALLOWED) - set(SPECS) - CUSTOM


@pytest.mark.parametrize("program,name,args", CASES, ids=[f"{p}:{' '.join(a)}" for p, _, a in CASES])
def test_every_spelling_of_a_refused_option_is_refused(program, name, args):
    decision = check_argv([program, *args])
    assert not decision.allowed, (program, args)
    # the program itself would read it as that option (or reject the line): never as something harmless
    parsed = getopt_parse(SPECS[program], args)
    assert isinstance(parsed, str) or name in [n for n, _ in parsed[0]], (args, parsed)


@pytest.mark.parametrize("program", sorted(SPECS))
def test_unknown_options_are_refused_for_every_getopt_program(program):
    spec = SPECS[program]
    unused = next(c for c in "jJKQWY" if c not in spec.short_flags + spec.short_values + spec.short_optional)
    for args in (["--no-such-option-zz"], ["-" + unused], ["--=x"]):
        assert not check_argv([program, *args]).allowed, (program, args)


@pytest.mark.parametrize("command", [
    "du -sh /var/log", "du --max-d=1 -h /var/log", "du -d 1 /var/log", "wc -l /var/log/syslog", "wc --li /var/log/syslog",
    "md5sum /var/log/syslog", "sha256sum --tag /var/log/syslog", "ls -la /var/log", "ls --sort=size -l /var/log",
    "head -n 5 /var/log/syslog", "head -5 /var/log/syslog", "tail -n50 /var/log/syslog", "cat -A /var/log/syslog",
    "dmesg -T", "dmesg --level=err,warn", "file -b /var/log/syslog", "stat -c %s /var/log/syslog", "uname -a",
    "free -g", "nproc --all", "id -u", "readlink -f /var/log/syslog", "realpath --relative-to=/var /var/log",
    "basename -s .log /var/log/x.log", "lscpu -e", "df -hT", "grep -rn error /var/log/vllm",
])
def test_ordinary_read_only_lines_still_run(command):
    decision = check_command(command)
    assert decision.allowed, decision.reason


def _real_takes(program: str, args: list[str]) -> bool:
    """Whether the installed program reads args as valid options: `--help` after them exits 0 before anything runs."""
    r = subprocess.run([program, *args, "--help"], capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    return r.returncode == 0


@pytest.mark.parametrize("program,name", [(p, n) for p in sorted(REFUSED) for n in sorted(REFUSED[p])
                                          if n.startswith("--") and p not in ("dmesg", "egrep", "fgrep")])
def test_the_installed_programs_take_the_abbreviations_refused_here(program, name):
    """Against the real program: its getopt expands the shortest unambiguous prefix in our table to the option."""
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed here")
    spec = SPECS[program]
    longs = spec.long_flags | spec.long_values | spec.long_optional
    full = name[2:]
    k = next((k for k in range(1, len(full)) if [n for n in longs if n.startswith(full[:k])] == [full]), len(full))
    args = [f"--{full[:k]}" + ("=/dev/null" if full in spec.long_values else "")]
    if not _real_takes(program, args):
        pytest.skip(f"the installed {program} has no {name} (an older version)")
    assert not check_argv([program, *args]).allowed


@pytest.fixture
def planted(tmp_path):
    """A harmless-looking list file that is the text of a private key (du prints a files0 list's names on errors)."""
    d = tmp_path / "data"
    d.mkdir()
    key = tmp_path / "keys" / "id_ed25519"
    key.parent.mkdir()
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nSECRETKEYMATERIAL0123\n-----END OPENSSH PRIVATE KEY-----\n")
    (d / "notes.txt").symlink_to(key)
    return d / "notes.txt"


@pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")
async def test_file_list_options_never_run_over_ssh(sshd_factory, planted):
    host = CountingHost(await SshHost(sshd_factory().target(), Settings()).connect())
    try:
        for command in [f"du --files0-fr={planted}", f"du --files0 {planted}", f"du -s --fi={planted}",
                        f"wc --files0-f={planted}", f"wc -l --files {planted}", f"md5sum -c {planted}",
                        f"md5sum -bc {planted}", f"sha256sum --ch {planted}", f"sha256sum --c {planted}",
                        f"du -X{planted} /var/log", f"du --exclude-f={planted} /var/log", f"file -f {planted}",
                        f"file --files-f={planted}", f"grep --fil={planted} /var/log/syslog"]:
            ctx = make_ctx(host)
            host.calls.clear()
            out = (await execute(REGISTRY.get("shell"), "shell", {"command": command}, ctx)).output
            assert out.is_error and "refused" in out.text, (command, out.text)
            assert "SECRETKEYMATERIAL" not in out.text
            assert host.calls == [], (command, host.calls)  # nothing reached the host
            assert ctx.refusals, command
    finally:
        await host.inner.aclose()
