"""`SshHost`: a machine reached over SSH with paramiko, one shared connection and a channel per command.

Paramiko is blocking, so each connect and each command runs in a worker thread; the command's deadline is kept
inside that thread (select on the channel with a timeout), and a cancelled or timed-out command has its remote
process group signalled and its channel closed. At most `Settings.ssh_max_channels` channels are open per
connection; a server that answers "administratively prohibited" (its MaxSessions is lower) lowers that
connection's limit, and a second connection is opened to carry the rest.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import re
import select
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import paramiko
from paramiko.common import cMSG_CHANNEL_REQUEST

from orchestrator.hosts import hostkeys
from orchestrator.hosts.base import CommandResult, HostError, HostLost
from orchestrator.hosts.errors import HostAuthFailed, HostUnreachable
from orchestrator.hosts.output import CappedBuffer
from orchestrator.hosts.policy import unsafe_read
from orchestrator.hosts.remote_io import read_argv, read_failure
from orchestrator.hosts.sshconfig import SshTarget
from orchestrator.settings import Settings

# paramiko logs refused channel opens and dropped sockets itself; they surface here as results or HostErrors
logging.getLogger("paramiko").addHandler(logging.NullHandler())

_WALK_SOURCE = (Path(__file__).parent / "walk.py").read_text()
# seconds past a command's deadline that its worker thread may take to notice it (a blocked exec request) before
# the command is abandoned as timed out
_DEADLINE_GRACE_S = 2.0
MAX_CONNECTIONS = 2
"""Connections per host: the first, plus one more when the server's MaxSessions is below our channel limit."""


@dataclass
class _Conn:
    """One SSH connection (and the jump connection it rides on, if any)."""

    client: paramiko.SSHClient
    limit: int
    jump: "_Conn | None" = None
    open: int = 0
    """Channels open or being opened on this connection."""
    established: int = 0
    """Channels the server accepted and that are not closed yet."""
    served: int = 0
    """Commands finished on this connection."""

    @property
    def transport(self) -> paramiko.Transport | None:
        return self.client.get_transport()

    @property
    def active(self) -> bool:
        t = self.transport
        return t is not None and t.is_active()

    def close(self) -> None:
        self.client.close()
        jump, self.jump = self.jump, None  # released once, however often this is closed
        if jump is not None:
            _JUMPS.release(jump)


