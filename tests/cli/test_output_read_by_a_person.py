"""Issue 43 item 7 and its smaller problems: output a person reads. Piped output is not hard-wrapped and has no
trailing spaces; no sentence is said twice by the renderer (the bound line, the verdict's "Start with"); offline
progress lines carry no "0 tokens, $0.0000"; the live table fits 80 columns; one gap is said once (three probes
stopped by one mistyped --python); a trace gap is not cut; `--json` always has `also_noticed`; `show | head` ends
cleanly."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time

from rich.console import Console

from orchestrator.diagnosis import Number
from orchestrator.events import ModelCall, RunFinished
from orchestrator.messages import ModelResponse, TextBlock, Usage
from orchestrator.render.diagnosis import number_line
from orchestrator.render.progress import Progress, _Row
from support.cli import ROOT, cli_env, investigate

H200 = "transcripts/h200-fp8-small-batch.jsonl"
SEED = "transcripts/seed-rtx-pro-6000-fp4.jsonl"


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if len(s.split()) >= 6]


def test_piped_output_is_neither_hard_wrapped_nor_padded_and_says_each_sentence_once(tmp_path):
    proc = investigate("replay", H200, tmp_path=tmp_path, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [ln for ln in lines if ln != ln.rstrip()] == []  # 37 of 48 lines ended in spaces
    verdict = lines[2]
    assert verdict.startswith("On 1 x NVIDIA H200") and verdict.endswith(".")  # the paragraph is one line
    assert max(map(len, lines)) > 120  # the reader's tools wrap it, not us
    bound = next(ln for ln in lines if ln.startswith("Bound:"))
    for sentence in _sentences(bound.split("—", 1)[-1]):
        assert sentence.rstrip(".") not in verdict, sentence  # the bound line repeated the verdict's sentence
    first_rec = next(ln for ln in lines[lines.index("Recommendations"):] if ln.startswith("- "))
    action = first_rec[2:].split(" — ")[0]
    assert proc.stdout.count(action[:80]) == 1  # "Start with: <the same action>" in the verdict, then again below
    assert "Start with the first recommendation below." in verdict


def test_a_percentage_of_100_is_said_once_and_a_shared_source_once():
    from orchestrator.render.diagnosis import number_lines

    assert number_line(Number(name="GPU busy", value=99.8, unit="%", peak=100, source="ev-6.1")) == \
        "GPU busy: 99.8 % [ev-6.1]"  # was "99.8 % of 100 % (99.8 %)"
    src = "knowledge: https://www.nvidia.com/en-us/data-center/h200/; https://github.com/NVIDIA/cutlass"
    nums = [Number(name=n, value=v, unit="TFLOPS", source=src) for n, v in (("fp8", 1979), ("bf16", 989))]
    nums.append(Number(name="bw", value=4800, unit="GB/s", source=src))
    nums.append(Number(name="x", value=1, unit="x", source="ev-1"))
    lines = number_lines(nums)
    assert sum(src in ln for ln in lines) == 1  # three identical URL lists after three spec numbers
    assert lines[2].endswith("(the source of the 3 numbers above)") and lines[3] == "x: 1 x [ev-1]"


def _call(agent: str, turn: int, usage: Usage) -> ModelCall:
    return ModelCall(run_id="r", seq=turn, agent_id=agent, turn=turn, model="offline", fingerprint="f",
                     response=ModelResponse(content=[TextBlock(text="x")], usage=usage), usage=usage)


def test_offline_progress_lines_carry_no_zero_tokens_or_cost():
    buf = io.StringIO()
    p = Progress(buf, live=False)
    p(_call("lead", 1, Usage()))
    p(RunFinished(run_id="r", seq=9, status="ok", duration_s=1.0, usage=Usage()))
    assert "tokens" not in buf.getvalue() and "$" not in buf.getvalue(), buf.getvalue()
    p(_call("lead", 2, Usage(input_tokens=1200, output_tokens=30, cost_usd=0.01)))
    assert "1.2k tokens" in buf.getvalue()  # a paid run still says what it costs


def test_the_live_table_fits_80_columns():
    ids = ["lead", "kernel-research-1", "autotune-inspection-2", "node-health-3", "tensor-core-specs-4",
           "serving-engine-5", "resource-account-6", "trace-analysis-7"]
    for paid in (False, True):
        p = Progress(io.StringIO(), live=False)
        for i, a in enumerate(ids):
            p.rows[a] = _Row(a, a, time.monotonic() - 12.3, status="turn_limit" if i == 3 else "running", turns=3,
                             tools=12, errors=2 if i == 2 else 0, last="autotune_caches_with_a_long_name")
            if paid:
                p.rows[a].usage = Usage(input_tokens=12345, output_tokens=2000, cost_usd=0.12)
        p.total = Usage(input_tokens=99999, cost_usd=1.2) if paid else Usage()
        buf = io.StringIO()
        Console(file=buf, width=80).print(p._table())
        lines = buf.getvalue().splitlines()
        assert max(len(ln.rstrip()) for ln in lines) <= 80
        assert len([ln for ln in lines if ln.strip()]) == len(ids) + 3  # title, header, rule: no row wrapped
        body = buf.getvalue()
        assert ("$0.120" in body) == paid and ("tokens" in body) == paid
        if not paid:
            assert all(a in body for a in ids) and "turn_limit" in body  # nothing of an id cut at 80 columns


def test_one_gap_per_cause_the_trace_gap_whole_and_also_noticed_always_in_json(tmp_path):
    proc = investigate("why is decode slow?", "--offline", "--json", "--no-progress", "--python", "python3.99",
                       "--trace", "host:/nonexistent-dir/trace.json", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    python_gaps = [g for g in d["gaps"] if "python3.99" in g["why"]]
    assert len(python_gaps) == 1, python_gaps  # python_env, kernel_inventory, autotune_caches: three identical gaps
    assert "python_env" in python_gaps[0]["what"] and "autotune_caches" in python_gaps[0]["what"]
    trace = next(g for g in d["gaps"] if "trace_analysis" in g["what"])
    # whole, and the fix is about the directory the user named (not "start the profiler")
    assert not trace["why"].endswith("…") and trace["why"].endswith(
        "Check that /nonexistent-dir/trace.json is a directory on the host holding .json, .json.gz or .sqlite traces"), trace
    assert "also_noticed" in d  # was left out when empty


def test_show_piped_into_head_ends_cleanly(tmp_path):
    proc = subprocess.run(f"{sys.executable} -m orchestrator.cli show {SEED} | head -1; exit ${{PIPESTATUS[0]}}",
                          shell=True, executable="/bin/bash", capture_output=True, text=True, cwd=ROOT,
                          env=cli_env(tmp_path, COLUMNS="400"), timeout=60)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert proc.stderr == "" and proc.stdout.startswith("run ")


def test_a_cause_does_not_repeat_the_sentence_the_verdict_quotes():
    from reports.sample import sample_diagnosis

    from orchestrator.render.diagnosis import to_text

    d = sample_diagnosis()
    said = "vllm serves the model with CUDA graphs off: every decode step launches each kernel from the CPU."
    d.verdict = f"The primary limiter is latency: {said} Ranked causes: (1) CUDA graphs are off."
    d.causes[0].explanation = f"{said} Without graph replay the launch overhead dominates."
    text = to_text(d)
    assert text.count("every decode step launches each kernel") == 1, text
    assert "   Without graph replay the launch overhead dominates." in text
    d.causes[0].explanation = said  # a cause the verdict says in full keeps its explanation
    assert to_text(d).count("every decode step launches each kernel") == 2
