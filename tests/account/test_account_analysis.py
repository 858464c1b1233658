"""The account's analysis, pure: the bound follows the saturated resource, latency is judged against its floor in both
directions for dense models too, and nothing saturated is said as such (issue 26 items 2, 3, 6)."""

from __future__ import annotations

import re

from support.evidence import ev, inventory, obs_ev, pyenv

from orchestrator.analysis import synthesize
from orchestrator.analysis.synthesis import bound_of
from orchestrator.ranks import Rank
from orchestrator.prongs.resource_account.rules import account_findings


def account_bound(found):
    """The bound the account's own claims set (None when none of its findings claims it)."""
    if not any(f.sets_bound and int(f.sets_bound.rank) == Rank.ACCOUNT for f in found):
        return None
    return bound_of(found)
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.prongs.serving_engine.floors import decode_floor, judge_decode, judge_prefill, prefill_floor, shape_from_observations
from orchestrator.observations import Observations
from orchestrator.prongs.resource_account.models import (
    CgroupAccount, GpuBusy, HostAccount, ProcessAccount, ResourceAccount, ThreadAccount,
)

H100 = "NVIDIA H100 80GB HBM3"
LLAMA_8B = {"name": "Llama-3.1-8B-Instruct", "num_layers": 32, "hidden_size": 4096, "intermediate_size": 14336}


def account(busy: float, *, thread: float = 0.2, throttled: tuple[int, int] | None = None, n: int = 1,
            series: list[list[float]] | None = None) -> ResourceAccount:
    gpus = [GpuBusy(index=i, samples=15, busy_pct=busy, series=(series[i] if series else [busy] * 15))
            for i in range(n)]
    cg = CgroupAccount(version=2, path="/kubepods/p", cpu_quota_cores=2.0, nr_periods_delta=throttled[1],
                       nr_throttled_delta=throttled[0], throttled_ms_per_s=400) if throttled else None
    proc = ProcessAccount(pid=7, kind="vllm", comm="python3", gpus=list(range(n)), cgroup=cg,
                          threads=[ThreadAccount(tid=7, comm="python3", state="R", cpu_pct=100 * thread),
                                   ThreadAccount(tid=9, comm="uvicorn", state="S", cpu_pct=3)])
    return ResourceAccount(host="gpu-box", window_s=3.0, gpus=gpus, processes=[proc],
                           host_account=HostAccount(cpus_online=64, cpu_busy_pct=5, steal_pct=0))


def view(acct: ResourceAccount, obs: dict | None = None) -> EvidenceView:
    evs = [ev("e1", inventory(H100, "9.0", n=len(acct.gpus)), tool="gpu_inventory"),
           ev("e9", acct, tool="resource_account")]
    if obs:
        evs.append(obs_ev("e3", obs))
    return EvidenceView(evs, Observations.model_validate(obs) if obs else None)


def test_idle_gpu_with_a_saturated_thread_puts_the_thread_first_with_the_numbers():
    found = account_findings(view(account(23, thread=1.0)))
    bound, reasoning, setter = account_bound(found)
    assert bound == "latency" and setter is not None and setter.id == "account-cpu-thread"
    assert re.match(r"GPU busy 23 % of the 3.0 s window .* while thread python3 of python3 ran at 100 % of one core",
                    reasoning), reasoning
    idle = next(f for f in found if f.id == "account-gpu-idle")
    assert idle.explains == 0.77 and "throughput" in idle.symptoms


def test_busy_gpus_leave_the_bound_to_the_roofline_even_with_a_busy_thread():
    found = account_findings(view(account(96, thread=1.0)))
    assert account_bound(found) is None
    assert [f.id for f in found] == ["account-gpu-busy"] and found[0].informational


def test_the_cgroup_quota_comes_before_the_threads_it_throttles():
    found = account_findings(view(account(30, thread=0.95, throttled=(45, 60))))
    bound, reasoning, setter = account_bound(found)
    assert setter is not None and setter.id == "account-cgroup-throttled" and bound == "latency"
    assert "throttled the engine in 75 % of periods" in reasoning
    # planted bug check: below the throttling threshold the thread is what remains
    found = account_findings(view(account(30, thread=0.95, throttled=(5, 60))))
    assert account_bound(found)[2].id == "account-cpu-thread"  # type: ignore[index]


def test_nothing_saturated_says_so_and_names_the_next_measurement():
    found = account_findings(view(account(40, thread=0.3)))
    bound, reasoning, setter = account_bound(found)
    assert bound == "unknown" and setter is not None and setter.id == "account-nothing-saturated"
    assert "no resource on the host is saturated" in reasoning
    assert any("profile trace" in r for r in setter.recommendations)
    assert any("second concurrency" in r for r in setter.recommendations)


def test_gpus_taking_turns_are_serialized_work():
    series = [[95 if i % 4 == g else 0 for i in range(16)] for g in range(4)]
    found = account_findings(view(account(24, n=4, series=series)))
    assert account_bound(found)[2].id == "account-gpus-take-turns"  # type: ignore[index]
    together = [[24] * 16 for _ in range(4)]
    found = account_findings(view(account(24, n=4, series=together)))
    assert account_bound(found)[2].id == "account-nothing-saturated"  # type: ignore[index]