class _JumpPool:
    """The connections to jump hosts, one per jump destination shared by every target reached through it (a fleet
    behind one bastion: 64 targets would be 64 handshakes with the bastion at once, and OpenSSH's MaxStartups starts
    dropping unauthenticated connections past 10). Channels to the targets (`direct-tcpip`) are not sessions, so the
    bastion's MaxSessions does not limit them. A connection is closed when its last target is; a dead one is
    replaced at the next connect."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conns: dict[str, tuple[_Conn, int]] = {}
        self._connecting: dict[str, threading.Lock] = {}

    def acquire(self, target: SshTarget, settings: Settings, depth: int) -> _Conn:
        key = target.model_dump_json()
        with self._lock:
            gate = self._connecting.setdefault(key, threading.Lock())
        with gate:  # one handshake per jump destination at a time; the others wait and share it
            with self._lock:
                got = self._conns.get(key)
                if got is not None and got[0].active:
                    self._conns[key] = (got[0], got[1] + 1)
                    return got[0]
            conn = connect_blocking(target, settings, depth=depth + 1)
            with self._lock:
                stale = self._conns.get(key)
                self._conns[key] = (conn, 1)
            if stale is not None:  # dead: its targets' channels went with it
                stale[0].close()
            return conn

    def release(self, conn: _Conn) -> None:
        with self._lock:
            for key, (c, refs) in list(self._conns.items()):
                if c is conn:
                    if refs > 1:
                        self._conns[key] = (c, refs - 1)
                        return
                    del self._conns[key]
                    break
        conn.close()

    def users(self, conn: _Conn) -> int:
        """How many target connections ride on conn (for tests)."""
        with self._lock:
            return next((refs for c, refs in self._conns.values() if c is conn), 0)


_JUMPS = _JumpPool()


def _fail_line(target: SshTarget, exc: BaseException) -> HostError:
    where = f"{target.hostname}:{target.port}"
    if isinstance(exc, HostError):
        return exc
    no_keys = isinstance(exc, paramiko.SSHException) and "No authentication methods" in str(exc)
    if isinstance(exc, paramiko.AuthenticationException) or no_keys:
        return HostAuthFailed(
            f"{target.user}@{where} refused every key offered ({exc}): load the key into ssh-agent (`ssh-add KEY`) "
            f"or set IdentityFile for {target.alias} in your ssh config"
        )
    if isinstance(exc, socket.gaierror):
        return HostUnreachable(f"cannot resolve {target.hostname!r} ({exc.strerror}): check the host name or HostName")
    if isinstance(exc, paramiko.ChannelException):
        return HostUnreachable(f"the jump host could not open a connection to {where} ({exc}): check HostName/Port")
    if isinstance(exc, paramiko.SSHException) and any(
            w in str(exc) for w in ("protocol banner", "No existing session", "Error reading SSH")):
        # the TCP connection was accepted but no SSH version line came (paramiko: "Error reading SSH protocol
        # banner", then "No existing session" when it tries to authenticate anyway)
        return HostUnreachable(f"{where} accepted the connection but does not speak SSH (no SSH version line): check "
                               f"that port {target.port} is sshd's (Port in your ssh config)")
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return HostUnreachable(f"connecting to {where} timed out: check the host is up and reachable")
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError):
        return HostUnreachable(f"cannot connect to {where} (connection refused): check sshd runs and listens there")
    if isinstance(exc, (OSError, EOFError)):
        return HostUnreachable(f"cannot connect to {where} ({exc}): check the host is up and sshd listens there")
    return HostUnreachable(f"SSH handshake with {where} failed ({type(exc).__name__}: {exc}): check sshd there")


class ConnectStop:
    """Lets a coroutine that gave up on `connect_blocking` (cancelled: Ctrl-C, a deadline) stop the thread that runs
    it: the transport is closed, so a handshake waiting on a silent server ends now instead of at its banner timeout
    (15 s after Ctrl-C, the process waited for that thread before it could exit), and a connection that completes
    after all is closed rather than left open."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.stopped = False
        self._transport: paramiko.Transport | None = None
        self._conn: _Conn | None = None

    def watch(self, transport: paramiko.Transport) -> None:
        with self._lock:
            self._transport = transport
            stopped = self.stopped
        if stopped:
            transport.close()

    def deliver(self, conn: _Conn) -> bool:
        """False (and the connection closed) when the caller already gave up."""
        with self._lock:
            if not self.stopped:
                self._conn = conn
                return True
        conn.close()
        return False

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
            transport, conn = self._transport, self._conn
        if conn is not None:  # it completed as the caller gave up: nobody will use it
            conn.close()
        elif transport is not None:
            transport.close()


async def connect(target: SshTarget, settings: Settings) -> _Conn:
    """connect_blocking in a worker thread that a cancellation stops (ConnectStop) instead of waiting for it."""
    stop = ConnectStop()
    try:
        return await anyio.to_thread.run_sync(functools.partial(connect_blocking, target, settings, stop=stop),
                                              abandon_on_cancel=True)
    except BaseException:
        stop.stop()
        raise


def connect_blocking(target: SshTarget, settings: Settings, *, depth: int = 0, stop: ConnectStop | None = None) -> _Conn:
    """Connect, verify the host key and authenticate (blocking); raises HostError subclasses with one line."""
    jump: _Conn | None = None
    sock = None
    timeout = target.connect_timeout_s or settings.ssh_connect_timeout_s
    try:
        if target.proxy_jump is not None:
            jump = _JUMPS.acquire(target.proxy_jump, settings, depth)
            sock = jump.transport.open_channel(  # type: ignore[union-attr]  # connected: it has a transport
                "direct-tcpip", (target.hostname, target.port), ("127.0.0.1", 0), timeout=timeout
            )
        elif target.proxy_command:
            sock = paramiko.ProxyCommand(target.proxy_command)
        preferred = hostkeys.known_types(target)

        def transport_factory(sock, **kwargs):
            t = paramiko.Transport(sock, **kwargs)
            if stop is not None:
                stop.watch(t)
            if preferred:
                # ask for a key type known_hosts already holds, as OpenSSH does, so a known host never looks new
                opts = t.get_security_options()
                first = [k for k in opts.key_types if k in preferred or (k.startswith("rsa-sha2") and "ssh-rsa" in preferred)]
                opts.key_types = first + [k for k in opts.key_types if k not in first]
            return t

        client = paramiko.SSHClient()
        client.set_missing_host_key_policy(hostkeys.VerifyPolicy(target))
        keys = [f for f in target.identity_files if os.path.isfile(f)]
        try:
            client.connect(
                target.hostname,
                port=target.port,
                username=target.user,
                key_filename=keys or None,
                allow_agent=not target.identities_only,
                look_for_keys=not target.identity_files,
                timeout=timeout,
                banner_timeout=timeout,
                auth_timeout=timeout,
                channel_timeout=timeout,
                sock=sock,
                transport_factory=transport_factory,
            )
        except BaseException:
            client.close()
            raise
        transport = client.get_transport()
        transport.set_keepalive(int(max(settings.ssh_keepalive_s, 1)))
        if isinstance(transport.sock, socket.socket):
            # small request/response packets: Nagle plus delayed ACKs would add ~40 ms to every command
            transport.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Conn(client=client, limit=max(settings.ssh_max_channels, 1), jump=jump)
        if stop is not None and not stop.deliver(conn):
            jump = None  # released by conn.close()
            raise HostUnreachable(f"connecting to {target.hostname} was given up")
        return conn
    except BaseException as exc:
        if jump is not None:
            _JUMPS.release(jump)
        if isinstance(exc, HostError):
            raise
        raise _fail_line(target, exc) from exc


