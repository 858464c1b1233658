"""The general logic the held-out cases (tests/scenarios/heldout/) exposed, pure: a pool of saturated threads is
CPU compute, a saturated thread is described by its process's role, memory stalls without swapping are page-cache
reclaim, a burst benchmark's TTFT is queueing, a run's output rate is judged against the decode floor, and a TTFT
within the prefill of all concurrent prompts on busy GPUs is queueing for compute."""

from __future__ import annotations

from support.evidence import ev, inventory, obs_ev
from test_account_analysis import H100, LLAMA_8B, account, view

from orchestrator.prongs.resource_account.rules import account_findings
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.prongs.resource_account.load_rules import burst_queue
from orchestrator.prongs.serving_engine.rules import serving_latency
from orchestrator.observations import Observations
from orchestrator.prongs.resource_account.models import GpuBusy, HostAccount, ProcessAccount, ResourceAccount, ThreadAccount


def _proc(comm: str, argv0: str, cpus: list[float]) -> ProcessAccount:
    return ProcessAccount(pid=41, comm=comm, argv0=argv0, gpus=[0],
                          threads=[ThreadAccount(tid=41 + i, comm=comm, state="R", cpu_pct=100 * c)
                                   for i, c in enumerate(cpus)])


def _acct(proc: ProcessAccount, busy: float = 5, host: HostAccount | None = None) -> ResourceAccount:
    return ResourceAccount(host="box", window_s=3.0, gpus=[GpuBusy(index=0, samples=15, busy_pct=busy)],
                           processes=[proc], host_account=host or HostAccount(cpus_online=16, cpu_busy_pct=5))


def _by_id(found, fid):
    return next(f for f in found if f.id == fid)


def test_a_pool_of_saturated_threads_is_cpu_compute_and_a_native_process_is_profiled_with_perf():
    pool = _by_id(account_findings(view(_acct(_proc("ollama_llama_se", "/usr/lib/ollama_llama_server",
                                                    [0.98, 0.97, 0.96, 0.2])))), "account-cpu-thread")
    assert "3 threads" in pool.claim and "computes on the host's CPUs" in pool.claim
    assert "perf top -p 41" in pool.recommendations[0] and "layers" in pool.recommendations[0]
    one = _by_id(account_findings(view(_acct(_proc("ollama_llama_se", "/usr/lib/ollama_llama_server",
                                                   [0.98, 0.2])))), "account-cpu-thread")
    assert "computes on the host" not in one.claim and "perf top -t 41" in one.recommendations[0]


def test_a_saturated_engine_core_is_not_told_to_add_api_servers():
    f = _by_id(account_findings(view(_acct(_proc("VLLM::EngineCor", "VLLM::EngineCore", [0.99, 0.03]), busy=25))),
               "account-cpu-thread")
    assert "the engine core's loop" in f.claim and "py-spy dump --pid 41" in f.recommendations[0]
    assert "API-server" not in f.recommendations[0] and "structured-output" in f.recommendations[0]
    api = _by_id(account_findings(view(account(23, thread=1.0))), "account-cpu-thread")
    assert "API server's event loop" in api.claim and "API-server" in api.recommendations[0]


def test_memory_stalls_without_swapping_are_page_cache_reclaim_not_swap():
    from orchestrator.prongs.resource_account.models import Psi, PsiLine

    psi = {"memory": Psi(some=PsiLine(window_pct=41.0))}
    dry = HostAccount(cpus_online=8, cpu_busy_pct=5, mem_total_kb=16 * 2**20, mem_available_kb=300 * 2**10, psi=psi)
    f = _by_id(account_findings(view(_acct(_proc("python3", "python3", [0.1]), busy=0, host=dry))),
               "account-memory-swap")
    assert "page cache" in f.claim and "read back from swap" not in f.claim and "no swapping" in f.title
    wet = dry.model_copy(update={"pswpin_per_s": 5000.0, "pswpout_per_s": 4000.0})
    g = _by_id(account_findings(view(_acct(_proc("python3", "python3", [0.1]), busy=0, host=wet))),
               "account-memory-swap")
    assert "read back from swap" in g.claim and "page cache" not in g.claim


def _burst(**kw) -> dict:
    b = {"format": "vllm-bench-serve", "source": "r.json", "request_rate": "inf", "completed": 1000,
         "duration_s": 117.7, "request_throughput": 8.5, "output_throughput": 1519.0, "input_len": 215,
         "ttft": {"p50": 21296.0}, "tpot": {"p50": 134.7}}
    b.update(kw)
    return {"bench": [b]}


def test_a_burst_benchmarks_ttft_is_queueing_and_a_capped_or_paced_one_is_not():
    def f(obs):
        return burst_queue(EvidenceView([obs_ev("e3", obs)], Observations.model_validate(obs)))

    got = f(_burst())
    assert got is not None and "all 1000 requests at once" in got.claim and "18%" in got.claim
    assert f(_burst(max_concurrency=64)) is None
    assert f(_burst(request_rate=8.0)) is None
    assert f(_burst(ttft={"p50": 900.0})) is None  # under a tenth of the run: not the backlog


def _serving(obs: dict, busy: float | None = None, n: int = 1):
    evs = [ev("e1", inventory(H100, "9.0", n=n), tool="gpu_inventory"), obs_ev("e3", obs)]
    if busy is not None:
        evs.append(ev("e9", account(busy, n=n), tool="resource_account"))
    return serving_latency(EvidenceView(evs, Observations.model_validate(obs)))


def test_a_runs_output_rate_is_judged_against_the_decode_floor_on_its_own_tp():
    slow = _serving({"model": LLAMA_8B, "runs": [{"tp": 1, "concurrency": 1, "output_tok_s": 30}]})
    assert slow and slow[0].bound == "latency" and "33.3 ms" in slow[0].claim and "far above its memory floor" in slow[0].claim
    fast = _serving({"model": LLAMA_8B, "runs": [{"tp": 1, "concurrency": 1, "output_tok_s": 175}]})
    assert fast and fast[0].bound == "memory"


def test_no_concurrency_cap_takes_the_batch_by_littles_law_and_tp_from_the_gpus_held():
    obs = {"model": LLAMA_8B, **_burst()}
    found = _serving(obs, busy=94, n=8)
    decode = next(f for f in found if f.data["phase"] == "decode")
    assert decode.data["serving"]["batch"] == 205 and "(TP8)" in decode.claim


def test_ttft_within_all_concurrent_prefills_on_busy_gpus_is_queueing_for_compute():
    def obs(ttft: float) -> dict:
        return {"model": LLAMA_8B, "bench": [{"format": "vllm-bench-serve", "max_concurrency": 16, "input_len": 4096,
                                              "ttft": {"p50": ttft}}]}

    queued = _serving(obs(1400.0), busy=99)[0]
    assert queued.bound == "compute" and "behind the other requests' prefill" in queued.claim
    assert "outside" not in queued.short
    idle = _serving(obs(1400.0), busy=30)[0]  # the GPUs wait: the time is elsewhere
    assert idle.bound == "latency" and "behind the other" not in idle.claim
    far = _serving(obs(20000.0), busy=99)[0]  # far beyond 16 prompts' prefill
    assert far.bound == "latency"
