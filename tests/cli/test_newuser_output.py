"""Issue 14 items 5, 6 and 8: output people read (no Python reprs, no zero-usage tables offline, the notice once,
plurals), guidance that matches the CLI, `show` and `replay` with the recorded timings."""

from __future__ import annotations

import json
import re
import sys

import pytest

from support.cli import ROOT, investigate, one_line


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory):
    """One offline investigation of this machine, as a new user runs it: no key, a --log that is not there."""
    tmp = tmp_path_factory.mktemp("run")
    transcript, report, md = tmp / "t.jsonl", tmp / "r.html", tmp / "r.md"
    proc = investigate("why is FP4 slow", "--no-progress", "--transcript", transcript, "--report", report,
                       "--log", tmp / "missing.log", tmp_path=tmp)
    assert proc.returncode == 0, proc.stderr
    rep = investigate("report", transcript, "-o", md, tmp_path=tmp)
    assert rep.returncode == 0, rep.stderr
    as_json = investigate("replay", transcript, "--json", tmp_path=tmp)
    assert as_json.returncode == 0, as_json.stderr
    return {"proc": proc, "transcript": transcript, "html": report.read_text(), "md": md.read_text(),
            "json": json.loads(as_json.stdout), "tmp": tmp}


def test_no_key_notice_once_and_no_usage_rows_offline(offline_run):
    proc = offline_run["proc"]
    assert proc.stderr.count("no API key configured") == 1, proc.stderr
    for text in (proc.stdout, offline_run["md"], offline_run["html"]):
        assert "$0.0000" not in text and "0 in / 0 out" not in text
        assert "Usage" not in text


def test_gaps_and_evidence_are_readable_text(offline_run):
    d = offline_run["json"]
    words = json.dumps(d["gaps"]) + json.dumps(d["evidence"])
    for text in (offline_run["proc"].stdout, offline_run["md"], offline_run["html"], words):
        assert "[Errno" not in text
        assert not re.search(r"\b\w+Error: ", text), re.search(r".{40}\b\w+Error: .{40}", text)
        assert "gpu=<name>" not in text  # a tool argument, not something a CLI user can pass
        assert "\x1b[" not in text


def test_recommendation_names_its_cause_once(offline_run):
    for r in offline_run["json"]["recommendations"]:
        shown = f"{r['why']} (addresses: {r['addresses']})" if r["addresses"] else r["why"]
        if r["addresses"] and r["addresses"].lower() in r["why"].lower():
            assert shown not in offline_run["md"]  # the tail is left off when the why already names the cause
    assert not re.search(r"\(addresses: ([^)]+)\)", offline_run["md"]) or all(
        m.group(1).lower() not in line.lower().split("(addresses:")[0]
        for line in offline_run["md"].splitlines() for m in re.finditer(r"\(addresses: ([^)]+)\)", line))


def test_missing_log_is_a_gap_in_every_rendering(offline_run):
    log = str(offline_run["tmp"] / "missing.log")
    assert {"what": f"--log {log}", "why": "not found on local; nothing in it was read"} in offline_run["json"]["gaps"]
    assert log in offline_run["md"] and log in offline_run["html"]


def test_show_lists_each_agents_tools_with_their_recorded_durations(offline_run):
    transcript = offline_run["transcript"]
    proc = investigate("show", transcript, tmp_path=offline_run["tmp"])
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())  # rich folds long lines
    assert "tools (in call order, with their durations)" in out
    results = [json.loads(line) for line in transcript.read_text().splitlines()]
    results = [e for e in results if e.get("type") == "tool_result"]
    assert results
    from orchestrator.render.timeline import _fmt_s

    for e in results:
        assert f"{e['tool']} {_fmt_s(e['duration_s'])}" in out, (e["tool"], e["duration_s"])
    assert "$0.0000" not in proc.stdout and "tokens" not in proc.stdout  # offline: no usage columns
    # into a pipe: no line padded with spaces (every line of every show had some), and each agent's calls on one line
    assert [ln for ln in proc.stdout.splitlines() if ln != ln.rstrip()] == []
    lines = proc.stdout.splitlines()
    tools = lines[lines.index("tools (in call order, with their durations)") + 1:]
    agents = {e["agent_id"] for e in results}
    assert all(any(ln.strip().startswith(f"{a}: ") and ln.rstrip().endswith("s") for ln in tools) for a in agents)