# sshd hands the command line to the user's LOGIN shell (`$SHELL -c LINE`), and quoting for POSIX sh is not quoting
# for fish, csh or nushell: `ls '\\' '(touch X)' '\\'` runs `touch` under fish. So the line holds nothing any of them
# interprets: `/bin/sh -c 'SCRIPT' sh T I M ARG...` where SCRIPT has no `'`, backslash, `!` or newline, and each ARG
# is either a word of plain characters (mode `l`) or, when any argument has another character, every argument is
# hex-encoded (mode `x`) and decoded by SCRIPT with awk into sh-quoted words. T is the remote time limit; I is `n`
# when the command gets no input (it reads /dev/null, so we never send an EOF that could race the channel's close).
# The command then runs under coreutils `timeout` where the host has it: OpenSSH refuses the SSH "signal" request
# for root sessions, so without it a command we gave up on (a `tail -f`, a hung nvidia-smi) would run on after its
# channel closed. The remote limit sits a little past ours, so the client reports the timeout first.
_DECODE_AWK = (
    "BEGIN{q=sprintf(f,39);e=q sprintf(f,34) q sprintf(f,34) q;"
    "for(i=1;i<ARGC;i++){a=ARGV[i];if(substr(a,1,1)==X){if(i>1)printf(g,sprintf(f,32) s q);s=q}"
    "for(j=2;j<length(a);j+=2){"
    "c=(index(h,substr(a,j,1))-1)*16+index(h,substr(a,j+1,1))-1;s=s ((c==39)?e:sprintf(f,c))}}"
    "if(ARGC>1)printf(g,sprintf(f,32) s q)}"
)
_WATCHDOG = (
    'T=$1; I=$2; M=$3; shift 3; if [ "$I" = n ]; then exec </dev/null; fi; '
    'if [ "$M" = x ]; then A=awk; command -v awk >/dev/null 2>&1 || A=/usr/bin/awk; [ -x "$A" ] || '
    '[ "$A" = awk ] || A=/bin/awk; w=$(LC_ALL=C "$A" -v f=%c -v g=%s -v X=x -v h=0123456789abcdef "' + _DECODE_AWK + '" "$@") '
    '|| exit 125; eval "set -- $w"; fi; '
    'if command -v timeout >/dev/null 2>&1; then exec timeout -k 2 "$T" "$@"; fi; exec "$@"'
)
assert not set("'\\!\n") & set(_WATCHDOG)
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:@+,-][A-Za-z0-9_./:@+,=-]*")
"""Words every shell (sh, bash, fish, csh, tcsh, zsh, nushell) passes on unchanged."""
_HEX_PIECE = 4096


def remote_command(argv: list[str], timeout_s: float, *, stdin: bool = False) -> str:
    """The command line sent to sshd: the same argv whatever the login shell, under a remote time limit."""
    seconds = int(math.ceil(timeout_s)) + 2
    if all(_PLAIN_WORD.fullmatch(a) and len(a) < _HEX_PIECE for a in argv):
        mode, words = "l", argv
    else:
        # csh refuses words past ~8 KB ("Word too long"): a long argument goes as `x<hex>` then `y<hex>` pieces
        mode, words = "x", []
        for a in argv:
            h = a.encode("utf-8", "surrogateescape").hex()
            words += [("x" if i == 0 else "y") + h[i:i + _HEX_PIECE] for i in range(0, max(len(h), 1), _HEX_PIECE)]
    return " ".join(["/bin/sh", "-c", "'" + _WATCHDOG + "'", "sh", str(seconds), "i" if stdin else "n", mode, *words])


