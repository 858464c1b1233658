"""`Prong`: one line of an investigation, named in one record.

A prong is a folder `orchestrator/prongs/<name>/` (its tools, the models of what its probes return, its rules and its
report sections) plus its agent definition in `agents/`. Its record says what it contributes to each shared place;
`orchestrator.prongs.PRONGS` lists the records in order, and each composition point takes what the list hands it:

| record field    | read by                                                          |
|-----------------|------------------------------------------------------------------|
| `agent`         | the lead's plan (`agentdefs.load_agents`): the agent's own `brief` and `joins` |
| `tools`         | the default tool registry (`tools.registry.default_registry`)    |
| `probe_models`  | the probe-model registry (`probes.results.parse_probe`), by `kind` |
| `rules`         | the rules (`analysis.rules.RULES`), in this order                 |
| `bound_tiers`   | (said, not read) the ranks at which its findings may set the bound |
| `html`, `markdown`, `terminal` | the report sections (`render.html`, `render.diagnosis`, `investigate show`) |
| `inputs`, `check` | the run inputs the prong reads, and the check they pass before any work |
| `follow_up`     | the offline lead's second round (`models.offline`): steps planned from the first round's evidence |

The parts are named as `"package.module:attribute"` references and imported on first use, like the host openers
(`hosts.entry`): reading the records imports none of the parts, so every composition point may read them without an
import circle, and a command that needs no prong (`investigate specs`) pays for none.

Section signatures (a section that has nothing to show returns "" / [] / prints nothing):
`html(events, diagnosis, known) -> str`, `markdown(events, diagnosis, esc) -> list[str]`,
`terminal(events, diagnosis, console) -> None`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

Ref = str
"""`"package.module:attribute"`: a part of a prong, imported when first used."""


@dataclass(frozen=True)
class Prong:
    """What one prong contributes, each part named by reference (see the module docstring)."""

    name: str
    agent: str | None = None
    """The agent definition (`agents/<agent>.md`) that runs the prong; its front matter's `brief` is the lead's
    offline plan step and `joins: run.FIELD` the input without which the step is left out. None for a prong whose
    tools another prong's agent calls (the settings audit runs under the serving-engine agent)."""
    tools: tuple[Ref, ...] = ()
    """Tool classes, each instantiated once into the default registry."""
    probe_models: tuple[Ref, ...] = ()
    """`ProbeModel` classes (or tuples of them) a recorded `data` payload is parsed back into, by its `kind`."""
    rules: tuple[Ref, ...] = ()
    """Rule functions (`EvidenceView -> list[Finding]`), run in this order after the rules of the prongs before."""
    bound_tiers: tuple[int, ...] = ()
    """The `findings.Rank` tiers at which this prong's findings may set the diagnosis's bound (its rules give each
    such finding its `BoundClaim`; the synthesis takes the lowest claim, whichever prong made it)."""
    html: Ref | None = None
    markdown: Ref | None = None
    terminal: Ref | None = None
    inputs: tuple[str, ...] = ()
    """The `RunInputs` fields this prong reads (its agent's plan arguments name them as `{run.FIELD}`)."""
    check: Ref | None = None
    """A function of those inputs' values (keyword arguments named after the fields) that raises `InputError` with
    one line naming the problem and the fix; the entry points call it before any work."""
    follow_up: Ref | None = None
    """A second round: a function `(EvidenceView) -> list[agentdefs.PlanStep]` over the evidence of the first round
    (the lead's plan), returning the lead's next calls (usually `task` steps that start an agent with a brief
    naming what to read next), or [] when the first round settles it. The offline lead makes every prong's steps
    in one message, then synthesizes over both rounds."""

    def parts(self, field: str) -> list[Any]:
        """The objects a reference field names (`tools`, `probe_models`, `rules`), imported."""
        refs = getattr(self, field)
        return [load(r) for r in refs]

    def section(self, renderer: str) -> Any | None:
        """The report section function for `html`, `markdown` or `terminal`, or None."""
        ref = getattr(self, renderer)
        return load(ref) if ref else None


def load(ref: Ref) -> Any:
    """The object a `"package.module:attribute"` reference names (ImportError/AttributeError when it names none)."""
    module, sep, attr = ref.partition(":")
    if not sep or not attr:
        raise ValueError(f"prong part {ref!r} is not 'package.module:attribute'")
    return getattr(importlib.import_module(module), attr)
