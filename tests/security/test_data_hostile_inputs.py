"""Issue 23 (hostile files) and issue 30 items 1/3: every YAML/JSON input is loaded bounded, every hostile
transcript gets one clear line.

Inputs (observations, hosts files, bench files) go through orchestrator.safeload: size checked before parsing, an
alias bomb refused in well under a second, nesting and 4,300+-digit integers refused cleanly, duplicate YAML keys
refused naming the key and its line. Transcripts: data nested 400-900 deep, a 4,000-digit usage count, negative
settings, an extra agent_def key, hosts that are not a list: exit 2 with one line (or read and shown), no traceback.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the fuzz helpers
from fuzz.bounded import json_out, run_bounded  # noqa: E402

from orchestrator.cli import main
from orchestrator.observations import ObservationsError, load_observations
from orchestrator.safeload import SafeLoadError, load_json, load_yaml

SEED = Path(__file__).resolve().parents[2] / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl"

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(9))
"""The billion laughs: 9 levels of 9 aliases, 9^10 values once expanded."""
NESTED_BOMB = "[&a [x, x, x, x, x, x, x, x, x], " + ", ".join(
    f"&{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]" for i in range(9)) + "]"
OBS_BOMB = f"runs: {NESTED_BOMB}\n"
HOSTS_BOMB = f"prefill: {NESTED_BOMB}\n"
"""... reached through a key the file's schema knows (runs, a role), so that it is walked, not refused by name."""


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("notice:", "warning:"))]
    assert "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith("investigate: ") and len(lines[0]) < 500, err
    return lines[0]


def test_an_alias_bomb_is_refused_in_well_under_a_second():
    started = time.monotonic()
    with pytest.raises(SafeLoadError, match="alias"):
        load_yaml(BOMB, source="obs.yaml")
    assert time.monotonic() - started < 0.5


@pytest.mark.parametrize("text,needle", [
    ("x: " + "[" * 500 + "]" * 500, "nested more than"),
    ("runs:\n  - {tp: " + "9" * 5000 + "}\n", "5,000 digits"),
    ("model: {name: a}\nruns: []\nmodel: {name: b}\n", "duplicate key 'model' (first at line 1)"),
    ("gpu:\n  power_w: 300\n  power_w: 900\n", "line 3: duplicate key 'power_w'"),
])
def test_yaml_bounds(text, needle):
    with pytest.raises(SafeLoadError, match=None) as info:
        load_yaml(text, source="obs.yaml")
    assert needle in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("text,needle", [
    ("[" * 900 + "]" * 900, "nested more than"),
    ('{"runs": [{"tp": ' + "9" * 5000 + "}]}", "4,300 digits"),
])
def test_json_bounds(text, needle):
    with pytest.raises(SafeLoadError) as info:
        load_json(text, source="obs.json")
    assert needle in str(info.value)


def test_merge_keys_and_ordinary_documents_still_load():
    assert load_yaml("base: &b {tp: 8}\nrun:\n  <<: *b\n  pp: 2\n", source="x") == \
        {"base": {"tp": 8}, "run": {"tp": 8, "pp": 2}}
    assert load_json('{"a": [1, 2.5, "x"]}', source="x") == {"a": [1, 2.5, "x"]}


def test_an_oversized_observations_file_is_refused_before_it_is_parsed(tmp_path):
    big = tmp_path / "obs.yaml"
    big.write_text("notes: '" + "x" * (9 << 20) + "'\n")
    started = time.monotonic()
    with pytest.raises(ObservationsError, match="MB, more than the 2.0 MB read"):
        load_observations(big)
    assert time.monotonic() - started < 1.0


@pytest.mark.parametrize("flag,name,text,needle", [
    ("--observations", "obs.yaml", OBS_BOMB, "alias"),
    ("--observations", "obs.yaml", "model: {name: a}\nmodel: {name: b}\n", "duplicate key 'model'"),
    ("--observations", "obs.json", '{"gpu": {"power_w": ' + "9" * 5000 + "}}", "4,300 digits"),
    ("--observations", "obs.json", '{"notes": ' + "[" * 600 + "]" * 600 + "}", "nested more than"),
    ("--hosts", "hosts.yaml", HOSTS_BOMB, "alias"),
    ("--hosts", "hosts.yaml", "prefill: [a]\nprefill: [b]\n", "line 2: duplicate key 'prefill'"),
    ("--bench", "bench.json", '{"mean_ttft_ms": ' + "9" * 5000 + "}", "4,300 digits"),
    ("--bench", "bench.json", "[" * 700 + "]" * 700, "nested more than"),
])
def test_hostile_input_files_are_one_line_before_anything_runs(tmp_path, capsys, flag, name, text, needle):
    path = tmp_path / name
    path.write_text(text)
    started = time.monotonic()
    rc = main(["why slow?", flag, str(path), "--offline", "--no-progress", "--transcript", str(tmp_path / "t.jsonl")])
    line = _one_error_line(capsys.readouterr().err)
    assert rc == 2 and needle in line and name in line, line
    assert time.monotonic() - started < 10
    assert not (tmp_path / "t.jsonl").exists()  # refused before the run


