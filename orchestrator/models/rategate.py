"""One back-off gate shared by every agent of a run, so a 429/529 storm slows the fan-out instead of killing it.

When any caller is told to slow down (429 rate limited, 529 overloaded), the gate closes until a reopen time; every
caller waits at the gate before its next request. The wait honours the server's `retry-after-ms` / `retry-after`
headers, else grows as jittered exponential back-off with the number of consecutive trips, always capped. A success
resets the back-off. Clock, sleep and randomness are injectable so the arithmetic is tested without waiting.
"""

from __future__ import annotations

import math
import random
import time
from email.utils import parsedate_to_datetime
from typing import Awaitable, Callable, Mapping

import anyio


def parse_retry_after(headers: Mapping[str, str], now_epoch: float | None = None) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms`, else `retry-after` (seconds or HTTP date); else None."""
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            if math.isfinite(float(ms)):  # "nan"/"inf" parse as floats; they are no wait at all
                return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    now = time.time() if now_epoch is None else now_epoch
    return max(when.timestamp() - now, 0.0)


class RateGate:
    """A shared gate: `trip()` after a 429/529 closes it for a while; `wait()` blocks until it reopens."""

    def __init__(
        self,
        max_wait_s: float = 60.0,
        *,
        base_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        rng: Callable[[], float] = random.random,
    ):
        self.max_wait_s = max_wait_s
        self.base_s = base_s
        self._clock = clock
        self._sleep = sleep
        self._rng = rng
        self._reopen_at = 0.0
        self._trips = 0
        self.total_trips = 0
        """Trips over the gate's life (for notices and tests)."""

    def backoff(self, trips: int) -> float:
        """Jittered exponential back-off after `trips` consecutive trips (1 = first), capped."""
        ceiling = min(self.max_wait_s, self.base_s * 2 ** max(trips - 1, 0))
        # "Equal jitter": at least half the ceiling so a storm cannot collapse into immediate retries.
        return ceiling / 2 + self._rng() * ceiling / 2

    def trip(self, retry_after_s: float | None = None) -> float:
        """Close the gate after a 429/529; returns the wait this trip imposes (from now)."""
        self._trips += 1
        self.total_trips += 1
        if retry_after_s is not None and math.isfinite(retry_after_s):
            wait = retry_after_s
        else:
            wait = self.backoff(self._trips)
        wait = min(max(wait, 0.0), self.max_wait_s)
        # Never shorten a wait another caller already imposed.
        self._reopen_at = max(self._reopen_at, self._clock() + wait)
        return wait

    def succeeded(self) -> None:
        """A request went through: the next trip starts the back-off afresh."""
        self._trips = 0

    def remaining(self) -> float:
        """Seconds until the gate reopens (0 when open)."""
        return max(self._reopen_at - self._clock(), 0.0)

    async def wait(self) -> float:
        """Block until the gate is open; returns the seconds waited.

        A caller that was held also waits a random extra slice of up to `base_s` (capped by `max_wait_s`), so the
        callers a closed gate collected do not all retry in the same instant and trip it again together.
        """
        waited = 0.0
        # Loop because another caller may push the reopen time further out while we sleep.
        while (left := self.remaining()) > 0:
            await self._sleep(left)
            waited += left
        if waited:
            spread = self._rng() * min(self.base_s, self.max_wait_s)
            await self._sleep(spread)
            waited += spread
        return waited
