"""Host key verification as OpenSSH (9.2) does it: known_hosts files, StrictHostKeyChecking, refusal messages.

The user's known_hosts files and the global ones (GlobalKnownHostsFile, default /etc/ssh/ssh_known_hosts{,2}) are
read; a key marked `@revoked` in any of them is refused. Unknown keys are refused unless `StrictHostKeyChecking` is
`accept-new` or `no` (then added to the first user file); a changed key is refused naming both fingerprints, unless
`no`, which OpenSSH also connects with. A host known only under keys of other types offering a new type is a change
too (OpenSSH: "Host key verification failed" under accept-new). For a non-standard port the key is looked up under
`[host]:port`; the same key under the bare host name is accepted as well (never counted as a change), as OpenSSH
does, which is how an entry such as `![host]:port,*` still lets the host in.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import shlex
import threading
from base64 import b64decode
from pathlib import Path

import paramiko

from orchestrator.hosts.base import HostKeyRefused
from orchestrator.hosts.sshconfig import SshTarget


def fingerprint(key: paramiko.PKey) -> str:
    """`SHA256:...` as OpenSSH prints it."""
    return key.fingerprint


_PARSED: dict[tuple[tuple[str, str] | None, ...], tuple[paramiko.HostKeys, list[paramiko.PKey]]] = {}
"""Parsed known_hosts by each file's path and content digest (None for a file that cannot be read): a fleet
connects to every host with the same file, and each connection reads it twice (the key types to ask for, then the
check); reading and hashing a file costs little next to parsing its keys. Read only."""
_parsed_lock = threading.Lock()


def _read_known(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None  # OpenSSH skips unreadable files too


def _load_with_revoked(files: list[str]) -> tuple[paramiko.HostKeys, list[paramiko.PKey]]:
    """Every known_hosts file that exists, merged (hashed entries included), and the keys marked `@revoked`.

    Line by line, as OpenSSH reads them: a line paramiko cannot parse (an `@cert-authority` line, a key type it does
    not know, bad base64) is skipped, never the whole file; with the file skipped a host whose key CHANGED would look
    new, and `accept-new` would take the new key. Parsed once per content (`_PARSED`).
    """
    texts = [_read_known(f) for f in files]
    key = tuple(None if t is None else (f, hashlib.sha256(t).hexdigest()) for f, t in zip(files, texts))
    with _parsed_lock:
        got = _PARSED.get(key)
    if got is not None:
        return got
    got = _parse_known(texts)
    with _parsed_lock:
        if len(_PARSED) >= 64:
            _PARSED.clear()
        _PARSED[key] = got
    return got


def _parse_known(texts: list[bytes | None]) -> tuple[paramiko.HostKeys, list[paramiko.PKey]]:
    keys = paramiko.HostKeys()
    revoked: list[paramiko.PKey] = []
    for text in texts:
        if text is None:
            continue
        for lineno, raw in enumerate(text.decode("utf-8", "replace").splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            marker = None
            if line.startswith("@"):
                parts = line.split(None, 1)
                if len(parts) != 2:
                    continue
                marker, line = parts
            try:
                entry = paramiko.hostkeys.HostKeyEntry.from_line(line, lineno)
            except Exception:
                continue
            if entry is None:
                continue
            if marker == "@revoked":
                revoked.append(entry.key)
            elif marker is None:
                keys._entries.append(entry)
            # @cert-authority: host certificates are not supported; such a line vouches for nothing here
    return keys, revoked


def _pattern_matches(pattern: str, name: str) -> bool:
    """One known_hosts host pattern against the host name, as OpenSSH's match_pattern: `*` and `?` wildcards only
    (`[host]:port` brackets are literal), case-insensitive; `|1|salt|hash` entries are HMAC-SHA1 hashed names."""
    if pattern.startswith("|1|"):
        try:
            _, _, salt, digest = pattern.split("|", 3)
            mac = hmac.new(b64decode(salt), name.encode(), hashlib.sha1).digest()
            return hmac.compare_digest(mac, b64decode(digest))
        except (ValueError, TypeError):
            return False
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern.lower())
    return re.fullmatch(rx, name.lower(), re.S) is not None


def _entry_matches(hostnames: list[str], name: str) -> bool:
    """An entry's comma-separated patterns: any positive one matching, and no negated (`!pattern`) one."""
    matched = False
    for pat in hostnames:
        if pat.startswith("!"):
            if _pattern_matches(pat[1:], name):
                return False
        elif _pattern_matches(pat, name):
            matched = True
    return matched


def matching_keys(keys: paramiko.HostKeys, name: str) -> list[paramiko.PKey]:
    """Every key known for name, in file order: wildcard and hashed entries included, all of them (OpenSSH accepts
    the server's key when ANY matching line holds it, so a wrong key before the right one is no change)."""
    return [e.key for e in keys._entries if _entry_matches(e.hostnames, name)]


