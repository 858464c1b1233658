"""Item 3 of issue 15: secrets stay unreadable through the read-only policy.

Recursive grep by every spelling getopt accepts, process memory and environments, symlinks to credentials or
devices (resolved on the host behind real sshd), the credential list as data (every entry tested), and the
autotune tool's extra paths.
"""

from __future__ import annotations

import os

import pytest

from orchestrator.events import PolicyRefusal
from orchestrator.hosts.policy import check_command, credential_rules, extra_path_refusal, secret_path
from orchestrator.hosts.ssh import SshHost
from orchestrator.settings import Settings
from orchestrator.tools.base import execute
from support.security import REGISTRY, CountingHost, make_ctx

needs_sshd = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")

CASES = [(rule.match, example) for rule in credential_rules() for example in rule.examples]


def test_every_credential_entry_has_examples():
    assert all(rule.examples for rule in credential_rules())
    kinds = {r.kind for r in credential_rules()}
    assert kinds == {"dir", "name", "glob", "path", "suffix"}


@pytest.mark.parametrize("entry,path", CASES, ids=[f"{m}:{p}" for m, p in CASES])
def test_each_credential_entry_is_refused(entry, path):
    assert secret_path(path) is not None, (entry, path)
    for command in (f"cat {path}", f"head -n 1 {path}", f"grep -n x {path}", f"grep -f {path} x /var/log/a.log",
                    f"wc --files0-from={path}"):
        decision = check_command(command)
        assert not decision.allowed and "credentials" in decision.reason, (command, decision.reason)


@pytest.mark.parametrize("path", ["/var/log/vllm.log", "/root/.cache/flashinfer/0.5/x.json", "/etc/hosts",
                                  "/srv/app/environment.yaml", "/root/.triton/cache/a/b.json", "/etc/passwd",
                                  "/root/.config/vllm/x.json", "/proc/1/maps",
                                  "/root/.cache/huggingface/hub/models--x/snapshots/1/config.json", "/srv/gh/a.log", "/proc/cpuinfo", "/proc/1/status"])
def test_ordinary_files_stay_readable(path):
    assert secret_path(path) is None
    assert check_command(f"cat {path}").allowed


@pytest.mark.parametrize("command", [
    "grep -d recurse key /root", "grep -drecurse key /root", "grep -d rec key /etc", "grep --directories=recurse x /",
    "grep --directories recurse x /home", "grep --dir=recurse x /root", "grep --recur x /", "grep --recursive x ~",
    "grep -r key", "grep -rn token", "grep -ri -e key", "grep -d recurse key", "grep -r x .", "grep -r x logs",
    "grep -r x /home/alice", "grep -r x /proc", "grep -r x /proc/1", "egrep -r x /", "fgrep -R x /etc",
    "grep -R x /var/log", "grep --dereference-r x /var/log", "grep -r -- x /root",
])
def test_recursive_grep_in_every_spelling_is_refused_where_it_would_sweep_secrets(command):
    decision = check_command(command)
    assert not decision.allowed, command


def test_an_allowed_recursive_grep_skips_every_credential_location():
    decision = check_command("grep -rn 'default MoE config' /var/log/vllm")
    assert decision.allowed
    assert "--exclude=.env*" in decision.argv and "--exclude-dir=.ssh" in decision.argv
    # after the caller's options and operands (issue 23: for --include/--exclude the last matching one wins)
    assert "--exclude=.netrc" in decision.argv and decision.argv[1:4] == ["-rn", "default MoE config", "/var/log/vllm"]
    # not recursive: left as given
    assert check_command("grep -n x /var/log/vllm.log").argv == ["grep", "-n", "x", "/var/log/vllm.log"]


@pytest.mark.parametrize("command", [
    "cat /proc/1/mem", "cat /proc/self/environ", "head -c 100 /proc/1234/environ", "cat /proc/1/task/1/environ",
    "cat /proc/self/task/5/mem", "cat /proc/1/task/1/root/etc/shadow", "cat /proc/1/task/2/root/dev/urandom",
    "cat /proc/1/cwd/.env", "cat /proc/kcore", "grep x /proc/1/environ", "cat /proc/1/pagemap",
    "ps e", "ps auxe", "ps auxeww", "ps axe", "ps -A e", "ps eww -p 1", "printenv", "printenv HOME", "env", "env -0",
    "lspci -A intel-conf1", "lspci -vA intel-conf1", "lspci -O x=1",
])
def test_process_memory_environments_and_hardware_access_are_refused(command):
    assert not check_command(command).allowed, command


