"""The anthropic backend through the real SDK against a local fake Messages API on 127.0.0.1."""

from __future__ import annotations

import anyio
import pytest
from support.fake_messages import FakeMessagesAPI, error, message, overloaded, rate_limited, text, tool_calls, unauthorized

from orchestrator.messages import Message, TextBlock, ToolResultBlock
from orchestrator.models.anthropic import AnthropicBackend, AnthropicConfigError, model_for_agent
from orchestrator.models.base import ModelCallError
from orchestrator.pricing import cost
from orchestrator.settings import Settings
from support.anthropic import KEY, agent, request, settings

@pytest.fixture
def api():
    with FakeMessagesAPI() as server:
        yield server


def backend_for(api: FakeMessagesAPI, **kw) -> AnthropicBackend:
    return AnthropicBackend(settings(**kw), api_key=KEY, base_url=api.base_url)


async def test_requests_carry_cache_control_on_tools_system_and_newest_message_and_cache_reads_are_costed(api):
    api.push(
        tool_calls([("probe_gpu", {})], input_tokens=1200, output_tokens=30, cache_write=1000),
        text("done", input_tokens=50, output_tokens=10, cache_read=1000),
    )
    backend = backend_for(api)
    model = backend.model_for(agent(), "kernel-research-1", None)
    first = await model.complete(request())
    call = first.content[0]
    second = await model.complete(
        request(
            [
                Message.user_text("why is fp4 slow?"),
                first.message(),
                Message(role="user", content=[ToolResultBlock(tool_use_id=call.id, content="B200")]),
            ]
        )
    )
    await backend.aclose()

    for req in api.requests:
        assert req.body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert "cache_control" not in req.body["tools"][0]
        assert req.body["system"] == [{"type": "text", "text": "You research kernels.", "cache_control": {"type": "ephemeral"}}]
        assert req.body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
        # This SDK generation sends the key as a bearer token; older ones as x-api-key.
        assert KEY in (req.headers.get("x-api-key", ""), req.headers.get("authorization", "").removeprefix("Bearer "))
    assert api.requests[1].body["messages"][1]["content"][0]["type"] == "tool_use"
    assert second.usage.cache_read_tokens == 1000 and second.usage.input_tokens == 50
    assert first.usage.cache_write_tokens == 1000
    # claude-sonnet-5-5: $2 in, $10 out, $0.10 cache read per MTok.
    assert second.usage.cost_usd == pytest.approx((50 * 2 + 10 * 10 + 1000 * 0.10) / 1e6)
    assert second.usage.cost_usd == cost("claude-sonnet-5-5", second.usage)
    assert second.usage.calls == 1


async def test_overloaded_then_rate_limited_then_ok_succeeds_with_attempts_visible(api):
    api.push(overloaded(), rate_limited(retry_after="0.05"), text("fine"))
    backend = backend_for(api)
    resp = await backend.model_for(agent(), "a", None).complete(request())
    await backend.aclose()

    assert resp.content == [TextBlock(text="fine")]
    assert [a["status"] for a in resp.attempts] == [529, 429]
    assert resp.attempts[0]["error"] == "overloaded_error"
    assert resp.attempts[1]["error"] == "rate_limit_error"
    assert resp.attempts[1]["retry_after_s"] == pytest.approx(0.05)
    assert resp.attempts[1]["wait_s"] == pytest.approx(0.05)
    assert len(api.requests) == 3
    assert backend.gate.total_trips == 2


async def test_401_fails_at_once_with_one_line_and_never_the_key(api):
    api.push(unauthorized(), text("never asked"))
    backend = backend_for(api)
    with pytest.raises(ModelCallError) as info:
        await backend.model_for(agent(), "a", None).complete(request())
    await backend.aclose()

    exc = info.value
    assert exc.fatal is True
    assert str(exc) == "anthropic: authentication failed (401): check ANTHROPIC_API_KEY"
    assert "\n" not in str(exc)
    assert len(api.requests) == 1
    assert exc.__context__ is None and exc.__cause__ is None  # the SDK error (request headers hold the key) is not chained
    for text_ in (str(exc), repr(exc), repr(exc.attempts), repr(backend), repr(exc.__cause__), repr(exc.__context__)):
        assert "TESTKEY" not in text_


async def test_400_error_message_is_scrubbed_of_the_key(api):
    api.push(error(400, "invalid_request_error", f"messages.0: bad block; you sent key {KEY}\nsecond line"))
    backend = backend_for(api)
    with pytest.raises(ModelCallError) as info:
        await backend.model_for(agent(), "a", None).complete(request())
    await backend.aclose()
    assert info.value.fatal is True
    assert str(info.value).startswith("anthropic: request rejected (400): messages.0: bad block")
    assert "TESTKEY" not in str(info.value) and "\n" not in str(info.value)


