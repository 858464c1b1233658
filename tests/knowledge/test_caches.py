"""knowledge/caches.yaml drives the cache probe: locations, env vars, what is collected and parsed, facts.

The remote script knows no location itself; a cache added to a data copy is found with no code change, and every
collected format goes through the parser registry.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from orchestrator import knowledge
from orchestrator.probes import scripts
from orchestrator.prongs.autotune.probe import report_from_output, script_params
from orchestrator.prongs.autotune.cache_formats import PARSERS, CacheContext, parse_cache_file, parser
from orchestrator.probes.results import AutotuneReport

DATA = Path(__file__).parents[1] / "probes" / "data"
SAMPLES = {  # one real-format sample per registered parser (sources: tests/probes/data/README.md)
    "flashinfer_autotune": DATA / "caches" / "flashinfer_autotune.json",
    "vllm_flashinfer_autotune": DATA / "caches" / "flashinfer_autotune.json",
    "trtllm_autotuner": DATA / "caches" / "trtllm_autotuner.json",
    "vllm_fused_moe": DATA / "caches" / ("E=256,N=256,device_name=NVIDIA_RTX_PRO_6000_Blackwell_Workstation_Edition,"
                                         "dtype=fp8_w8a8,block_shape=[128,128].json"),
    "sglang_fused_moe": DATA / "caches" / ("E=256,N=256,device_name=NVIDIA_RTX_PRO_6000_Blackwell_Workstation_Edition,"
                                           "dtype=fp8_w8a8,block_shape=[128,128].json"),
    "triton_autotune": DATA / "h200" / "add.autotune.json",
    "inductor": next((DATA / "h200_capture" / "files" / "inductor").rglob("*.best_config")),
    "tunableop": next((DATA / "h200_capture" / "files" / "tunableop").glob("*.csv")),
}
RAW = yaml.safe_load((knowledge.resources.files("orchestrator.knowledge") / "caches.yaml").read_text("utf-8"))


def _run_script(params: dict, env: dict | None = None) -> dict:
    out = subprocess.run([sys.executable, "-", json.dumps(params)], input=scripts.load("caches"), text=True,
                         capture_output=True, timeout=60, env={**os.environ, **(env or {})})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_remote_script_hard_codes_no_cache_location_or_variable():
    code = scripts.load("caches")
    for needle in (".triton", "torchinductor", "flashinfer", "ComputeCache", "deep_gemm", "TRITON_CACHE_DIR",
                   "VLLM_", "TLLM_", "PYTORCH_TUNABLEOP", "fused_moe"):
        assert needle not in code, f"{needle!r} belongs in caches.yaml, not in the probe script"


def test_every_collected_format_has_a_registered_parser_and_a_sample_it_parses():
    collected = {r.format for c in knowledge.cache_specs() for r in c.collect}
    assert collected <= set(PARSERS), f"no parser for {sorted(collected - set(PARSERS))}"
    assert set(PARSERS) <= set(knowledge.cache_formats_table())
    ctx = CacheContext(device_name="NVIDIA RTX PRO 6000 Blackwell Workstation Edition")
    for fmt in PARSERS:
        sample = SAMPLES[fmt]
        cf = parse_cache_file(fmt, str(sample), sample.read_text(), ctx)
        assert cf.format == fmt and cf.error is None and cf.entries > 0, (fmt, cf.error)


def test_a_format_registers_once_and_an_unknown_one_is_an_error_on_the_file():
    with pytest.raises(ValueError, match="two parsers"):
        parser("tunableop")(lambda path, text, ctx, fmt: None)
    cf = parse_cache_file("no_such_format", "/x", "{}", CacheContext())
    assert cf.error == "no parser for no_such_format"


def test_skip_on_mismatch_fields_come_from_the_data():
    text = SAMPLES["trtllm_autotuner"].read_text()
    ctx = CacheContext(packages={"tensorrt-llm": "0.0.1"})
    assert parse_cache_file("trtllm_autotuner", "/c.json", text, ctx).metadata_mismatch
    assert knowledge.cache_format("trtllm_autotuner").compare == {"lib_version": ["tensorrt-llm"]}
    assert knowledge.skipped_on_mismatch_formats() == {"flashinfer_autotune", "vllm_flashinfer_autotune"}


@pytest.mark.parametrize("mutate, message", [
    (lambda raw: raw["caches"].append(copy.deepcopy(raw["caches"][0])), "used twice: flashinfer_jit"),
    (lambda raw: raw["caches"][0]["collect"][0].update(format="nope"), "names format 'nope'"),
    (lambda raw: raw["caches"][0].update(kind="sometimes"), "kind"),
])
def test_a_broken_caches_yaml_names_what_is_wrong(mutate, message):
    raw = copy.deepcopy(RAW)
    mutate(raw)
    with pytest.raises(ValueError, match=message):
        knowledge.parse_caches(raw)


def test_jit_caches_the_engine_needs_are_known_with_their_variables():
    specs = {c.name: c for c in knowledge.cache_specs()}
    want = {"deep_gemm": "DG_JIT_CACHE_DIR", "flashinfer_jit": "FLASHINFER_WORKSPACE_BASE",
            "triton": "TRITON_CACHE_DIR", "inductor": "TORCHINDUCTOR_CACHE_DIR",
            "tunableop": "PYTORCH_TUNABLEOP_FILENAME", "vllm_torch_compile": "VLLM_CACHE_ROOT",
            "cuda_compute_cache": "CUDA_CACHE_PATH"}
    for name, var in want.items():
        assert var in specs[name].moving_env_vars and specs[name].info().sources, name
    assert specs["cuda_compute_cache"].size_limit.env == "CUDA_CACHE_MAXSIZE"
    assert "PYTORCH_TUNABLEOP_ENABLED" in specs["tunableop"].env_vars


def _facts(data: dict, specs=None, device="NVIDIA H200") -> dict:
    return report_from_output(data, device, specs=specs).facts()


def test_default_locations_env_overrides_and_facts(tmp_path):
    home = tmp_path / "home"
    dg = home / ".deep_gemm" / "cache" / "kernel.fp8_gemm.abc"
    dg.mkdir(parents=True)
    (dg / "kernel.cubin").write_bytes(b"x" * 1000)
    compile_cache = home / ".cache" / "vllm" / "torch_compile_cache" / "1517964802" / "rank_0_0"
    compile_cache.mkdir(parents=True)
    (compile_cache / "computation_graph.py").write_text("# graph\n")
    scratch = tmp_path / "scratch-triton"  # under /tmp, outside home: what a container restart wipes
    (scratch / "HASH").mkdir(parents=True)
    (scratch / "HASH" / "k.cubin").write_bytes(b"y" * 10)
    env = {"HOME": str(home), "TRITON_CACHE_DIR": str(scratch), "CUDA_CACHE_MAXSIZE": "4294967296"}
    f = _facts(_run_script(script_params(["NVIDIA H200"], env=env)))
    assert f["cache.deep_gemm.present"] is True and f["cache.deep_gemm.files"] == 1
    assert f["cache.deep_gemm.bytes"] == 1000 and f["cache.deep_gemm.env_set"] is False
    assert f["cache.deep_gemm.in_tmp"] is False and f["cache.deep_gemm.persisted"] is True
    assert f["cache.deep_gemm.path"] == str(home / ".deep_gemm")
    assert f["cache.vllm_torch_compile.present"] is True and f["cache.vllm_torch_compile.files"] == 1
    assert f["cache.triton.env_set"] is True and f["cache.triton.in_tmp"] is True
    assert f["cache.triton.present"] is True and f["cache.triton.persisted"] is False
    assert f["cache.cuda_compute_cache.present"] is False and f["cache.cuda_compute_cache.limit_bytes"] == 4294967296
    assert f["cache.inductor.path"].endswith("torchinductor_" + _user())
    assert f["cache.persisted_any"] is False
    # DG_JIT_CACHE_DIR moves DeepGEMM's cache (first of a ':' list): the default is no longer looked at
    moved = tmp_path / "home" / "dg-a"
    f = _facts(_run_script(script_params(env={**env, "DG_JIT_CACHE_DIR": f"{moved}:{tmp_path}/dg-b"})))
    assert f["cache.deep_gemm.env_set"] is True and f["cache.deep_gemm.present"] is False
    assert f["cache.deep_gemm.path"] == str(moved)


def _user() -> str:
    import getpass

    return getpass.getuser()


def test_a_cache_added_to_a_data_copy_is_found_without_code_change(tmp_path):
    raw = copy.deepcopy(RAW)
    raw["formats"]["tilelang_jit"] = {"library": "tilelang", "file_pattern": "*", "content": "TileLang kernels",
                                      "persisted": False, "sources": ["https://github.com/tile-ai/tilelang"]}
    raw["caches"].append({"name": "tilelang", "format": "tilelang_jit", "library": "tilelang", "kind": "jit",
                          "locations": [{"path": "${TILELANG_CACHE_DIR}"}, {"path": "~/.tilelang/cache"}],
                          "env_vars": ["TILELANG_CACHE_DIR"]})
    # ... and a tuned-config file of an existing format in a new place
    raw["caches"].append({"name": "my_triton_configs", "format": "triton_autotune", "library": "triton",
                          "kind": "autotune", "locations": [{"path": "{xdg_cache}/my-configs"}],
                          "collect": [{"glob": "*.autotune.json", "format": "triton_autotune"}]})
    specs = tuple(knowledge.parse_caches(raw).caches)
    home = tmp_path / "home"
    (home / ".tilelang" / "cache" / "k1").mkdir(parents=True)
    (home / ".tilelang" / "cache" / "k1" / "kernel.so").write_bytes(b"z" * 7)
    (home / ".cache" / "my-configs").mkdir(parents=True)
    (home / ".cache" / "my-configs" / "add.autotune.json").write_text(SAMPLES["triton_autotune"].read_text())
    env = {"HOME": str(home)}
    data = _run_script(script_params(env=env, specs=specs))
    f = _facts(data, specs)
    assert f["cache.tilelang.present"] is True and f["cache.tilelang.bytes"] == 7
    assert f["cache.tilelang.kind"] == "jit" and f["cache.tilelang.persisted"] is True
    assert f["cache.my_triton_configs.usable_files"] == 1 and f["cache.my_triton_configs.persisted"] is True
    assert f["cache.persisted_any"] is True
    rep = report_from_output(data, "NVIDIA H200", specs=specs)
    assert [x.ops for x in rep.files if x.cache == "my_triton_configs"] == [["add"]]
    # the variable moves it, as the data says
    data = _run_script(script_params(env={**env, "TILELANG_CACHE_DIR": str(tmp_path / "elsewhere")}, specs=specs))
    f = _facts(data, specs)
    assert f["cache.tilelang.env_set"] is True and f["cache.tilelang.present"] is False
    # without the entry, nothing looks there
    assert "cache.tilelang.present" not in _facts(_run_script(script_params(env=env)))


def test_moe_configs_for_another_device_are_listed_not_read(tmp_path):
    folder = tmp_path / "home" / "tuned"
    folder.mkdir(parents=True)
    for dev in ("NVIDIA_H200", "NVIDIA_B200"):
        (folder / f"E=128,N=384,device_name={dev}.json").write_text('{"1": {"BLOCK_SIZE_M": 16}}')
    data = _run_script(script_params(["NVIDIA H200 NVL"], env={"HOME": str(tmp_path / "home"),
                                                               "VLLM_TUNED_CONFIG_FOLDER": str(folder)}))
    loc = next(x for x in data["locations"] if x["cache"] == "vllm_fused_moe" and x["path"] == str(folder))
    assert loc["devices"] == ["NVIDIA_B200", "NVIDIA_H200"] and loc["env_var"] == "VLLM_TUNED_CONFIG_FOLDER"
    assert [Path(x["path"]).name for x in data["files"] if x["cache"] == "vllm_fused_moe"] == \
        ["E=128,N=384,device_name=NVIDIA_H200.json"]
    f = _facts(data, device="NVIDIA H200 NVL")
    assert f["cache.vllm_fused_moe.usable_files"] == 1 and f["cache.tuned_config_for_device"] is True


def test_an_unavailable_report_has_no_facts():
    assert AutotuneReport(available=False, reason="no python").facts() == {}