def load_known(files: list[str]) -> paramiko.HostKeys:
    """Every known_hosts file that exists, merged (hashed entries included); unparsable lines are skipped."""
    return _load_with_revoked(files)[0]


def _files(target: SshTarget) -> list[str]:
    """The user's known_hosts files, then the global ones (OpenSSH reads both)."""
    return list(dict.fromkeys([*target.known_hosts_files, *target.global_known_hosts_files]))


def known_types(target: SshTarget) -> list[str]:
    """Key types already known for the target, so the handshake asks for one of them first."""
    types = [k.get_name() for k in matching_keys(load_known(_files(target)), target.known_hosts_name)]
    return list(dict.fromkeys(types))


def _trust_hint(target: SshTarget, key: paramiko.PKey) -> str:
    """How to trust the key by hand, as commands that reach the same host: for a destination that is no ssh config
    alias (`user@host:port`, `host`), its port and user go on the `ssh` command line, which would otherwise connect
    to port 22 as the local user."""
    port = f"-p {target.port} " if target.port != 22 else ""
    known = target.known_hosts_files[0]
    config = f"-F {shlex.quote(target.config_file)} " if target.config_file else ""  # the alias lives only there
    # an alias with a HostName is a config block, which carries its port and user; otherwise name them
    login = shlex.quote(target.alias) if target.hostname != target.alias else f"{port}{shlex.quote(f'{target.user}@{target.alias}')}"
    return (f"compare its fingerprint with the host's own (`ssh-keygen -lf /etc/ssh/ssh_host_{_kind(key)}_key.pub` "
            f"on it); if you trust it, add it with `ssh-keyscan {port}{shlex.quote(target.hostname)} >> "
            f"{shlex.quote(known)}` (or connect once with `ssh {config}{login}`), then retry")


def _kind(key: paramiko.PKey) -> str:
    """The host key file's kind for a key type (sshd keeps one file per kind: ed25519, ecdsa, rsa)."""
    name = key.get_name()
    return "ed25519" if "ed25519" in name else "ecdsa" if "ecdsa" in name else "rsa" if "rsa" in name else "*"


def _append(target: SshTarget, key: paramiko.PKey) -> None:
    path = Path(target.known_hosts_files[0])
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(f"{target.known_hosts_name} {key.get_name()} {key.get_base64()}\n")


def verify(target: SshTarget, key: paramiko.PKey) -> None:
    """Accept the server's key or raise HostKeyRefused with one line naming the problem and the fix."""
    name = target.known_hosts_name
    known_keys, revoked = _load_with_revoked(_files(target))
    known_for_name = matching_keys(known_keys, name)
    candidates = [k for k in known_for_name if k.get_name() == key.get_name()]
    mode = target.strict_host_key_checking
    if any(r == key for r in revoked):
        raise HostKeyRefused(
            f"host key for {name} ({key.get_name()} {fingerprint(key)}) is marked @revoked in known_hosts; "
            "nothing was run. Ask the host's owner for its current key"
        )
    if name != target.hostname and any(k == key for k in matching_keys(known_keys, target.hostname)):
        return  # the same key under the bare host name (OpenSSH accepts it for a non-standard port too)
    if candidates:
        if any(known == key for known in candidates):
            return
        known = candidates[0]
        if mode == "no":
            return
        raise HostKeyRefused(
            f"host key for {name} has CHANGED: known_hosts has {known.get_name()} {fingerprint(known)}, "
            f"the server offered {key.get_name()} {fingerprint(key)}; nothing was run. If the change is expected, "
            f"remove the old key with `ssh-keygen -R {shlex.quote(name)} -f {shlex.quote(target.known_hosts_files[0])}`"
            " and trust the new one; otherwise someone may be intercepting the connection"
        )
    other_types = sorted({k.get_name() for k in known_for_name})
    if other_types and mode != "no":
        raise HostKeyRefused(
            f"host key for {name} has CHANGED: known_hosts has only {', '.join(other_types)} key(s) for it, the "
            f"server offered {key.get_name()} {fingerprint(key)}; nothing was run. If the server's keys changed, "
            f"remove the old ones with `ssh-keygen -R {shlex.quote(name)} -f "
            f"{shlex.quote(target.known_hosts_files[0])}` and trust the new one; otherwise someone may be "
            "intercepting the connection"
        )
    if mode in ("accept-new", "no"):
        if not other_types:
            _append(target, key)
        return
    raise HostKeyRefused(
        f"host key for {name} is not known ({key.get_name()} {fingerprint(key)}, "
        f"not in {', '.join(target.known_hosts_files)}); nothing was run. {_trust_hint(target, key)}"
    )


class VerifyPolicy(paramiko.MissingHostKeyPolicy):
    """Hands every server key to `verify` (the client holds no keys of its own, so paramiko always asks)."""

    def __init__(self, target: SshTarget):
        self.target = target

    def missing_host_key(self, client, hostname, key):
        verify(self.target, key)
