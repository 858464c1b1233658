"""The measurement tools refuse without --measure and run the real probe with it."""

from __future__ import annotations

import sys

import pytest

from orchestrator.inputs import RunInputs
from orchestrator.hosts.local import LocalHost
from orchestrator.settings import Settings
from orchestrator.tools.base import ToolRegistry, execute
from orchestrator.prongs.tensor_core_specs import PRONG
from orchestrator.tools.mock import MockToolContext
from support.machine import needs_torch


REGISTRY = ToolRegistry()
for _tool in PRONG.parts("tools"):
    REGISTRY.add(_tool())


def _ctx(measure: bool) -> MockToolContext:
    return MockToolContext(LocalHost(), inputs=RunInputs(question="q", measure=measure, python=sys.executable),
                           settings=Settings(gemm_budget_s=10, comm_budget_s=10))


@pytest.mark.parametrize("name", ["gemm_benchmark", "comm_benchmark"])
async def test_measurement_tools_refuse_without_measure(name):
    ctx = _ctx(measure=False)
    res = await execute(REGISTRY.get(name), name, {}, ctx)
    assert res.output.is_error and "--measure" in res.output.text


@needs_torch
async def test_gemm_tool_with_measure_records_the_typed_sweep():
    ctx = _ctx(measure=True)
    res = await execute(REGISTRY.get("gemm_benchmark"), "gemm_benchmark", {"n": 64, "k": 32}, ctx)
    assert not res.output.is_error
    assert res.output.data["kind"] == "gemm_sweep" and res.output.data["available"] is False
    assert ("skipped: no CUDA GPU" in res.output.text or "skipped: no GPU on this host" in res.output.text) and res.output.host == "local"


def test_the_prong_record_names_both_tools():
    assert sorted(t.name for t in PRONG.parts("tools")) == ["comm_benchmark", "gemm_benchmark"]
