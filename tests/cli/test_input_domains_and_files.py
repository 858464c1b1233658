"""Issue 30 items 1, 3 and 4: input is bounded and checked before it is parsed, values stay in their domains, and
the messages name the real problem (a device file, a FIFO or a directory is not "not found")."""

from __future__ import annotations

import json
import os

import pytest

from support.cli import investigate, one_line


def _ask(tmp_path, *args):
    transcript = tmp_path / "t.jsonl"
    proc = investigate("why slow", "--offline", "--no-progress", "--transcript", transcript, *args, tmp_path=tmp_path)
    assert not transcript.exists()  # refused before the run started
    return proc


# --- observations -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("content,needles", [
    ("runs: [{tp: true, concurrency: 8}]\n", ["runs.0.tp: true is a boolean, not a number"]),
    ("runs: [{tp: 8, total_tok_s: true}]\n", ["runs.0.total_tok_s: true is a boolean, not a number"]),
    ("gpu: {power_w: 900, power_limit_w: 700}\n", ["power_w 900 is more than power_limit_w 700", "129%"]),
])
def test_values_out_of_their_domain_are_refused(tmp_path, content, needles):
    obs = tmp_path / "obs.yaml"
    obs.write_text(content)
    one_line(_ask(tmp_path, "--observations", obs), 2, *needles)


def test_power_a_little_over_the_limit_is_accepted(tmp_path):
    from orchestrator.observations import parse_observations

    gpu = parse_observations({"gpu": {"power_w": 640, "power_limit_w": 600}}).gpu
    assert gpu is not None and gpu.power_w == 640


def test_a_huge_observations_file_is_refused_by_its_size_before_it_is_parsed(tmp_path):
    obs = tmp_path / "obs.yaml"
    obs.write_text("notes: " + "x" * 100_000_000 + "\n")
    one_line(_ask(tmp_path, "--observations", obs), 2, "100.0 MB", "more than the 2.0 MB read")


@pytest.mark.parametrize("option", ["--observations", "--bench"])
def test_a_device_a_fifo_or_a_directory_is_named_as_such(tmp_path, option):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    one_line(_ask(tmp_path, option, "/dev/zero"), 2, "/dev/zero is a device file, not a file")
    one_line(_ask(tmp_path, option, fifo), 2, "is a FIFO (named pipe), not a file")
    one_line(_ask(tmp_path, option, tmp_path), 2, "is a directory, not a file")
    one_line(_ask(tmp_path, option, tmp_path / "absent.yaml"), 2, "absent.yaml not found")


# --- bench files ----------------------------------------------------------------------------------------------------

VLLM = {"backend": "vllm", "completed": 100, "duration": 20.0, "request_throughput": 5.0, "output_throughput": 900.0,
        "mean_ttft_ms": 120.0, "median_ttft_ms": 110.0, "p99_ttft_ms": 300.0, "mean_tpot_ms": 20.0}


def test_a_negative_latency_in_a_bench_file_is_refused(tmp_path):
    bench = tmp_path / "b.json"
    bench.write_text(json.dumps({**VLLM, "mean_ttft_ms": -50}))
    one_line(_ask(tmp_path, "--bench", bench), 2, "mean_ttft_ms = -50 is negative")


def test_a_negative_genai_perf_statistic_is_refused(tmp_path):
    bench = tmp_path / "profile_export_genai_perf.json"
    bench.write_text(json.dumps({"time_to_first_token": {"unit": "ms", "avg": 100, "p50": -3},
                                 "request_throughput": {"unit": "requests/sec", "avg": 2.0}}))
    one_line(_ask(tmp_path, "--bench", bench), 2, "time_to_first_token.p50 = -3 is negative")


def test_the_bench_format_hint_survives_the_redactor_and_an_empty_object_is_named(tmp_path):
    bench = tmp_path / "b.json"
    bench.write_text("{}")
    line = one_line(_ask(tmp_path, "--bench", bench), 2, "found an empty object", "time_to_first_token")
    assert "REDACTED" not in line and "(found )" not in line


def test_a_broken_line_of_a_json_lines_bench_file_is_named_by_its_number(tmp_path):
    bench = tmp_path / "runs.jsonl"
    bench.write_text(json.dumps(VLLM) + "\n" + json.dumps(VLLM) + "\n" + '{"completed": 3, "mean_ttft\n')
    one_line(_ask(tmp_path, "--bench", bench), 2, "runs.jsonl: line 3 is not valid JSON")


# --- the environment --------------------------------------------------------------------------------------------------

def test_an_unknown_investigate_variable_is_refused_as_an_unknown_config_key_is(tmp_path):
    proc = investigate("why slow", "--offline", tmp_path=tmp_path, env={"INVESTIGATE_MAX_TURN": "3"})
    one_line(proc, 2, "unknown setting INVESTIGATE_MAX_TURN in the environment", "did you mean INVESTIGATE_MAX_TURNS?")


def test_the_library_refuses_it_too(monkeypatch):
    from orchestrator.errors import InputError
    from orchestrator.settings import load_settings

    monkeypatch.setenv("INVESTIGATE_TOOL_TIMEOUT", "5")
    with pytest.raises(InputError, match="INVESTIGATE_TOOL_TIMEOUT in the environment"):
        load_settings()
    monkeypatch.delenv("INVESTIGATE_TOOL_TIMEOUT")
    monkeypatch.setenv("INVESTIGATE_TOOL_TIMEOUT_S", "5")
    assert load_settings().tool_timeout_s == 5


def test_the_test_suites_own_switches_are_not_refused_as_settings():
    """The suite's switches (`INVESTIGATE_RESIDUAL=1 bash .ci/run`, the case dump, the ranked record) reach every CLI
    the tests start: each must be a setting or named in NOT_SETTINGS, or every CLI test fails with them on."""
    import re
    from pathlib import Path

    from orchestrator.settings import NOT_SETTINGS, Settings

    root = Path(__file__).resolve().parents[2]
    infra = [root / ".ci" / "run", *root.glob("tests/**/conftest.py"), *root.glob("tests/support/*.py"),
             *root.glob("tests/scenarios/*.py")]
    named = {m for p in infra for m in re.findall(r"\bINVESTIGATE_[A-Z_]*[A-Z]\b", p.read_text())}
    settings = {f"INVESTIGATE_{n.upper()}" for n in Settings.model_fields}
    assert {"INVESTIGATE_RESIDUAL", "INVESTIGATE_RESIDUAL_STRICT", "INVESTIGATE_CASE_DUMP"} <= named
    assert sorted(named - settings - NOT_SETTINGS) == []
