"""Evidence: every recorded tool result, addressable by id, as the analysis rules and the diagnosis see it."""

from __future__ import annotations

from typing import Any, Callable

from pydantic import BaseModel, Field, PrivateAttr


class Evidence(BaseModel):
    id: str
    """`ev-<agent ordinal>.<n>`: stable for a given run shape, so replays and diffs line up."""
    agent_id: str
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    host: str | None = None
    text: str = ""
    data: dict[str, Any] | None = None
    is_error: bool = False
    _derived: dict[str, Any] = PrivateAttr(default_factory=dict)
    """What analysis computed from this evidence, by name (recorded evidence does not change): a fleet's comparison
    reads every host's facts once, not once per agent."""

    def derived(self, name: str, compute: Callable[["Evidence"], Any]) -> Any:
        """compute(self), once per name (see `_derived`)."""
        # `self._derived` without pydantic's __getattr__ (a fleet's analysis asks thousands of times)
        store: dict[str, Any] = self.__pydantic_private__["_derived"]  # type: ignore[index]
        try:
            return store[name]
        except KeyError:
            value = store[name] = compute(self)
            return value

    @property
    def kind(self) -> str | None:
        return (self.data or {}).get("kind")

    def excerpt(self, limit: int = 400) -> str:
        text = " ".join(self.text.split())
        return text if len(text) <= limit else text[: limit - 1] + "…"


class EvidenceStore:
    """The run's evidence by id, in recording order."""

    def __init__(self) -> None:
        self._items: dict[str, Evidence] = {}

    def add(self, ev: Evidence) -> None:
        self._items[ev.id] = ev

    def get(self, eid: str) -> Evidence | None:
        return self._items.get(eid)

    def __contains__(self, eid: str) -> bool:
        return eid in self._items

    def all(self) -> list[Evidence]:
        return list(self._items.values())

    def by_agent(self, agent_id: str) -> list[Evidence]:
        return [e for e in self._items.values() if e.agent_id == agent_id]

    def of_kind(self, kind: str) -> list[Evidence]:
        return [e for e in self._items.values() if e.kind == kind and not e.is_error]