def _seed_with(edit) -> list[str]:
    out = []
    for line in SEED.read_text().splitlines():
        ev = json.loads(line)
        if ev.get("type") == "run_started":
            edit(ev)
            line = json.dumps(ev)
        out.append(line)
    return out


def _nest(n: int):
    v: object = 1
    for _ in range(n):
        v = {"a": v}
    return v


HOSTILE = {
    "observations-nested-500": lambda: _seed_with(lambda e: e["inputs"].update(observations={"model": _nest(500)})),
    "agent-defs-nested-900": lambda: _seed_with(lambda e: e["agent_defs"]["lead"].update(plan=[_nest(900)])),
    "extra-agent-def-key": lambda: _seed_with(lambda e: e["agent_defs"]["lead"].update(evil=1)),
    "hosts-not-a-list": lambda: _seed_with(lambda e: e["inputs"].update(hosts="gpu-box")),
    "negative-settings": lambda: _seed_with(lambda e: e["settings"].update(max_turns=-5, tool_output_chars=-1)),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
@pytest.mark.parametrize("command", [["replay"], ["replay", "--offline"], ["resume", "--question", "q", "--offline",
                                                                         "--host", "gpu-box"]])
def test_hostile_transcripts_are_refused_in_one_line(tmp_path, capsys, kind, command):
    path = tmp_path / f"{kind}.jsonl"
    path.write_text("\n".join(HOSTILE[kind]()) + "\n")
    rc = main([command[0], str(path), *command[1:]])
    err = capsys.readouterr().err
    if kind == "negative-settings" and command != ["replay"] or "agent-def" in kind and command[0] == "resume":
        # re-synthesis and resume use the user's own settings, and resume the user's own agent definitions: the
        # recorded ones are never read (resume then stops at the host, which does not resolve here)
        assert "Traceback" not in err and "max_turns" not in err and "agent definitions" not in err
        return
    line = _one_error_line(err)
    assert rc == 2 and str(path) in line and "damaged or hostile" in line, line


def test_a_4000_digit_usage_count_is_shown_not_a_traceback(tmp_path, capsys):
    path = tmp_path / "bigint.jsonl"
    path.write_text("\n".join(ln.replace('"input_tokens":0', '"input_tokens":' + "9" * 4000)
                              for ln in SEED.read_text().splitlines()) + "\n")
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "9.99e" in out.out


# --- a served process's config file, parsed here (engine_config, settings_audit, and again by show/report) ----------

CONFIG_BOMB = "max-num-seqs: 7\n" + "l0: &l0 {" + ", ".join(f"k{j}: x" for j in range(10)) + "}\n" + "".join(
    f"l{i}: &l{i} {{" + ", ".join(f"k{j}: *l{i - 1}" for j in range(10)) + "}\n" for i in range(1, 10)) + \
    "compilation-config: *l9\n"
"""The red team's shape: 10 levels of 10 mapping aliases under a key the audit knows, 10^10 keys once walked, under
a kilobyte."""
CONFIG_DEEP = "max-num-seqs: 7\ncompilation-config: " + "[" * 20000 + "]" * 20000 + "\n"

_AUDIT = """
import json, sys, time
from orchestrator.prongs.settings_audit.audit import audit_process
from orchestrator.prongs.serving_engine.cmdline import effective_config
from orchestrator.prongs.settings_audit.models import ProcessSettings, SettingsFile
out = {}
for name in sys.argv[1:]:
    text = open(name).read()
    argv = ["vllm", "serve", "/m", "--config", "/srv/serve.yaml"]
    started = time.monotonic()
    settings, _ = effective_config("vllm", argv, config_files={"/srv/serve.yaml": text})
    audit = audit_process(ProcessSettings(pid=1, engine="vllm", version="0.32.0", argv=argv,
                                          files={"/srv/serve.yaml": SettingsFile(text=text, role="--config")}))
    out[name] = {"s": time.monotonic() - started, "config": settings["max_num_seqs"].source if "max_num_seqs" in settings else "",
                 "audit": [nd.name for nd in audit.nondefaults]}
print(json.dumps(out))
"""


def test_a_served_configs_alias_bomb_or_deep_nesting_is_left_out_in_bounded_time_and_memory(tmp_path):
    """S1: the engine configuration and the settings audit parse the host's --config within safeload's bounds; with
    plain yaml.safe_load the bomb ran this child out of its 1 GiB (MemoryError) and 20k-deep nesting raised
    RecursionError."""
    bomb, deep, plain = tmp_path / "bomb.yaml", tmp_path / "deep.yaml", tmp_path / "plain.yaml"
    bomb.write_text(CONFIG_BOMB)
    deep.write_text(CONFIG_DEEP)
    plain.write_text("max-num-seqs: 7\n")
    assert len(CONFIG_BOMB) < 1100
    got = json_out(run_bounded(_AUDIT, mem_mb=1024, timeout_s=60, args=[str(bomb), str(deep), str(plain)]))
    assert got[str(plain)]["config"].startswith("config file") and got[str(plain)]["audit"] == ["--max-num-seqs"]
    for f in (bomb, deep):  # refused whole: its max-num-seqs is not believed either
        assert got[str(f)]["s"] < 2 and not got[str(f)]["config"].startswith("config file"), got
        assert got[str(f)]["audit"] == [], got


def _seed_with_settings_text(text: str) -> list[str]:
    """The seed transcript with a settings_audit result whose --config text is `text` (as the host returned it)."""
    from orchestrator.prongs.settings_audit.models import ProcessSettings, SettingsFile, SettingsReport

    report = SettingsReport(host="gpu-box", processes=[ProcessSettings(
        pid=7, engine="vllm", version="0.32.0", argv=["vllm", "serve", "/m", "--config", "/srv/serve.yaml"],
        files={"/srv/serve.yaml": SettingsFile(text=text, role="--config")})])
    out = []
    for line in SEED.read_text().splitlines():
        out.append(line)
        ev = json.loads(line)
        if ev.get("type") == "tool_result" and ev.get("tool") == "observations":
            out.append(json.dumps({**ev, "seq": ev["seq"], "tool": "settings_audit", "call_id": ev["call_id"] + "-s",
                                   "evidence_id": ev["evidence_id"] + "9", "content": "settings",
                                   "data": report.model_dump(mode="json")}))
    return out


_RENDER = """
import sys
from orchestrator.cli import main
path, out = sys.argv[1], sys.argv[2]
for args in (["report", path, "-o", out + ".html"], ["report", path, "-o", out + ".md"], ["show", path]):
    rc = main(args)
    assert rc == 0, (args, rc)
"""


@pytest.mark.parametrize("kind", ["alias-bomb", "deep-20k"])
def test_show_and_report_of_a_recorded_hostile_config_render_in_bounded_memory(tmp_path, kind):
    """S1 and m7: `report` and `show` audit the recorded text again; a bomb took 3.9 GB there, deep nesting gave a
    RecursionError traceback."""
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(_seed_with_settings_text(CONFIG_BOMB if kind == "alias-bomb" else CONFIG_DEEP)) + "\n")
    res = run_bounded(_RENDER, mem_mb=1536, timeout_s=120, args=[str(path), str(tmp_path / "r")])
    assert res.rc == 0 and "Traceback" not in res.err, res.err[-3000:]
    assert (tmp_path / "r.html").exists() and (tmp_path / "r.md").exists()


