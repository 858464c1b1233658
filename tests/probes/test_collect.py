"""collect_* probes against staged GPU hosts through the real LocalHost."""

import pytest

from orchestrator.hosts.base import CommandResult, HostLost
from orchestrator.prongs.autotune.probe import collect_autotune_caches
from orchestrator.probes.gpu import collect_gpu_inventory
from orchestrator.prongs.kernel_research.probe import collect_kernel_inventory
from orchestrator.probes.logscan import scan_logs
from orchestrator.probes.power import sample_power
from orchestrator.probes.pyenv import collect_python_env
from orchestrator.knowledge import log_signatures
from support.staged_host import ALL_CACHES, RTX_PRO_6000, CountingHost


async def test_seed_case_gpu_inventory_is_8_rtx_pro_6000_on_pcie(staged):
    _, host = staged()
    inv = await collect_gpu_inventory(host)
    assert inv.available and inv.count == 8
    assert {g.name for g in inv.gpus} == {RTX_PRO_6000}
    assert {g.compute_cap for g in inv.gpus} == {"12.0"} and {g.architecture for g in inv.gpus} == {"Blackwell"}
    assert {(g.power_draw_w, g.power_limit_w, g.utilization_pct) for g in inv.gpus} == {(330.0, 600.0, 98.0)}
    assert not inv.topology.nvlink and len(inv.topology.links) == 28
    assert inv.topology.numa_affinity[7] == "1"


async def test_seed_case_power_sampling_shows_330_of_600_watts(staged):
    _, host = staged()
    p = await sample_power(host, duration_s=0.6, interval_s=0.3)
    assert p.available and len(p.summary) == 8
    s = p.summary[0]
    assert (s.mean_power_w, s.power_limit_w, s.mean_utilization_pct) == (330.0, 600.0, 98.0)
    assert s.samples >= 2


async def test_seed_case_flashinfer_without_persisted_autotune_results(staged):
    s, host = staged()
    r = await collect_autotune_caches(host, device_name=RTX_PRO_6000, expert_shape={"E": [256], "N": [256]})
    assert r.available and r.persisted_any is False and "no persisted" in r.reason
    jit = next(loc for loc in r.locations if loc.format == "flashinfer_jit")
    assert jit.exists and jit.subdirs == ["0.5.3/120a"] and jit.files == 3
    vllm = next(loc for loc in r.locations if loc.format == "vllm_fused_moe")
    assert RTX_PRO_6000.replace(" ", "_") in vllm.devices and vllm.files == 4
    # a Workstation config exists for E=128 only, not for the observed E=256, N=256
    assert r.tuned_config_for_device is False
    assert [f.expert_shape["E"] for f in r.files if f.format == "vllm_fused_moe"] == [128]


async def test_every_cache_format_is_found_with_env_vars_that_moved_them(staged):
    s, host = staged(caches=ALL_CACHES)
    r = await collect_autotune_caches(host, device_name=RTX_PRO_6000, expert_shape={"E": [256], "N": [256]})
    formats = {f.format for f in r.files}
    assert formats == {"flashinfer_autotune", "trtllm_autotuner", "vllm_fused_moe", "vllm_flashinfer_autotune",
                       "triton_autotune", "inductor", "tunableop"}
    assert r.persisted_any and r.tuned_config_for_device is True
    assert {"TLLM_AUTOTUNER_CACHE_PATH", "VLLM_TUNED_CONFIG_FOLDER", "PYTORCH_TUNABLEOP_FILENAME",
            "TORCHINDUCTOR_CACHE_DIR"} <= set(r.env)
    moved = {loc.format: loc.env_var for loc in r.locations if loc.env_var}
    assert moved["trtllm_autotuner"] == "TLLM_AUTOTUNER_CACHE_PATH" and moved["tunableop"] == "PYTORCH_TUNABLEOP_FILENAME"
    fi = next(f for f in r.files if f.format == "flashinfer_autotune")
    assert fi.fallback_entries == 1 and any("flashinfer_version" in m for m in fi.metadata_mismatch)
    vfi = next(loc for loc in r.locations if loc.format == "vllm_flashinfer_autotune")
    assert vfi.subdirs == ["0.5.3/120a"] and vfi.files == 1