def test_one_and_the_same_gpu_busy_is_gpus_unused_not_gpus_taking_turns():
    """One GPU busy in every sample and the others never: the others do no work. Holding no memory they run nothing
    (the engine's parallelism spans fewer GPUs); holding an engine's memory they serve no requests (the load reaches
    one replica)."""
    series = [[98] * 16] + [[0] * 16 for _ in range(3)]
    for mib, words in ((0.0, "parallelism"), (41800.0, "one replica")):
        acct = account(24, n=4, series=series)
        for g in acct.gpus:
            g.memory_used_mib = 170000.0 if g.index == 0 else mib
        found = account_findings(view(acct))
        assert not any(f.id == "account-gpus-take-turns" for f in found)
        one = next(f for f in found if f.id == "account-one-gpu-works")
        assert "Only GPU 0" in one.title and words in one.claim, one.claim


def test_one_snapshot_is_not_a_window():
    a = account(10, thread=1.0)
    a.gpus[0].samples = 1
    assert account_findings(view(a)) == []


def test_dense_prefill_far_above_its_compute_floor_is_never_compute_bound():
    shape = shape_from_observations(Observations.model_validate({"model": LLAMA_8B}).model)
    assert shape is not None and shape.expert_params == 0
    fl = prefill_floor(shape, 2048, dtype="bf16", peak_tflops=989, bandwidth_gbs=3350)
    v = judge_prefill(fl.floor_ms * 230, "median TTFT", fl)
    assert v.bound == "latency" and "compute-bound" not in v.reason and "230x" in v.reason
    near = judge_prefill(fl.floor_ms * 1.6, "median TTFT", fl)
    assert near.bound == "compute"


def test_dense_decode_near_its_memory_floor_is_memory_bound_and_far_above_it_is_not():
    shape = shape_from_observations(Observations.model_validate({"model": LLAMA_8B}).model)
    assert shape is not None
    fl = decode_floor(shape, 8, dtype="bf16", peak_tflops=989, bandwidth_gbs=3350)
    assert judge_decode(fl.floor_ms * 1.8, "ITL", fl, cuda_graphs=True, tp=1, nvlink=None).bound == "memory"
    far = judge_decode(fl.floor_ms * 7, "ITL", fl, cuda_graphs=True, tp=1, nvlink=None)
    assert far.bound == "latency" and "memory-bound" not in far.reason


def test_a_far_ttft_cites_what_the_account_shows():
    obs = {"model": LLAMA_8B, "bench": [{"format": "vllm-bench-serve", "max_concurrency": 16, "input_len": 2048,
                                         "ttft": {"p50": 2400.0}, "itl": {"p50": 9.0}}]}
    evs = [ev("e1", inventory(H100, "9.0", n=1), tool="gpu_inventory"), ev("e2", pyenv(), tool="python_env"),
           obs_ev("e3", obs), ev("e9", account(23, thread=1.0), tool="resource_account")]
    d = synthesize("why is TTFT so high?", Observations.model_validate(obs), evs, [])
    text = "\n".join([d.verdict, d.bound_reasoning] + [f"{c.title}. {c.explanation}" for c in d.causes])
    assert d.bound == "latency" and d.verdict.startswith("On ") and "GPU busy 23 %" in d.verdict
    assert not re.search(r"(?<!not )compute-bound", text), text
    assert "The resource account shows where: the GPUs were busy 23 %" in text
    assert d.causes[0].title.startswith("A CPU thread of the engine is saturated")


def _bench(conc: int, out: float, itl: float, rate: float | str = "inf", req: float | None = None) -> dict:
    return {"format": "vllm-bench-serve", "source": f"c{conc}.json", "max_concurrency": conc, "request_rate": rate,
            "output_throughput": out, "request_throughput": req, "input_len": 1024, "output_len": 128,
            "ttft": {"p50": 80.0}, "itl": {"p50": itl}}


def test_every_bench_run_is_used_and_flat_throughput_points_before_the_gpu():
    from orchestrator.prongs.resource_account.load_rules import flat_throughput, runs_compared

    obs = {"bench": [_bench(16, 2000, 8), _bench(64, 2100, 30), _bench(256, 2150, 118)]}
    v = EvidenceView([obs_ev("e3", obs)], Observations.model_validate(obs))
    cmp = runs_compared(v)
    assert cmp is not None and cmp.claim.count("concurrency") >= 3
    assert "output throughput 1.07x" in cmp.claim and "median ITL 14.75x" in cmp.claim
    flat = flat_throughput(v)
    assert flat is not None and "2000 tok/s at concurrency 16 and 2150 tok/s at 256 (1.07x for 16x the load)" in flat.claim
    rising = {"bench": [_bench(16, 2000, 8), _bench(256, 9000, 28)]}
    assert flat_throughput(EvidenceView([obs_ev("e3", rising)], Observations.model_validate(rising))) is None


