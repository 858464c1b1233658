"""Serious #8 of issue 23: for grep's --include/--exclude "the last matching one wins", so the credential excludes a
recursive grep gets from the policy come after every option of the caller's, and no spelling reorders them.

Against a real sshd and the real GNU grep: five credential files (`.env`, `id_rsa`, `server.key`, `credentials.json`,
`.netrc`) and a `.ssh` directory beside a log, each holding a marker, searched with every include spelling.
"""

from __future__ import annotations

import os

import pytest

from orchestrator.hosts.options import GREP, getopt_parse
from orchestrator.hosts.policy import check_command, grep_excludes
from orchestrator.hosts.ssh import SshHost
from orchestrator.settings import Settings
from orchestrator.tools.base import execute
from support.security import REGISTRY, make_ctx

CREDENTIALS = [".env", "id_rsa", "server.key", "credentials.json", ".netrc", ".ssh/config"]
INCLUDES = ["--include=*", "--incl=*", "--include *", "--inc *", "--include=id_rsa", "--include=.*",
            "--include=*.key", "--include=*.json", "--exclude=nothing --include=*", "--include=* --exclude-dir=none"]


def _commands(root: str) -> list[str]:
    out = []
    for inc in INCLUDES:
        out += [f"grep -r {inc} MARKER {root}", f"grep -rn MARKER {root} {inc}", f"grep {inc} -r -e MARKER {root}",
                f"grep -r {inc} -- MARKER {root}", f"grep -d recurse {inc} MARKER {root}",
                f"egrep -r {inc} MARKER {root}"]
    return out


def _finds_the_log(command: str) -> bool:
    """Whether the caller's include lets server.log through (then the search must find its line)."""
    return any(inc in command for inc in ("--include=* ", "--incl=* ", "--include * ", "--inc * ")) or \
        command.endswith(("--include=*", "--incl=*", "--include *", "--inc *"))


@pytest.mark.parametrize("command", _commands("/var/log/app"))
def test_the_policy_excludes_come_after_every_caller_option(command):
    decision = check_command(command)
    if not decision.allowed:  # `--include=id_rsa` names a credential: refused outright
        assert "credentials" in decision.reason, decision.reason
        return
    parsed = getopt_parse(GREP, decision.argv[1:])
    assert not isinstance(parsed, str)
    names = [(n, v) for n, v in parsed[0] if n in ("--include", "--exclude", "--exclude-dir")]
    theirs = [f"{n}={v}" for n, v in names]
    # the last len(excludes) include/exclude options are the policy's, in its order
    assert theirs[-len(grep_excludes()):] == grep_excludes(), theirs


@pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")
async def test_no_include_spelling_reads_a_credential_over_ssh(sshd_factory, tmp_path):
    root = tmp_path / "app"
    (root / ".ssh").mkdir(parents=True)
    for name in CREDENTIALS:
        (root / name).write_text(f"MARKER secret-in-{name}\n")
    (root / "server.log").write_text("MARKER ordinary log line\n")
    host = await SshHost(sshd_factory().target(), Settings()).connect()
    try:
        for command in _commands(str(root)):
            out = (await execute(REGISTRY.get("shell"), "shell", {"command": command}, make_ctx(host))).output
            assert "secret-in-" not in out.text, (command, out.text)
            if _finds_the_log(command):
                assert "ordinary log line" in out.text, (command, out.text)  # the search itself ran
    finally:
        await host.aclose()
