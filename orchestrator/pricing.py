"""Dollar cost of model calls from the price table in `knowledge/prices.yaml`, overridable by settings.

Prices are per million tokens. A model id matches the longest table entry it starts with, so dated ids
(`claude-sonnet-4-5-20250929`) and suffixed ones (`claude-opus-5-5[1m]`) price as their family entry.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping

from pydantic import BaseModel, ConfigDict, ValidationError

from orchestrator.messages import Usage


class Price(BaseModel):
    """Dollars per million tokens of each kind."""

    model_config = ConfigDict(extra="forbid")
    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0


class PriceTable(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: str
    checked: str
    notes: str = ""
    models: dict[str, Price]


@lru_cache(maxsize=1)
def price_table() -> PriceTable:
    """The shipped price table (read once)."""
    from orchestrator import knowledge

    return PriceTable.model_validate(knowledge.price_rows())


def price_for(model: str, overrides: Mapping[str, Mapping[str, float]] | None = None) -> Price | None:
    """The price of `model`: an exact override, else the longest matching table or override entry, else None."""
    table: dict[str, Price] = dict(price_table().models)
    for name, fields in (overrides or {}).items():
        base = table.get(name)
        merged = {**(base.model_dump() if base else {}), **fields}
        try:
            table[name] = Price.model_validate(merged)
        except ValidationError as exc:
            field = ".".join(str(x) for x in exc.errors()[0]["loc"])
            raise ValueError(
                f"settings.prices[{name!r}]: {field}: {exc.errors()[0]['msg']}; give input and output dollars per MTok"
            ) from None
    if model in table:
        return table[model]
    matches = [name for name in table if model.startswith(name)]
    return table[max(matches, key=len)] if matches else None


def cost(model: str, usage: Usage, overrides: Mapping[str, Mapping[str, float]] | None = None) -> float:
    """Dollar cost of `usage` on `model`; 0.0 for a model the table does not know."""
    price = price_for(model, overrides)
    if price is None:
        return 0.0
    total = (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_tokens * price.cache_read
        + usage.cache_write_tokens * price.cache_write
    ) / 1_000_000
    return round(total, 6)
