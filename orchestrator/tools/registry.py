"""The default tool registry: the orchestration tools plus every tool module's `register`."""

from __future__ import annotations

from orchestrator.tools.task import TaskTool
from orchestrator.tools.base import ToolRegistry
from orchestrator.tools.submit import SubmitDiagnosis, SubmitFindings


def default_registry() -> ToolRegistry:
    from orchestrator.tools import (account, benchmarks, engine, fetch, fleet, knowledge, node, probes, settings, shell,
                                    trace)

    reg = ToolRegistry()
    for tool in (TaskTool(), SubmitFindings(), SubmitDiagnosis()):
        reg.add(tool)
    for module in (shell, probes, node, knowledge, fetch, benchmarks, engine, fleet, account, trace, settings):
        module.register(reg)
    return reg