# --- --baseline-log (m6) --------------------------------------------------------------------------------------------

_BASELINE = """
import json, sys, time
from orchestrator.baselines import load_baseline_log
started = time.monotonic()
log = load_baseline_log(sys.argv[1])
print(json.dumps({"s": time.monotonic() - started, "lines": log.lines}))
"""


def test_a_baseline_log_line_of_900kb_is_read_in_linear_time(tmp_path):
    """m6: one 920 kB line of `server_args=ServerArgs(` kept the input check busy for minutes (114 s; 4 MB: ~30 min):
    the line was unbounded and the pattern retried at every occurrence."""
    p = tmp_path / "before.log"
    hostile = "server_args=ServerArgs(" * 40_000
    p.write_text("INFO vLLM API server version 0.11.0\n" + hostile + "\n" + ("non-default args: {" * 20_000) + "\n"
                 + "INFO non-default args: {'max_num_seqs': 64, 'api_key': 'sk-live-0123456789abcdef'}\n")
    assert len(hostile) > 900_000
    got = json_out(run_bounded(_BASELINE, mem_mb=1024, timeout_s=60, args=[str(p)]))
    assert got["s"] < 5, got["s"]
    assert got["lines"][0] == "INFO vLLM API server version 0.11.0"
    assert "'max_num_seqs': 64" in got["lines"][-1] and "sk-live" not in got["lines"][-1]
    assert all(len(line) <= 8000 for line in got["lines"])
