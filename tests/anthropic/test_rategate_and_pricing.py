"""The shared rate gate's arithmetic on a fake clock, retry-after parsing, and the price table."""

from __future__ import annotations

import pytest

from orchestrator.messages import Usage
from orchestrator.models.rategate import RateGate, parse_retry_after
from orchestrator.pricing import cost, price_for, price_table


class FakeClock:
    def __init__(self):
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, s: float) -> None:
        self.slept.append(s)
        self.now += s


def gate(clock: FakeClock, **kw) -> RateGate:
    return RateGate(kw.pop("max_wait_s", 60.0), clock=clock, sleep=clock.sleep, **kw)


async def test_open_gate_does_not_wait():
    clock = FakeClock()
    assert await gate(clock).wait() == 0.0
    assert clock.slept == []


async def test_trip_honours_retry_after_and_every_caller_waits_for_it():
    clock = FakeClock()
    g = gate(clock, rng=lambda: 0.0)  # no release jitter: the wait is exactly the retry-after
    assert g.trip(7.5) == 7.5
    assert await g.wait() == pytest.approx(7.5)
    assert await g.wait() == 0.0  # reopened


async def test_a_shorter_later_trip_never_shortens_the_wait_already_imposed():
    clock = FakeClock()
    g = gate(clock)
    g.trip(10.0)
    g.trip(1.0)
    assert g.remaining() == pytest.approx(10.0)


def test_backoff_grows_exponentially_with_jitter_and_is_capped():
    clock = FakeClock()
    low = gate(clock, base_s=1.0, max_wait_s=20.0, rng=lambda: 0.0)
    high = gate(clock, base_s=1.0, max_wait_s=20.0, rng=lambda: 0.999999)
    assert [low.backoff(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 4.0]
    assert high.backoff(3) == pytest.approx(4.0)
    assert high.backoff(30) == pytest.approx(20.0)


def test_consecutive_trips_without_retry_after_back_off_further_until_a_success():
    clock = FakeClock()
    g = gate(clock, base_s=1.0, rng=lambda: 1.0)
    waits = [g.trip() for _ in range(3)]
    assert waits == [1.0, 2.0, 4.0]
    g.succeeded()
    assert g.trip() == 1.0


def test_retry_after_beyond_the_cap_is_capped():
    clock = FakeClock()
    assert gate(clock, max_wait_s=5.0).trip(3600) == 5.0


@pytest.mark.parametrize(
    "headers,expected",
    [
        ({"retry-after": "3"}, 3.0),
        ({"Retry-After": "0.25"}, 0.25),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, 10.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_headers_parse_to_seconds(headers, expected):
    from email.utils import parsedate_to_datetime

    now = parsedate_to_datetime("Wed, 21 Oct 2015 07:28:00 GMT").timestamp()
    assert parse_retry_after(headers, now_epoch=now) == expected


def test_price_table_has_a_source_and_current_models():
    table = price_table()
    assert "platform.claude.com" in table.source and table.checked
    for model in ("claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-4-5"):
        assert model in table.models


def test_dated_and_suffixed_ids_price_as_their_family_and_longest_entry_wins():
    assert price_for("claude-sonnet-4-5-20250929") == price_for("claude-sonnet-4-5")
    assert price_for("claude-opus-5-5[1m]").input == 4.0
    assert price_for("claude-opus-5").input == 5.0
    assert price_for("gpt-9") is None


def test_cost_counts_all_four_token_kinds_and_overrides_win():
    u = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_read_tokens=1_000_000, cache_write_tokens=1_000_000)
    assert cost("claude-opus-5", u) == pytest.approx(5 + 25 + 0.5 + 6.25)
    assert cost("claude-opus-5", u, {"claude-opus-5": {"input": 1.0}}) == pytest.approx(1 + 25 + 0.5 + 6.25)
    assert cost("my-proxy-model", u, {"my-proxy-model": {"input": 1, "output": 2}}) == pytest.approx(3.0)
    assert cost("unknown-model", u) == 0.0


def test_incomplete_price_override_for_an_unknown_model_names_the_fix():
    with pytest.raises(ValueError, match=r"settings.prices\['x'\]: output: Field required; give input and output"):
        price_for("x", {"x": {"input": 1}})
