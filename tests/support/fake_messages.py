"""A local fake of the Anthropic Messages API: a real HTTP server on 127.0.0.1, answering from a script.

The response and error shapes follow the Messages API reference (https://docs.anthropic.com/en/api/messages and
https://docs.anthropic.com/en/api/errors): a `message` object with `content` blocks (`text`, `tool_use`), `stop_reason`
and `usage` (incl. `cache_read_input_tokens` / `cache_creation_input_tokens`); errors as
`{"type": "error", "error": {"type": ..., "message": ...}}` with 429 `rate_limit_error` (+ `retry-after`),
529 `overloaded_error`, 401 `authentication_error`. The real `anthropic` SDK parses them, which is the point.

Use it from any test:

    with FakeMessagesAPI() as api:                      # or FakeMessagesAPI(handler=fn) for concurrent agents
        api.push(overloaded(), rate_limited(retry_after="0.05"), tool_calls([("probe", {"x": 1})]), text("done"))
        backend = AnthropicBackend(settings, api_key="sk-ant-api03-TESTKEY...", base_url=api.base_url)
        ...
        api.requests[0].body["system"], api.requests[0].headers["x-api-key"]

Replies are taken from the queue first; when it is empty, `handler(request) -> Reply` answers (a handler lets
concurrent agents be told apart by their system prompt or tools). With neither, the server answers 500 and records
the miss in `api.unanswered`.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

_ids = itertools.count(1)


@dataclass
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class RecordedRequest:
    """What the SDK sent: method, path, headers (lower-case names) and the JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def system_text(self) -> str:
        system = self.body.get("system") or ""
        if isinstance(system, list):
            return "\n".join(b.get("text", "") for b in system)
        return system

    @property
    def tool_names(self) -> list[str]:
        return [t.get("name", "") for t in self.body.get("tools") or []]


def usage(input_tokens: int = 100, output_tokens: int = 20, cache_read: int = 0, cache_write: int = 0) -> dict:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }


def message(content: list[dict[str, Any]], stop_reason: str = "end_turn", model: str | None = None, **usage_kw) -> Reply:
    """A 200 with a `message` object; `model` defaults to the requested one."""
    body = {
        "id": f"msg_fake{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage(**usage_kw),
    }
    return Reply(200, body)


def text(value: str, **usage_kw) -> Reply:
    return message([{"type": "text", "text": value}], "end_turn", **usage_kw)


def tool_calls(calls: list[tuple[str, dict[str, Any]]], preface: str | None = None, **usage_kw) -> Reply:
    """A 200 whose content holds one `tool_use` block per (name, input), in order."""
    content: list[dict[str, Any]] = [{"type": "text", "text": preface}] if preface else []
    for name, args in calls:
        content.append({"type": "tool_use", "id": f"toolu_fake{next(_ids):04d}", "name": name, "input": args})
    return message(content, "tool_use", **usage_kw)


def error(status: int, kind: str, msg: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {"type": "error", "error": {"type": kind, "message": msg}}, headers or {})


def rate_limited(retry_after: str | None = "1", retry_after_ms: str | None = None) -> Reply:
    headers = {}
    if retry_after is not None:
        headers["retry-after"] = retry_after
    if retry_after_ms is not None:
        headers["retry-after-ms"] = retry_after_ms
    return error(429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", headers)


def overloaded() -> Reply:
    return error(529, "overloaded_error", "Overloaded")


def unauthorized() -> Reply:
    return error(401, "authentication_error", "invalid x-api-key")


class FakeMessagesAPI:
    """The fake server; a context manager that starts and stops it."""

    def __init__(self, handler: Callable[[RecordedRequest], Reply] | None = None):
        self.handler = handler
        self.queue: deque[Reply] = deque()
        self.requests: list[RecordedRequest] = []
        self.unanswered: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.queue.extend(replies)

    def _answer(self, req: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(req)
            if self.queue:
                return self.queue.popleft()
        if self.handler is not None:
            return self.handler(req)
        self.unanswered.append(req)
        return error(500, "api_error", "fake Messages API: script exhausted")

    def start(self) -> "FakeMessagesAPI":
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                headers = {k.lower(): v for k, v in self.headers.items()}
                req = RecordedRequest("POST", self.path, headers, body)
                if self.path.rstrip("/") != "/v1/messages":
                    reply = error(404, "not_found_error", f"no route {self.path}")
                else:
                    reply = api._answer(req)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = dict(reply.body)
                if reply.status == 200 and payload.get("model") is None:
                    payload["model"] = body.get("model", "claude-fake")
                data = json.dumps(payload).encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.send_header("request-id", f"req_fake{next(_ids):04d}")
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-messages", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeMessagesAPI":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
