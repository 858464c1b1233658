"""The `fetch` tool against a real web server on 127.0.0.1: address policy (redirects included), caps, HTML."""

from __future__ import annotations

import time

import httpx
import pytest

from orchestrator.events import PolicyRefusal
from orchestrator.tools.base import ToolRegistry
from orchestrator.tools.fetch import fetch_url, register
from orchestrator.tools.html_text import html_to_text
from orchestrator.tools.netpolicy import FetchRefused

from support.web import DATA, run_fetch


class CountingTransport(httpx.AsyncBaseTransport):
    """The real transport, counting the requests that reach the network."""

    def __init__(self):
        self.inner = httpx.AsyncHTTPTransport()
        self.urls: list[str] = []

    async def handle_async_request(self, request):
        self.urls.append(str(request.url))
        return await self.inner.handle_async_request(request)

    async def aclose(self):
        await self.inner.aclose()


FORBIDDEN = [
    ("http://127.0.0.1:9/", "loopback"),
    ("http://localhost:9/", "loopback"),  # a name is resolved first
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://10.0.0.1/", "private"),
    ("http://172.16.5.4/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://224.0.0.1/", "multicast"),
    ("http://[::1]/", "loopback"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[fd00::1]/", "private"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("file:///etc/passwd", "scheme file:"),
    ("ftp://example.org/x", "scheme ftp:"),
    ("gopher://127.0.0.1/", "scheme gopher:"),
]


@pytest.mark.parametrize("url,why", FORBIDDEN)
async def test_forbidden_addresses_and_schemes_are_refused_and_recorded(url, why):
    out, events = await run_fetch(url)
    assert out.is_error
    assert out.text.startswith("refused by fetch policy:") and why in out.text
    refusals = [e for e in events if isinstance(e, PolicyRefusal)]
    assert len(refusals) == 1
    assert (refusals[0].tool, refusals[0].subject, refusals[0].call_id) == ("fetch", url, "toolu_fetch1")
    assert why in refusals[0].reason


@pytest.mark.parametrize("target", ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/admin"])
async def test_redirect_to_a_forbidden_address_is_refused_before_connecting(web, target):
    transport = CountingTransport()
    started = time.monotonic()
    with pytest.raises(FetchRefused):
        await fetch_url(
            f"{web.url}/redirect?to={target}", max_bytes=10_000, timeout_s=5, allow_hosts=["127.0.0.1"],
            transport=transport,
        )
    # Only the first hop (the allowed local server) went out; the redirect target was never dialled.
    assert len(transport.urls) == 1 and transport.urls[0].startswith(web.url)
    assert time.monotonic() - started < 1.0


async def test_redirect_refusal_through_the_tool_is_recorded(web):
    out, events = await run_fetch(
        f"{web.url}/redirect?to=http://169.254.169.254/", fetch_allow_hosts=["127.0.0.0/8"]
    )
    assert out.is_error and "link-local" in out.text
    assert [e.subject for e in events if isinstance(e, PolicyRefusal)] == [f"{web.url}/redirect?to=http://169.254.169.254/"]


async def test_allow_private_reaches_a_local_server_and_converts_html(web):
    out, events = await run_fetch(f"{web.url}/data/sphinx_page.html", fetch_allow_private=True)
    assert not out.is_error and out.untrusted
    assert out.text.startswith(f"{web.url}/data/sphinx_page.html (HTTP 200, text/html")
    assert "# Blockscaled GEMM on SM120" in out.text
    assert "## Tile shapes" in out.text
    assert "CUTLASS <https://github.com/NVIDIA/cutlass>" in out.text
    assert "localStorage" not in out.text and "Installation" not in out.text and "sidebar-drawer" not in out.text
    assert out.data["status"] == 200 and out.data["cut_by_size"] is False
    assert not [e for e in events if isinstance(e, PolicyRefusal)]


async def test_redirects_are_followed_and_reported_when_allowed(web):
    out, _ = await run_fetch(f"{web.url}/redirect?to=/text", fetch_allow_private=True)
    assert "plain text body" in out.text
    assert out.data["final_url"] == f"{web.url}/text" and out.data["redirects"] == [f"{web.url}/text"]


async def test_more_than_five_redirects_is_an_error(web):
    out, _ = await run_fetch(f"{web.url}/loop", fetch_allow_private=True)
    assert out.is_error and "more than 5 redirects" in out.text


async def test_endless_response_is_cut_at_the_byte_cap_with_a_marker(web):
    out, _ = await run_fetch(f"{web.url}/endless", fetch_allow_private=True, fetch_max_bytes=100_000)
    assert out.data["cut_by_size"] is True and out.data["bytes"] == 100_000
    assert out.text.endswith("[... response cut at 100000 bytes by fetch_max_bytes ...]")


async def test_trickling_response_is_cut_at_the_time_cap_with_a_marker(web):
    started = time.monotonic()
    out, _ = await run_fetch(f"{web.url}/trickle", fetch_allow_private=True, fetch_timeout_s=0.4)
    assert time.monotonic() - started < 2.0
    assert out.data["cut_by_time"] is True and "tick" in out.text
    assert out.text.endswith("[... response cut after 0.4 s by fetch_timeout_s ...]")


async def test_binary_is_described_not_shown_and_http_errors_are_error_results(web):
    out, _ = await run_fetch(f"{web.url}/binary", fetch_allow_private=True)
    assert "binary content application/octet-stream, 1024 bytes; not shown" in out.text
    out, _ = await run_fetch(f"{web.url}/missing", fetch_allow_private=True)
    assert out.is_error and "HTTP 404" in out.text and "no such page" in out.text


def test_html_to_text_keeps_structure_and_code_and_drops_chrome():
    text = html_to_text((DATA / "sphinx_page.html").read_text())
    assert text.splitlines()[0] == "# Blockscaled GEMM on SM120 — Kernel Notes 1.0 documentation"
    assert "- 128x128x128 with a 1x1x1 cluster\n- 256x128x128 is not available on this architecture" in text
    assert "```\nfor tile in tiles:\n    run(tile)  # one CTA per tile\n```" in text
    assert "Performance & limits are discussed below." in text
    assert "¶" in text  # the permalink text stays, its #anchor href does not
    assert "#tile-shapes" not in text and "furo.js" not in text


def test_register_adds_fetch_with_a_url_schema():
    registry = ToolRegistry()
    register(registry)
    spec = registry.get("fetch").spec()
    assert spec.input_schema["required"] == ["url"]
