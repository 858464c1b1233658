"""Resolve an SSH destination the way OpenSSH would, from the user's ssh config (or `--ssh-config FILE`).

Pure apart from reading the config file: the result is an `SshTarget` that `ssh.py` connects to.
"""

from __future__ import annotations

import getpass
import os
import re
from pathlib import Path
from typing import Literal

import paramiko
from pydantic import BaseModel, Field

from orchestrator.hosts.errors import HostConfigError

StrictMode = Literal["yes", "no", "accept-new", "ask"]
_MAX_JUMPS = 8
_DEST = re.compile(r"^(?:(?P<user>[^@/\s]+)@)?(?P<host>\[[^\]]+\]|[^:@/\s\[\]]+)(?::(?P<port>\d+))?$")


GLOBAL_KNOWN_HOSTS = ["/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"]
"""OpenSSH's default GlobalKnownHostsFile (ssh_config(5))."""


class SshTarget(BaseModel):
    """Everything needed to connect to one host, resolved from the destination and the ssh config."""

    alias: str
    """The host as the user named it (config `Host` pattern or address)."""
    hostname: str
    """Where to connect (config `HostName`, else the alias)."""
    port: int = 22
    user: str
    identity_files: list[str] = []
    """Config `IdentityFile`s, expanded; empty means the agent and the default keys."""
    identities_only: bool = False
    known_hosts_files: list[str]
    """Config `UserKnownHostsFile`s, else ~/.ssh/known_hosts; the first is where accept-new writes."""
    global_known_hosts_files: list[str] = Field(default_factory=lambda: list(GLOBAL_KNOWN_HOSTS))
    """Config `GlobalKnownHostsFile`s, else OpenSSH's default: read too (their keys and their `@revoked` lines),
    never written."""
    strict_host_key_checking: StrictMode = "ask"
    """As in OpenSSH; `ask` refuses unknown keys since there is nobody to ask."""
    config_file: str | None = None
    """The ssh config file given instead of ~/.ssh/config (`--ssh-config`): `ssh` needs `-F FILE` to know the alias."""
    proxy_jump: "SshTarget | None" = None
    proxy_command: str | None = None
    connect_timeout_s: float | None = None

    @property
    def known_hosts_name(self) -> str:
        """The name OpenSSH stores this host's key under in known_hosts."""
        return self.hostname if self.port == 22 else f"[{self.hostname}]:{self.port}"

    @property
    def display(self) -> str:
        """How the host is named in evidence and messages (the port only when it is not ssh's 22)."""
        return f"{self.user}@{self.alias}" if self.port == 22 else f"{self.user}@{self.alias}:{self.port}"


def parse_destination(dest: str) -> tuple[str | None, str, int | None]:
    """Split `[user@]host[:port]` (or `ssh://[user@]host[:port]`) into its parts."""
    raw = dest.strip()
    if raw.startswith("ssh://"):
        raw = raw[len("ssh://"):].rstrip("/")
    m = _DEST.match(raw)
    if not m:
        raise HostConfigError(
            f"host {dest!r} is not a destination: give an ssh config alias or [user@]host[:port], e.g. root@gpu-box:22"
        )
    host = m.group("host").strip("[]")
    port = int(m.group("port")) if m.group("port") else None
    if port is not None and not 0 < port < 65536:
        raise HostConfigError(f"port {port} in {dest!r} is out of range: use 1-65535")
    return m.group("user"), host, port


class _Config(paramiko.SSHConfig):
    """paramiko's config with one shortcut: a `Host` block that does not match is not also tested as a `Match` block
    with no criteria. paramiko asks the system for the local user (a passwd lookup) before finding the list empty —
    for every block, for every lookup: 4096 passwd lookups to resolve 64 hosts in a 64-block file, a quarter of the
    run's main-thread time. The answer is the same: no criteria, no match. It also remembers what it resolved."""

    def __init__(self) -> None:
        super().__init__()
        self.resolved: dict[tuple[str | None, ...], SshTarget] = {}
        """Destinations resolved with this file, by destination and the user environment resolving reads."""

    def _does_match(self, match_list, target_hostname, canonical, final, options):
        if not match_list:
            return []
        return super()._does_match(match_list, target_hostname, canonical, final, options)


