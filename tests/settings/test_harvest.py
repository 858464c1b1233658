"""The settings harvest (scripts/harvest_settings.py) runs without the network on the small extracts in
tests/settings/extracts and reproduces tests/settings/expected exactly; it refuses a harvest that finds far fewer
settings than the previous one; the committed full harvest loads and holds the projects the issue names."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from orchestrator.knowledge import settings as kb

HERE = Path(__file__).parent
SCRIPT = HERE.parents[1] / "scripts" / "harvest_settings.py"


def _harvest():
    spec = importlib.util.spec_from_file_location("harvest_settings", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["harvest_settings"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_harvest_of_the_extracts_reproduces_the_committed_files(tmp_path):
    _harvest().build(HERE / "extracts", tmp_path)
    expected = sorted(p.name for p in (HERE / "expected").iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == expected
    for name in expected:
        assert (tmp_path / name).read_text() == (HERE / "expected" / name).read_text(), name


def test_harvest_reads_defaults_per_version_help_and_sources(tmp_path):
    _harvest().build(HERE / "extracts", tmp_path)
    vllm = {s["name"]: s for s in json.loads((tmp_path / "vllm.json").read_text())["settings"]}
    # a default that changed between two releases is two change points
    assert vllm["VLLM_ALLREDUCE_USE_FLASHINFER"]["defaults"] == [["0.28.0", False], ["0.29.0", True]]
    # EngineArgs fields take their default and help from the config class they reference
    assert vllm["enforce_eager"]["defaults"] == [["0.28.0", False]]
    assert vllm["enforce_eager"]["help"].startswith("Whether to always use eager-mode")
    assert vllm["enforce_eager"]["flag"] == "--enforce-eager"
    assert vllm["VLLM_ENABLE_V1_MULTIPROCESSING"]["raw_default"] == "1"
    assert vllm["enforce_eager"]["url"].startswith("https://github.com/vllm-project/vllm/blob/v0.29.0/")
    sgl = {s["name"]: s for s in json.loads((tmp_path / "sglang.json").read_text())["settings"]}
    assert sgl["tp_size"]["aliases"] == ["--tp", "--tensor-parallel-size"] and sgl["tp_size"]["defaults"][0][1] == 1
    nccl = {s["name"] for s in json.loads((tmp_path / "nccl.json").read_text())["settings"]}
    assert {"NCCL_NVB_DISABLE", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_PROTO"} <= nccl
    tgi = {(s["kind"], s["name"]): s for s in json.loads((tmp_path / "tgi.json").read_text())["settings"]}
    assert tgi[("env", "CUDA_GRAPHS")]["flag_of"] == "cuda_graphs"
    assert tgi[("cli", "max_concurrent_requests")]["defaults"] == [["3.3.7", "128"]]
    trt = {s["name"]: s for s in json.loads((tmp_path / "tensorrt_llm.json").read_text())["settings"]}
    assert trt["kv_cache_config.enable_block_reuse"]["defaults"] == [["1.2.1", True]]  # nested LLM API config key
    assert trt["max_batch_size"]["flag"] == "--max_batch_size" and trt["enable_chunked_prefill"]["defaults"][0][1] is False
    # its environment switches, as its Python reads them (os.environ.get / os.getenv with a default)
    assert trt["TRTLLM_ENABLE_PDL"]["kind"] == "env" and trt["TRTLLM_ENABLE_PDL"]["defaults"] == [["1.2.1", "1"]]
    assert trt["TRTLLM_SERVER_DISABLE_GC"]["help"].startswith("Optionally disable GC")


def test_harvest_that_finds_far_fewer_settings_than_last_time_fails(tmp_path):
    out = tmp_path / "out"
    shutil.copytree(HERE / "expected", out)
    counts = json.loads((out / "counts.json").read_text())
    counts["vllm"] = counts["vllm"] * 2  # the previous harvest found twice as many
    (out / "counts.json").write_text(json.dumps(counts))
    before = (out / "vllm.json").read_text()
    with pytest.raises(SystemExit, match="far fewer settings"):
        _harvest().build(HERE / "extracts", out)
    assert (out / "vllm.json").read_text() == before  # the previous file is kept


def test_committed_harvest_covers_the_stack():
    counts = {p: kb.project_data(p)["count"] for p in kb.projects()}
    for p in ("vllm", "sglang", "tgi", "llamacpp", "ollama", "nccl", "cuda", "pytorch", "transformers",
              "triton_trtllm"):
        assert counts.get(p, 0) > 0, p
    assert len(kb.project_data("vllm")["versions"]) >= 8 and len(kb.project_data("sglang")["versions"]) >= 6
    eager = kb.find("--enforce-eager", "vllm")[0]
    assert kb.default_at(eager, "0.30.0")[0] is False and kb.effect_of(eager) is not None
    # every curated effect names a harvested setting
    for key in kb.effects():
        project, name = key.split(":", 1)
        assert kb.find(name, project), key


@pytest.mark.parametrize("member", ["/etc/x.py", "torch/../../usercustomize.py", "../x.py", "torch/..\\..\\x.py",
                                    "C:/x.py"])
def test_gather_refuses_wheel_members_outside_the_source_dir(tmp_path, member):
    with pytest.raises(ValueError, match="refusing archive member"):
        _harvest().safe_member_path(tmp_path / "torch" / "2.14.1", member)


def test_gather_refuses_a_member_through_a_symlink_out(tmp_path):
    root = tmp_path / "src"
    root.mkdir()
    (root / "torch").symlink_to(tmp_path.parent)
    with pytest.raises(ValueError, match="resolves outside"):
        _harvest().safe_member_path(root, "torch/evil.py")
    assert _harvest().safe_member_path(root, "vllm/envs.py") == root / "vllm/envs.py"
