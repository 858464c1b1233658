"""Judgment: what says where the time goes comes before what says only that it goes elsewhere, and a ranked cause
explains what was asked (the question's own words for cost and for the answer starting; a change of another term).
Pure: findings and questions in, judgments out."""

from __future__ import annotations

import pytest

from orchestrator.analysis import relevance
from orchestrator.analysis.synthesis import bound_of
from orchestrator.findings import BoundClaim, Finding
from orchestrator.prongs.request.account import RequestAccount, Residual
from orchestrator.prongs.request.rules import _where_gpus_wait
from orchestrator.prongs.resource_account.rules import _claim_bound
from orchestrator.ranks import ONLY_ELSEWHERE, Rank


def _f(fid: str, **kw) -> Finding:
    return Finding(id=fid, claim=f"{fid} claim.", evidence=["ev-1"], **kw)


def _idle_and_load() -> list[Finding]:
    """The resource account while the GPUs idle and the client keeps few requests in flight, as its rules claim."""
    idle = _f("account-gpu-idle", rule="resource_account", short="GPU busy 42 % of the 1.0 s window.",
              symptoms=["throughput", "itl", "ttft"])
    load = _f("account-low-concurrency", rule="resource_account", short="the client's concurrency is the limit.",
              symptoms=["throughput"])
    return _claim_bound([idle, load], idle)


def _residual(busy: float | None, weight: float = 0.42, between: tuple[str, str] = ("client", "engine"),
              a: float = 172.0, b: float = 100.0) -> Finding:
    """A residual of the request account (TTFT at the client over the engine's, its candidates not yet split)."""
    acct = RequestAccount(clients=[], engine=None, gpu_busy_pct=busy)
    r = Residual(shape="ttft.client_over_engine", term="TTFT", between=between, a=a, b=b, unit="ms", a_src="client",
                 b_src="engine", evidence=["ev-1"])
    return _f("request-residual-ttft.client_over_engine", rule="request_account", symptoms=["ttft"],
              sets_bound=_where_gpus_wait(acct, r, weight, "TTFT: 172 ms at the client, 100 ms at the engine."))


def test_a_residual_between_two_figures_leads_before_the_idle_share_and_the_load():
    account = _idle_and_load()
    residual = _residual(busy=42.0)
    bound, words, setter = bound_of([*account, residual])
    assert setter is residual and words.startswith("TTFT: 172 ms at the client")
    # the load and the idle share say only that the time goes elsewhere; the residual's claim sits before them
    assert all(f.sets_bound.rank >= Rank.ACCOUNT + ONLY_ELSEWHERE for f in account)
    assert Rank.ACCOUNT <= residual.sets_bound.rank < Rank.ACCOUNT + ONLY_ELSEWHERE
    # without the residual the account's own order stands: the load, then the idle share
    assert bound_of(account)[2].id == "account-low-concurrency"


def test_offered_requests_held_before_the_engine_say_where_and_lead():
    idle = _f("account-gpu-idle", rule="resource_account", short="GPU busy 29 %.")
    held = _f("account-low-concurrency", rule="resource_account", short="only 8 of the 256 offered reach it.",
              data={"held_before_engine": 256})
    account = _claim_bound([idle, held], idle)
    assert held.sets_bound.rank < Rank.ACCOUNT + ONLY_ELSEWHERE
    assert bound_of([*account, _residual(busy=29.0)])[2] is held


def test_a_saturated_resource_still_leads_before_a_residual():
    throttled = _f("account-cgroup-throttled", rule="resource_account", bound="latency", short="throttled.")
    idle = _f("account-gpu-idle", rule="resource_account", short="GPU busy 42 %.")
    account = _claim_bound([idle, throttled], idle)
    assert bound_of([*account, _residual(busy=42.0)])[2] is throttled


def test_a_residual_claims_the_account_tier_only_while_the_gpus_idle():
    assert _residual(busy=90.0).sets_bound is None  # busy GPUs: the serving rules' own order
    assert _residual(busy=None).sets_bound is None  # not sampled
    assert _residual(busy=42.0, weight=0.1).sets_bound is None  # noise
    # two runs that differ are the symptom, and a figure far above its floor says only that the time is elsewhere
    assert _residual(busy=42.0, between=("run", "run")).sets_bound is None
    assert _residual(busy=42.0, between=("engine", "floor")).sets_bound is None
    assert _residual(busy=42.0, between=("engine", "floor"), a=18.0, b=130.0).sets_bound is not None
    heavier = _residual(busy=42.0, weight=0.9)
    assert heavier.sets_bound.rank < _residual(busy=42.0).sets_bound.rank


