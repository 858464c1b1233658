"""What the probes of one host share: each probe runs once per host and arguments, and can start early.

Within a run, several agents ask for the same probes (the kernel prong and the generalist both want `python_env`;
the kernel inventory, the autotune inventory and the Python environment all need the interpreter that the
`discover` script finds). `shared(host, key, factory)` runs `factory` once per (host, key): a caller that comes
while it runs waits for it, a later one gets a copy of its result. A live reading (`once`: GPU inventory, power,
node health, the engine's /metrics, the resource account) serves the callers of one moment: those that ask while
it is taken and up to `READING_FRESH_S` after it ended get a copy of it; a later caller takes a new reading. Four
prongs asking for `gpu_inventory` within a second ran `nvidia-smi -q -x`, `--query-gpu` and `topo -m` four times
each, side by side on the GPUs' driver, for four copies of one moment's values. `prefetch(run)` starts the
read-only probes the offline plans call with their default arguments as soon as the host is connected, so that
what the prongs then ask for is under way or done; the probes' own wall time is in each model's `probe_s`.

Separately, `ListingCache` keeps what the kernel inventory read out of each shared object (the sm_XX images in its
fatbin) in this process's memory, keyed by host and path and served only while the file keeps the same size and
mtime (the script checks both on the host before reusing a listing). Nothing is cached on the host.
"""

from __future__ import annotations

import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Hashable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from orchestrator.probes.results import ProbeModel

if TYPE_CHECKING:
    from orchestrator.hosts.base import Host

T = TypeVar("T")


READING_FRESH_S = 2.0
"""How long after it ended a live reading still serves a new caller (a run's prongs ask within a second or two of
each other; the account's and the power sampler's own windows are what watches the host over time)."""


UNFILLED: Any = object()
"""What a `fill` factory returns for a key it did not fill after all: the next caller runs that probe itself."""


