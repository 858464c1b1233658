"""A gap says what the user can add. The roofline's gap on every host run without observations read "no observations
to derive MoE decode shapes from; pass m, n, k and dtype for a GEMM": MoE for a dense or unknown model, and
arguments no command line takes."""

from __future__ import annotations

import anyio

from orchestrator.inputs import RunInputs
from orchestrator.tools.base import ToolFailure
from orchestrator.tools.knowledge import Roofline, RooflineInput
from orchestrator.tools.mock import MockToolContext


def test_the_roofline_without_observations_asks_for_them():
    ctx = MockToolContext(inputs=RunInputs(question="why is decode slow?"))
    try:
        anyio.run(Roofline().run, RooflineInput(gpu="NVIDIA H100 80GB HBM3"), ctx)
    except ToolFailure as exc:
        said = str(exc)
    else:
        raise AssertionError("the roofline ran without a model or a GEMM")
    assert "--observations" in said and "MoE" not in said, said
