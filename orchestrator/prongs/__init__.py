"""The prongs of an investigation, in order: `PRONGS`, one `orchestrator.prong.Prong` record per folder below.

The order is the order of the lead's plan (the standing prongs, then those that join on an input), of the rules
(after the core rules of `analysis/rules.py`), of the tool registrations and of the report sections. Adding a prong
is a folder here, its agent definition in `agents/`, and one line in this list (docs/extending.md).
"""

from __future__ import annotations

from typing import Any

from orchestrator.prong import Prong, load
from orchestrator.prongs.autotune import PRONG as AUTOTUNE
from orchestrator.prongs.fleet import PRONG as FLEET
from orchestrator.prongs.kernel_research import PRONG as KERNEL_RESEARCH
from orchestrator.prongs.node_health import PRONG as NODE_HEALTH
from orchestrator.prongs.path import PRONG as PATH
from orchestrator.prongs.reference import PRONG as REFERENCE
from orchestrator.prongs.request import PRONG as REQUEST
from orchestrator.prongs.resource_account import PRONG as RESOURCE_ACCOUNT
from orchestrator.prongs.serving_engine import PRONG as SERVING_ENGINE
from orchestrator.prongs.settings_audit import PRONG as SETTINGS_AUDIT
from orchestrator.prongs.tensor_core_specs import PRONG as TENSOR_CORE_SPECS
from orchestrator.prongs.trace import PRONG as TRACE

PRONGS: tuple[Prong, ...] = (
    KERNEL_RESEARCH,
    AUTOTUNE,
    NODE_HEALTH,
    TENSOR_CORE_SPECS,
    SERVING_ENGINE,
    RESOURCE_ACCOUNT,
    PATH,
    REQUEST,
    FLEET,
    REFERENCE,
    TRACE,
    SETTINGS_AUDIT,
)


def parts(field: str) -> list[Any]:
    """Every prong's parts of one reference field (`tools`, `probe_models`, `rules`), in `PRONGS` order."""
    return [part for p in PRONGS for part in p.parts(field)]


def sections(renderer: str) -> list[Any]:
    """Every prong's report section for `html`, `markdown` or `terminal`, in `PRONGS` order."""
    return [s for p in PRONGS if (s := p.section(renderer)) is not None]


def check_inputs(**values: Any) -> None:
    """Run each prong's input check on the values of the inputs it reads (`InputError` on the first problem)."""
    for p in PRONGS:
        if p.check and any(values.get(k) for k in p.inputs):
            load(p.check)(**{k: values.get(k) for k in p.inputs})