def test_exact_replay_reports_the_recorded_agent_durations(offline_run):
    recorded = {}
    for line in offline_run["transcript"].read_text().splitlines():
        e = json.loads(line)
        if e.get("type") == "agent_finished":
            recorded[e["agent_id"]] = e["duration_s"]
    agents = offline_run["json"]["usage"]["agents"]
    assert agents and {a["agent_id"]: a["duration_s"] for a in agents} == recorded
    assert any(d > 0.05 for d in recorded.values())


def test_roofline_unknown_dtype_lists_the_valid_ones(tmp_path):
    from orchestrator import knowledge

    line = one_line(investigate("roofline", "--gpu", "H200", "--dtype", "foo", "-m", "16", "-n", "4096", "-k", "4096",
                                tmp_path=tmp_path), 2, "unknown dtype 'foo'", "--dtype")
    for name in knowledge.dtype_names():
        assert name in line


@pytest.mark.parametrize("gpu", ["H200", "H100 SXM", "A100 SXM 80GB", "L40S", "B200"])
def test_roofline_int8_works_where_specs_shows_an_int8_figure(tmp_path, gpu):
    specs = investigate("specs", gpu, tmp_path=tmp_path)
    assert specs.returncode == 0
    m = re.search(r"dense INT8 tensor:\s+([\d,.]+) TOPS", specs.stdout)
    assert m, specs.stdout
    proc = investigate("roofline", "--gpu", gpu, "--dtype", "int8", "-m", "16", "-n", "4096", "-k", "4096",
                       tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"of {m.group(1)} TFLOPS" in proc.stdout or m.group(1) in proc.stdout


def test_specs_explains_n_v_and_roofline_points_at_it(tmp_path):
    specs = investigate("specs", "RTX PRO 6000 Workstation", tmp_path=tmp_path).stdout
    assert "dense INT8 tensor:       n/v" in specs
    assert "n/v = not verified" in specs
    line = one_line(investigate("roofline", "--gpu", "RTX PRO 6000 Workstation", "--dtype", "int8", "-m", "1", "-n", "2", "-k", "3",
                                tmp_path=tmp_path), 2, "no verified INT8 peak", "n/v", "investigate specs")
    assert "FOO" not in line
    h200 = investigate("specs", "H200", tmp_path=tmp_path).stdout
    assert "dense FP4 tensor:        none (no FP4 tensor cores on CC 9.0)" in h200  # absent, not unverified


def _readme_fields() -> dict[str, set[str]]:
    text = (ROOT / "docs" / "observations.md").read_text()
    section = text.split("## `--observations FILE`", 1)[1].split("\n## ", 1)[0]
    fields: dict[str, set[str]] = {}
    for row in re.findall(r"^\|\s*(`[^|]*`)?\s*\|\s*([^|]+)\|", section, re.M):
        where = row[0].strip("`").rstrip("[]") or "top"
        for f in re.findall(r"`([a-z_]+)`", row[1]):
            fields.setdefault(where, set()).add(f)
    return fields


def test_readme_observation_fields_are_exactly_what_is_accepted():
    from orchestrator.observations import GpuObservation, ModelInfo, Observations, RunObservation

    documented = _readme_fields()
    assert documented["model"] == set(ModelInfo.model_fields)
    assert documented["runs"] == set(RunObservation.model_fields)
    assert documented["gpu"] == set(GpuObservation.model_fields)
    assert documented["top"] == set(Observations.model_fields) - {"model", "runs", "gpu"}


def test_readme_example_and_every_documented_field_are_accepted(tmp_path):
    text = (ROOT / "docs" / "observations.md").read_text().split("## `--observations FILE`", 1)[1]
    example = text.split("```yaml", 1)[1].split("```", 1)[0]
    full = tmp_path / "full.yaml"
    full.write_text(example + "\n")
    import yaml

    doc = yaml.safe_load(example)
    doc["gpu"].update(name="NVIDIA H200", count=8, utilization_pct=97)
    doc["model"].update(intermediate_size=18432, num_moe_layers=75, active_params_b=40)
    doc["runs"][0].update(batch=64, input_len=1024, output_len=256, output_tok_s=1400, dp=1, label="tp8")
    full.write_text(yaml.safe_dump(doc))
    proc = investigate("why slow", "--offline", "--observations", full, "--transcript", tmp_path / "t.jsonl",
                       "--agents", _no_prong_agents(tmp_path), "--no-progress", "--json", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr


def _no_prong_agents(tmp_path):
    """A lead that only reads the observations: the check is that they are accepted, not a whole investigation."""
    d = tmp_path / "agents"
    d.mkdir()
    (d / "lead.md").write_text("---\nname: lead\ndescription: test lead\nrole: lead\ntools: [observations]\nplan:\n"
                               "  - {tool: observations, args: {}}\n---\nlead\n")
    return d


def test_probe_gemm_where_nothing_can_run_exits_1_with_the_reason(tmp_path):
    proc = investigate("probe", "--gemm", "--json", tmp_path=tmp_path, env={"INVESTIGATE_GEMM_BUDGET_S": "20"},
                       timeout=180)
    (sweep,) = json.loads(proc.stdout)
    if sweep["available"]:
        pytest.skip("this machine can run the GEMM benchmark (a GPU and torch): nothing to refuse")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines() == [f"investigate: the GEMM benchmark could not run: {sweep['reason']}"]


def test_probe_says_which_interpreter_it_inspected_and_that_it_may_not_serve(tmp_path):
    proc = investigate("probe", "--json", tmp_path=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (env,) = [p for p in json.loads(proc.stdout) if p["kind"] == "python_env"]
    if env["interpreter_source"] != "python3 on PATH":
        pytest.skip(f"a serving process runs on this machine ({env['interpreter_source']}): its interpreter was used")
    text = investigate("probe", tmp_path=tmp_path, timeout=300).stdout
    text = " ".join(text.split())
    said = re.search(r"interpreter (\S+) \(([^)]*)\)", text)
    assert said, text
    if said.group(2) != "python3 on PATH":  # a serving process another test started meanwhile (tests run side by side)
        pytest.skip(f"a serving process appeared on this machine between the two probes ({said.group(2)})")
    assert said.group(1) == env["interpreter"]
    assert "may not be the interpreter that serves the model; pass --python PATH" in text
    given = investigate("probe", "--python", sys.executable, tmp_path=tmp_path, timeout=300).stdout
    assert f"({'--python'})" in " ".join(given.split()) and "may not be the interpreter" not in given


def test_verdict_starts_with_a_capital_in_every_rendering(offline_run):
    verdict = offline_run["json"]["verdict"]
    assert verdict[:1].isupper(), verdict[:60]
    assert verdict.split()[0] in offline_run["md"] and verdict.split()[0] in offline_run["html"]


def test_sentence_case_leaves_identifiers_alone():
    from orchestrator.diagnosis import sentence_case

    assert sentence_case("the primary limiter is memory") == "The primary limiter is memory"
    assert sentence_case("sm_120a lacks tcgen05") == "sm_120a lacks tcgen05"
    assert sentence_case("vLLM falls back") == "vLLM falls back"
    assert sentence_case("nvidia-smi reports") == "nvidia-smi reports"


def _sources_in_brackets(text: str) -> list[str]:
    return [s.strip().split(" (", 1)[0].lower() for grp in re.findall(r"\[([^\[\]]+)\]", text) for s in grp.split(";")]


def test_verdict_counts_gaps_in_words_and_cites_each_source_once(offline_run):
    verdict = offline_run["json"]["verdict"]
    assert "(s)" not in verdict
    n = len(offline_run["json"]["gaps"])
    assert f"{n} gap{'s limit' if n != 1 else ' limits'} this diagnosis" in verdict
    cited = _sources_in_brackets(verdict)
    assert len(cited) == len(set(cited)), cited


def test_resynthesized_seed_renders_each_number_one_way(tmp_path):
    proc = investigate("replay", ROOT / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl", "--offline", "--json",
                       tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    words = " ".join([d["verdict"], d["bound_reasoning"]] + [c["explanation"] for c in d["causes"]])
    assert "1,116 FLOP/B" in words and not re.search(r"\b1116\b", words)  # as the numbers table writes it
    cited = _sources_in_brackets(d["verdict"])
    assert len(cited) == len(set(cited)), cited
    for c in d["causes"]:
        assert not re.search(r"\b(\w+), (\w+)(, \w+)* is installed", c["explanation"]), c["explanation"]
        assert not re.match(r"^[\w.-]+: \d", c["title"]), c["title"]  # "flashinfer: 3 tiles" is no sentence
        assert "(s)" not in c["title"]


def test_no_advice_to_pass_observations_when_they_were_passed(tmp_path):
    obs = tmp_path / "obs.yaml"
    obs.write_text("runs: [{tp: 8, concurrency: 64, total_tok_s: 1000}]\n")
    proc = investigate("why is FP4 slow", "--offline", "--no-progress", "--json", "--observations", obs,
                       "--transcript", tmp_path / "t.jsonl", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    advice = " ".join(r["action"] for r in d["recommendations"]) + " ".join(g["why"] for g in d["gaps"])
    assert "--observations" not in advice
