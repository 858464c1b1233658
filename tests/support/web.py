"""A small real web server on 127.0.0.1 for the fetch and online tests: pages, redirects, an endless and a trickling body."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

DATA = Path(__file__).resolve().parent.parent / "anthropic" / "data"
"""Pages the server serves under /data/."""


class WebServer:
    def __init__(self):
        self.hits: list[str] = []
        self.routes: dict[str, tuple[int, bytes, dict[str, str]]] = {}
        """Extra pages a test registers: path -> (status, raw body, headers incl. content-type)."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # bodies end when the connection closes: endless ones stay simple

            def log_message(self, *args):
                pass

            def _send(self, status, body: bytes, ctype="text/html; charset=utf-8", headers=None):
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                server.hits.append(self.path)
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                try:
                    if parts.path in server.routes:
                        status, body, headers = server.routes[parts.path]
                        self.send_response(status)
                        for k, v in {"content-length": str(len(body)), **headers}.items():
                            self.send_header(k, v)
                        self.end_headers()
                        self.wfile.write(body)
                    elif parts.path.startswith("/data/"):
                        self._send(200, (DATA / parts.path[len("/data/") :]).read_bytes())
                    elif parts.path == "/text":
                        self._send(200, b"plain text body\n", "text/plain")
                    elif parts.path == "/binary":
                        self._send(200, bytes(range(256)) * 4, "application/octet-stream")
                    elif parts.path == "/missing":
                        self._send(404, b"<html><body><p>no such page</p></body></html>")
                    elif parts.path == "/redirect":
                        self._send(302, b"", headers={"location": query["to"][0]})
                    elif parts.path == "/loop":
                        self._send(302, b"", headers={"location": "/loop"})
                    elif parts.path == "/endless":
                        self.send_response(200)
                        self.send_header("content-type", "text/plain")
                        self.end_headers()
                        chunk = b"0123456789abcdef" * 4096
                        while True:
                            self.wfile.write(chunk)
                    elif parts.path == "/trickle":
                        self.send_response(200)
                        self.send_header("content-type", "text/plain")
                        self.end_headers()
                        while True:
                            self.wfile.write(b"tick\n")
                            self.wfile.flush()
                            time.sleep(0.05)
                    else:
                        self._send(404, b"not found")
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading at its cap

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def web():
    with WebServer() as server:
        yield server


async def run_fetch(url: str, **settings):
    """Call the `fetch` tool once, as a run would; (its output, the PolicyRefusal events it recorded)."""
    from orchestrator.inputs import RunInputs
    from orchestrator.settings import Settings
    from orchestrator.tools.base import execute
    from orchestrator.tools.fetch import FetchTool
    from orchestrator.tools.mock import MockToolContext

    ctx = MockToolContext(inputs=RunInputs(question="why is fp4 slow?"), settings=Settings(**settings),
                          agent_id="kernel-research-1", call_id="toolu_fetch1")
    done = await execute(FetchTool(), "fetch", {"url": url}, ctx)
    return done.output, ctx.refusals
