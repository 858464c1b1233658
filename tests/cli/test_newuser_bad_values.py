"""Issue 14 item 1 and issue 15 items 7/8: out-of-range numbers in observations, settings and the TOML config are one
clear line and exit 2, before anything runs (no transcript is started)."""

from __future__ import annotations

import json

import pytest

from support.cli import investigate, one_line

BAD_OBSERVATIONS = [
    # (file content, the field and value the line names, the domain it states)
    ("runs: [{tp: -8, concurrency: -512, total_tok_s: -2800}]\n", "runs.0.tp = -8", "must be at least 1"),
    ("runs: [{tp: 8, concurrency: -512}]\n", "runs.0.concurrency = -512", "must be at least 1"),
    ("runs: [{tp: 8, total_tok_s: -2800}]\n", "runs.0.total_tok_s = -2800", "must be more than 0"),
    ("gpu: {power_w: -330}\n", "gpu.power_w = -330", "must be at least 0"),
    ("gpu: {sm_occupancy: 1.7}\n", "gpu.sm_occupancy = 1.7", "must be at most 1"),
    ("gpu: {utilization_pct: 170}\n", "gpu.utilization_pct = 170", "must be at most 100"),
    ("gpu: {power_limit_w: 1e308}\n", "gpu.power_limit_w = 1e308", "must be at most 5,000"),
    ("runs: [{tp: 8, total_tok_s: .nan}]\n", "runs.0.total_tok_s = NaN", "must be a finite number"),
    ("runs: [{tp: 8, output_tok_s: .inf}]\n", "runs.0.output_tok_s = inf", "must be a finite number"),
    ("gpu: {power_w: -.inf}\n", "gpu.power_w = -inf", "must be a finite number"),
    ("runs: [{tp: 100000000000000000000000000000}]\n", "runs.0.tp = 100000000000000000000000000000",
     "must be at most 1,000,000"),
    ("model: {num_experts: 8, top_k: 16}\n", "model: top_k 16 is more than num_experts 8", ""),
    ("model: {hidden_size: 0}\n", "model.hidden_size = 0", "must be at least 1"),
]


@pytest.mark.parametrize("content,names,domain", BAD_OBSERVATIONS, ids=[b[1] for b in BAD_OBSERVATIONS])
def test_out_of_range_observation_is_one_line_exit_2_before_the_run(tmp_path, content, names, domain):
    obs = tmp_path / "obs.yaml"
    obs.write_text(content)
    transcript = tmp_path / "t.jsonl"
    proc = investigate("why slow", "--offline", "--observations", obs, "--transcript", transcript, "--no-progress",
                       tmp_path=tmp_path)
    line = one_line(proc, 2, str(obs), names, domain)
    assert "Power at" not in line and "%" not in line
    assert not transcript.exists()  # checked before the run: nothing started


def test_nan_throughput_in_json_observations(tmp_path):
    obs = tmp_path / "obs.json"
    obs.write_text('{"runs": [{"tp": 8, "total_tok_s": NaN}]}')
    one_line(investigate("why slow", "--offline", "--observations", obs, tmp_path=tmp_path), 2,
             "runs.0.total_tok_s = NaN", "must be a finite number")


def test_huge_unknown_key_is_cut_in_the_message(tmp_path):
    obs = tmp_path / "obs.json"
    obs.write_text(json.dumps({"runs": [{"tp": 1, "k" * 100_000: 1}]}))
    line = one_line(investigate("why slow", "--offline", "--observations", obs, tmp_path=tmp_path), 2,
                    "unknown key runs.0.kkkk", "(100,000 characters)")
    assert len(line) < 400


def test_five_thousand_runs_are_refused_with_the_cap(tmp_path):
    obs = tmp_path / "obs.json"
    obs.write_text(json.dumps({"runs": [{"tp": 1}] * 5_000}))
    one_line(investigate("why slow", "--offline", "--observations", obs, tmp_path=tmp_path), 2,
             "5,000 runs", "at most 1,000")


def test_probe_checks_observations_too(tmp_path):
    obs = tmp_path / "obs.yaml"
    obs.write_text("gpu: {sm_occupancy: 1.7}\n")
    one_line(investigate("probe", "--observations", obs, tmp_path=tmp_path), 2, "gpu.sm_occupancy = 1.7")


@pytest.mark.parametrize("value,why", [("nan", "must be a finite number"), ("inf", "must be a finite number"),
                                       ("-5", "must not be negative"), ("0", "must be more than 0"),
                                       ("1e308", "must be at most 604,800 seconds")])
def test_bad_timeout_in_environment_is_one_line(tmp_path, value, why):
    transcript = tmp_path / "t.jsonl"
    proc = investigate("why slow", "--offline", "--transcript", transcript, tmp_path=tmp_path,
                       env={"INVESTIGATE_TOOL_TIMEOUT_S": value})
    one_line(proc, 2, "invalid setting tool_timeout_s", why, "INVESTIGATE_TOOL_TIMEOUT_S")
    assert not transcript.exists()


@pytest.mark.parametrize("toml,names,why", [
    ("command_timeout_s = nan\n", "command_timeout_s = nan", "must be a finite number"),
    ("agent_timeout_s = -inf\n", "agent_timeout_s = -inf", "must be a finite number"),
    ("max_turns = -3\n", "max_turns = -3", "must not be negative"),
    ("file_max_bytes = 1e308\n", "file_max_bytes = 1e+308", "must be a whole number"),
    ("ssh_max_channels = 2.5\n", "ssh_max_channels = 2.5", "must be a whole number"),
    ("run_budget_usd = 100000000000000000000\n", "run_budget_usd", "must be at most"),
    ("[prices.claude-x]\ninput = -3.0\n", "prices", "must not be negative"),
])
def test_bad_values_in_the_config_file_are_one_line(tmp_path, toml, names, why):
    cfg = tmp_path / "config" / "investigate" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(toml)
    one_line(investigate("why slow", "--offline", tmp_path=tmp_path), 2, names, why, str(cfg))


def test_huge_unknown_setting_is_cut_in_the_message(tmp_path):
    cfg = tmp_path / "config" / "investigate" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("z" * 100_000 + " = 1\n")
    line = one_line(investigate("why slow", "--offline", tmp_path=tmp_path), 2, "unknown setting zzzz",
                    "(100,000 characters)")
    assert len(line) < 400