def _signal_kill(chan: paramiko.Channel) -> None:
    """Ask sshd to SIGKILL the command's process group (RFC 4254 6.9), so nothing outlives its timeout."""
    try:
        m = paramiko.Message()
        m.add_byte(cMSG_CHANNEL_REQUEST)
        m.add_int(chan.remote_chanid)
        m.add_string("signal")
        m.add_boolean(False)
        m.add_string("KILL")
        chan.transport._send_user_message(m)  # paramiko has no public call for the signal request
    except Exception:
        pass


def _exec_blocking(
    chan: paramiko.Channel,
    command: str,
    stdin: bytes | None,
    deadline: float,
    out: CappedBuffer,
    err: CappedBuffer,
    stop: threading.Event,
) -> tuple[int | None, bool]:
    """Run command on chan until it ends, the deadline passes or stop is set; returns (exit status, timed out)."""
    chan.settimeout(max(deadline - time.monotonic(), 0.001))
    pending = stdin or b""
    # Without input the remote command reads /dev/null (see remote_command) rather than us sending EOF: a quick
    # command can exit and sshd close the channel before our EOF arrives, and OpenSSH drops the whole connection for
    # an EOF on a channel it has already freed ("ieof packet referred to nonexistent channel").
    chan.exec_command(command)
    fd = chan.fileno()
    transport = chan.get_transport()
    while True:
        if stop.is_set():
            return None, False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None, True
        progressed = False
        if pending and chan.send_ready():
            try:
                sent = chan.send(pending[:32768])
            except OSError:
                if not chan.closed or not transport.is_active():
                    raise
                # the command exited (and sshd closed the channel) without reading all of its input, as `python3 -`
                # does where there is no python3: that is its business, its output and exit status still count
                pending = b""
                sent = 0
            else:
                pending = pending[sent:]
                if not pending and not chan.closed and not chan.eof_received:
                    chan.shutdown_write()
            progressed = True
        if chan.recv_ready():
            out.feed(chan.recv(65536))
            progressed = True
        if chan.recv_stderr_ready():
            err.feed(chan.recv_stderr(65536))
            progressed = True
        if chan.eof_received or chan.closed:
            while chan.recv_ready():
                out.feed(chan.recv(65536))
            while chan.recv_stderr_ready():
                err.feed(chan.recv_stderr(65536))
            break
        if not transport.is_active():
            break
        if not progressed:
            # paramiko's stdout/stderr "or" pipe can miss a wake-up, so never sleep long on it
            select.select([fd], [], [], min(remaining, 0.05 if not pending else 0.01))
    remaining = deadline - time.monotonic()
    if not chan.status_event.wait(max(remaining, 0.0)):
        return None, True
    if chan.exit_status == -1 and not transport.is_active():
        raise EOFError("connection dropped")
    return chan.exit_status, False


@dataclass
class _Exec:
    exit_code: int | None
    timed_out: bool
    out: CappedBuffer
    err: CappedBuffer
    duration_s: float


@dataclass
class _Pool:
    conns: list[_Conn] = field(default_factory=list)
    want_more: bool = False
    """The server refused a channel: its MaxSessions is below our limit, so another connection may help."""