_PARSED: dict[tuple[str, int, int, int], _Config] = {}
"""Parsed config files by (path, inode, size, mtime): a 64-host run resolves 64 aliases in one file (lookups do
not change the parsed config; an edited file is parsed again)."""


def load_config(path: str | None) -> _Config:
    """The ssh config at path, else ~/.ssh/config, else an empty one."""
    if path is not None:
        p = Path(path).expanduser()
        if not p.is_file():
            raise HostConfigError(f"ssh config {path} does not exist: pass an existing file to --ssh-config")
    else:
        p = Path("~/.ssh/config").expanduser()
        if not p.is_file():
            return _Config()
    try:
        st = p.stat()
        key = (str(p.resolve()), st.st_ino, st.st_size, st.st_mtime_ns)
        cached = _PARSED.get(key)
        if cached is not None:
            return cached
        config = _Config.from_path(str(p))
        if len(_PARSED) >= 8:
            _PARSED.clear()
        _PARSED[key] = config
        return config
    except Exception as exc:  # paramiko raises several types for a malformed file
        raise HostConfigError(f"ssh config {p} cannot be read ({exc}): fix the file or pass another with --ssh-config") from None


def _expand(path: str) -> str:
    return os.path.expanduser(os.path.expandvars(path))


def _strict(value: str | None) -> StrictMode:
    v = (value or "ask").lower()
    return {"yes": "yes", "no": "no", "off": "no", "accept-new": "accept-new", "ask": "ask"}.get(v, "ask")  # type: ignore[return-value]


def resolve(dest: str, config: paramiko.SSHConfig, *, _depth: int = 0) -> SshTarget:
    """Resolve a destination against a loaded ssh config, jump hosts included."""
    if _depth > _MAX_JUMPS:
        raise HostConfigError(f"ProxyJump chain through {dest!r} is longer than {_MAX_JUMPS}: check for a loop")
    user, host, port = parse_destination(dest)
    opts = config.lookup(host)
    try:
        cfg_port = int(opts.get("port", 22))
    except ValueError:
        raise HostConfigError(f"ssh config Port for {host!r} is not a number: fix the Port line") from None
    known = opts.get("userknownhostsfile")
    known_files = [_expand(f) for f in known.split()] if known else [_expand("~/.ssh/known_hosts")]
    global_known = opts.get("globalknownhostsfile")
    timeout = opts.get("connecttimeout")
    target = SshTarget(
        alias=host,
        hostname=opts.get("hostname", host),
        port=port or cfg_port,
        user=user or opts.get("user") or getpass.getuser(),
        identity_files=[_expand(f) for f in opts.get("identityfile", [])],
        identities_only=str(opts.get("identitiesonly", "no")).lower() == "yes",
        known_hosts_files=known_files,
        global_known_hosts_files=[_expand(f) for f in global_known.split()] if global_known else list(GLOBAL_KNOWN_HOSTS),
        strict_host_key_checking=_strict(opts.get("stricthostkeychecking")),
        connect_timeout_s=float(timeout) if timeout and str(timeout).isdigit() else None,
    )
    jump = opts.get("proxyjump")
    command = opts.get("proxycommand")
    if jump and jump.lower() != "none":
        # `ProxyJump a,b`: reach a, from a reach b, from b reach the target
        hops = [h.strip() for h in jump.split(",") if h.strip()]
        previous: SshTarget | None = None
        for hop in hops:
            resolved = resolve(hop, config, _depth=_depth + 1)
            if previous is not None:
                resolved = resolved.model_copy(update={"proxy_jump": previous, "proxy_command": None})
            previous = resolved
        target.proxy_jump = previous
    elif command and command.lower() != "none":
        target.proxy_command = command
    return target


def resolve_destination(dest: str, ssh_config: str | None = None) -> SshTarget:
    """Resolve dest (`alias` or `[user@]host[:port]`) with the ssh config at ssh_config (default ~/.ssh/config).

    Remembered per parsed file, destination and the environment resolving reads (paramiko's lookup walks every
    Host block and asks for the local user at each: 64 hosts in one file made that quadratic)."""
    config = load_config(ssh_config)
    key = (dest, *(os.environ.get(v) for v in ("HOME", "USER", "LOGNAME", "LNAME", "USERNAME")))
    target = config.resolved.get(key)
    if target is None:
        target = config.resolved[key] = resolve(dest, config)
    return target.model_copy(deep=True, update={"config_file": str(ssh_config) if ssh_config else None})
