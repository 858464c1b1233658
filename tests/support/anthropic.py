"""Shared pieces of the anthropic backend tests: a test key, settings with short waits, a request, an agent."""

from __future__ import annotations

from orchestrator.agentdefs import AgentDef
from orchestrator.messages import Message, ModelRequest, ToolSpec
from orchestrator.settings import Settings

KEY = "sk-ant-api03-TESTKEY-0123456789abcdefghijklmnopqrstuvwxyz"


def settings(**kw) -> Settings:
    base = dict(rate_gate_base_s=0.01, rate_gate_max_wait_s=2.0, anthropic_max_retries=4, model_timeout_s=10)
    return Settings(**{**base, **kw})


def request(messages: list[Message] | None = None, **kw) -> ModelRequest:
    tools = [
        ToolSpec(name="probe_gpu", description="GPU facts", input_schema={"type": "object", "properties": {}}),
        ToolSpec(
            name="read_file",
            description="Read a file",
            input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        ),
    ]
    return ModelRequest(
        agent_id="kernel-research-1",
        agent_name="kernel-research",
        turn=1,
        model="claude-sonnet-5-5",
        system="You research kernels.",
        tools=tools,
        messages=messages or [Message.user_text("why is fp4 slow?")],
        **kw,
    )


def agent(model: str = "inherit", role: str = "subagent") -> AgentDef:
    return AgentDef(name="kernel-research", description="d", model=model, role=role)
