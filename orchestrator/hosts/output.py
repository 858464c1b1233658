"""A byte sink that keeps the head and tail of a stream within a cap, for command output."""

from __future__ import annotations

OMITTED_MARKER = "\n[... {omitted} bytes omitted by the output cap ...]\n"


class CappedBuffer:
    """Collects a stream, keeping its first and last bytes so a huge output never fills memory.

    Two thirds of the cap go to the head (where tools print what they are), one third to a rolling tail (where
    they print how they ended); what falls between is counted and replaced by a visible marker.
    """

    def __init__(self, limit: int):
        self.limit = max(int(limit), 0)
        self._head_cap = self.limit * 2 // 3
        self._tail_cap = self.limit - self._head_cap
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data and self._tail_cap:
            self._tail += data
            if len(self._tail) > self._tail_cap:
                del self._tail[: len(self._tail) - self._tail_cap]

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    @property
    def omitted(self) -> int:
        return self.total - len(self._head) - len(self._tail)

    def raw(self) -> bytes:
        """The kept bytes with nothing in between (head only when nothing was omitted)."""
        return bytes(self._head + self._tail)

    def text(self) -> str:
        """The kept output as text, with the marker where bytes were omitted."""
        head = self._head.decode("utf-8", errors="replace")
        if not self.truncated:
            return head + self._tail.decode("utf-8", errors="replace")
        tail = self._tail.decode("utf-8", errors="replace")
        return head + OMITTED_MARKER.format(omitted=self.omitted) + tail
