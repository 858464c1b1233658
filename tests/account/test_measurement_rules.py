"""What the measurement itself says, pure (prongs/resource_account/load_rules.py), and the /dev/shm the serving processes see
(prongs/resource_account/rules.py, probes/scripts/account.py): a TTFT within a tenth of the whole request for many output
tokens was not streamed; runs of different output lengths are not comparable; a multi-GPU server's /dev/shm of tens
of MB is too small, the host's (--ipc=host) is not."""

from __future__ import annotations

import sys

from support.evidence import obs_ev
from test_account_analysis import view

from orchestrator.prongs.resource_account.rules import account_findings
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.prongs.resource_account.load_rules import ttft_is_whole_request, unequal_outputs
from orchestrator.prongs.serving_engine.rules import _latency_inputs
from orchestrator.observations import Observations
from orchestrator.prongs.resource_account.models import GpuBusy, HostAccount, ProcessAccount, ResourceAccount, ShmMount


def _view(*bench: dict, question: str = "why did the second run drop from 1.92 to 0.79 req/s?") -> EvidenceView:
    obs = {"bench": [{"format": "client", "source": "s", **b} for b in bench]}
    return EvidenceView([obs_ev("e3", obs)], Observations.model_validate(obs), question=question)


def test_a_ttft_equal_to_the_request_for_many_tokens_was_not_streamed_and_is_no_prefill_time():
    whole = {"output_len": 212, "input_len": 640, "ttft": {"p50": 2703}, "e2el": {"p50": 2703}}
    f = ttft_is_whole_request(_view(whole))
    assert f is not None and "100% of it" in f.claim and "211 tokens" in f.claim and f.data["not_the_server"]
    assert all(i["ttft_ms"] is None for i in _latency_inputs(_view(whole), None))  # not judged as prefill
    # tokens arriving in one burst at the end (a buffering proxy): an ITL that puts them in a few ms
    burst = {"output_len": 60, "ttft": {"p50": 806.5}, "itl": {"p50": 0.19}, "e2el": {"p50": 818.0}}
    assert ttft_is_whole_request(_view(burst)) is not None
    # streamed: TTFT a tenth of the request and the ITL accounting for the rest
    streamed = {"output_len": 212, "ttft": {"p50": 270}, "itl": {"p50": 11.5}, "e2el": {"p50": 2703}}
    assert ttft_is_whole_request(_view(streamed)) is None
    # a long wait for the first token (a queue), then the other tokens one decode step each: streamed, however large
    # the TTFT's share of the request
    queued = {"output_len": 600, "ttft": {"p50": 75800}, "itl": {"p50": 11.0}, "e2el": {"p50": 82500}}
    assert ttft_is_whole_request(_view(queued)) is None
    # a short answer's TTFT is most of it whatever the client does
    assert ttft_is_whole_request(_view({"output_len": 4, "ttft": {"p50": 95}, "e2el": {"p50": 100}})) is None
    # a TTFT close to the request whose ITL accounts for the tokens after it: not a burst
    assert ttft_is_whole_request(_view({"output_len": 100, "ttft": {"p50": 950}, "itl": {"p50": 2.0},
                                        "e2el": {"p50": 1000}})) is None


def test_runs_of_different_output_lengths_are_named_with_their_lengths_and_equal_ones_are_not():
    a = {"label": "first", "output_len": 337.6, "input_len": 512, "request_throughput": 1.92, "e2el": {"p50": 11020}}
    b = {"label": "second", "output_len": 914.2, "input_len": 512, "request_throughput": 0.79, "e2el": {"p50": 35890}}
    f = unequal_outputs(_view(a, b))
    assert f is not None and "914 against 338" in f.title and "2.7x" in f.claim and "same prompts" in f.claim
    assert unequal_outputs(_view(a, {**b, "output_len": 360})) is None
    assert unequal_outputs(_view(a)) is None
    # runs of several lengths asked about together, not set against each other: a sweep, measured on purpose
    assert unequal_outputs(_view(a, b, question="what throughput does this H100 give at these output lengths?")) is None
    assert unequal_outputs(_view(a, b, question="why is TGI at 9.6 req/s and vLLM only 6.1 on this A100?")) is not None


def _shm_acct(shm: ShmMount | None, gpus: list[int], busy: float = 0) -> ResourceAccount:
    proc = ProcessAccount(pid=41, comm="python3", argv0="python3", gpus=gpus, shm=shm)
    return ResourceAccount(host="box", window_s=3.0, processes=[proc],
                           gpus=[GpuBusy(index=i, samples=15, busy_pct=busy) for i in gpus],
                           host_account=HostAccount(cpus_online=32, cpu_busy_pct=2, mem_total_kb=512 * 2**20))


def test_a_small_dev_shm_is_named_for_a_multi_gpu_server_only():
    docker = ShmMount(fstype="tmpfs", source="shm", options="rw,nosuid,nodev,noexec,relatime,size=65536k",
                      size_bytes=64 * 2**20)
    found = {f.id: f for f in account_findings(view(_shm_acct(docker, [0, 1])))}
    f = found["account-shm-small"]
    assert "64 MiB" in f.title and "2 GPUs" in f.title and "errors" in f.symptoms
    assert "--ipc=host" in f.recommendations[0] and found["account-gpu-idle"].informational
    assert "account-shm-small" not in {f.id for f in account_findings(view(_shm_acct(docker, [0])))}  # one GPU
    host = ShmMount(fstype="tmpfs", source="tmpfs", options="rw,nosuid,nodev,inode64")  # --ipc=host: half of RAM
    assert "account-shm-small" not in {f.id for f in account_findings(view(_shm_acct(host, [0, 1])))}
    pct = ShmMount(fstype="tmpfs", source="shm", options="rw,size=10%", size_pct_of_ram=10.0)  # 51 GiB of 512
    assert "account-shm-small" not in {f.id for f in account_findings(view(_shm_acct(pct, [0, 1])))}