class SshHost:
    """A machine over SSH: one connection shared by all callers, a channel per command, at most N channels open."""

    def __init__(self, target: SshTarget, settings: Settings | None = None, *, max_connections: int = MAX_CONNECTIONS):
        self.target = target
        self.name = target.display
        self.settings = settings or Settings()
        self.max_connections = max_connections
        self._pool = _Pool()
        self._cond: anyio.Condition | None = None
        self._lost: str | None = None
        self.reconnects = 0
        """How many times a dropped connection was re-established (for tests and the transcript)."""
        self.commands_sent = 0
        """Commands executed on a channel: the round trips a probe cost."""

    @property
    def connections(self) -> int:
        """Live connections in the pool."""
        return sum(1 for c in self._pool.conns if c.active)

    @property
    def open_channels(self) -> int:
        """Channels open on the pool's connections right now (0 when no command is running)."""
        return sum(c.open for c in self._pool.conns)

    async def connect(self) -> "SshHost":
        """Open the first connection: host key verified and authenticated, or a HostError with one line."""
        self._cond = anyio.Condition()
        conn = await connect(self.target, self.settings)
        self._pool.conns.append(conn)
        return self

    async def _new_conn_locked(self) -> _Conn:
        conn = await connect(self.target, self.settings)
        self._pool.conns.append(conn)
        return conn

    async def _reconnect_locked(self) -> None:
        """One reconnect attempt after the connection dropped; on failure the host is lost for good."""
        for c in self._pool.conns:
            c.close()
        self._pool.conns = []
        try:
            await self._new_conn_locked()
        except HostError as exc:
            self._lost = f"lost the SSH connection to {self.name} and one reconnect failed ({exc})"
            raise HostLost(self._lost) from exc
        self.reconnects += 1

    async def _acquire(self) -> tuple[_Conn, paramiko.Channel]:
        """A free channel, waiting for a slot, backing off on "administratively prohibited"."""
        assert self._cond is not None, "SshHost.connect() was not called"
        backoff = 0.02
        while True:
            async with self._cond:
                while True:
                    if self._lost:
                        raise HostLost(self._lost)
                    live = [c for c in self._pool.conns if c.active]
                    if not live:
                        await self._reconnect_locked()
                        continue
                    conn = next((c for c in live if c.open < c.limit), None)
                    if conn is not None:
                        conn.open += 1
                        break
                    if self._pool.want_more and len(live) < self.max_connections:
                        self._pool.want_more = False
                        try:
                            await self._new_conn_locked()
                        except HostError:
                            pass  # the first connection still serves, just more slowly
                        continue
                    await self._cond.wait()
            try:
                transport = conn.transport
                if transport is None:  # closed since the check (a reconnect): the same as a transport that died
                    raise EOFError("the SSH connection was closed")
                chan = await anyio.to_thread.run_sync(
                    functools.partial(transport.open_session, timeout=self.settings.ssh_connect_timeout_s)
                )
                conn.established += 1
                return conn, chan
            except paramiko.ChannelException:
                with anyio.CancelScope(shield=True):
                    async with self._cond:
                        conn.open -= 1
                        # "administratively prohibited" from most servers; OpenSSH answers "connect failed" when
                        # MaxSessions is reached: either way this connection carries fewer channels than we tried
                        conn.limit = max(1, min(conn.limit, conn.established))
                        self._pool.want_more = True
                        self._cond.notify_all()
                await anyio.sleep(backoff)
                backoff = min(backoff * 2, 0.5)
            except (paramiko.SSHException, EOFError, OSError, AttributeError):
                # the transport died between the check and the open: the next pass reconnects once
                with anyio.CancelScope(shield=True):
                    async with self._cond:
                        conn.open -= 1
                        self._cond.notify_all()
            except BaseException:
                # cancelled (run_sync checkpoints before it starts the thread) or anything else: give the slot back
                with anyio.CancelScope(shield=True):
                    async with self._cond:
                        conn.open -= 1
                        self._cond.notify_all()
                raise

    async def _release(self, conn: _Conn) -> None:
        with anyio.CancelScope(shield=True):
            assert self._cond is not None
            async with self._cond:
                conn.open -= 1
                conn.established -= 1
                conn.served += 1
                # the server frees a session a little after we close it, so a refusal can undercount its
                # MaxSessions: creep back up (never past our own limit) and let the next refusal correct it
                if conn.served % 4 == 0 and conn.limit < self.settings.ssh_max_channels:
                    conn.limit += 1
                self._cond.notify_all()

    async def _exec(self, argv: list[str], stdin: bytes | None, timeout_s: float, max_output: int) -> _Exec:
        started = time.monotonic()
        deadline = started + timeout_s
        out, err = CappedBuffer(max_output), CappedBuffer(max_output)
        with anyio.move_on_after(timeout_s) as scope:
            conn, chan = await self._acquire()
        if scope.cancelled_caught:
            err.feed(b"no SSH channel became free before the timeout")
            return _Exec(None, True, out, err, time.monotonic() - started)
        stop = threading.Event()
        finished = False
        self.commands_sent += 1
        try:
            # the thread keeps the deadline itself, except where paramiko waits without one (the exec request's
            # reply from a stalled server): past the deadline and a grace the thread is abandoned, stop is set and
            # the channel closed below, and the command counts as timed out
            code, timed_out = None, True
            with anyio.move_on_after(max(deadline - time.monotonic(), 0) + _DEADLINE_GRACE_S):
                code, timed_out = await anyio.to_thread.run_sync(
                    _exec_blocking, chan, remote_command(argv, timeout_s, stdin=bool(stdin)), stdin, deadline, out, err, stop,
                    abandon_on_cancel=True,
                )
            finished = True
        except (EOFError, OSError, paramiko.SSHException) as exc:
            finished = True
            if conn.active:
                raise HostError(f"command {argv[0]!r} on {self.name} failed in transit ({exc})") from exc
            raise HostLost(f"lost the SSH connection to {self.name} while running {argv[0]!r}") from exc
        finally:
            if not finished or not chan.exit_status_ready():
                stop.set()
                _signal_kill(chan)
            chan.close()
            await self._release(conn)
        if timed_out:
            code = None
        return _Exec(code, timed_out, out, err, time.monotonic() - started)

    async def run(
        self,
        argv: list[str],
        *,
        stdin: str | None = None,
        timeout_s: float = 60.0,
        max_output: int = 1_000_000,
    ) -> CommandResult:
        """Run argv (each argument quoted for the remote shell) on a channel of the shared connection."""
        res = await self._exec(argv, stdin.encode() if stdin is not None else None, timeout_s, max_output)
        return CommandResult(
            argv=argv,
            exit_code=res.exit_code,
            stdout=res.out.text(),
            stderr=res.err.text(),
            timed_out=res.timed_out,
            stdout_truncated=res.out.truncated,
            stderr_truncated=res.err.truncated,
            duration_s=res.duration_s,
        )

    async def read_file(self, path: str, *, max_bytes: int = 1_000_000) -> bytes:
        """Up to max_bytes of a remote regular file, in one round trip; a symlink anywhere on path is refused
        (callers resolve paths on the host and check them first: hosts/resolve.py)."""
        why = unsafe_read(path)
        if why is not None:
            raise PermissionError(f"not opened on {self.name}: {why}")
        # safeopen.py: one open of the path with no symlink followed, the descriptor checked, read from it
        # the script writes at most max_bytes; the cap leaves room for a whole error line on stderr
        res = await self._exec(read_argv(path, max_bytes), None, self.settings.command_timeout_s, max_bytes + 4096)
        if res.timed_out:
            raise TimeoutError(f"reading {path} on {self.name} timed out")
        if res.exit_code != 0:
            raise read_failure(path, self.name, res.exit_code, res.err.text())
        return res.out.raw()

    async def find(self, root: str, pattern: str = "*", *, max_results: int = 10_000) -> list[str]:
        """Files under root matching pattern, in one round trip (python3 walk, else `find`)."""
        cap = max(self.settings.command_output_bytes, max_results * 1024)
        params = json.dumps({"root": root, "pattern": pattern, "max_results": max_results})
        res = await self._exec(["python3", "-", params], _WALK_SOURCE.encode(), self.settings.command_timeout_s, cap)
        if res.exit_code == 0 and not res.out.truncated:
            try:
                return list(json.loads(res.out.raw())["paths"])
            except (ValueError, KeyError, TypeError):
                pass
        # no python3 there: POSIX find gives the same set, sorted here as the walk sorts. find reads an argument
        # starting with `-`, `!`, `(`, `)` or `,` as its expression, not a path (root `-delete` would delete the
        # remote home directory), so such a root goes in as `./ROOT` and comes back without the `./`
        guarded = root.startswith(("-", "!", "(", ")", ","))
        start = "./" + root if guarded else root
        res = await self._exec(["find", start, "-name", pattern, "!", "-type", "d", "-print"], None,
                               self.settings.command_timeout_s, cap)
        if res.timed_out:
            raise TimeoutError(f"listing {root} on {self.name} timed out")
        lines = [line for line in res.out.raw().decode("utf-8", "replace").splitlines() if line]
        if guarded:
            lines = [line[2:] if line.startswith("./") else line for line in lines]
        return sorted(lines)[:max_results]

    async def aclose(self) -> None:
        """Close every connection."""
        for c in self._pool.conns:
            await anyio.to_thread.run_sync(c.close)
        self._pool.conns = []
        self._lost = self._lost or f"{self.name} was closed"

