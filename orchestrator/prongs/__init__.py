"""The prongs of an investigation, in order: `PRONGS`, one `orchestrator.prong.Prong` record per folder below.

The order is the lead's plan order (the standing prongs, then those that join on an input) and the order in which
their rules run, their tools register and their report sections appear. Adding a prong is a folder here, its agent
definition in `agents/`, and one line in this list (docs/extending.md).
"""

from __future__ import annotations

from orchestrator.prong import Prong, load
from orchestrator.prongs.trace import PRONG as TRACE

PRONGS: tuple[Prong, ...] = (
    TRACE,
)


def parts(field: str) -> list:
    """Every prong's parts of one reference field (`tools`, `probe_models`, `rules`), in `PRONGS` order."""
    return [part for p in PRONGS for part in p.parts(field)]


def sections(renderer: str) -> list:
    """Every prong's report section for `html`, `markdown` or `terminal`, in `PRONGS` order."""
    return [s for p in PRONGS if (s := p.section(renderer)) is not None]


def check_inputs(**values) -> None:
    """Run each prong's input check on the values of the inputs it reads (`InputError` on the first problem)."""
    for p in PRONGS:
        if p.check and any(values.get(k) for k in p.inputs):
            load(p.check)(**{k: values.get(k) for k in p.inputs})
