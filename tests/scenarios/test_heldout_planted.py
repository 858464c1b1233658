"""Every held-out case fails once its planted evidence is taken away, while everything else of the case stays: the
account's saturated resource made ordinary (tests/scenarios/test_account_planted.py's `neutralized`, its /dev/shm a
64 GiB tmpfs too, plus the NIC back to a trickle, host memory free, the load average under the core count), a burst
benchmark given a request rate, a latency far above its floor brought near it and one near its floor pushed far
above, locked memory unlimited, a TTFT made a streamed one (a tenth of the request), runs compared given the same
output length, the engine's speculative drafts accepted and its prefix cache hitting (and a twin's accepted drafts
rejected). A case that still
passes then was met by something other than the evidence it plants."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, Callable

import pytest
from harness import ROOT
from planted import SSH, assert_fails_without, cases_of
from test_account_planted import neutralized

pytestmark = SSH

CASES = cases_of("heldout")


def _engine_texts(case: dict[str, Any], rewrite: Callable[[str], str]) -> dict[str, Any]:
    """Every log and /metrics text the case stages for its engines, rewritten inline by `rewrite`."""
    case = copy.deepcopy(case)
    here = ROOT / "heldout" / case["id"]

    def text(ref: str) -> str:
        f = here / ref
        return f.read_text() if "\n" not in ref and f.is_file() else ref

    logs = case["stage"].get("logs") or {}
    for host_path, ref in logs.items():
        logs[host_path] = rewrite(text(ref))
    for eng in case["stage"].get("engines") or []:
        if eng.get("metrics") is not None:
            eng["metrics"] = rewrite(text(eng["metrics"]))
    return case


def _sub_num(pattern: str, text: str, value: Callable[[re.Match[str]], str]) -> str:
    return re.sub(pattern, value, text)


def _ordinary_engine_text(text: str) -> str:
    """The engine's own counters made ordinary: speculative drafts mostly accepted (vLLM 2.2 accepted per draft of
    its spec-decode counters, 'Mean acceptance length: 3.40', 'Accepted' 55 % of 'Drafted', SGLang 'accept len:
    3.20'), a prefix cache that hits (vLLM hits 70 % of queries and 'Prefix cache hit rate: 70.0%', SGLang
    2,048 cached tokens per prefill) and a start whose logged phases take seconds."""
    drafts = re.search(r"^vllm:spec_decode_num_drafts_total\{[^}]*\} ([\d.e+]+)", text, re.M)
    if drafts:
        text = _sub_num(r"(?m)^(vllm:spec_decode_num_accepted_tokens_total\{[^}]*\}) [\d.e+]+",
                        text, lambda m: f"{m.group(1)} {2.2 * float(drafts.group(1))}")
    text = re.sub(r"Mean acceptance length: [\d.]+", "Mean acceptance length: 3.40", text)
    text = _sub_num(r"Accepted: \d+ tokens, Drafted: (\d+) tokens", text,
                    lambda m: f"Accepted: {int(0.55 * int(m.group(1)))} tokens, Drafted: {m.group(1)} tokens")
    text = re.sub(r"accept len: [\d.]+", "accept len: 3.20", text)
    queries = re.search(r"^vllm:prefix_cache_queries_total\{[^}]*\} ([\d.e+]+)", text, re.M)
    if queries:
        text = _sub_num(r"(?m)^(vllm:prefix_cache_hits_total\{[^}]*\}) [\d.e+]+",
                        text, lambda m: f"{m.group(1)} {0.7 * float(queries.group(1))}")
    text = re.sub(r"Prefix cache hit rate: [\d.]+%", "Prefix cache hit rate: 70.0%", text)
    text = re.sub(r"#cached-token: \d+", "#cached-token: 2048", text)
    # a start of ordinary phases: weights in seconds, torch.compile and CUDA graph capture in a few seconds each
    text = re.sub(r"Loading weights took [\d.]+ seconds", "Loading weights took 6.10 seconds", text)
    text = re.sub(r"Model loading took ([\d.]+) GiB( memory)? and [\d.]+ seconds",
                  r"Model loading took \1 GiB\2 and 9.84 seconds", text)
    text = re.sub(r"(Compiling a graph for .*?) takes [\d.]+ s", r"\1 takes 7.95 s", text)
    text = re.sub(r"torch\.compile takes [\d.]+ s in total", "torch.compile takes 11.04 s in total", text)
    text = re.sub(r"Graph capturing finished in \d+ secs", "Graph capturing finished in 9 secs", text)
    return re.sub(r"(init engine \(profile, create kv cache, warmup model\) took) [\d.]+ seconds",
                  r"\1 31.62 seconds", text)


def _spec_rejected(case: dict[str, Any]) -> dict[str, Any]:
    """A negative twin's accepted drafts taken away: 'Mean acceptance length: 1.05', 1 % of the drafted accepted."""
    def rewrite(text: str) -> str:
        text = re.sub(r"Mean acceptance length: [\d.]+", "Mean acceptance length: 1.05", text)
        return _sub_num(r"Accepted: \d+ tokens, Drafted: (\d+) tokens", text,
                        lambda m: f"Accepted: {int(0.01 * int(m.group(1)))} tokens, Drafted: {m.group(1)} tokens")
    return _engine_texts(case, rewrite)