@pytest.mark.parametrize("question,symptoms", [
    ("In our chat UI the model starts answering only after 4 seconds and the server log shows 4 requests per "
     "message. Why?", {"ttft"}),
    ("Responses start slowly in our chat UI. Why?", {"ttft"}),
    ("we need each answer to be ready within 2 s; why does it take 5?", {"itl", "ttft"}),
    ("why does the chat take so long to load the reply?", {"itl", "ttft"}),
    ("why does our vLLM pod take minutes to become ready after every restart?", {"startup"}),
    ("We want to cut ITL and the cost per token.", {"itl", "cost"}),
    ("Our $/1M tokens is too high: are we wasting GPU-hours?", {"cost"}),
    ("what is our cost per token on this box?", {"cost"}),
    ("Can we serve this in fewer GPU-hours?", {"cost"}),
    ("We pay for 8 GPU-hours a day; is the CPU limit slowing decode?", {"cost", "itl"}),
])
def test_the_answer_starting_is_ttft_and_a_price_per_token_is_cost(question, symptoms):
    assert set(relevance.asked(question).symptoms) == symptoms


def test_a_start_up_cost_is_not_ranked_for_a_steady_state_question():
    autotune = _f("autotune-not-persisted", rule="catalog", entry="autotune-not-persisted",
                  symptoms=["startup", "regression"])
    for q in ("In our chat UI the model starts answering only after 4 seconds. Why?",
              "We enabled the response cache and keep persistent connections; why is TTFT 2 s?",
              "the engine log counts 4 requests per chat message: why is each reply slow?"):
        assert not relevance.asked(q).explains(autotune), q
    assert relevance.asked("vLLM takes 10 minutes to start after every restart").explains(autotune)
    assert relevance.asked("is the triton autotune cache persisted across restarts?").explains(autotune)


def test_a_change_of_another_term_does_not_explain_the_one_asked():
    asked = relevance.Asked(frozenset({"regression", "itl", "throughput"}),
                            certain=frozenset({"regression", "itl", "throughput"}))
    ttft_change = _f("request-residual-ttft.run_vs_run", rule="request_account", symptoms=["ttft", "regression"])
    itl_change = _f("request-residual-itl.run_vs_run", rule="request_account", symptoms=["itl", "regression"])
    a_change = _f("version-change", symptoms=["regression"])
    assert not asked.explains(ttft_change)
    assert asked.explains(itl_change) and asked.explains(a_change)
    # where requests queue, what sets the ITL sets the TTFT too: a path the evidence shows still counts
    queued = relevance.Asked(frozenset({"regression", "ttft"}), certain=frozenset({"regression", "ttft"}),
                             via=frozenset({("itl", "throughput"), ("itl", "ttft")}))
    assert queued.explains(itl_change)
    # an uncertain reading ("it got slower after the upgrade") still ranks a TTFT change
    assert relevance.asked("it got slower after the upgrade to 0.6.3 from 0.6.1").explains(ttft_change)


def test_claims_are_the_rules_own():
    # the claim a residual makes is a BoundClaim at the account's tier (the prong declares it)
    assert isinstance(_residual(busy=42.0).sets_bound, BoundClaim)
    assert int(_residual(busy=42.0).sets_bound.rank) == Rank.ACCOUNT


def test_the_idle_share_names_what_the_gpus_wait_on_only_where_it_explains_the_symptom():
    idle = _f("account-gpu-idle", rule="resource_account", symptoms=["throughput", "itl", "ttft"],
              short="GPU busy 42 % of the 1.0 s window while the engine ran only 4 request(s) at a time and none "
                    "waited: the client's concurrency is the limit.")
    load = _f("account-low-concurrency", rule="resource_account", symptoms=["throughput"],
              short="the client's concurrency is the limit.")
    account = _claim_bound([idle, load], idle, load, "GPU busy 42 % of the 1.0 s window.")
    # a TTFT question: the load finding explains no TTFT, so the idle share's words do not quote it
    _, words, setter = bound_of([f for f in account if relevance.asked("why is the TTFT 120 ms?").explains(f)])
    assert setter is idle and words == "GPU busy 42 % of the 1.0 s window."
    # a throughput question: the load sets the bound, with the idle share's numbers first
    _, words, setter = bound_of([f for f in account if relevance.asked("why is throughput low?").explains(f)])
    assert setter is load and "the client's concurrency is the limit" in words
