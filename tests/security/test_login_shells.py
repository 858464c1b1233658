"""Item 2 of issue 15: remote commands mean the same under every login shell (bash, fish, csh) behind real sshd."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest

from orchestrator.hosts.ssh import SshHost
from orchestrator.settings import Settings

pytestmark = pytest.mark.ssh

NASTY = ["'", '"', "\\", "\\'", "$HOME", "`id`", "$(id)", "(touch X)", "!", "!!", "*", "a\nb", "", "é€",
         "%1", "~", "{a,b}", "#x", "^x^y", "a;b", "a|b", "a&b", "<x", "'\\''", "--opt=v", "=x", "z" * 9000]


@pytest.fixture(params=["bash", "fish", "csh"])
def shell(request):
    return request.param


async def test_arguments_reach_the_program_verbatim_whatever_the_login_shell(login_shell_sshd, shell):
    sshd = login_shell_sshd(shell)
    host = await SshHost(sshd.target(), Settings()).connect()
    try:
        res = await host.run(["printf", "[%s]\\n", *NASTY], timeout_s=20)
        assert res.exit_code == 0, res.stderr
        assert res.stdout == "".join(f"[{a}]\n" for a in NASTY)
        # stdin still reaches the program, and without stdin the program reads /dev/null
        assert (await host.run(["cat"], stdin="in\n'x'\n")).stdout == "in\n'x'\n"
        assert (await host.run(["cat"])).stdout == ""
        # the login shell really is the one under test (so the test can fail)
        assert Path(pwd.getpwnam(sshd.user).pw_shell).name == shell
    finally:
        await host.aclose()


async def test_the_policy_allowed_ls_does_not_run_touch_under_fish_or_csh(login_shell_sshd, shell):
    """The adversarial review's finding: `ls '\\' '(touch X)' '\\'` ran `touch` under fish."""
    from orchestrator.hosts.policy import check_command

    sshd = login_shell_sshd(shell)
    home = Path(pwd.getpwnam(sshd.user).pw_dir)
    for name in ("X", "Y"):
        (home / name).unlink(missing_ok=True)
    host = await SshHost(sshd.target(), Settings()).connect()
    try:
        for cmd in ["ls '\\' '(touch X)' '\\'", "ls '\\' 'a;touch Y;' '\\'", "ls 'a`touch Y`b'", "ls '!touch Y'"]:
            decision = check_command(cmd)
            if not decision.allowed:
                continue
            await host.run(decision.argv, timeout_s=20)
        assert not (home / "X").exists() and not (home / "Y").exists()
        # ls saw the arguments as file names: it names them as missing
        res = await host.run(check_command("ls '\\' '(touch X)' '\\'").argv, timeout_s=20)
        assert "(touch X)" in res.stderr and res.exit_code != 0
    finally:
        await host.aclose()


async def test_probes_read_file_and_find_work_under_fish_and_csh(login_shell_sshd, shell, tmp_path):
    sshd = login_shell_sshd(shell)
    home = Path(pwd.getpwnam(sshd.user).pw_dir)
    d = home / "logs dir"
    d.mkdir(exist_ok=True)
    (d / "a 'b'.log").write_text("hello\n")
    os.chown(d, pwd.getpwnam(sshd.user).pw_uid, -1)
    host = await SshHost(sshd.target(), Settings()).connect()
    try:
        assert await host.read_file(str(d / "a 'b'.log")) == b"hello\n"
        assert await host.find(str(d), "*.log") == [str(d / "a 'b'.log")]
        res = await host.run(["python3", "-", '{"k": "it\'s $HOME"}'], stdin="import sys, json; print(json.loads(sys.argv[1])['k'])")
        assert res.stdout == "it's $HOME\n"
    finally:
        await host.aclose()
