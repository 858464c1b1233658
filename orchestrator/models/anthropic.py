"""The `anthropic` backend: each agent's model is a Claude model behind the real Messages API (`AsyncAnthropic`).

Retries are ours, not the SDK's: the client runs with `max_retries=0` and `AnthropicModel.complete` loops itself,
because (1) every failed HTTP attempt must be visible in the transcript (`ModelResponse.attempts`), and (2) a
429/529 must close the run's shared `RateGate` so that *all* agents slow down, which the SDK's per-request retry
cannot do. Connection errors and 5xx back off per caller; 429/529 trip the gate; 400/401/403/404 fail at once.
The API key lives only inside the SDK client: no message, attempt record or repr built here contains it.
"""

from __future__ import annotations

import json
import os
import re
from typing import TYPE_CHECKING, Any

import anthropic
import anyio

from orchestrator.messages import Block, Message, ModelRequest, ModelResponse, TextBlock, ToolUseBlock, Usage
from orchestrator.models.base import (
    AnthropicConfigError, ModelCallError, ModelRequestsDisabled, model_requests_allowed,
)
from orchestrator.models.rategate import RateGate, parse_retry_after
from orchestrator.pricing import cost, price_for
from orchestrator.redact import redact
from orchestrator.settings import Settings

if TYPE_CHECKING:
    from orchestrator.agentdefs import AgentDef
    from orchestrator.context import RunView

