"""Several hosts in one investigation: the host list, opening every host concurrently, and the in-flight bound.

A run spans hosts when the user names more than one (`--host` repeated, `--hosts FILE`) or a host source that is
not one SSH destination (`--slurm`, `--k8s`). Each host is a `HostEntry` (its label in evidence, how it is reached,
its role); `open_hosts` connects them all with at most `Settings.hosts_in_flight` at once and turns a host that
cannot be used into an entry with `error` set (a gap in the diagnosis) -- unless no host at all can be used, which
is bad input (exit 2) as with one host. Every opened host is wrapped in a `GatedHost`: its commands wait for one of
`hosts_in_flight` slots shared by the whole run, so a 64-node fleet is probed a bounded number of hosts at a time
while one host's commands still run side by side on its connection.

The entries (with their errors) are part of the run's inputs, so a replay sees the same hosts in the same order,
and the offline plan's fan-out (`foreach: hosts`) makes the same calls with the same evidence ids.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from orchestrator.errors import InputError
from orchestrator.hosts.base import CommandResult, Host, HostError, HostUnusable
from orchestrator.hosts.entry import ROLE, HostEntry, Via, opener_for
from orchestrator.settings import Settings

__all__ = ["ROLE", "HostEntry", "HostGate", "HostSet", "HostsFileError", "GatedHost", "Via", "check_unique",
           "entries_from_dests", "load_hosts_file", "open_hosts", "parse_hosts_text"]

class HostsFileError(InputError):
    """A hosts file that cannot be used; the message is one line naming the problem and the fix."""


def entries_from_dests(dests: list[str], role: str | None = None) -> list[HostEntry]:
    """`--host A --host B`: one ssh entry per destination, labelled by it (`local` stays this machine)."""
    out = []
    for d in dests:
        d = d.strip()
        if not d:
            raise HostsFileError("an empty --host was given; pass an ssh-config alias or [user@]host[:port]")
        out.append(HostEntry(name=d, dest=d, via="local" if d == "local" else "ssh", role=role))
    return check_unique(out)


def check_unique(entries: list[HostEntry]) -> list[HostEntry]:
    seen: set[str] = set()
    for e in entries:
        if e.name in seen:
            raise HostsFileError(f"host {e.name!r} is named twice; name each host once")
        seen.add(e.name)
    return entries


def _entry(item: Any, where: str, role: str | None = None) -> HostEntry:
    if isinstance(item, str):
        return HostEntry(name=item.strip(), dest=item.strip(), via="local" if item.strip() == "local" else "ssh",
                         role=role)
    if isinstance(item, dict):
        dest = item.get("host") or item.get("dest")
        if not isinstance(dest, str) or not dest.strip():
            raise HostsFileError(f"{where}: an entry has no `host`; write `- host: gpu-a` (and optionally `role:`)")
        unknown = set(item) - {"host", "dest", "role", "name"}
        if unknown:
            raise HostsFileError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))} in the entry for "
                                 f"{dest}; use host, role and name")
        r = item.get("role", role)
        if r is not None and (not isinstance(r, str) or not ROLE.match(r)):
            raise HostsFileError(f"{where}: role {r!r} of {dest} is not a short lower-case word "
                                 "(prefill, decode, router, ...)")
        name = item.get("name") or dest.strip()
        return HostEntry(name=str(name), dest=dest.strip(), via="local" if dest.strip() == "local" else "ssh", role=r)
    raise HostsFileError(f"{where}: an entry is a {type(item).__name__}; write a destination or `host:`/`role:`")


_LOOKS_YAML = re.compile(r"^\s*(- |[A-Za-z_][\w-]*:(\s|$)|[\[{])", re.M)
"""A line only YAML has (a list item, a `key:` mapping, a flow collection); the plain form's lines are
`[user@]host[:port] [role]`, whose colon is never followed by a space."""


def parse_hosts_text(text: str, where: str = "hosts file") -> list[HostEntry]:
    """A hosts file: one destination per line (`#` comments, an optional role after it), or YAML.

    YAML forms: a list of destinations or `{host, role, name}` mappings; `hosts:` holding such a list; or a
    mapping of role to a list of destinations (`prefill: [a, b]`, `decode: [c]`, `router: [r]`).
    """
    from orchestrator.safeload import SafeLoadError, load_yaml

    try:
        data = load_yaml(text, source=where)
    except SafeLoadError as exc:
        if "is not valid YAML" not in str(exc):  # bounded: an alias bomb, deep nesting, a duplicate key
            raise HostsFileError(f"{exc}; fix the hosts file") from None
        if _LOOKS_YAML.search(text):  # meant as YAML: say where its syntax breaks, not that a line is a bad role
            raise HostsFileError(f"{exc}; fix the syntax, or write one destination (and optionally its role) per "
                                 "line") from None
        data = None  # not YAML: one destination per line
    entries: list[HostEntry] = []
    if isinstance(data, dict) and "hosts" in data and len(data) == 1:
        data = data["hosts"]
    if isinstance(data, list):
        entries = [_entry(item, where) for item in data]
    elif isinstance(data, dict):
        for role, items in data.items():
            if not isinstance(role, str) or not ROLE.match(role):
                raise HostsFileError(f"{where}: {role!r} is not a role (a short lower-case word such as prefill)")
            if isinstance(items, str):
                items = [items]
            if not isinstance(items, list):
                raise HostsFileError(f"{where}: role {role} must list its hosts (`{role}: [gpu-a, gpu-b]`)")
            entries += [_entry(item, where, role) for item in items]
    else:
        for n, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) > 2:
                raise HostsFileError(f"{where} line {n}: {line!r} has more than a destination and a role; "
                                     "write one destination (and optionally its role) per line")
            role = parts[1] if len(parts) == 2 else None
            if role is not None and not ROLE.match(role):
                raise HostsFileError(f"{where} line {n}: role {role!r} is not a short lower-case word")
            entries.append(_entry(parts[0], where, role))
    if not entries:
        raise HostsFileError(f"{where} names no host; write one destination per line")
    return check_unique(entries)


def load_hosts_file(path: str | Path) -> list[HostEntry]:
    from orchestrator.safeload import SafeLoadError, read_capped

    p = Path(path)
    try:
        text = read_capped(p, what="hosts file", max_bytes=1 << 20)  # thousands of hosts fit in far less
    except SafeLoadError as exc:
        raise HostsFileError(f"{exc}; pass an existing text file to --hosts") from None
    return parse_hosts_text(text, f"hosts file {p}")


class HostGate:
    """At most `limit` hosts busy at once across the run; commands of a host that is busy share its slot."""

    def __init__(self, limit: int):
        self.limiter = anyio.CapacityLimiter(max(1, limit))
        self._users: dict[str, int] = {}
        self._locks: dict[str, anyio.Lock] = {}
        self.peak = 0
        """The most hosts that were busy at once (for tests and the benchmark)."""

    @asynccontextmanager
    async def slot(self, name: str) -> AsyncIterator[None]:
        lock = self._locks.setdefault(name, anyio.Lock())
        async with lock:
            if self._users.get(name, 0) == 0:
                await self.limiter.acquire_on_behalf_of(name)
            self._users[name] = self._users.get(name, 0) + 1
            self.peak = max(self.peak, sum(1 for v in self._users.values() if v))
        try:
            yield
        finally:
            self._users[name] -= 1
            if self._users[name] == 0:
                self.limiter.release_on_behalf_of(name)


class GatedHost:
    """A host labelled with its entry's name, whose every call waits for the run's host gate."""

    def __init__(self, inner: Host, name: str, gate: HostGate):
        self.inner = inner
        self.name = name
        self.gate = gate

    async def run(self, argv: list[str], *, stdin: str | None = None, timeout_s: float = 60.0,
                  max_output: int = 1_000_000) -> CommandResult:
        async with self.gate.slot(self.name):
            return await self.inner.run(argv, stdin=stdin, timeout_s=timeout_s, max_output=max_output)

    async def read_file(self, path: str, *, max_bytes: int = 1_000_000) -> bytes:
        async with self.gate.slot(self.name):
            return await self.inner.read_file(path, max_bytes=max_bytes)

    async def find(self, root: str, pattern: str = "*", *, max_results: int = 10_000) -> list[str]:
        async with self.gate.slot(self.name):
            return await self.inner.find(root, pattern, max_results=max_results)

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class HostSet:
    """The opened hosts of a run: entries in the user's order (errors filled in), the usable ones by name."""

    entries: list[HostEntry]
    hosts: dict[str, Host] = field(default_factory=dict)
    gate: HostGate | None = None

    @property
    def primary(self) -> Host | None:
        """The first usable host: what single-host tools (`ctx.host`) run on."""
        return next(iter(self.hosts.values()), None)

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as tg:
                for h in self.hosts.values():
                    tg.start_soon(_close_quietly, h)