def test_achieved_equal_to_offered_rate_means_the_client_set_the_throughput():
    from orchestrator.prongs.resource_account.load_rules import client_limited

    obs = {"bench": [_bench(0, 500, 9, rate=4.0, req=3.98)]}
    obs["bench"][0].pop("max_concurrency")
    f = client_limited(EvidenceView([obs_ev("e3", obs)], Observations.model_validate(obs)))
    assert f is not None and "offered 4 requests/s" in f.claim
    obs["bench"][0]["request_throughput"] = 2.1  # the server fell behind: not the client
    assert client_limited(EvidenceView([obs_ev("e3", obs)], Observations.model_validate(obs))) is None


def test_what_fits_where_shows_the_arithmetic():
    from orchestrator.prongs.resource_account.fit_rules import fit_findings

    big = {"model": {"name": "Llama-3.1-405B-Instruct"}, "runs": [{"tp": 4}]}
    [f] = fit_findings(EvidenceView([ev("e1", inventory(H100, "9.0", n=4), tool="gpu_inventory"), obs_ev("e3", big)],
                                    Observations.model_validate(big)))
    assert f.id == "fit-weights-exceed-gpu-memory"
    assert "405.0 B parameters x 2 bytes (bf16) = 754.4 GiB of weights; over 4 GPUs (TP4 x PP1) 188.6 GiB each" in f.claim
    # an 8B model at TP1 whose GPU shows 6 GiB in use: most of its 15 GiB of weights are not on the GPU
    small = {"model": {"name": "Llama-3.1-8B-Instruct"}, "runs": [{"tp": 1}]}
    a = account(90)
    a.gpus[0].memory_used_mib, a.gpus[0].memory_total_mib = 6144, 81559
    found = fit_findings(view(a, small))
    assert [x.id for x in found] == ["fit-weights-not-on-gpu"] and "6.0 GiB in use" in found[0].claim
    a.gpus[0].memory_used_mib = 72000  # weights and the KV pool: everything on the GPU
    assert [x.id for x in fit_findings(view(a, small))] == ["fit-weights-per-gpu"]


def test_oom_kills_in_the_containers_memory_events_go_with_its_memory():
    a = account(20)
    a.processes[0].cgroup = CgroupAccount(version=2, path="/kubepods/p", memory_max_bytes=16 * 2**30,
                                          memory_current_bytes=int(15.9 * 2**30), memory_events={"oom_kill": 3})
    bound, reasoning, setter = account_bound(account_findings(view(a)))  # type: ignore[misc]
    assert setter.id == "account-memory-limit" and "15.9 GiB of 16.0 GiB" in setter.claim and "killed 3" in setter.claim
    a.processes[0].cgroup = CgroupAccount(version=2, path="/kubepods/p", memory_max_bytes=16 * 2**30,
                                          memory_current_bytes=4 * 2**30, memory_events={"oom_kill": 0})
    assert account_bound(account_findings(view(a)))[2].id == "account-nothing-saturated"  # type: ignore[index]


async def test_the_roofline_tool_gives_a_dense_model_its_floors_instead_of_refusing():
    from orchestrator.inputs import RunInputs
    from orchestrator.tools.knowledge import Roofline, RooflineInput
    from orchestrator.tools.mock import MockToolContext

    obs = {"model": {**LLAMA_8B, "quantization": "fp8"}, "gpu": {"name": "NVIDIA H100 80GB HBM3"},
           "runs": [{"tp": 1, "concurrency": 32, "input_len": 2048}]}
    ctx = MockToolContext(inputs=RunInputs(question="why is TTFT high?", observations=obs))
    out = await Roofline().run(RooflineInput(), ctx)
    assert out.data["mode"] == "dense" and out.data["decode"]["batch"] == 32 and out.data["prefill"]["tokens"] == 2048
    assert out.data["prefill"]["bound"] == "compute" and out.data["decode"]["bound"] == "memory"
    assert "Dense roofline on NVIDIA H100" in out.text and "ms/step" in out.text


def test_stolen_cpu_a_full_nic_and_io_stalls_each_lead_when_they_are_what_is_saturated():
    from orchestrator.prongs.resource_account.models import Nic, Psi, PsiLine

    a = account(35)
    a.host_account.steal_pct = 22
    assert account_bound(account_findings(view(a)))[2].id == "account-host-cpu"  # type: ignore[index]
    a = account(35)
    a.host_account.nics = [Nic(name="eth0", rx_bytes_per_s=2.9e9, tx_bytes_per_s=1e8, speed_mbit=25000)]
    bound, _, setter = account_bound(account_findings(view(a)))  # type: ignore[misc]
    assert setter.id == "account-nic" and bound == "communication" and "93 % of its 25000 Mb/s" in setter.claim
    a.host_account.nics[0].rx_bytes_per_s = 1e9  # 32 %: not saturated
    assert account_bound(account_findings(view(a)))[2].id == "account-nothing-saturated"  # type: ignore[index]
    a = account(35)
    a.host_account.psi = {"io": Psi(some=PsiLine(avg10=40, window_pct=45))}
    assert account_bound(account_findings(view(a)))[2].id == "account-io"  # type: ignore[index]