def _prefix_missed(case: dict[str, Any]) -> dict[str, Any]:
    """A negative twin's prefix hits taken away: vllm:prefix_cache_hits_total 0."""
    return _engine_texts(case, lambda text: re.sub(r"(?m)^(vllm:prefix_cache_hits_total\{[^}]*\}) [\d.e+]+",
                                                   r"\1 0.0", text))


def quiet_host(case: dict[str, Any]) -> dict[str, Any]:
    """The account made ordinary: threads, cgroup, swap, pressure, CPU, storage reads (test_account_planted), and
    the reads through the page cache, the NICs, host memory and load average as well; and the engine's own counters
    (speculative acceptance, prefix cache hits) made ordinary."""
    case = neutralized(_engine_texts(case, _ordinary_engine_text))
    acct = case["stage"].get("account") or {}
    for p in acct.get("processes") or []:
        p["rchar_mbit"] = 0  # read() through the page cache too: nothing is loading its files
    for nic in (acct.get("nics") or {}).values():
        nic.update(rx_mbit=5, tx_mbit=5)
    mem = acct.get("mem")
    if mem:
        mem["available_gib"] = mem["total_gib"] / 2
    if acct.get("loadavg"):
        acct["loadavg"] = [1.0, 1.0, 1.0]
    for p in acct.get("processes") or []:  # every CPU of the host allowed (no taskset, no one-CPU cpuset)
        p.pop("cpus_allowed", None)
        p["memlock_kib"] = "unlimited"  # locked memory unlimited, as RDMA wants it
    if acct.get("cgroup"):
        acct["cgroup"].pop("cpuset", None)
    return case


def _confined(case: dict[str, Any]) -> dict[str, Any]:
    """A negative twin's headroom taken away: its serving processes confined to one CPU and its GPUs waiting."""
    case = copy.deepcopy(case)
    acct = case["stage"]["account"]
    for p in acct["processes"]:
        p["cpus_allowed"] = "0"
    for g in acct["gpus"]:
        g["busy"] = [30]
    return case


def _clocked_down(case: dict[str, Any]) -> dict[str, Any]:
    """A negative twin's full clock taken away: the busy threads' CPUs at a third of their maximum."""
    case = copy.deepcopy(case)
    freq = case["stage"]["account"]["cpufreq"]
    freq["cur_mhz"] = freq["max_mhz"] // 3
    return case


def _exchanging(case: dict[str, Any]) -> dict[str, Any]:
    """A negative twin's quiet link taken away: every NIC at line rate both ways and the GPUs waiting."""
    case = copy.deepcopy(case)
    acct = case["stage"]["account"]
    for nic in acct["nics"].values():
        nic.update(rx_mbit=nic["speed"] * 0.95, tx_mbit=nic["speed"] * 0.95)
    for g in acct["gpus"]:
        g["busy"] = [30]
    return case


def _run_rate(ratio: float) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Each run's output rate scaled by `ratio` (per-token time divided by it)."""
    def f(case: dict[str, Any]) -> dict[str, Any]:
        case = copy.deepcopy(case)
        for r in case["observations"]["runs"]:
            r["output_tok_s"] = r["output_tok_s"] * ratio
        return case
    return f


def _ttft(ms: float, rate: float | None = None) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def f(case: dict[str, Any]) -> dict[str, Any]:
        case = copy.deepcopy(case)
        for b in case["observations"]["bench"]:
            b["ttft"] = {"mean": ms, "p50": ms, "p99": ms * 1.1}
            if rate is not None:
                b["request_rate"] = rate
        return case
    return f