async def test_overload_storm_beyond_the_retry_budget_is_a_non_fatal_error(api):
    api.push(*[overloaded() for _ in range(3)])
    backend = backend_for(api, anthropic_max_retries=2)
    with pytest.raises(ModelCallError) as info:
        await backend.model_for(agent(), "a", None).complete(request())
    await backend.aclose()
    assert info.value.fatal is False
    assert [a["status"] for a in info.value.attempts] == [529, 529, 529]
    assert "overloaded_error (529) persisted after 3 attempts" in str(info.value)


async def test_two_tool_calls_in_one_response_map_to_two_tool_use_blocks(api):
    api.push(tool_calls([("probe_gpu", {}), ("read_file", {"path": "/etc/os-release"})], preface="Looking."))
    backend = backend_for(api)
    resp = await backend.model_for(agent(), "a", None).complete(request())
    await backend.aclose()

    assert resp.stop_reason == "tool_use"
    assert isinstance(resp.content[0], TextBlock)
    uses = resp.message().tool_uses()
    assert [(u.name, u.input) for u in uses] == [("probe_gpu", {}), ("read_file", {"path": "/etc/os-release"})]
    assert len({u.id for u in uses}) == 2


async def test_tool_choice_temperature_and_server_tools_pass_through(api):
    api.push(text("ok"))
    backend = backend_for(api, web_search=True, web_fetch_server=True, temperature=None)
    await backend.model_for(agent(), "a", None).complete(request(tool_choice="read_file", temperature=0.2))
    await backend.aclose()
    body = api.requests[0].body
    assert body["tool_choice"] == {"type": "tool", "name": "read_file"}
    assert body["temperature"] == 0.2
    assert [t.get("type") for t in body["tools"][:2]] == ["web_search_20250305", "web_fetch_20250910"]
    assert body["tools"][-1]["name"] == "read_file"
    assert "web-fetch-2025-09-10" in api.requests[0].headers["anthropic-beta"]


async def test_forced_tool_choice_refused_by_the_model_is_retried_without_forcing(api):
    api.push(error(400, "invalid_request_error", "Thinking may not be enabled when tool use is forced."), text("ok"))
    backend = backend_for(api)
    resp = await backend.model_for(agent(), "a", None).complete(request(tool_choice="read_file"))
    await backend.aclose()
    assert "tool_choice" in api.requests[0].body and "tool_choice" not in api.requests[1].body
    assert resp.attempts[0]["action"] == "retry without tool_choice"


async def test_server_blocks_go_back_verbatim_on_the_next_turn(api):
    search_blocks = [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "fp4 gemm sm120"}},
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": [{"type": "web_search_result", "title": "CUTLASS", "url": "https://example.org/c", "encrypted_content": "xyz"}],
        },
        {"type": "text", "text": "Found it."},
    ]
    api.push(message(search_blocks), text("ok"))
    backend = backend_for(api, web_search=True)
    model = backend.model_for(agent(), "a", None)
    first = await model.complete(request())
    assert "CUTLASS" in first.content[0].text and first.content[-1] == TextBlock(text="Found it.")
    await model.complete(request([Message.user_text("q"), first.message(), Message.user_text("go on")]))
    await backend.aclose()
    sent = api.requests[1].body["messages"][1]["content"]
    assert [b["type"] for b in sent] == ["server_tool_use", "web_search_tool_result", "text"]


async def test_concurrent_agents_share_one_gate_and_all_wait_after_a_429(api):
    api.push(rate_limited(retry_after="0.3"))

    def handler(req):
        return text("ok")

    api.handler = handler
    backend = backend_for(api)

    async def one(i):
        m = backend.model_for(agent(), f"a{i}", None)
        if i:
            await anyio.sleep(0.05)  # arrive after the 429 closed the gate
        await m.complete(request())

    t0 = anyio.current_time()
    async with anyio.create_task_group() as tg:
        for i in range(3):
            tg.start_soon(one, i)
    await backend.aclose()
    assert len(api.requests) == 4
    # The two later agents were held at the gate too: all finished only after the retry-after.
    assert anyio.current_time() - t0 >= 0.3


def test_model_selection_override_then_definition_then_role_default():
    s = Settings(lead_model="opus", subagent_model="claude-sonnet-5-5")
    assert model_for_agent(agent(role="lead"), s) == "claude-opus-5-5"
    assert model_for_agent(agent(), s) == "claude-sonnet-5-5"
    assert model_for_agent(agent(model="haiku"), s) == "claude-haiku-5-5"
    assert model_for_agent(agent(model="claude-opus-4-8"), s) == "claude-opus-4-8"
    assert model_for_agent(agent(model="haiku"), s, override="sonnet") == "claude-sonnet-5-5"


def test_backend_without_a_key_says_how_to_fix_it(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with pytest.raises(AnthropicConfigError, match="set ANTHROPIC_API_KEY, or run with --offline"):
        AnthropicBackend(Settings())