async def test_a_10000_file_cache_dir_is_inventoried_in_one_round_trip(staged, tmp_path):
    s, host = staged(caches=())
    triton = s.home / ".triton" / "cache"
    for i in range(10_000):
        d = triton / f"H{i // 100:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"k{i}.cubin").write_bytes(b"x")
    (triton / "H000" / "add.autotune.json").write_text('{"key": [1], "configs_timings": [[{"num_warps": 4}, [0.1]]]}')
    counting = CountingHost(host)
    r = await collect_autotune_caches(counting, python="python3", device_name=RTX_PRO_6000)
    assert len(counting.calls) == 3  # the named interpreter verified (issue 15), discovery, the one inventory
    loc = next(loc for loc in r.locations if loc.format == "triton_autotune")
    assert loc.files == 10_001 and [f.ops for f in r.files if f.format == "triton_autotune"] == [["add"]]


async def test_python_env_reads_dist_info_and_torch_arch_list(staged):
    s, host = staged()
    env = await collect_python_env(host)
    assert env.available and env.interpreter_source == "python3 on PATH"
    assert env.packages["flashinfer-python"] == "0.5.3" and env.packages["torch"] == "2.9.0+cu128"
    assert env.packages["vllm"] == "0.11.2" and "sglang" not in env.packages
    assert env.torch_cuda == "12.8" and "sm_120" in env.torch_arch_list


async def test_python_env_explicit_interpreter_wins_and_missing_one_is_unavailable(staged):
    s, host = staged()
    env = await collect_python_env(host, python=s.python)
    assert env.interpreter_source == "--python" and env.packages["torch"]
    gone = await collect_python_env(host, python="/nonexistent/python3")
    assert not gone.available and "/nonexistent/python3" in gone.reason


async def test_kernel_inventory_finds_sm120_tiles_backends_and_jit_dir(staged):
    _, host = staged()
    k = await collect_kernel_inventory(host)
    assert k.arch == "sm_120"
    fi = next(lib for lib in k.libraries if lib.name == "flashinfer")
    assert fi.tile_candidates == ["128x128x128", "128x128x256", "256x128x128"]
    assert fi.backends_for_arch == ["_cutlass_gemm_fp4_requirement"]
    assert fi.jit_arch_dirs == ["0.5.3/120a (3 cached ops)"]


async def test_no_nvidia_smi_is_a_finding_not_a_crash(staged):
    _, host = staged("no-nvidia-smi")
    inv = await collect_gpu_inventory(host)
    assert not inv.available and "not on PATH" in inv.reason
    p = await sample_power(host, duration_s=0.2, interval_s=0.1)
    assert not p.available and "no NVIDIA GPU" in p.reason
    k = await collect_kernel_inventory(host)
    assert k.available and k.arch is None and "unknown" in k.reason


async def test_no_devices_found_is_a_finding(staged):
    _, host = staged("no-devices")
    inv = await collect_gpu_inventory(host)
    assert not inv.available and inv.reason == "nvidia-smi: No devices were found"


@pytest.mark.parametrize("variant,name,cc,nvlink", [("h200", "NVIDIA H200", "9.0", False),
                                                    ("h200x2", "NVIDIA H200", "9.0", True),
                                                    ("b200x8", "NVIDIA B200", "10.0", True),
                                                    ("rtx-5090", "NVIDIA GeForce RTX 5090", "12.0", False)])
async def test_other_gpu_variants(staged, variant, name, cc, nvlink):
    _, host = staged(variant)
    inv = await collect_gpu_inventory(host)
    assert {g.name for g in inv.gpus} == {name} and {g.compute_cap for g in inv.gpus} == {cc}
    assert inv.topology.nvlink is nvlink


async def test_log_scan_reports_line_numbers_and_missing_files(staged, tmp_path):
    _, host = staged()
    log = tmp_path / "server.log"
    log.write_text("INFO start\nWARNING Using default MoE config. Performance might be sub-optimal! Config file not "
                   "found at /x/E=256,N=256,device_name=NVIDIA_RTX_PRO_6000.json\nINFO ok\n"
                   "[AutoTuner]: No tuned config covers shape (16, 7168); using fallback tactic=-1\n")
    scan = await scan_logs(host, [str(log), str(tmp_path / "gone.log")], log_signatures())
    assert scan.files == [str(log)] and scan.missing == [str(tmp_path / "gone.log")] and scan.lines_scanned == 4
    found = {(m.line_no, m.signature_id) for m in scan.matches}
    assert (2, "vllm-default-moe-config") in found and (4, "flashinfer-autotuner-no-tuned-config") in found
    assert {line for line, _ in found} == {2, 4}


class LostHost:
    name = "gpu-box"

    async def run(self, argv, **kw) -> CommandResult:
        raise HostLost("connection to gpu-box dropped and one reconnect failed")


async def test_a_lost_host_propagates_host_error():
    with pytest.raises(HostLost):
        await collect_gpu_inventory(LostHost())
    with pytest.raises(HostLost):
        await collect_autotune_caches(LostHost(), device_name="x")
