"""The default tool registry: the orchestration tools, every tool module's `register`, and each prong's tools
(`orchestrator.prongs.PRONGS`)."""

from __future__ import annotations

from orchestrator.tools.task import TaskTool
from orchestrator.tools.base import ToolRegistry
from orchestrator.tools.submit import SubmitDiagnosis, SubmitFindings


def default_registry() -> ToolRegistry:
    from orchestrator.prongs import parts
    from orchestrator.tools import fetch, knowledge, probes, shell

    reg = ToolRegistry()
    for tool in (TaskTool(), SubmitFindings(), SubmitDiagnosis()):
        reg.add(tool)
    for module in (shell, probes, knowledge, fetch):
        module.register(reg)
    for tool in parts("tools"):
        reg.add(tool())
    return reg