@pytest.mark.parametrize("command", ["ps aux", "ps -ef", "ps -eo pid,etime,args", "ps -o pid,user,etime -p 1",
                                     "ps axo pid,etime", "cat /proc/1/maps", "lspci -vvv -nn"])
def test_process_listings_without_environments_stay_allowed(command):
    assert check_command(command).allowed, check_command(command).reason


@pytest.mark.parametrize("path", ["~/.docker", "/root/.docker", "/root/.docker/config.json", "/", "/root", "~", "/home",
                                  "/home/alice", "/etc", "/proc/1", "/dev/shm", "relative/dir", "/root/.aws"])
def test_extra_cache_paths_never_reach_credentials(path):
    assert extra_path_refusal(path) is not None


@pytest.mark.parametrize("path", ["/root/.cache/flashinfer", "/opt/tuned/configs", "/var/tmp/triton-cache"])
def test_extra_cache_paths_elsewhere_are_allowed(path):
    assert extra_path_refusal(path) is None


@pytest.fixture
def staged_links(tmp_path):
    """A home with credentials, and logs that are symlinks to them or to devices."""
    home = tmp_path / "home"
    (home / ".docker").mkdir(parents=True)
    (home / ".docker" / "config.json").write_text('{"auths": {"r.io": {"auth": "dXNlcjpzM2NyZXQ="}}}')
    (home / ".netrc").write_text("machine h login u password s3cret-netrc\n")
    logs = home / "logs"
    logs.mkdir()
    (logs / "ok.log").write_text("fine line\n")
    (logs / "x.log").symlink_to(home / ".netrc")
    (logs / "zero.log").symlink_to("/dev/zero")
    (logs / "rand.log").symlink_to(f"/proc/{os.getpid()}/task/{os.getpid()}/root/dev/urandom")
    (logs / "env.log").symlink_to(f"/proc/{os.getpid()}/environ")
    (home / "cache-link").symlink_to(home / ".docker")
    app = home / "app"
    app.mkdir()
    (app / ".env").write_text("OPENAI_API_KEY=s3cret-dotenv\n")
    (app / "server.log").write_text("match here s3cret-not\n")
    return home


@needs_sshd
async def test_symlinks_are_resolved_on_the_host_before_reading(sshd_factory, staged_links):
    home = staged_links
    host = CountingHost(await SshHost(sshd_factory(env={"HOME": str(home)}).target(), Settings()).connect())
    try:
        ctx = make_ctx(host)
        reg = REGISTRY
        for name in ("x.log", "zero.log", "rand.log", "env.log"):
            path = str(home / "logs" / name)
            for tool, args in [("read_file", {"path": path}), ("shell", {"command": f"cat {path}"}),
                               ("shell", {"command": f"head -c 10 {path}"}),
                               ("shell", {"command": f"grep -f {path} x {home}/logs/ok.log"})]:
                out = (await execute(reg.get(tool), tool, args, ctx)).output
                assert out.is_error and "refused" in out.text, (tool, args, out.text)
                assert "s3cret" not in out.text
        refusals = [e for e in ctx.refusals if isinstance(e, PolicyRefusal)]
        assert len(refusals) == 16
        # every probe of it resolved, nothing opened: only the fixed resolver ran
        assert {argv[0] for argv, _ in host.calls} == {"/bin/sh"}
        ok = (await execute(reg.get("read_file"), "read_file", {"path": str(home / "logs" / "ok.log")}, ctx)).output
        assert ok.text == "fine line\n"
        # a recursive grep of an application directory never opens its .env
        out = (await execute(reg.get("shell"), "shell", {"command": f"grep -rn s3cret {home}/app"}, ctx)).output
        assert "server.log" in out.text and "s3cret-dotenv" not in out.text, out.text
        # extra cache paths: the credential directory, directly or through a link
        for extra in ([str(home / ".docker")], [str(home / "cache-link")], ["/root"]):
            out = (await execute(reg.get("autotune_caches"), "autotune_caches",
                                 {"extra_paths": extra, "device_name": "NVIDIA H200"}, ctx)).output
            assert out.is_error and "refused" in out.text and "dXNlcjpzM2NyZXQ" not in out.text, out.text
    finally:
        await host.inner.aclose()