def _script():
    from orchestrator.probes import scripts

    src = scripts.load("account").rsplit("\nmain()", 1)[0]  # the functions as sent (with the prelude), not run
    mod = type(sys)("account_script")
    exec(compile(src, "account.py", "exec"), mod.__dict__)
    return mod


def test_the_probe_reads_dev_shm_and_its_size_from_the_process_mountinfo(tmp_path):
    s = _script()
    (tmp_path / "41").mkdir()
    (tmp_path / "41" / "mountinfo").write_text(
        "27 1 253:1 / / rw,relatime - ext4 /dev/nvme0n1p1 rw\n"
        "812 800 0:52 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=65536k\n")
    got = s.shm_of(str(tmp_path), 41)
    assert got == {"fstype": "tmpfs", "source": "shm", "options": "rw,size=65536k", "size_bytes": 64 * 2**20}
    (tmp_path / "41" / "mountinfo").write_text("90 27 0:25 / /dev/shm rw,nosuid,nodev - tmpfs tmpfs rw,inode64\n")
    assert "size_bytes" not in s.shm_of(str(tmp_path), 41)
    (tmp_path / "41" / "mountinfo").write_text("27 1 253:1 / / rw,relatime - ext4 /dev/nvme0n1p1 rw\n")
    assert s.shm_of(str(tmp_path), 41) is None
    assert s.shm_of(str(tmp_path), 42) is None


def test_a_client_ttft_far_above_the_engines_own_is_spent_on_the_path():
    from support.evidence import ev

    from orchestrator.prongs.resource_account.load_rules import ttft_outside_engine
    from orchestrator.prongs.serving_engine.metrics import MetricSummary
    from orchestrator.prongs.serving_engine.models import EngineInstance, EngineMetricsScrape, EngineReport

    def engine(p50_s: float) -> EngineReport:
        m = {"vllm:time_to_first_token_seconds": MetricSummary(name="vllm:time_to_first_token_seconds",
                                                                type="histogram", count=1840, p50=p50_s)}
        return EngineReport(host="box", engines=[EngineInstance(name="vllm", pid=7, metrics=EngineMetricsScrape(
            url="http://127.0.0.1:8000/metrics", metrics=m))])

    def judged(client_ms: float, engine_s: float):
        obs = {"bench": [{"format": "vllm-bench-serve", "source": "r.json", "output_len": 256,
                          "ttft": {"p50": client_ms}, "itl": {"p50": 9.8}, "e2el": {"p50": 3012}}]}
        return ttft_outside_engine(EvidenceView([obs_ev("e3", obs), ev("e4", engine(engine_s))],
                                                Observations.model_validate(obs)))

    f = judged(412.9, 0.047)
    assert f is not None and "366 ms" in f.short and "89%" in f.title and f.evidence == ["e3", "e4"]
    assert judged(60.0, 0.047) is None      # 13 ms apart: the LAN's noise
    from orchestrator.prongs.resource_account.load_rules import engine_ttft_instead
    from orchestrator.observations import BenchResult

    path = {"format": "vllm-bench-serve", "source": "r.json", "output_len": 256, "ttft": {"p50": 412.9},
            "e2el": {"p50": 3012}}
    obs = {"bench": [path]}
    v = EvidenceView([obs_ev("e3", obs), ev("e4", engine(0.047))], Observations.model_validate(obs))
    assert engine_ttft_instead(v, BenchResult.model_validate(path)) == (47.0, "vllm:time_to_first_token_seconds")
    inputs = _latency_inputs(v, None)
    assert inputs[0]["ttft_ms"] == 47.0 and "engine's median TTFT" in inputs[0]["ttft_label"]
    assert judged(900.0, 0.700) is None     # the engine's own TTFT is most of it


def test_a_small_locked_memory_limit_is_named_only_for_a_process_using_rdma(tmp_path):
    s = _script()
    d = tmp_path / "41"
    (d / "fd").mkdir(parents=True)
    (d / "limits").write_text("Limit                     Soft Limit           Hard Limit           Units     \n"
                              "Max locked memory         8388608              8388608              bytes     \n")
    (d / "fd" / "20").symlink_to("/dev/infiniband/uverbs0")
    (d / "fd" / "21").symlink_to("/mnt/models/model-00001-of-00004.safetensors")
    assert s.memlock_of(str(tmp_path), 41) == 8388608 and s.rdma_fds(str(tmp_path), 41) == 1
    (d / "limits").write_text("Max locked memory         unlimited            unlimited            bytes     \n")
    assert s.memlock_of(str(tmp_path), 41) == "unlimited"

    def found(**kw):
        proc = ProcessAccount(pid=41, comm="vllm", argv0="vllm", gpus=[0], **kw)
        acct = ResourceAccount(host="box", window_s=3.0, processes=[proc], gpus=[GpuBusy(index=0, samples=15, busy_pct=0)],
                               host_account=HostAccount(cpus_online=32, cpu_busy_pct=2))
        return {f.id: f for f in account_findings(view(acct))}

    f = found(memlock_bytes=8 << 20, rdma_fds=4)["account-memlock-small"]
    assert "8 MiB" in f.title and "memlock=-1" in f.recommendations[0]
    assert "account-memlock-small" not in found(memlock_bytes=8 << 20)  # no RDMA device open
    assert "account-memlock-small" not in found(memlock_unlimited=True, rdma_fds=4)
