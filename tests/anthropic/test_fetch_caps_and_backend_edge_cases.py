"""Edge cases of the anthropic backend, the rate gate and `fetch`."""

from __future__ import annotations

import gzip
import math
import tracemalloc
import zlib
from functools import lru_cache

import pytest
from support.fake_messages import FakeMessagesAPI, error, message

from orchestrator.models.anthropic import AnthropicBackend
from orchestrator.models.base import ModelCallError
from orchestrator.models.rategate import RateGate, parse_retry_after
from orchestrator.pricing import price_for
from orchestrator.settings import Settings
from orchestrator.tools.fetch import Fetched, render

from support.anthropic import KEY, agent, request
from support.web import run_fetch

# --- fetch: IPv6 forms that embed an IPv4 address --------------------------------------------------------------


@pytest.mark.parametrize(
    "url,why",
    [
        ("http://[64:ff9b::a9fe:a9fe]/latest/meta-data/", "link-local"),  # NAT64 of 169.254.169.254
        ("http://[64:ff9b::a00:1]/", "private"),  # NAT64 of 10.0.0.1
        ("http://[64:ff9b:1::a00:1]/", "private"),  # local-use NAT64 prefix
        ("http://[2002:7f00:1::]/", "loopback"),  # 6to4 of 127.0.0.1
        ("http://[2002:a9fe:a9fe::1]/", "link-local"),  # 6to4 of 169.254.169.254
        ("http://[::7f00:1]/", "loopback"),  # IPv4-compatible ::127.0.0.1
        ("http://[::ffff:0:7f00:1]/", "loopback"),  # IPv4-translated (SIIT)
        ("http://[fec0::1]/", "site-local"),  # deprecated site-local, still routed internally
    ],
)
async def test_ipv6_forms_embedding_a_forbidden_ipv4_are_refused(url, why):
    out, _ = await run_fetch(url)
    assert out.is_error and out.text.startswith("refused by fetch policy:"), out.text
    assert why in out.text


# --- fetch: compression bombs ------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def gzip_of_zeros(megabytes: int = 128) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * (1 << 20)
    return b"".join([c.compress(block) for _ in range(megabytes)] + [c.flush()])