MODEL_ALIASES = {
    # Current models per https://platform.claude.com/docs/en/about-claude/models/overview (read 2026-11-29).
    "opus": "claude-opus-5-5",
    "sonnet": "claude-sonnet-5-5",
    "haiku": "claude-haiku-5-5",
}
WEB_SEARCH_TOOL = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
WEB_FETCH_TOOL = {"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 5}
WEB_FETCH_BETA = "web-fetch-2025-09-10"
EPHEMERAL = {"type": "ephemeral"}

FATAL_STATUS = {
    400: "request rejected",
    401: "authentication failed",
    403: "permission denied",
    404: "not found",
}
GATE_STATUS = {429, 529}
"""Statuses that mean "the service wants everyone to slow down": they close the shared gate."""
NEVER_REACHED_RETRIES = 1
"""Retries of a connection error while no call of the run has reached the API yet (then the run stops, fatal)."""


def resolve_model(name: str) -> str:
    """A full model id for an alias (`opus`, `sonnet`, `haiku`) or an id."""
    return MODEL_ALIASES.get(name.strip().lower(), name.strip())


def model_for_agent(defn: "AgentDef", settings: Settings, override: str | None = None) -> str:
    """The model an agent runs on: `--model`, else the definition's `model`, else the settings' default by role."""
    if override:
        return resolve_model(override)
    if defn.model and defn.model != "inherit":
        return resolve_model(defn.model)
    return resolve_model(settings.lead_model if defn.role == "lead" else settings.subagent_model)


def _scrub(text: str, secret: str | None, limit: int = 300) -> str:
    """One line, no key, bounded length: safe to show and to record."""
    if secret:
        text = text.replace(secret, "[REDACTED]")
    text = redact(" ".join(str(text).split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _content_key(content: list[Any]) -> str:
    return json.dumps([b.model_dump() if hasattr(b, "model_dump") else b for b in content], sort_keys=True)


def build_params(
    request: ModelRequest,
    *,
    model: str,
    settings: Settings,
    raw_assistant: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """The `messages.create` keyword arguments for one request; pure.

    Cache breakpoints go on the stable prefix (the last tool definition and the system block) and on the newest
    message, so every turn after the first reads the tools, the system prompt and the earlier turns from the cache.
    """
    tools: list[dict[str, Any]] = []
    if settings.web_search:
        tools.append(dict(WEB_SEARCH_TOOL))
    if settings.web_fetch_server:
        tools.append(dict(WEB_FETCH_TOOL))
    tools += [{"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in request.tools]
    if tools:
        tools[-1]["cache_control"] = EPHEMERAL
    messages = [_message_param(m, raw_assistant or {}) for m in request.messages]
    if messages and messages[-1]["content"]:
        last = dict(messages[-1]["content"][-1])
        last["cache_control"] = EPHEMERAL
        messages[-1]["content"] = [*messages[-1]["content"][:-1], last]
    params: dict[str, Any] = {"model": model, "max_tokens": request.max_tokens, "messages": messages}
    if request.system:
        params["system"] = [{"type": "text", "text": request.system, "cache_control": EPHEMERAL}]
    if tools:
        params["tools"] = tools
    if request.tool_choice:
        params["tool_choice"] = {"type": "tool", "name": request.tool_choice}
    if request.temperature is not None:
        # Current SDKs dropped `temperature` from create() (newer models reject non-default sampling with a 400);
        # older models still take it, so it goes in the body only when asked for.
        params["extra_body"] = {"temperature": request.temperature}
    if settings.web_fetch_server:
        params["extra_headers"] = {"anthropic-beta": WEB_FETCH_BETA}
    return params


def _message_param(message: Message, raw_assistant: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    if message.role == "assistant":
        # Server-tool and thinking blocks the API sent must go back verbatim; our Message keeps only text/tool_use.
        raw = raw_assistant.get(_content_key(message.content))
        if raw is not None:
            return {"role": "assistant", "content": raw}
    content: list[dict[str, Any]] = []
    for b in message.content:
        if isinstance(b, TextBlock):
            if b.text.strip():  # the API rejects empty text blocks
                content.append({"type": "text", "text": b.text})
        elif isinstance(b, ToolUseBlock):
            content.append({"type": "tool_use", "id": b.id, "name": b.name, "input": b.input})
        else:
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": b.tool_use_id,
                                     "content": b.content or "(empty)"}
            if b.is_error:
                block["is_error"] = True
            content.append(block)
    if not content:
        content.append({"type": "text", "text": "(no content)"})
    return {"role": message.role, "content": content}


def _summarize_server_block(block: dict[str, Any]) -> str | None:
    """A short text stand-in for a server tool's result, so transcripts and replays show what was found."""
    kind = block.get("type", "")
    if kind == "web_search_tool_result":
        content = block.get("content")
        if isinstance(content, list):
            lines = [f"- {r.get('title', '')} <{r.get('url', '')}>" for r in content if isinstance(r, dict)]
            return "[web search results, untrusted]\n" + "\n".join(lines)
        return "[web search failed]"
    if kind == "web_fetch_tool_result":
        content = block.get("content") or {}
        url = content.get("url", "") if isinstance(content, dict) else ""
        return f"[web page fetched by the server, untrusted: {url}]"
    return None


def parse_response(resp: Any, *, model: str, settings: Settings) -> tuple[ModelResponse, list[dict[str, Any]] | None]:
    """Our `ModelResponse` from an SDK `Message`, plus the raw blocks when they hold more than ours can carry."""
    content: list[Block] = []
    raw = [b.to_dict() if hasattr(b, "to_dict") else dict(b) for b in resp.content]
    lossy = False
    for block in raw:
        kind = block.get("type")
        if kind == "text":
            content.append(TextBlock(text=block.get("text", "")))
        elif kind == "tool_use":
            content.append(ToolUseBlock(id=block["id"], name=block["name"], input=dict(block.get("input") or {})))
        else:
            lossy = True
            summary = _summarize_server_block(block)
            if summary:
                content.append(TextBlock(text=summary))
    u = resp.usage
    usage = Usage(
        input_tokens=u.input_tokens or 0,
        output_tokens=u.output_tokens or 0,
        cache_read_tokens=getattr(u, "cache_read_input_tokens", None) or 0,
        cache_write_tokens=getattr(u, "cache_creation_input_tokens", None) or 0,
        calls=1,
    )
    # The response names the model that answered (often a dated id); when the price table does not know that id,
    # price the model that was asked for rather than count the call as free.
    priced = resp.model if resp.model and price_for(resp.model, settings.prices) is not None else model
    usage.cost_usd = cost(priced, usage, settings.prices)
    response = ModelResponse(
        content=content, stop_reason=resp.stop_reason or "end_turn", model=resp.model or model, usage=usage
    )
    return response, (raw if lossy else None)


def _error_type(exc: anthropic.APIStatusError, secret: str | None = None) -> str:
    """The error's `type` as the server (or a proxy in between) sent it: scrubbed and short, it goes in records."""
    body = exc.body if isinstance(exc.body, dict) else {}
    raw = body.get("error")
    err = raw if isinstance(raw, dict) else {}
    return _scrub(str(err.get("type") or type(exc).__name__), secret, limit=80)


def _error_message(exc: anthropic.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    raw = body.get("error")
    err = raw if isinstance(raw, dict) else {}
    return str(err.get("message") or "")


class AnthropicModel:
    """One agent's Claude model: a conversation's requests through the shared client and rate gate."""

    def __init__(self, name: str, backend: "AnthropicBackend"):
        self.name = name
        self._backend = backend
        self._raw_assistant: dict[str, list[dict[str, Any]]] = {}

    def __repr__(self) -> str:
        return f"AnthropicModel({self.name!r})"

    async def complete(self, request: ModelRequest) -> ModelResponse:
        try:
            return await self._complete(request)
        except ModelCallError as exc:
            failure = exc
        # Raised outside the except block so it carries no __context__: the SDK error holds the request, whose
        # headers hold the key, and nothing that walks exception chains (loggers, tracebacks) should reach it.
        failure.__context__ = None
        raise failure

    async def _complete(self, request: ModelRequest) -> ModelResponse:
        backend = self._backend
        settings = backend.settings
        gate = backend.gate
        client = backend.client()
        params = build_params(request, model=self.name, settings=settings, raw_assistant=self._raw_assistant)
        attempts: list[dict[str, Any]] = []
        failures = 0
        while True:
            await gate.wait()
            try:
                resp = await client.messages.create(**params)
            except anthropic.APIStatusError as exc:
                backend.reached = True  # an HTTP answer: the network is there, whatever it said
                status = exc.status_code
                kind = _error_type(exc, backend.secret)
                record: dict[str, Any] = {"attempt": len(attempts) + 1, "status": status, "error": kind}
                attempts.append(record)
                if status == 400 and "tool_choice" in params:
                    # Some models refuse forced tool use (thinking always on, e.g. Sonnet 5.5): ask once more without
                    # forcing; the final-turn prompt still tells the model which tool to call. A second 400 is fatal.
                    params.pop("tool_choice")
                    record["action"] = "retry without tool_choice"
                    continue
                if status in FATAL_STATUS:
                    raise ModelCallError(self._fatal_message(status, exc), attempts, fatal=True) from None
                retryable = status in GATE_STATUS or status >= 500 or status == 408
                if not retryable:
                    detail = _scrub(_error_message(exc), backend.secret) or kind
                    raise ModelCallError(f"anthropic: HTTP {status}: {detail}", attempts) from None
                failures += 1
                if failures > settings.anthropic_max_retries:
                    raise ModelCallError(
                        f"anthropic: {kind} ({status}) persisted after {len(attempts)} attempts",
                        attempts,
                    ) from None
                retry_after = parse_retry_after(exc.response.headers) if exc.response is not None else None
                record["retry_after_s"] = retry_after
                if status in GATE_STATUS:
                    record["wait_s"] = round(gate.trip(retry_after), 3)
                else:
                    wait = min(retry_after, gate.max_wait_s) if retry_after is not None else gate.backoff(failures)
                    record["wait_s"] = round(wait, 3)
                    await anyio.sleep(wait)
                continue
            except (anthropic.APITimeoutError, anthropic.APIConnectionError) as exc:
                failures += 1
                kind = "timeout" if isinstance(exc, anthropic.APITimeoutError) else "connection_error"
                record = {"attempt": len(attempts) + 1, "status": None, "error": kind}
                attempts.append(record)
                if not backend.reached and failures > min(settings.anthropic_max_retries, NEVER_REACHED_RETRIES):
                    # the API was never reached in this run (no network, a proxy, a wrong ANTHROPIC_BASE_URL): a
                    # minute of back-off would not bring it, and every agent would wait it out; stop the run
                    raise ModelCallError(
                        f"anthropic: cannot reach {backend.base_url_display} ({kind.replace('_', ' ')}, "
                        f"{len(attempts)} attempts): no network, or a proxy or firewall in the way; run with --offline "
                        "(the deterministic backend: no key, no network), or check ANTHROPIC_BASE_URL",
                        attempts, fatal=True,
                    ) from None
                if failures > settings.anthropic_max_retries:
                    raise ModelCallError(
                        f"anthropic: {kind.replace('_', ' ')} to {backend.base_url_display} persisted after "
                        f"{len(attempts)} attempts",
                        attempts,
                    ) from None
                wait = gate.backoff(failures)
                record["wait_s"] = round(wait, 3)
                await anyio.sleep(wait)
                continue
            gate.succeeded()
            backend.reached = True
            response, raw = parse_response(resp, model=self.name, settings=settings)
            if raw is not None:
                self._raw_assistant[_content_key(response.content)] = raw
            response.attempts = attempts
            return response

    def _fatal_message(self, status: int, exc: anthropic.APIStatusError) -> str:
        what = FATAL_STATUS[status]
        if status == 401:
            hint = "check ANTHROPIC_API_KEY"
        elif status == 403:
            hint = f"the API key may not use {self.name}; check its workspace and model access"
        elif status == 404:
            hint = f"model {self.name!r} is not available; pick another with --model"
        else:
            hint = _scrub(_error_message(exc), self._backend.secret) or "the API rejected the request"
        return f"anthropic: {what} ({status}): {hint}"


class AnthropicBackend:
    """Backend for the real Messages API: one client and one rate gate per run, a model per agent."""

    name = "anthropic"

    def __init__(
        self,
        settings: Settings,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
    ):
        self.settings = settings
        self.model_override = model
        key = api_key or os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        if not key:
            raise AnthropicConfigError("anthropic: no API key; set ANTHROPIC_API_KEY, or run with --offline")
        self._secret = key
        self._auth_token = api_key is None and not os.environ.get("ANTHROPIC_API_KEY")
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.gate = RateGate(settings.rate_gate_max_wait_s, base_s=settings.rate_gate_base_s)
        self._client: anthropic.AsyncAnthropic | None = None
        self.reached = False
        """Whether any call of this run got an HTTP answer (until one does, connection errors end the run fast)."""

    def __repr__(self) -> str:
        return f"AnthropicBackend(base_url={self.base_url_display!r})"

    @property
    def secret(self) -> str:
        return self._secret

    @property
    def base_url_display(self) -> str:
        return re.sub(r"//[^/@]*@", "//", self.base_url) if self.base_url else "api.anthropic.com"

    def client(self) -> anthropic.AsyncAnthropic:
        """The run's one SDK client, made on first use (inside the running event loop)."""
        if self._client is None:
            if not model_requests_allowed(self.base_url):
                raise ModelRequestsDisabled(
                    f"anthropic: real model requests are disabled (INVESTIGATE_ALLOW_MODEL_REQUESTS=0); refused a "
                    f"request to {self.base_url_display}; point ANTHROPIC_BASE_URL at a local server or unset it")
            # the credential not sent is None, the SDK's default, as when it was left out
            self._client = anthropic.AsyncAnthropic(
                api_key=None if self._auth_token else self._secret,
                auth_token=self._secret if self._auth_token else None,
                base_url=self.base_url, max_retries=0,
                # a connection that cannot be made in 10 s is not coming (a black-holed network): say so then,
                # not after the whole model timeout
                timeout=anthropic.Timeout(self.settings.model_timeout_s, connect=min(10.0, self.settings.model_timeout_s))
            )
        return self._client

    def model_for(self, defn: "AgentDef", agent_id: str, run: "RunView | None" = None) -> AnthropicModel:
        return AnthropicModel(model_for_agent(defn, self.settings, self.model_override), self)

    async def aclose(self) -> None:
        """Close the HTTP client (idempotent)."""
        if self._client is not None:
            await self._client.close()
            self._client = None
