"""A non-default setting and the finding that says what it did are one cause, said once. The settings audit ranked
`NCCL_P2P_DISABLE=1 (slows itl, throughput)` under `NCCL peer-to-peer disabled by NCCL_P2P_DISABLE=1`, and
`--enforce-eager=true` under `CUDA graphs are off`: the same setting twice in five ranked causes."""

from __future__ import annotations

from orchestrator.analysis.synthesis import _fold_settings
from orchestrator.findings import Finding


def _setting(flag: str, value: str, effect: str = "slower") -> Finding:
    return Finding(id=f"setting-vllm-{flag.strip('-').replace('-', '_').lower()}", rule="settings_rule",
                   title=f"{flag}={value} (slows itl, throughput)", category="engine", evidence=["ev-4.2"],
                   claim=f"vLLM 0.11.2 (pid 7) was given {flag}={value} by flag {flag}; the default (vLLM 0.11.2) "
                         f"is false. This setting does something. Source: https://docs.vllm.ai.",
                   recommendations=[f"Drop {flag}"], symptoms=["itl", "throughput"], confidence=0.8,
                   matched=[f"{flag}={value}"], data={"setting": {"setting": flag, "value": value}})


def _catalog(fid: str, matched: list[str], claim: str = "Something happens.") -> Finding:
    return Finding(id=fid, rule="catalog", title=f"{fid} title", category="engine", evidence=["ev-4.1"], claim=claim,
                   recommendations=["The catalog's fix"], symptoms=["itl"], confidence=0.85, matched=matched)


def test_the_state_a_flag_sets_and_the_flag_are_one_cause():
    found = _fold_settings([_catalog("engine-cuda-graphs-off", ["engine.cuda_graphs=False"]),
                            _setting("--enforce-eager", "true")])
    (one,) = found
    assert one.id == "engine-cuda-graphs-off"
    assert "was given --enforce-eager=true" in one.claim and "Source:" not in one.claim  # its first sentence only
    assert one.evidence == ["ev-4.1", "ev-4.2"] and one.recommendations == ["The catalog's fix", "Drop --enforce-eager"]
    assert set(one.symptoms) == {"itl", "throughput"}


def test_an_environment_variable_and_the_entry_that_matched_it_are_one_cause():
    (one,) = _fold_settings([_setting("NCCL_P2P_DISABLE", "1"),
                             _catalog("nccl-p2p-disabled", ["env.NCCL_P2P_DISABLE=1", "host.gpu_count=8"])])
    assert one.id == "nccl-p2p-disabled" and "NCCL_P2P_DISABLE=1" in one.claim


def test_a_finding_that_quotes_the_flag_takes_it():
    claim = "vLLM runs 64 requests, its --max-num-seqs limit of 64 (flag --max-num-seqs 64), with 9 waiting."
    (one,) = _fold_settings([_catalog("max-num-seqs-caps-batch", ["engine.log.running_max=64"], claim),
                             _setting("--max-num-seqs", "64", effect="changes")])
    assert one.id == "max-num-seqs-caps-batch"


def test_a_setting_no_finding_is_about_stays_its_own_cause():
    found = _fold_settings([_catalog("engine-cuda-graphs-off", ["engine.cuda_graphs=False"]),
                            _setting("--max-num-seqs-per-step", "8"), _setting("CUDA_LAUNCH_BLOCKING", "1")])
    assert [f.id for f in found] == ["engine-cuda-graphs-off", "setting-vllm-max_num_seqs_per_step",
                                     "setting-vllm-cuda_launch_blocking"]


def test_a_request_cap_above_what_ran_is_not_a_cause():
    """`--max-num-seqs=512 (changes throughput, ttft)` was ranked while the engine's metrics showed 256 running with
    the KV cache full: the cap was never reached, so it cannot be what bounds the batch."""
    from orchestrator.analysis.synthesis import _caps_not_reached
    from orchestrator.diagnosis import Number

    cap = _setting("--max-num-seqs", "512").model_copy(update={"caps_batch": True})
    kv = _catalog("queue-kv-cache-bounds-batch", []).model_copy(update={"numbers": [
        Number(name="requests running", value=256, unit="requests", source="ev-4.1")]})
    ((f, note),) = _caps_not_reached([kv, cap], [kv, cap])
    assert f is cap and "at most 256 requests ran, below this cap of 512" in note
    reached = kv.model_copy(update={"numbers": [Number(name="requests running", value=512, unit="requests",
                                                       source="ev-4.1")]})
    assert _caps_not_reached([reached, cap], [reached, cap]) == []