async def test_gzip_bomb_is_cut_at_the_byte_cap_without_inflating_past_it(web):
    web.routes["/bomb"] = (200, gzip_of_zeros(), {"content-type": "text/plain", "content-encoding": "gzip"})
    tracemalloc.start()
    try:
        out, _ = await run_fetch(f"{web.url}/bomb", fetch_allow_private=True, fetch_max_bytes=100_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.data["cut_by_size"] is True and out.data["bytes"] == 100_000
    # 128 MB of zeros behind 130 kB of gzip: nothing near that may be held in memory for a 100 kB cap.
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"


async def test_stacked_gzip_bomb_is_not_inflated(web):
    body = gzip.compress(gzip_of_zeros(), 9)  # ~600 bytes that inflate to 128 MB after two layers
    web.routes["/bomb2"] = (200, body, {"content-type": "text/plain", "content-encoding": "gzip, gzip"})
    tracemalloc.start()
    try:
        out, _ = await run_fetch(f"{web.url}/bomb2", fetch_allow_private=True, fetch_max_bytes=100_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    if not out.is_error:
        assert out.data["bytes"] <= 100_000 and out.data["cut_by_size"] is True


async def test_gzip_and_deflate_pages_still_decode(web):
    page = b"<html><body><p>gzip works</p></body></html>"
    web.routes["/gz"] = (200, gzip.compress(page), {"content-type": "text/html", "content-encoding": "gzip"})
    web.routes["/zl"] = (200, zlib.compress(page), {"content-type": "text/html", "content-encoding": "deflate"})
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    web.routes["/raw"] = (
        200, raw.compress(page) + raw.flush(), {"content-type": "text/html", "content-encoding": "deflate"},
    )
    for path in ("/gz", "/zl", "/raw"):
        out, _ = await run_fetch(f"{web.url}{path}", fetch_allow_private=True)
        assert not out.is_error and "gzip works" in out.text, (path, out.text)
        assert out.data["cut_by_size"] is False


async def test_a_body_of_exactly_the_cap_is_not_marked_cut(web):
    web.routes["/exact"] = (200, b"x" * 1000, {"content-type": "text/plain"})
    out, _ = await run_fetch(f"{web.url}/exact", fetch_allow_private=True, fetch_max_bytes=1000)
    assert out.data["bytes"] == 1000 and out.data["cut_by_size"] is False
    assert "cut at" not in out.text


# --- fetch: charsets ---------------------------------------------------------------------------------------------


def fetched(body: bytes, ctype: str) -> Fetched:
    return Fetched(url="u", final_url="u", status=200, content_type=ctype, body=body)


def test_html_meta_charset_is_honoured_when_the_header_has_none():
    page = '<html><head><meta charset="shift_jis"><title>t</title></head><body><p>日本語のページ</p></body></html>'
    text, _ = render(fetched(page.encode("shift_jis"), "text/html"), 10_000, 5)
    assert "日本語のページ" in text
    page = (
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1252"></head>'
        "<body><p>café – naïve</p></body></html>"
    )
    text, _ = render(fetched(page.encode("cp1252"), "text/html"), 10_000, 5)
    assert "café – naïve" in text


def test_a_bom_wins_over_a_wrong_header_charset():
    text, _ = render(fetched("\ufeffhello wörld".encode("utf-16-le"), "text/plain; charset=iso-8859-1"), 10_000, 5)
    assert text == "hello wörld"


@pytest.mark.parametrize("charset", ["idna", "punycode"])
def test_a_charset_whose_codec_cannot_replace_does_not_crash(charset):
    text, textual = render(fetched("grüße \xff".encode("latin-1"), f"text/plain; charset={charset}"), 10_000, 5)
    assert textual and "gr" in text


# --- rate gate ---------------------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, s: float) -> None:
        self.now += s


async def test_callers_held_by_the_gate_are_released_spread_out_not_all_at_once():
    clock = FakeClock()
    draws = iter([0.1, 0.9])
    g = RateGate(60.0, base_s=1.0, clock=clock, sleep=clock.sleep, rng=lambda: next(draws))
    g.trip(5.0)
    first = await g.wait()
    clock.now = 100.0
    second = await g.wait()
    # Never earlier than the server asked, and not in lock step.
    assert first >= 5.0 and second >= 5.0
    assert abs(first - second) >= 0.5
    assert max(first, second) <= 5.0 + 1.0


async def test_an_open_gate_adds_no_jitter():
    clock = FakeClock()
    g = RateGate(60.0, base_s=1.0, clock=clock, sleep=clock.sleep, rng=lambda: 0.9)
    assert await g.wait() == 0.0


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN"])
def test_non_finite_retry_after_is_ignored(value):
    assert parse_retry_after({"retry-after": value}) is None
    assert parse_retry_after({"retry-after-ms": value}) is None


def test_trip_with_a_non_finite_wait_still_closes_the_gate_for_a_bounded_time():
    clock = FakeClock()
    g = RateGate(10.0, base_s=1.0, clock=clock, sleep=clock.sleep, rng=lambda: 1.0)
    wait = g.trip(math.nan)
    assert math.isfinite(wait) and 0 < wait <= 10.0
    assert 0 < g.remaining() <= 10.0


# --- pricing -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model,family",
    [
        ("claude-opus-4-20250514", "claude-opus-4-0"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4-0"),
        ("claude-3-5-haiku-20241022", "claude-haiku-3-5"),
        ("claude-3-5-haiku-latest", "claude-haiku-3-5"),
    ],
)
def test_dated_ids_the_api_answers_with_are_priced(model, family):
    assert price_for(model) is not None and price_for(model) == price_for(family)


async def test_a_response_model_unknown_to_the_price_table_is_priced_as_the_requested_model():
    with FakeMessagesAPI() as api:
        api.push(message([{"type": "text", "text": "ok"}], model="claude-sonnet-5-5-preview-x", input_tokens=1_000_000))
        api.push(message([{"type": "text", "text": "ok"}], model="totally-new-model", input_tokens=1_000_000))
        backend = AnthropicBackend(
            Settings(rate_gate_base_s=0.01, anthropic_max_retries=1), api_key=KEY, base_url=api.base_url
        )
        model = backend.model_for(agent(model="claude-opus-5"), "a", None)
        await model.complete(request())
        resp = await model.complete(request())
        await backend.aclose()
    # priced as claude-opus-5 ($5 / MTok input), not $0
    assert resp.usage.cost_usd >= 5.0


# --- key hygiene -------------------------------------------------------------------------------------------------


async def test_error_type_echoing_the_key_is_scrubbed_from_attempts_and_message():
    with FakeMessagesAPI() as api:
        api.push(error(409, f"conflict_error: bad key {KEY}", "conflict"))
        backend = AnthropicBackend(
            Settings(rate_gate_base_s=0.01, anthropic_max_retries=1), api_key=KEY, base_url=api.base_url
        )
        with pytest.raises(ModelCallError) as info:
            await backend.model_for(agent(), "a", None).complete(request())
        await backend.aclose()
    assert "TESTKEY" not in str(info.value) and "TESTKEY" not in repr(info.value.attempts)


async def test_a_caller_waiting_at_a_closed_gate_can_be_cancelled():
    import anyio

    g = RateGate(60.0, base_s=1.0)
    g.trip(30.0)
    started = anyio.current_time()
    with anyio.move_on_after(0.1):
        await g.wait()
    assert anyio.current_time() - started < 1.0