def _log_running(n: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The engine's stats lines (vLLM "Running: N reqs", SGLang "#running-req: N") rewritten to n requests running,
    inline: the client's concurrency is no longer what the log shows."""
    def f(case: dict[str, Any]) -> dict[str, Any]:
        case = copy.deepcopy(case)
        logs = case["stage"]["logs"]
        for host_path, name in logs.items():
            text = (ROOT / "heldout" / case["id"] / name).read_text()
            text = re.sub(r"Running: \d+ reqs", f"Running: {n} reqs", text)
            logs[host_path] = re.sub(r"#running-req: \d+", f"#running-req: {n}", text)
        return case
    return f


def _streamed(case: dict[str, Any]) -> dict[str, Any]:
    """Each run's TTFT made what a streamed response shows: a tenth of its end-to-end latency, and the rest of its
    tokens spread over the remaining time (ITL = the remainder / (output tokens - 1))."""
    case = copy.deepcopy(case)
    for b in case["observations"]["bench"]:
        e2e = b["e2el"]
        b["ttft"] = {k: v / 10 for k, v in e2e.items()}
        b["itl"] = {k: v * 0.9 / (b["output_len"] - 1) for k, v in e2e.items()}
    return case


def _shm_shrunk(case: dict[str, Any]) -> dict[str, Any]:
    """A negative twin's host shared memory taken away: Docker's default 64 MB /dev/shm, the engine stopped."""
    case = copy.deepcopy(case)
    acct = case["stage"]["account"]
    for p in acct["processes"]:
        p["mounts"] = [[m[0], "tmpfs", "shm", "rw,nosuid,nodev,noexec,relatime,size=65536k"] if m[0] == "/dev/shm"
                       else m for m in p.get("mounts") or []]
    for g in acct["gpus"]:
        g["busy"] = [0]
    return case


def _unstreamed(case: dict[str, Any]) -> dict[str, Any]:
    """A negative twin's streaming taken away: each run's TTFT the whole request and no inter-token latency."""
    case = copy.deepcopy(case)
    for b in case["observations"]["bench"]:
        b["ttft"] = dict(b["e2el"])
        b.pop("itl", None)
    return case


def _memlock_small(case: dict[str, Any]) -> dict[str, Any]:
    """A negative twin's unlimited locked memory taken away: Docker's 8 MiB default, the engine stopped."""
    case = copy.deepcopy(case)
    acct = case["stage"]["account"]
    for p in acct["processes"]:
        p["memlock_kib"] = 8192
    for g in acct["gpus"]:
        g["busy"] = [0]
    return case


def _same_lengths(case: dict[str, Any]) -> dict[str, Any]:
    """Every run generating what the first did per request (the same workload), its other figures kept."""
    case = copy.deepcopy(case)
    runs = case["observations"]["bench"]
    for b in runs[1:]:
        b["output_len"] = runs[0]["output_len"]
    return case


PLANTED: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "client-ttft-is-e2e-no-streaming-litellm-vllm": _streamed,     # TTFT 2703 of 2703 ms -> 270 ms, ITL ~12 ms
    "gateway-buffers-stream-ttft-is-e2e-genai-perf": _streamed,    # TTFT 806 of 818 ms -> 82 ms, ITL ~12 ms
    "loadtest-ignore-eos-changes-output-len-l40s": _same_lengths,  # 914 and 338 tokens per request -> 338 both
    "bench-vllm-vs-tgi-unequal-output-len-a100": _same_lengths,    # 247 and 118 -> 118 both
    "direct-to-pod-streamed-ttft-genai-perf-twin": _unstreamed,    # TTFT 41 of 781 ms -> 781 of 781, no ITL
    "client-in-europe-server-in-us-ttft-path-h100": _ttft(60.0),   # 413 ms at the client -> 60, the engine's 47
    "docker-ipc-host-shm-vllm-tp4-twin": _shm_shrunk,              # the host's /dev/shm -> 64 MB, GPUs stopped
    "docker-memlock-unlimited-nccl-ib-twin": _memlock_small,       # memlock unlimited -> 8 MiB, GPUs stopped
    "client-one-request-in-flight-vllm-log": _log_running(48),  # 48 running, none waiting: not the client's 1
    "sglang-one-running-req-openai-client": _log_running(48),
    "dense-decode-batch1-far-above-floor-h100": _run_rate(11.0),   # 200 ms per token -> 18 ms, at the floor
    "dense-decode-near-floor-h100-twin": _run_rate(1 / 10),        # 5.7 ms per token -> 57 ms, far above
    "long-prompt-prefill-at-compute-floor-l40s": _ttft(60_000.0),  # 7.9 s -> 60 s for one 16K prompt
    "request-rate-inf-ttft-is-queueing": _ttft(21296.25, rate=8.0),  # the same TTFT, but not a burst
    "ttft-grows-with-concurrent-prefills-h100": _ttft(20_000.0),  # 1.4 s -> 20 s: far beyond 16 prompts' prefill
    "host-cpuset-eight-cores-busy-gpu-twin": _confined,            # 8 CPUs with headroom -> 1 CPU, GPU waiting
    "net-two-nodes-rdma-ethernet-quiet-twin": _exchanging,         # eth0 quiet -> at line rate both ways
    "vllm-spec-decode-eagle3-accepted-h100-twin": _spec_rejected,  # ~3.2 tokens per target step -> 1.05
    "vllm-prefix-cache-hits-h100-twin": _prefix_missed,            # 63 % of prompt tokens hit -> none
    "host-cpu-full-clock-koboldcpp-twin": _clocked_down,           # 3500 of 3600 MHz -> 1200
}


def without_planted(case: dict[str, Any]) -> dict[str, Any]:
    return PLANTED.get(case["id"], quiet_host)(case)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.parent.name)
async def test_heldout_case_fails_without_its_planted_evidence(path: Path, tmp_path):
    await assert_fails_without(path, tmp_path, without_planted)
