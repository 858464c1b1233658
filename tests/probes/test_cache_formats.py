"""Each cache format's parser, on fixtures built from the owning library's source or real files."""

from pathlib import Path

from orchestrator.prongs.autotune.cache_formats import CacheContext, parse_cache_file, parse_moe_config_name

DATA = Path(__file__).parent / "data"
RTX = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"


def test_flashinfer_autotune_counts_fallback_and_flags_metadata_mismatch():
    ctx = CacheContext(device_name=RTX, packages={"flashinfer-python": "0.5.3"}, torch_cuda="12.8")
    cf = parse_cache_file("flashinfer_autotune", "x.json", (DATA / "caches/flashinfer_autotune.json").read_text(), ctx)
    assert cf.entries == 3 and cf.fallback_entries == 1
    assert cf.ops == ["fp4_gemm", "trtllm::fused_moe::gemm1"]
    assert cf.sample[0].fallback and cf.sample[0].runner == "CutlassFp4GemmRunner"
    assert cf.sample[0].shape.startswith("((16, 3584)")
    assert cf.device_name == "NVIDIA B200" and cf.matches_device is False
    assert any(m.startswith("flashinfer_version") for m in cf.metadata_mismatch)
    assert any(m.startswith("gpu") for m in cf.metadata_mismatch)
    assert not any(m.startswith("cuda_version") for m in cf.metadata_mismatch)


def test_flashinfer_wildcard_metadata_matches_anything():
    text = '{"_metadata": {"flashinfer_version": "*", "gpu": "*"}, "(\'op\', \'R\', ((1,),))": ["R", 3]}'
    cf = parse_cache_file("flashinfer_autotune", "w.json", text, CacheContext(device_name=RTX,
                                                                               packages={"flashinfer-python": "9"}))
    assert cf.metadata_mismatch == [] and cf.matches_device is None and cf.entries == 1


def test_trtllm_cache_matches_device_and_capability_and_counts_fallback():
    ctx = CacheContext(device_name=RTX, compute_cap="12.0", packages={"tensorrt-llm": "1.0.0"})
    cf = parse_cache_file("trtllm_autotuner", "t.json", (DATA / "caches/trtllm_autotuner.json").read_text(), ctx)
    assert cf.matches_device is True and cf.metadata_mismatch == []
    assert (cf.entries, cf.fallback_entries) == (2, 1)
    other = parse_cache_file("trtllm_autotuner", "t.json", (DATA / "caches/trtllm_autotuner.json").read_text(),
                             CacheContext(device_name="NVIDIA H200", compute_cap="9.0",
                                          packages={"tensorrt-llm": "1.1.0"}))
    assert len(other.metadata_mismatch) == 3


def test_fused_moe_config_name_and_body():
    name = "E=256,N=256,device_name=NVIDIA_RTX_PRO_6000_Blackwell_Workstation_Edition,dtype=fp8_w8a8,block_shape=[128,128].json"
    assert parse_moe_config_name(name) == {"E": 256, "N": 256, "device_name":
                                           "NVIDIA_RTX_PRO_6000_Blackwell_Workstation_Edition",
                                           "dtype": "fp8_w8a8", "block_shape": [128, 128]}
    assert parse_moe_config_name("E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json")["N"] == 14336
    assert parse_moe_config_name("E=64,N=1280,device_name=NVIDIA_H200_down.json")["part"] == "down"
    assert parse_moe_config_name("README.md") is None
    cf = parse_cache_file("vllm_fused_moe", f"/cfg/{name}", (DATA / "caches" / name).read_text(),
                          CacheContext(device_name=RTX, packages={"triton": "3.5.0"}))
    assert cf.matches_device is True and cf.entries == 4 and cf.expert_shape["E"] == 256
    assert cf.metadata == {"triton_version": "3.4.0"} and cf.metadata_mismatch
    maxq = parse_cache_file("vllm_fused_moe", name, None, CacheContext(
        device_name="NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition"))
    assert maxq.matches_device is False  # the exact device string matters


def test_real_triton_autotune_file_picks_fastest_config():
    cf = parse_cache_file("triton_autotune", "/c/h/add.autotune.json", (DATA / "h200/add.autotune.json").read_text(),
                          CacheContext())
    assert cf.ops == ["add"] and cf.metadata["configs_tried"] == 6
    assert cf.sample[0].tactic["kwargs"] == {"BLOCK": 256} and cf.sample[0].tactic["num_warps"] == 2
    assert cf.metadata["key"][0] == 1048576


def test_real_inductor_best_config_and_tunableop_csv():
    best = next((DATA / "h200_capture/files/inductor").rglob("*.best_config"))
    cf = parse_cache_file("inductor", str(best), best.read_text(), CacheContext())
    assert cf.entries == 1 and cf.sample[0].tactic["num_warps"] == 16
    csv = DATA / "h200_capture/files/tunableop/tunableop_results0.csv"
    cf = parse_cache_file("tunableop", str(csv), csv.read_text(), CacheContext(packages={"torch": "2.11.0"}))
    assert cf.metadata == {"PT_VERSION": "2.11.0"} and cf.metadata_mismatch == []
    assert (cf.entries, cf.fallback_entries) == (2, 2)  # solution "Default": nothing was tuned
    assert cf.ops == ["GemmTunableOp_BFloat16_NN"]


def test_broken_json_is_an_error_on_the_file_not_an_exception():
    cf = parse_cache_file("flashinfer_autotune", "/x.json", "{not json", CacheContext())
    assert cf.error.startswith("not valid JSON")
    cf = parse_cache_file("trtllm_autotuner", "/y.json", "[1, 2]", CacheContext())
    assert "cache_data" in cf.error
