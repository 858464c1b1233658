"""Published reference throughput: the parsers on committed extracts of the real sources, the build, matching."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.prongs.reference.rules import Setup, match, reference_rule
from orchestrator.evidence import Evidence
from orchestrator.knowledge import references as refs
from orchestrator.observations import Observations

ROOT = Path(__file__).resolve().parents[2]
SOURCES = Path(__file__).parent / "sources"
MANIFEST = yaml.safe_load((ROOT / "scripts" / "reference_sources.yaml").read_text())
TRT = next(s for s in MANIFEST["sources"] if s["kind"] == "trtllm-perf-overview")
MLPERF = [s for s in MANIFEST["sources"] if s["kind"] == "mlperf-summary"]
MODELS = MANIFEST["models"]


def _trt(text: str | None = None):
    return refs.parse_trtllm_perf_overview(text if text is not None else (SOURCES / TRT["file"]).read_text(), TRT,
                                           MODELS)


def test_perf_overview_rows_are_the_tables_cells():
    rows, problems = _trt()
    assert problems == []
    h200 = [r for r in rows if r.gpu == "NVIDIA H200" and r.model == "llama-3.3-70b"]
    assert {(r.isl, r.osl, r.output_tok_s_per_gpu) for r in h200} == {
        (1000, 1000, 2587), (1024, 1024, 2582), (1024, 8192, 2009), (8192, 1024, 537), (32768, 1024, 120)}
    assert all((r.parallel, r.tp, r.gpu_count, r.precision) == ("TP2", 2, 2, "fp8") for r in h200)
    dep = next(r for r in rows if r.model == "deepseek-r1" and r.gpu == "NVIDIA H200" and r.isl == 1000)
    assert (dep.parallel, dep.ep, dep.gpu_count, dep.output_tok_s_per_gpu) == ("DEP8", 8, 8, 1627)
    # the RTX table names its GPU in the heading and counts GPUs in the column ("**4 GPUs**<br/>DEP2,PP2")
    rtx = next(r for r in rows if r.model == "qwen3-235b-a22b" and r.parallel == "DEP2,PP2" and r.isl == 1000)
    assert (rtx.gpu, rtx.gpu_count, rtx.pp) == ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 4, 2)
    # an empty cell is "not measured", never a zero
    assert not [r for r in rows if r.model == "deepseek-r1" and r.gpu == "NVIDIA H200" and r.isl == 8192]
    assert all(r.output_tok_s_per_gpu > 0 for r in rows)


def test_a_table_without_its_unit_line_is_reported_not_used():
    text = (SOURCES / TRT["file"]).read_text()
    cut = text.replace("unit: `output tokens per second per GPU`", "", 1)  # the first table (DeepSeek R1) loses its unit
    rows, problems = _trt(cut)
    assert any("Deepseek R1 0528" in p and "no unit line" in p for p in problems)
    assert not [r for r in rows if r.model == "deepseek-r1"]
    assert [r for r in rows if r.model == "gpt-oss-120b"]  # the rest still reads


def test_an_ambiguous_or_unknown_model_or_gpu_is_reported_not_guessed():
    text = (SOURCES / TRT["file"]).read_text()
    rows, problems = _trt(text.replace("# LLaMA v3.3 70B\n", "# LLaMA 70B\n", 1))
    assert any("'LLaMA 70B' is ambiguous (llama-2-70b, llama-3.3-70b)" in p for p in problems), problems
    assert not [r for r in rows if r.model == "llama-3.3-70b" and r.gpu != "NVIDIA RTX PRO 6000 Blackwell Server Edition"]
    rows, problems = _trt(text.replace("H100<br/>TP2 (FP8)", "H20<br/>TP2 (FP8)", 1))
    assert any("GPU 'H20'" in p and "not mapped" in p for p in problems)
    rows, problems = _trt(text.replace("| 1000/1000 | 6,463 |", "| 1000/1000 | n/a |", 1))
    assert any("'n/a' is not a number" in p for p in problems)


@pytest.mark.parametrize("name, expect", [
    ("meta-llama/Llama-3.3-70B-Instruct", ("llama-3.3-70b", [])),
    ("nvidia/Llama-3.3-70B-Instruct-FP8", ("llama-3.3-70b", [])),
    ("openai/gpt-oss-120b", ("gpt-oss-120b", [])),
    ("Qwen/Qwen3-30B-A3B-FP8", ("qwen3-30b-a3b", [])),
    ("llama-70b", (None, ["llama-2-70b", "llama-3.3-70b"])),
    ("gpt-oss", (None, [])),  # no size: never guessed
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", (None, [])),  # a distill is another model
])
def test_model_names(name, expect):
    assert refs.model_id(name, MODELS) == expect


def test_mlperf_summary_rows():
    rows = []
    for s in MLPERF:
        system = json.loads((SOURCES / s["system_file"]).read_text())
        got, problems = refs.parse_mlperf_summary((SOURCES / s["file"]).read_text(), system, s, MODELS)
        assert problems == []
        rows += got
    off = next(r for r in rows if r.gpu == "NVIDIA H200" and r.scenario == "Offline")
    assert (off.gpu_count, off.output_tok_s_per_gpu, off.model, off.precision) == (8, 3912.8, "llama-2-70b", None)
    srv = next(r for r in rows if r.scenario == "Server")
    assert srv.limits == {"ttft_p99_ms": 2000.0, "tpot_p99_ms": 200.0}
    assert srv.ttft_ms["p99"] == pytest.approx(452.744, abs=1e-3) and srv.tpot_ms["p50"] == pytest.approx(124.286, abs=1e-3)


def test_an_invalid_mlperf_run_is_reported():
    s = MLPERF[0]
    text = (SOURCES / s["file"]).read_text().replace("Result is : VALID", "Result is : INVALID")
    rows, problems = refs.parse_mlperf_summary(text, json.loads((SOURCES / s["system_file"]).read_text()), s, MODELS)
    assert rows == [] and "not VALID" in problems[0]


def test_the_shipped_dataset_is_what_the_sources_build(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_references.py"), "--check"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "trtllm-perf-overview: 150 rows" in r.stdout
    # a harvest that finds far fewer rows than the shipped file fails: plant a source that lost most of its tables
    src = tmp_path / "sources"
    subprocess.run(["cp", "-r", str(SOURCES), str(src)], check=True)
    md = src / TRT["file"]
    md.write_text(md.read_text().split('<a id="gpt-oss-120b">')[0])
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_references.py"), "--sources", str(src),
                        "--out", str(tmp_path / "out.json")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0  # no previous file at --out: nothing to compare with
    shipped = ROOT / "orchestrator" / "knowledge" / "references.json"
    (tmp_path / "prev.json").write_text(shipped.read_text())
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_references.py"), "--sources", str(src),
                        "--out", str(tmp_path / "prev.json")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1 and "far fewer than the 150" in r.stdout


def test_exact_match_states_no_difference():
    lk = match(Setup(gpu="NVIDIA H200", model="Llama-3.3-70B-Instruct", precision="fp8", engine="tensorrt-llm",
                     isl=1024, osl=1024, gpus=2))
    best = lk.matches[0]
    assert (best.row.output_tok_s_per_gpu, best.differences) == (2582, [])


def test_near_match_states_every_difference():
    lk = match(Setup(gpu="NVIDIA H200", model="meta-llama/Llama-3.3-70B-Instruct", precision="fp4", engine="vllm",
                     isl=2048, osl=512, gpus=4, concurrency=64))
    diffs = lk.matches[0].differences
    assert "precision fp4 vs fp8" in diffs
    assert any(d.startswith("engine vllm vs tensorrt-llm") for d in diffs)
    assert "ISL/OSL 2048/512 vs 1024/1024" in diffs or any(d.startswith("ISL/OSL 2048/512 vs") for d in diffs)
    assert any(d.startswith("4 GPU(s) vs 2") for d in diffs)
    assert any(d.startswith("concurrency 64 vs all requests at once") for d in diffs)


def test_no_match_across_gpus_or_models():
    lk = match(Setup(gpu="NVIDIA L40S", model="Llama-3.3-70B-Instruct"))
    assert lk.matches == [] and "no published figure for llama-3.3-70b on NVIDIA L40S" in lk.why_none
    assert "another GPU is not comparable" in lk.why_none
    lk = match(Setup(gpu="NVIDIA H200", model="mistralai/Mixtral-8x22B-Instruct"))
    assert lk.matches == [] and "no published reference covers" in lk.why_none


def _view(obs: dict, gpu: str = "NVIDIA H200", count: int = 2) -> EvidenceView:
    o = Observations.model_validate(obs)
    evs = [Evidence(id="ev-1", agent_id="a", tool="observations",
                    data={"kind": "observations", "observations": o.model_dump(mode="json")}),
           Evidence(id="ev-2", agent_id="a", tool="gpu_specs",
                    data={"kind": "gpu_specs", "gpus": [{"name": gpu, "count": count}]})]
    return EvidenceView(evs, o)


def test_rule_far_below_near_and_low_load():
    base = {"model": {"name": "nvidia/Llama-3.3-70B-Instruct-FP8", "quantization": "fp8"}}
    far = reference_rule(_view({**base, "runs": [{"tp": 2, "concurrency": 512, "input_len": 1024, "output_len": 1024,
                                                  "output_tok_s": 1500}]}))
    assert far and far[0].data["share"] == pytest.approx(750 / 2582, rel=1e-3)
    assert "Far below the published figure" in far[0].claim and far[0].evidence == ["ev-1", "ev-2"]
    assert far[0].numbers[0].peak == 2582
    near = reference_rule(_view({**base, "runs": [{"tp": 2, "concurrency": 512, "input_len": 1024,
                                                   "output_len": 1024, "output_tok_s": 4800}]}))
    assert "Near the published figure" in near[0].claim
    low = reference_rule(_view({**base, "runs": [{"tp": 2, "concurrency": 8, "input_len": 1024, "output_len": 1024,
                                                  "output_tok_s": 500}]}))
    assert "upper bound" in low[0].claim and "Far below" not in low[0].claim
    # total_tok_s counts input tokens too: only its output share is compared, and the claim says so
    tot = reference_rule(_view({**base, "runs": [{"tp": 2, "concurrency": 512, "input_len": 1024, "output_len": 1024,
                                                  "total_tok_s": 3000}]}))
    assert tot[0].data["share"] == pytest.approx(750 / 2582, rel=1e-3) and "output share 50%" in tot[0].claim


def test_rule_says_when_there_is_no_reference():
    got = reference_rule(_view({"model": {"name": "Llama-3.3-70B-Instruct"},
                                "runs": [{"tp": 1, "output_tok_s": 900}]}, gpu="NVIDIA L40S", count=1))
    assert got[0].title == "No published reference for this GPU and model"
    assert "another GPU is not comparable" in got[0].claim


def test_reference_cli(tmp_path):
    env_run = [sys.executable, "-m", "orchestrator.cli", "reference"]
    r = subprocess.run(env_run + ["--gpu", "H200", "--model", "Llama-3.3-70B-Instruct", "--dtype", "fp8", "--isl",
                                  "1024", "--osl", "1024"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and "2,582" in r.stdout and "perf-overview.md" in r.stdout
    r = subprocess.run(env_run + ["--gpu", "H200", "--model", "llama-70b", "--json"], capture_output=True, text=True,
                       cwd=ROOT)
    doc = json.loads(r.stdout)
    assert doc["rows"] == [] and "could mean llama-2-70b, llama-3.3-70b" in doc["why_none"]
    r = subprocess.run(env_run + ["--gpu", "H2000", "--model", "x"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "unknown GPU" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("cell", ["nan", "inf", "-2587", "0", "1_000", "1e3", "2587.", "0x10", "２５８７"])
def test_a_throughput_cell_that_is_not_a_positive_published_number_is_reported_not_used(cell):
    """m10 of the red team's round 3: float() took nan, inf, negatives and `1_000` as throughput."""
    text = (SOURCES / TRT["file"]).read_text()
    rows, problems = _trt(text.replace("| 2,587", f"| {cell}", 1) if "| 2,587" in text else text.replace("2587", cell, 1))
    assert any(f"value {cell!r} is not a number above zero" in p for p in problems), problems
    assert all(r.output_tok_s_per_gpu > 0 and r.output_tok_s_per_gpu == r.output_tok_s_per_gpu for r in rows)
    assert refs.throughput("12,345.6") == 12345.6 and refs.throughput(" 537 ") == 537.0