class _Slot:
    """One probe of one host: running (done unset), or finished with a result or an exception."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self.taken = False
        """Someone got this result (or is running the probe for themselves)."""
        self.abandoned = False
        """The run that started it was cancelled before it finished: the next caller starts it again."""
        self.ended: float | None = None
        """time.monotonic() when it finished (a live reading serves new callers for READING_FRESH_S after)."""

    def stale(self, fresh_s: float) -> bool:
        """A reading someone took that ended more than fresh_s ago: the next caller takes a new one. (One nobody took
        yet, a prefetch's, waits for its first caller however old.)"""
        return self.taken and self.ended is not None and time.monotonic() - self.ended > fresh_s


class ProbeSession:
    """The shared probe results of one host (see the module's docstring)."""

    def __init__(self, fresh_s: float = READING_FRESH_S) -> None:
        self.slots: dict[Hashable, _Slot] = {}
        self.fresh_s = fresh_s
        """How long a finished live reading serves new callers (READING_FRESH_S)."""

    async def shared(self, key: Hashable, factory: Callable[[], Awaitable[T]], *, once: bool = False,
                     prefetch: bool = False) -> T:
        """factory's result for this key, run at most once at a time; with `once` (live readings: power, clocks)
        a result serves the callers that ask while it runs and up to `fresh_s` after it ended, and a later caller
        runs the probe again. A `prefetch` run leaves its result for the next caller. Every caller gets its own
        copy."""
        while True:
            slot = self.slots.get(key)
            if slot is None or slot.abandoned or (once and slot.stale(self.fresh_s)):
                break
            if prefetch:
                return slot.result  # already there or under way: nothing to start (a prefetch drops its result)
            await slot.done.wait()
            if slot.abandoned:
                continue
            slot.taken = True
            if slot.error is not None:
                raise slot.error
            return _copy(slot.result)
        slot = _Slot()
        slot.taken = not prefetch
        self.slots[key] = slot
        started = time.monotonic()
        try:
            result = await factory()
        except BaseException as exc:
            self._failed(key, slot, exc)
            raise
        if isinstance(result, ProbeModel) and result.probe_s is None:
            result.probe_s = round(time.monotonic() - started, 4)
        slot.result = result
        slot.ended = time.monotonic()
        slot.done.set()
        # the slot keeps the result for the callers to come: they get copies (a prefetch drops what it is returned)
        return result if prefetch else _copy(result)


    def _failed(self, key: Hashable, slot: _Slot, exc: BaseException) -> None:
        """A probe ended with exc: an error is its result for whoever waits; a cancellation (or an interrupt)
        abandons the slot, so the next caller runs the probe again."""
        if isinstance(exc, anyio.get_cancelled_exc_class()) or not isinstance(exc, Exception):
            slot.abandoned = True
            if self.slots.get(key) is slot:
                del self.slots[key]
        else:
            slot.error = exc
            slot.ended = time.monotonic()
        slot.done.set()

    async def fill(self, keys: list[Hashable], factory: Callable[[], Awaitable[dict[Hashable, Any]]], *,
                   once: bool | Collection[Hashable] = False) -> None:
        """A prefetch of several probes in one run of `factory` (one round trip for all of them): it returns each
        key's result, the exception that key's probe ended with, or UNFILLED (the next caller runs that probe
        itself). Keys already there or under way are left as they are (their part is dropped); callers of the
        others wait for this run as for any probe. `once`: for every key, or the keys given."""
        mine: dict[Hashable, _Slot] = {}
        for key in keys:
            slot = self.slots.get(key)
            key_once = once if isinstance(once, bool) else key in once
            if slot is None or slot.abandoned or (key_once and slot.stale(self.fresh_s)):
                mine[key] = self.slots[key] = _Slot()
        if not mine:
            return
        started = time.monotonic()
        try:
            results = await factory()
        except BaseException as exc:
            for key, slot in mine.items():
                self._failed(key, slot, exc)
            raise
        for key, slot in mine.items():
            result = results.get(key)
            if result is UNFILLED:
                slot.abandoned = True
                if self.slots.get(key) is slot:
                    del self.slots[key]
            elif isinstance(result, BaseException):
                slot.error = result
            elif result is None:
                slot.error = RuntimeError(f"the combined probe returned nothing for {key!r}")
            else:
                if isinstance(result, ProbeModel) and result.probe_s is None:
                    result.probe_s = round(time.monotonic() - started, 4)
                slot.result = result
            slot.ended = time.monotonic()
            slot.done.set()


def _copy(value: Any) -> Any:
    return value.model_copy(deep=True) if isinstance(value, ProbeModel) else value


_sessions: "weakref.WeakKeyDictionary[Any, ProbeSession]" = weakref.WeakKeyDictionary()


def session_of(host: "Host") -> ProbeSession:
    s = _sessions.get(host)
    if s is None:
        s = _sessions[host] = ProbeSession()
    return s


async def shared(host: "Host", key: Hashable, factory: Callable[[], Awaitable[T]], *, once: bool = False) -> T:
    """Run factory once per host and key (see the module's docstring); a ProbeModel result gets its probe_s."""
    return await session_of(host).shared(key, factory, once=once)


async def start(host: "Host", key: Hashable, factory: Callable[[], Awaitable[Any]], *, once: bool = False) -> None:
    """Run factory now for whoever asks for this key next (a prefetch), unless it is there or under way."""
    await session_of(host).shared(key, factory, once=once, prefetch=True)


async def fill(host: "Host", keys: list[Hashable], factory: Callable[[], Awaitable[dict[Hashable, Any]]], *,
               once: bool | Collection[Hashable] = False) -> None:
    """Prefetch several keys of this host with one factory run (see ProbeSession.fill); `once` as in `shared`."""
    await session_of(host).fill(keys, factory, once=once)


def forget(host: "Host") -> None:
    """Drop what this host's probes shared (the next call of each runs it again)."""
    _sessions.pop(host, None)


# --- the shared-object listing cache ----------------------------------------------------------------------------


class ListingCache:
    """host, path -> [size, mtime_ns, archs, how]: what the kernel inventory listed, in memory only, bounded."""

    def __init__(self, max_entries: int = 4096) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], list[Any]] = OrderedDict()

    def known_for(self, host: str, limit: int = 300) -> dict[str, list[Any]]:
        """The latest listings of one host, for the script to reuse where the file's size and mtime still match.

        At most `limit` (one inventory lists at most 30 shared objects in each of its ten libraries): they travel
        as the script's argument, which the kernel caps (128 KiB on Linux)."""
        mine = [(path, v) for (h, path), v in self._entries.items() if h == host]
        return {path: list(v) for path, v in mine[-limit:]}

    def update(self, host: str, listings: dict[str, Any]) -> None:
        for path, entry in (listings or {}).items():
            if not _valid_listing(entry):
                continue
            key = (host, str(path))
            self._entries[key] = [int(entry[0]), int(entry[1]), [str(a) for a in entry[2]], str(entry[3])]
            self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    def lookup(self, host: str, path: str, size: int, mtime_ns: int) -> list[str] | None:
        """The archs listed for this file if it still has this size and mtime, else None (never a stale listing)."""
        entry = self._entries.get((host, path))
        if entry is None or entry[0] != size or entry[1] != mtime_ns:
            return None
        return list(entry[2])

    def clear(self) -> None:
        self._entries.clear()


def _valid_listing(entry: Any) -> bool:
    return (isinstance(entry, (list, tuple)) and len(entry) >= 4 and all(isinstance(x, int) for x in entry[:2])
            and isinstance(entry[2], list) and all(isinstance(a, str) for a in entry[2]))


LISTINGS = ListingCache()
"""This process's listing cache (see ListingCache)."""


# --- prefetch -----------------------------------------------------------------------------------------------------
