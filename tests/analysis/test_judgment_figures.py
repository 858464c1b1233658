"""A verdict never contradicts a figure it holds (issue 40 item 7): no latency bound and no "time outside GPU work"
on GPUs busy the whole window, no TP all-reduce cause on engines that each run on one GPU, and the bound a vetoed
roofline misread comes from the floor that counts the KV reads."""

from __future__ import annotations

from support.evidence import ev, inventory

from orchestrator.analysis import rules as R
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.observations import Observations
from orchestrator.prongs.resource_account.models import GpuBusy, HostAccount, ProcessAccount, ResourceAccount
from orchestrator.prongs.serving_engine.probe import build_report
from orchestrator.prongs.serving_engine.rules import serving_latency

H100 = "NVIDIA H100 80GB HBM3"
LLAMA_8B = {"name": "Llama-3.1-8B-Instruct", "quantization": "bf16"}


def _account(busy: float, n: int = 1) -> ResourceAccount:
    return ResourceAccount(host="gpu-box", window_s=1.0,
                           gpus=[GpuBusy(index=i, samples=9, busy_pct=busy, series=[busy] * 9) for i in range(n)],
                           processes=[ProcessAccount(pid=7, kind="vllm", comm="vllm", gpus=list(range(n)))],
                           host_account=HostAccount(cpus_online=64, cpu_busy_pct=5, steal_pct=0))


def _bench(**kw) -> dict:
    run = {"format": "client", "label": "load test", "source": "timings", "max_concurrency": 64, "input_len": 1000,
           "output_len": 300, "ttft": {"p50": 150.0}, "itl": {"p50": 13.0}, "e2el": {"p50": 4040.0}}
    run.update(kw)
    return run


def _view(busy: float | None, bench: dict, *, gpu: str = H100, count: int = 1, engine=None,
          question: str = "") -> EvidenceView:
    obs = Observations.model_validate({"model": LLAMA_8B, "bench": [bench]})
    evs = [ev("ev-1.1", inventory(gpu, "9.0", count, nvlink=count == 1), tool="gpu_inventory"),
           ev("ev-2.1", data={"kind": "observations", "observations": obs.model_dump(mode="json")},
              tool="observations")]
    if busy is not None:
        evs.append(ev("ev-3.1", _account(busy, count), tool="resource_account"))
    if engine is not None:
        evs.append(ev("ev-4.1", engine, tool="engine_config"))
    return EvidenceView(evs, obs, question=question)


def _prefill(v: EvidenceView):
    return next(f for f in serving_latency(v) if f.id == "serving-prefill-vs-roofline")


def test_a_far_ttft_on_gpus_busy_with_the_batch_is_the_wait_behind_its_work_not_a_latency_bound():
    """TTFT 150 ms against a 16 ms prefill floor, 64 requests running, GPUs busy 97 %: the 134 ms beyond the floor
    are ~10 steps of the batch's 13 ms decode step, GPU work; no latency bound, no "outside GPU work"."""
    f = _prefill(_view(97, _bench()))
    assert "the wait behind 64 running requests' GPU work" in f.title and "outside" not in f.title
    assert f.bound is None and f.sets_bound is None
    assert "decode steps" in f.title and "steps of the 13 ms decode step" in f.claim
    # the GPUs mostly idle: the time is outside GPU work, as before
    idle = _prefill(_view(40, _bench()))
    assert "outside GPU work" in idle.title and idle.sets_bound is not None and idle.bound == "latency"
    # a wait longer than a whole answer's decode is a wait for a place in the batch: not the shared steps
    queued = _prefill(_view(97, _bench(output_len=8, ttft={"p50": 3000.0}, e2el={"p50": 3100.0})))
    assert "outside GPU work" in queued.title
    # an open loop (no concurrency cap) can queue without bound: not read as shared steps
    assert "outside GPU work" in _prefill(_view(97, _bench(max_concurrency=None, output_throughput=4900.0))).title


