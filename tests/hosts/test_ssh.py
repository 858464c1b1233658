"""SshHost against a real OpenSSH sshd on 127.0.0.1: keys, caps, timeouts, concurrency, drops, jumps, agent."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import anyio
import pytest

from orchestrator.hosts import HostAuthFailed, HostConfigError, HostKeyRefused, HostLost, HostUnreachable, open_host
from orchestrator.hosts.local import LocalHost
from orchestrator.hosts.ssh import SshHost
from orchestrator.settings import Settings
from support.sshd import free_port

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")]

FLOOD = (
    "import sys\n"
    "chunk = b'x' * 65536\n"
    "for _ in range(320):\n"
    "    sys.stdout.buffer.write(chunk); sys.stderr.buffer.write(chunk)\n"
    "sys.stdout.buffer.write(b'END'); sys.stderr.buffer.write(b'END')\n"
    "sys.exit(7)\n"
)


async def _open(sshd, **overrides) -> SshHost:
    return await SshHost(sshd.target(**overrides), Settings()).connect()


async def test_unknown_host_key_is_refused_with_a_trust_hint_and_nothing_runs(sshd_factory):
    sshd = sshd_factory(trust=False)
    with pytest.raises(HostKeyRefused) as err:
        await open_host(sshd.alias, ssh_config=str(sshd.ssh_config), settings=Settings())
    msg = str(err.value)
    assert "not known" in msg and sshd.fingerprint() in msg
    assert f"ssh-keyscan -p {sshd.port} 127.0.0.1" in msg and "\n" not in msg
    assert sshd.known_hosts.read_text() == ""


async def test_changed_host_key_is_refused_naming_both_fingerprints(sshd_factory):
    sshd = sshd_factory()
    old = sshd.fingerprint()
    sshd.stop()
    sshd.new_host_key()
    sshd.start()
    new = sshd.fingerprint()
    for mode in ("yes", "accept-new"):
        with pytest.raises(HostKeyRefused) as err:
            await _open(sshd, strict_host_key_checking=mode)
        assert old in str(err.value) and new in str(err.value) and "CHANGED" in str(err.value)


async def test_accept_new_records_an_unknown_key_and_no_connects_anyway(sshd_factory):
    sshd = sshd_factory(trust=False)
    host = await _open(sshd, strict_host_key_checking="accept-new")
    assert (await host.run(["true"])).ok
    await host.aclose()
    assert sshd.host_key_line().split()[2] in sshd.known_hosts.read_text()
    sshd.stop()
    sshd.new_host_key()
    sshd.start()
    host = await _open(sshd, strict_host_key_checking="no")  # OpenSSH connects despite a changed key with `no`
    assert (await host.run(["true"])).ok
    await host.aclose()


async def test_large_stdout_and_stderr_do_not_hang_and_are_capped_with_a_marker(sshd_factory):
    host = await _open(sshd_factory())
    res = await host.run(["python3", "-c", FLOOD], max_output=100_000, timeout_s=20)
    assert res.exit_code == 7
    assert res.stdout_truncated and res.stderr_truncated
    assert "omitted by the output cap" in res.stdout and res.stdout.endswith("END")
    assert "omitted by the output cap" in res.stderr and res.stderr.endswith("END")
    await host.aclose()


async def test_command_that_never_exits_times_out_and_the_connection_serves_the_next(sshd_factory):
    host = await _open(sshd_factory())
    started = time.monotonic()
    # a short "forever" so the remote sleep is gone soon: OpenSSH 9.2 refuses the SSH signal request for root
    # sessions ("session signalling requires privilege separation"), so the remote process may outlive the channel
    res = await host.run(["sleep", "3.125"], timeout_s=0.5)
    assert res.timed_out and res.exit_code is None
    assert time.monotonic() - started < 3
    nxt = await host.run(["echo", "still here"])
    assert nxt.ok and nxt.stdout == "still here\n"
    assert host.connections == 1 and host.reconnects == 0
    assert host.open_channels == 0
    await host.aclose()


async def test_cancelled_command_closes_its_channel_and_frees_its_slot(sshd_factory):
    host = await _open(sshd_factory())
    with anyio.move_on_after(0.4):
        await host.run(["sleep", "2.75"], timeout_s=60)
    assert host.open_channels == 0
    assert (await host.run(["true"])).ok
    await host.aclose()


async def _thirty(host: SshHost) -> list:
    results = [None] * 30

    async def one(i: int) -> None:
        results[i] = await host.run(["sh", "-c", f"sleep 0.2; echo {i}"], timeout_s=30)

    async with anyio.create_task_group() as tg:
        for i in range(30):
            tg.start_soon(one, i)
    return results


async def test_thirty_concurrent_commands_all_succeed_under_max_sessions_10(sshd_factory):
    host = await _open(sshd_factory(max_sessions=10))
    results = await _thirty(host)
    assert [r.stdout for r in results] == [f"{i}\n" for i in range(30)]
    assert all(r.ok for r in results)
    # sshd frees a session slot only after reaping its child, so a burst can be refused below MaxSessions;
    # the host then backs off or adds its one extra connection, never more
    assert host.connections <= 2
    await host.aclose()


async def test_administratively_prohibited_backs_off_and_opens_a_second_connection(sshd_factory):
    host = await _open(sshd_factory(max_sessions=2))
    results = await _thirty(host)
    assert all(r.ok for r in results) and [r.stdout for r in results] == [f"{i}\n" for i in range(30)]
    assert host.connections == 2
    assert host.commands_sent == 30
    await host.aclose()


@pytest.mark.slow
async def test_sshd_killed_mid_run_is_host_lost_and_a_restart_takes_one_reconnect(sshd_factory):
    sshd = sshd_factory()
    host = await _open(sshd)

    killer = threading.Timer(0.3, sshd.kill)
    killer.start()
    with pytest.raises(HostLost):
        await host.run(["sleep", "30"], timeout_s=20)
    killer.join()
    sshd.start()
    res = await host.run(["echo", "back"])
    assert res.ok and res.stdout == "back\n" and host.reconnects == 1
    await host.aclose()


async def test_sshd_gone_for_good_is_host_lost_after_one_reconnect_attempt(sshd_factory):
    sshd = sshd_factory()
    host = await _open(sshd)
    sshd.kill()
    await anyio.sleep(0.1)
    with pytest.raises(HostLost) as err:
        await host.run(["true"])
    assert "reconnect failed" in str(err.value)
    started = time.monotonic()
    with pytest.raises(HostLost):
        await host.run(["true"])
    assert time.monotonic() - started < 0.5  # no second attempt
    await host.aclose()


async def test_proxy_jump_through_a_second_sshd(sshd_factory):
    jump = sshd_factory(name="jump")
    gpu = sshd_factory(name="gpu", jump=jump)
    target = gpu.target()
    assert target.proxy_jump is not None and target.proxy_jump.port == jump.port
    host = await open_host("gpu", ssh_config=str(gpu.ssh_config), settings=Settings())
    res = await host.run(["sh", "-c", "echo $SSH_CONNECTION"])
    assert res.ok and res.stdout.split()[3] == str(gpu.port)
    assert host._pool.conns[0].jump is not None and host._pool.conns[0].jump.active
    await host.aclose()


async def test_authentication_through_a_running_ssh_agent(sshd_factory, tmp_path, monkeypatch):
    sshd = sshd_factory()
    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL)
    try:
        for _ in range(200):
            if sock.exists():
                break
            time.sleep(0.01)
        env = {**os.environ, "SSH_AUTH_SOCK": str(sock)}
        subprocess.run(["ssh-add", "-q", str(sshd.client_key)], env=env, check=True, capture_output=True)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
        monkeypatch.setenv("HOME", str(tmp_path))  # no default ~/.ssh/id_* keys to fall back on
        # the key file is not named anywhere: only the agent holds it
        host = await _open(sshd, identity_files=[], identities_only=False)
        assert (await host.run(["true"])).ok
        await host.aclose()
        monkeypatch.delenv("SSH_AUTH_SOCK")
        with pytest.raises(HostAuthFailed) as err:
            await _open(sshd, identity_files=[], identities_only=False)
        assert "ssh-add" in str(err.value) and "\n" not in str(err.value)
    finally:
        agent.kill()
        agent.wait()


@pytest.mark.slow
async def test_find_inventories_ten_thousand_files_in_one_round_trip(sshd_factory, tmp_path):
    root = tmp_path / "cache"
    for d in range(100):
        sub = root / f"d{d:03d}"
        sub.mkdir(parents=True)
        for f in range(100):
            (sub / f"k{f:03d}.json").write_bytes(b"")
    host = await _open(sshd_factory())
    before = host.commands_sent
    found = await host.find(str(root), "*.json", max_results=20_000)
    assert host.commands_sent - before == 1
    assert len(found) == 10_000
    assert found == await LocalHost().find(str(root), "*.json", max_results=20_000)
    await host.aclose()


async def test_read_file_over_ssh_is_capped_and_missing_file_raises(sshd_factory, tmp_path):
    p = tmp_path / "weird name; $(touch x).bin"
    p.write_bytes(bytes(range(256)) * 40)
    host = await _open(sshd_factory())
    assert await host.read_file(str(p), max_bytes=300) == p.read_bytes()[:300]
    assert await host.read_file(str(p)) == p.read_bytes()
    with pytest.raises(FileNotFoundError):
        await host.read_file(str(tmp_path / "nope"))
    assert not (Path.home() / "x").exists()
    await host.aclose()


async def test_arguments_reach_the_remote_program_verbatim(sshd_factory, tmp_path):
    marker = tmp_path / "marker"
    host = await _open(sshd_factory())
    res = await host.run(["echo", f"a b; touch {marker}", "$(touch x)", "`id`", "'q'"])
    assert res.stdout == f"a b; touch {marker} $(touch x) `id` 'q'\n"
    assert not marker.exists()
    await host.aclose()


async def test_unreachable_host_and_bad_destinations_are_one_line_errors(tmp_path):
    port = free_port()
    with pytest.raises(HostUnreachable) as err:
        await open_host(f"root@127.0.0.1:{port}", settings=Settings())
    assert f"127.0.0.1:{port}" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(HostConfigError):
        await open_host("root@@bad host", settings=Settings())
    with pytest.raises(HostConfigError) as err:
        await open_host("gpu", ssh_config=str(tmp_path / "missing_config"), settings=Settings())
    assert "--ssh-config" in str(err.value)
    assert isinstance(await open_host(None), LocalHost)
    assert isinstance(await open_host("local"), LocalHost)


async def test_find_fallback_never_hands_find_a_root_it_would_read_as_an_expression(sshd_factory, tmp_path):
    # no python3 on the remote PATH, so find() falls back to `find ROOT ...`; a `find` that logs its argv and refuses
    # to run when its first argument is an expression (`find -delete ...` deletes the remote working directory)
    bin_dir, log = tmp_path / "bin", tmp_path / "find.argv"
    bin_dir.mkdir()
    (bin_dir / "find").write_text(
        f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {log}\n"
        "case \"$1\" in -*|'!'|'('|')'|,*) exit 99;; esac\n"
        "exec /usr/bin/find \"$@\"\n"
    )
    (bin_dir / "find").chmod(0o755)
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "a.json").write_text("{}")
    host = await _open(sshd_factory(env={"PATH": str(bin_dir)}))
    assert await host.find(str(tmp_path / "cache"), "*.json") == [str(tmp_path / "cache" / "a.json")]
    for root in ("-delete", "!", "(", "-fprint"):
        assert await host.find(root, "*") == []
        assert not log.read_text().splitlines()[0].startswith(("-", "!", "(")), log.read_text()
    await host.aclose()


async def test_cancel_while_a_channel_slot_is_taken_gives_the_slot_back(sshd_factory):
    host = await _open(sshd_factory())
    for _ in range(5):
        scope = anyio.CancelScope()

        async def victim() -> None:
            with scope:
                await host.run(["true"])

        async def canceller() -> None:
            scope.cancel()  # runs while the victim is inside _acquire, between taking a slot and opening a channel

        async with anyio.create_task_group() as tg:
            tg.start_soon(victim)
            tg.start_soon(canceller)
        assert host.open_channels == 0
    assert (await host.run(["true"])).ok
    await host.aclose()


async def test_a_server_that_stalls_on_the_exec_request_times_out_instead_of_hanging(sshd_factory, monkeypatch):
    import paramiko
    import signal as sig

    from support.sshd import _descendants

    sshd = sshd_factory()
    host = await _open(sshd)
    stopped: list[int] = []
    original = paramiko.Channel.exec_command

    def stall_then_exec(chan, command):
        # the connection's sshd processes freeze after the channel opened: the exec request is never answered
        for pid in _descendants(sshd.proc.pid):
            os.kill(pid, sig.SIGSTOP)
            stopped.append(pid)
        return original(chan, command)

    monkeypatch.setattr(paramiko.Channel, "exec_command", stall_then_exec)
    try:
        started = time.monotonic()
        with anyio.fail_after(15):
            res = await host.run(["true"], timeout_s=1)
        assert res.timed_out and res.exit_code is None
        assert time.monotonic() - started < 6
        assert host.open_channels == 0
    finally:
        for pid in stopped:
            try:
                os.kill(pid, sig.SIGCONT)
            except ProcessLookupError:
                pass
    monkeypatch.setattr(paramiko.Channel, "exec_command", original)
    assert (await host.run(["echo", "ok"], timeout_s=10)).stdout == "ok\n"
    await host.aclose()


async def test_read_file_over_ssh_opens_only_regular_files(sshd_factory, tmp_path):
    link = tmp_path / "looks-like-a-log"
    link.symlink_to("/dev/zero")  # a device behind an innocent name: opening devices can arm a watchdog
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    host = await _open(sshd_factory())
    for path in (link, fifo, tmp_path):
        started = time.monotonic()
        with pytest.raises(OSError) as err:
            await host.read_file(str(path), max_bytes=16)
        assert not isinstance(err.value, TimeoutError) and "regular file" in str(err.value)
        assert time.monotonic() - started < 5
    for path in ("/dev/watchdog", "/proc/kmsg", "/proc/1/root/dev/watchdog"):
        with pytest.raises(PermissionError):
            await host.read_file(path)
    await host.aclose()


async def test_known_hosts_lines_paramiko_cannot_parse_are_skipped_not_the_whole_file(sshd_factory):
    sshd = sshd_factory()
    kind, b64 = sshd.host_key.with_suffix(".pub").read_text().split()[:2]
    # a CA line (common in fleets) and a key type paramiko does not know, before the real entry
    sshd.known_hosts.write_text(f"@cert-authority *.example.com {kind} {b64}\nother ssh-foo AAAA\n"
                                + sshd.host_key_line())
    host = await _open(sshd)
    assert (await host.run(["true"])).ok
    await host.aclose()
    # a key marked @revoked is refused whatever StrictHostKeyChecking says
    sshd.known_hosts.write_text(f"@revoked * {kind} {b64}\n")
    for mode in ("yes", "accept-new", "no"):
        with pytest.raises(HostKeyRefused) as err:
            await _open(sshd, strict_host_key_checking=mode)
        assert "revoked" in str(err.value)
    assert sshd.known_hosts.read_text() == f"@revoked * {kind} {b64}\n"


async def test_a_command_that_exits_without_reading_its_stdin_still_reports_its_exit(sshd_factory, monkeypatch):
    # as `python3 -` does where there is no python3: find() must then fall back, not fail "in transit". A busy client
    # sends its first stdin chunk after the command already exited and sshd closed the channel; make that certain
    import paramiko

    original = paramiko.Channel.send

    def late_send(chan, data):
        deadline = time.monotonic() + 3
        while not chan.closed and time.monotonic() < deadline:
            time.sleep(0.005)
        return original(chan, data)

    monkeypatch.setattr(paramiko.Channel, "send", late_send)
    host = await _open(sshd_factory())
    res = await host.run(["no-such-program-xyz"], stdin="x" * 2_000, timeout_s=20)
    assert res.exit_code == 127 and not res.timed_out and "no-such-program-xyz" in res.stderr
    monkeypatch.setattr(paramiko.Channel, "send", original)
    await host.aclose()


async def test_bursts_of_quick_commands_never_drop_the_connection(sshd_factory):
    # A quick command can exit and sshd close its channel before the client's EOF arrives; OpenSSH then drops the
    # whole connection ("ieof packet referred to nonexistent channel"). Commands without input get /dev/null
    # instead of an EOF, so bursts of them leave the connection alive.
    sshd = sshd_factory(max_sessions=10)
    for _ in range(6):
        host = await _open(sshd)
        results = []

        async def one(i):
            results.append((i, await host.run(["echo", str(i)], timeout_s=30)))

        async with anyio.create_task_group() as tg:
            for i in range(50):
                tg.start_soon(one, i)
        assert sorted((i, r.stdout) for i, r in results) == [(i, f"{i}\n") for i in range(50)]
        assert all(r.ok for _, r in results) and host.reconnects == 0
        await host.aclose()


async def test_a_timed_out_remote_command_does_not_outlive_its_limit(sshd_factory):
    # OpenSSH refuses the SSH signal request for root sessions; the remote `timeout` wrapper ends the command anyway
    import subprocess

    host = await _open(sshd_factory())
    res = await host.run(["sleep", "47.31"], timeout_s=1)
    assert res.timed_out and res.exit_code is None

    def running() -> bool:
        return subprocess.run(["pgrep", "-f", "sleep 47.31"], capture_output=True).returncode == 0

    deadline = time.monotonic() + 10
    while running() and time.monotonic() < deadline:
        await anyio.sleep(0.2)
    assert not running(), "the remote sleep outlived its timeout"
    assert (await host.run(["echo", "still serving"])).stdout == "still serving\n"
    await host.aclose()


def _connections_to(port: int) -> int:
    """Established TCP connections from this machine to 127.0.0.1:port (/proc/net/tcp: hex local/remote, state 01)."""
    n = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote, state = fields[2], fields[3]
        if state == "01" and remote == f"0100007F:{port:04X}":
            n += 1
    return n


async def test_targets_behind_one_jump_host_share_one_connection_to_it(sshd_factory, tmp_path):
    """A fleet behind a bastion: one connection to the bastion for all its targets (each would otherwise be a
    handshake with it at the same time, past what OpenSSH's MaxStartups lets through), closed with the last target."""
    from orchestrator.hosts import ssh
    from orchestrator.hosts.multi import HostEntry, open_hosts

    jump = sshd_factory(name="bastion")
    gpus = [sshd_factory(name=f"g{i}", jump=jump) for i in range(3)]
    cfg = tmp_path / "fleet_config"
    cfg.write_text("\n".join(g.config_block() for g in gpus) + "\n" + jump.config_block())
    hosts = await open_hosts([HostEntry(name=g.alias, dest=g.alias) for g in gpus], ssh_config=str(cfg),
                             settings=Settings())
    try:
        assert len(hosts.hosts) == 3 and _connections_to(jump.port) == 1
        seen = {}

        async def where(name):
            res = await hosts.hosts[name].run(["sh", "-c", "echo $SSH_CONNECTION"])
            seen[name] = res.stdout.split()[3]

        async with anyio.create_task_group() as tg:
            for g in gpus:
                tg.start_soon(where, g.alias)
        assert seen == {g.alias: str(g.port) for g in gpus}  # each command ran on its own target
        first = hosts.hosts["g0"].inner._pool.conns[0]
        bastion = first.jump
        assert ssh._JUMPS.users(bastion) == 3
        await hosts.hosts["g0"].inner.aclose()  # one target done: the others keep the bastion
        first.close()  # closing it again releases nothing more
        assert ssh._JUMPS.users(bastion) == 2 and bastion.active
        assert (await hosts.hosts["g1"].run(["true"])).ok
    finally:
        await hosts.aclose()
    assert not bastion.active and ssh._JUMPS.users(bastion) == 0
    for _ in range(40):  # the socket closes with paramiko's transport thread
        if _connections_to(jump.port) == 0:
            break
        await anyio.sleep(0.05)
    assert _connections_to(jump.port) == 0
