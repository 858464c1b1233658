"""Issue 42 item 4 and issue 43's library keywords: one `RunRequest` that the CLI, `investigate` and
`investigate_sync` share, validated once; the library takes every input the CLI does (`bench`, `baseline`,
`baseline_log`, `sample_s`, `measure_wait`)."""

from __future__ import annotations

import inspect

import pytest

from orchestrator import api, cli
from orchestrator.errors import InputError
from orchestrator.settings import Settings
from support.cli import ROOT

BENCH = ROOT / "tests/engine/data/bench/vllm-infqps-concurrency64-Llama-3.1-8B-Instruct-20251130-101500.json"
BEFORE, AFTER = ROOT / "tests/settings/data/before.json", ROOT / "tests/settings/data/after.json"
LOG_BEFORE, LOG_AFTER = ROOT / "tests/settings/data/vllm-before.log", ROOT / "tests/settings/data/vllm-after.log"
RUNTIME = {"backend", "settings", "registry", "progress"}
"""What a run is given besides its request: the objects it runs with, not inputs to check."""


def test_investigate_takes_exactly_the_request_fields_and_the_sync_twin_the_same():
    from orchestrator.request import RunRequest

    params = inspect.signature(api.investigate).parameters
    assert set(params) - RUNTIME == set(RunRequest.model_fields)
    assert inspect.signature(api.investigate_sync).parameters == params


def test_the_cli_builds_one_request_and_hands_it_over():
    src = inspect.getsource(cli.ask)
    assert "_request(" in src and "run_request" in src
    assert "investigate(" not in src  # no pass-through of every option to a second signature


def test_the_library_takes_the_bench_and_the_run_before():
    from orchestrator.request import RunRequest

    req = RunRequest.of("why did TPOT get worse?", bench=AFTER, baseline=BEFORE, logs=[str(LOG_AFTER)],
                        baseline_log=LOG_BEFORE, measure=True, sample_s=1.5, measure_wait=30)
    labels = [b.label for b in req.observations.bench]
    assert labels[0] == "baseline" and len(labels) >= 2
    assert req.observations.baseline_log is not None
    s = req.settings_over(Settings())
    assert (s.account_sample_s, s.measure_wait_s) == (1.5, 30.0)
    with pytest.raises(InputError, match="--baseline is the benchmark run before"):
        RunRequest.of("q", baseline=BEFORE)


def test_a_misspelt_keyword_is_named_with_the_right_one():
    from orchestrator.request import RunRequest

    with pytest.raises(InputError, match="unknown keyword 'bench_file'; did you mean 'bench'"):
        RunRequest.of("q", bench_file=BENCH)
    with pytest.raises(TypeError, match="bench_file"):  # the typed keywords: Python's own error
        api.investigate_sync("q", bench_file=BENCH)  # type: ignore[call-arg]


def test_a_bench_given_to_the_library_is_in_the_answer(tmp_path):
    result = api.investigate_sync("why is my TTFT high?", bench=[BENCH], offline=True, transcript=False,
                                  observations={"gpu": {"name": "NVIDIA H100 80GB HBM3"}},
                                  settings=Settings(account_sample_s=0.3, power_sample_s=0.3))
    assert result.status == "ok", result.error
    text = result.diagnosis.model_dump_json()
    assert "388.1" in text  # the bench's median TTFT


def test_a_request_is_checked_once(monkeypatch):
    from orchestrator.request import RunRequest

    checks = []
    original = RunRequest._check_files
    monkeypatch.setattr(RunRequest, "_check_files", lambda self: (checks.append(1), original(self))[1])
    req = RunRequest.of("why is FP4 slow?", offline=True, transcript=False)
    result = api.investigate_sync(req, settings=Settings(account_sample_s=0.3, power_sample_s=0.3))
    assert result.status == "ok" and result.diagnosis.question == "why is FP4 slow?"
    assert checks == [1]


def test_a_transcript_path_that_holds_another_file_is_refused(tmp_path):
    """`--transcript obs.yaml` replaced the user's observations with the run's transcript, silently."""
    import os

    from orchestrator.request import RunRequest

    obs = tmp_path / "obs.yaml"
    obs.write_text("gpu: {name: NVIDIA H100 80GB HBM3}\n")
    with pytest.raises(InputError, match="obs.yaml: it holds another file, not a transcript"):
        RunRequest.of("why is FP4 slow?", offline=True, transcript=obs)
    assert obs.read_text() == "gpu: {name: NVIDIA H100 80GB HBM3}\n"
    earlier = tmp_path / "run.jsonl"  # a script's fixed name: the run before's transcript is replaced, as before
    earlier.write_text('{"type":"header","schema_version":2}\n')
    assert RunRequest.of("why is FP4 slow?", offline=True, transcript=earlier).transcript == earlier
    os.mkfifo(tmp_path / "cfg")
    for path, says in ((tmp_path, "is a directory, not a file"), (tmp_path / "cfg", "FIFO")):
        with pytest.raises(InputError, match=f"ssh config .*{says}"):
            RunRequest.of("why is FP4 slow?", host="gpu-box", ssh_config=path, offline=True)