async def _close_quietly(h: Host) -> None:
    try:
        await h.aclose()
    except Exception:  # a connection that is already gone has nothing left to release
        pass


async def _open_one(entry: HostEntry, ssh_config: str | None, settings: Settings) -> Host:
    """Reach the host through the opener registered for its `via` (orchestrator/hosts/entry.py)."""
    return await opener_for(entry.via)(entry, ssh_config, settings)


async def open_hosts(entries: list[HostEntry], *, ssh_config: str | None = None,
                     settings: Settings | None = None) -> HostSet:
    """Open every host concurrently (at most `hosts_in_flight` at once); a host that fails becomes a gap.

    Raises HostError (one line) when no host can be used: then nothing can be investigated.
    """
    settings = settings or Settings()
    gate = HostGate(settings.hosts_in_flight)
    opened: dict[str, Host] = {}
    out = [e.model_copy() for e in entries]

    async def one(i: int, e: HostEntry) -> None:
        if e.error:  # known unusable before connecting (a drained Slurm node outside an allocation)
            return
        async with gate.slot(e.name):
            try:
                opened[e.name] = await _open_one(e, ssh_config, settings)
            except HostError as exc:
                out[i] = e.model_copy(update={"error": " ".join(str(exc).split())})

    async with anyio.create_task_group() as tg:
        for i, e in enumerate(out):
            tg.start_soon(one, i, e)
    hosts: dict[str, Host] = {e.name: GatedHost(opened[e.name], e.name, gate) for e in out if e.name in opened}
    if not hosts:
        if len(out) == 1:
            raise HostUnusable(out[0].error or f"{out[0].name} cannot be used")
        why = "; ".join(f"{e.name}: {e.error}" for e in out)
        raise HostUnusable(f"none of the {len(out)} hosts can be used ({why})")
    return HostSet(entries=out, hosts=hosts, gate=gate)