def _engines(*flags: tuple[str, ...]):
    data = {"engines": [{"argv": ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct", *f], "kind": "vllm", "pid": 7 + i}
                        for i, f in enumerate(flags)], "logs": []}
    return build_report("gpu-box", data, [])


def test_no_tp_all_reduce_cause_when_every_engine_runs_on_one_gpu():
    """Three GPUs without NVLink: a TP all-reduce over PCIe is a cause only where an engine spans GPUs."""
    three = [ev("e1", inventory(n=3), tool="gpu_inventory")]
    (tp1,) = R.pcie_allreduce(EvidenceView([*three, ev("e2", _engines((), (), ()), tool="engine_config")]))
    assert tp1.informational and "every engine runs on one GPU" in tp1.claim and "No all-reduce" in tp1.title
    (tp3,) = R.pcie_allreduce(EvidenceView([*three, ev("e2", _engines(("--tensor-parallel-size", "3")),
                                                      tool="engine_config")]))
    assert not tp3.informational and tp3.recommendations and "cross PCIe" in tp3.title
    (unknown,) = R.pcie_allreduce(EvidenceView(three))  # no engine seen: the topology alone, as before
    assert not unknown.informational


def test_the_kv_reads_floor_sets_the_bound_the_weights_only_roofline_misread():
    """Llama 8B at 250 running on an H200: the weights-only roofline calls the decode compute-bound and is vetoed;
    the floor with the KV reads (1.16x) sets the bound: memory, said with its arithmetic."""
    from test_request_account import _client, _engine, _metrics
    from test_request_account import _view as account_view

    from orchestrator.analysis.synthesis import bound_of
    from orchestrator.prongs.request.rules import request_account_findings

    eng = _engine(_metrics(ttft_s=0.139, itl_s=0.0129, e2e_s=3.99, n=4000, prompt=997, gen=300, running=250))
    v = account_view(eng, [_client("locust", max_concurrency=256, completed=4000, input_len=1000, output_len=300,
                                   ttft={"mean": 145.0}, itl={"p50": 12.9}, e2el={"mean": 4083.0})],
                     gpu="NVIDIA H200")
    kv = {x.id: x for x in request_account_findings(v)}["request-decode-reads-kv"]
    decode = next(f for f in serving_latency(v) if f.id == "serving-decode-vs-roofline")
    assert decode.bound == "compute" and decode.reads in kv.contradicts  # the misread, vetoed by the synthesis
    bound, reasoning, setter = bound_of([kv])
    assert bound == "memory" and setter is None  # it states the bound; the reconciled account is the cause
    assert "1.16x its memory floor once the KV reads count" in reasoning and "GB of KV" in reasoning


def test_requests_spread_evenly_over_engines_are_said_so_and_a_cap_above_them_is_not_a_cause():
    """Three replicas at 64, 63 and 65 running: the load is spread evenly (a third each), said with the counts; a
    --max-num-seqs of 128 above the most any engine ran never bound the batch."""
    from orchestrator.analysis.synthesis import _caps_not_reached
    from orchestrator.diagnosis import Number
    from orchestrator.findings import Finding
    from orchestrator.prongs.request.rules import _spread

    per = [("pod-a", 64.0), ("pod-b", 63.0), ("pod-c", 65.0)]
    assert _spread(per) == "the load is spread evenly over the 3 engines (64, 63, 65 requests running: a third each)"
    assert _spread([("a", 120.0), ("b", 2.0), ("c", 3.0)]) == ""  # one engine takes the load: not even
    assert _spread(per[:1]) == ""
    cap = Finding(id="setting-vllm-max_num_seqs", claim="--max-num-seqs=128 caps the batch.", evidence=["e"],
                  caps_batch=True, data={"setting": {"setting": "--max-num-seqs", "value": "128"}})
    seen = Finding(id="request-reconciled", claim="c", evidence=["e"],
                   numbers=[Number(name="requests running (most in one engine)", value=65, unit="requests",
                                   source="e")])
    ((f, why),) = _caps_not_reached([cap], [cap, seen])
    assert f is cap and "at most 65 requests ran, below this cap of 128" in why
    assert _caps_not_reached([cap], [cap, seen.model_copy(update={"numbers": []})]) == []


def test_the_reconciled_account_carries_the_batch_each_engine_ran():
    from test_request_account import _client, _engine, _metrics
    from test_request_account import _view as account_view

    from orchestrator.prongs.request.account import build_account
    from orchestrator.prongs.request.rules import _reconciled

    eng = _engine(_metrics(ttft_s=0.06, itl_s=0.0097, e2e_s=2.53, n=2560, prompt=1024, gen=256, running=32))
    v = account_view(eng, [_client("bench", max_concurrency=32, completed=2560, input_len=1024, output_len=256,
                                   ttft={"p50": 62.0}, itl={"p50": 9.7}, e2el={"p50": 2540.0})])
    acct = build_account(v)
    assert acct is not None
    ok = _reconciled(acct, "", [("pod-a", 32.0), ("pod-b", 31.0)])
    assert ok is not None and "spread evenly over the 2 engines (32, 31 requests running: half each)" in ok.claim
    assert [n.value for n in ok.numbers if n.name.startswith("requests running")] == [32.0]


def test_busy_gpus_name_the_link_that_carries_the_traffic_with_its_headroom():
    """GPUs busy 97 % while eno1 sends 405 Mb/s of its 1000: the link is said, with its figure, not to be the limit."""
    from orchestrator.prongs.resource_account.models import Nic
    from orchestrator.prongs.resource_account.rules import account_findings

    acct = _account(97)
    acct.host_account.nics = [Nic(name="eno1", rx_bytes_per_s=19.5e6, tx_bytes_per_s=50.6e6, speed_mbit=1000),
                              Nic(name="ens1f0np0", rx_bytes_per_s=1e5, tx_bytes_per_s=1e5, speed_mbit=100000)]
    v = EvidenceView([ev("e1", inventory(H100, "9.0", 1), tool="gpu_inventory"), ev("e9", acct, tool="resource_account")])
    busy = next(f for f in account_findings(v) if f.id == "account-gpu-busy")
    assert "NIC eno1 sent 51 MB/s (405 Mb/s, 40 % of its 1000 Mb/s line rate): headroom, not the limit" in busy.claim
    assert not any(f.id == "account-nic" for f in account_findings(v))
    acct.host_account.nics = acct.host_account.nics[1:]  # a link nearly idle is not worth a word
    busy = next(f for f in account_findings(EvidenceView([ev("e9", acct, tool="resource_account")]))
                if f.id == "account-gpu-busy")
    assert "NIC" not in busy.claim


def test_a_phase_a_third_gpu_work_on_idle_gpus_is_not_called_compute_bound():
    """TTFT 4x one prefill's compute floor: on GPUs busy the whole window that reads compute-bound (within the far
    ratio); on GPUs idle 70 % of it, the floor is a quarter of the time and the GPUs wait: no compute bound."""
    bench = _bench(ttft={"p50": 65.0})
    busy = _prefill(_view(97, bench))
    assert "compute-bound" in busy.title and busy.bound == "compute"
    idle = _prefill(_view(30, bench))
    assert "compute-bound" not in idle.title + idle.claim and idle.bound == "latency"
    assert "outside GPU work" in idle.title and "GPUs were busy 30 %" in idle.claim


def test_idle_gpus_do_not_set_a_term_measured_at_its_floor():
    """TTFT 545 ms at 1.1x one prefill's compute floor, one request at a time, GPUs busy 60 % of the window: the
    prefill is GPU work at the GPU's speed; the idle share is the time between requests. For a TTFT question the
    account's idle GPUs (and its 'measure next') are said apart with both figures; asked about throughput, they stay."""
    from orchestrator.analysis import relevance
    from orchestrator.analysis.synthesis import _idle_between_requests
    from orchestrator.findings import BoundClaim, Finding
    from orchestrator.ranks import Rank

    prefill = Finding(id="serving-prefill-vs-roofline", rule="serving_latency", claim="c", evidence=["e"],
                      short="Prefill 545.0 ms is 1.1x its roofline floor of 484.85 ms at 5000-token prompts.",
                      symptoms=["ttft"], bound="compute",
                      data={"serving": {"phase": "prefill", "ratio": 1.12, "bound": "compute"}})
    idle = Finding(id="account-gpu-idle", rule="resource_account", claim="GPU busy 60 %.", evidence=["e"],
                   short="GPU busy 60 % of the 1.0 s window.", symptoms=["throughput", "itl", "ttft"],
                   sets_bound=BoundClaim(rank=Rank.ACCOUNT + 0.99, bound="latency"))
    found = [prefill, idle]
    ((f, why),) = _idle_between_requests(found, found, relevance.asked("why did the TTFT go up to 0.55 s?"))
    assert f is idle and "not what sets the time to first token: Prefill 545.0 ms is 1.1x" in why
    assert "time between requests" in why
    assert _idle_between_requests(found, found, relevance.asked("why is throughput low?")) == []
    far = prefill.model_copy(update={"data": {"serving": {"phase": "prefill", "ratio": 4.0, "bound": "compute"}}})
    assert _idle_between_requests([far, idle], [far, idle], relevance.asked("why is the TTFT 2 s?")) == []


def test_a_phase_below_its_floor_reads_no_bound_and_the_run_after_a_change_is_judged():
    """A TTFT of 8 ms against a 16 ms floor is not the prefill the floor counts: no compute bound. Of two runs labelled
    before and after a change, the one after is the state asked about, judged against its floor."""
    below = _prefill(_view(97, _bench(ttft={"p50": 8.0})))
    assert "below it" in below.title and "compute-bound" not in below.title and below.bound is None
    assert below.sets_bound is None and "cannot take less than its floor" in below.claim
    obs = Observations.model_validate({"model": LLAMA_8B, "bench": [
        _bench(label="RAG, before (default context)", max_concurrency=1, ttft={"p50": 8.0}),
        _bench(label="RAG, after (context 8192)", max_concurrency=1, ttft={"p50": 18.0})]})
    v = EvidenceView([ev("ev-1.1", inventory(H100, "9.0", 1, nvlink=True), tool="gpu_inventory"),
                      ev("ev-2.1", data={"kind": "observations", "observations": obs.model_dump(mode="json")},
                         tool="observations")], obs)
    after = _prefill(v)
    assert "after (context 8192)" in after.claim and "compute-bound" in after.title


def test_a_mechanism_quotes_the_pair_of_runs_the_change_made_worse():
    """Speculation 1.9x faster at one request, 1.4x slower at 64: a mechanism about the slowdown quotes the pair at 64
    (the change made it worse), not the larger but opposite pair at one request."""
    from orchestrator.prongs.request.account import Residual
    from orchestrator.prongs.request.rules import _lead_residual

    def pair(a_src, b_src, a, b):
        return Residual("itl.run_over_run", "time per output token", ("run", "run"), a, b, "ms", a_src, b_src, ["e"])

    faster = pair("the run baseline, concurrency 1", "the run ngram5, concurrency 1", 5.3, 2.73)
    slower = pair("the run ngram5, concurrency 64", "the run baseline, concurrency 64", 11.9, 8.6)
    assert _lead_residual([faster, slower]) is slower
    assert _lead_residual([faster]) is faster  # one direction only: the largest share, as before


def test_a_term_near_its_floor_that_is_not_asked_about_is_not_noticed_as_a_problem():
    """TTFT 20 ms at 1.2x one prefill's floor, the question about the per-token latency: the prefill is healthy and
    not asked about, so it is neither a ranked cause nor an 'also noticed, not a cause here' item."""
    from orchestrator.analysis import synthesize

    v = _view(97, _bench(ttft={"p50": 20.0}, max_concurrency=1), question="why is it 13 ms per token?")
    d = synthesize("why is it 13 ms per token?", v.observations, v.evidence, [])
    assert not any(x.title.startswith("Prefill") for x in [*d.causes, *d.also_noticed])
    far = _view(97, _bench(ttft={"p50": 2000.0}, max_concurrency=1))
    d = synthesize("why is it 13 ms per token?", far.observations, far.evidence, [])
    assert any(x.title.startswith("Prefill") for x in d.also_noticed)  # far above its floor: worth noticing


def test_the_slowest_requests_at_the_same_pace_are_the_longest_answers():
    """p99 end-to-end 64.5 s against a 13 s median, the per-token p99 (74 ms) near its median (62.8 ms) and the first
    token 362 ms: the slowest requests generate (64,476 - 362) / 62.8 = 1,021 tokens; a tail whose pace differs is
    not said to be length."""
    from orchestrator.prongs.request.account import Stat, View
    from orchestrator.prongs.request.rules import _long_answers

    c = View("client", "chat", "app logs", ["e"], ttft=Stat(p50=319.0, p99=362.0), itl=Stat(p50=62.8, p99=74.0),
             e2e=Stat(p50=13007.0, p99=64476.0))
    words = _long_answers(c)
    assert "(64,476 - 362) ms / 62.8 ms = 1,021 tokens" in words and "202 tokens for the median request" in words
    assert _long_answers(View("client", "chat", "x", ["e"], ttft=c.ttft, itl=Stat(p50=62.8, p99=400.0),
                              e2e=c.e2e)) == ""  # the slow ones decode slower: not length
    assert _long_answers(View("client", "chat", "x", ["e"], ttft=c.ttft, itl=c.itl,
                              e2e=Stat(p50=13007.0, p99=15000.0))) == ""  # no tail to account for


def test_no_fault_on_gpus_busy_the_whole_window_says_their_work_is_the_limit():
    """Nothing ranked and the GPUs busy 97 %: the verdict says the GPUs' own work is the limit, with the busy share,
    rather than 'no cause of the slowness is supported'."""
    from orchestrator.analysis import synthesize

    v = EvidenceView([ev("e1", inventory(H100, "9.0", 1, util=10.0, nvlink=True), tool="gpu_inventory"),
                      ev("e9", _account(97), tool="resource_account")])
    d = synthesize("is the network still what limits our throughput?", None, v.evidence, [])
    assert "the GPUs' own work is the limit" in d.verdict and "GPUs busy 97 %" in d.verdict
    assert "no cause of" not in d.verdict.lower()


def test_a_candidate_whose_every_confirmation_fails_on_a_figure_is_named_but_not_rendered():
    """The client-side artifact needs the GPUs under half busy: with them busy 98 % its claim ('the GPUs busy only
    98 % of the time: the server had capacity to spare') would contradict the figure, so it is not rendered."""
    from orchestrator.analysis.facts import Fact, HostFacts
    from orchestrator.prongs.request.rules import _framing_refuted
    from orchestrator.prongs.request.table import table

    m = table().mechanisms["client-side-artifact"]
    busy = HostFacts("h", facts={"request.gpu_busy_pct": Fact(98.0, "e"), "request.engine.waiting": Fact(0, "e")})
    assert _framing_refuted(m, busy)
    idle = HostFacts("h", facts={"request.gpu_busy_pct": Fact(20.0, "e"), "request.engine.waiting": Fact(0, "e")})
    assert not _framing_refuted(m, idle)
    assert not _framing_refuted(m, HostFacts("h"))  # nothing known: nothing contradicted
