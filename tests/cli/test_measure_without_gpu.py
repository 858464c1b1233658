"""Issue 30 item 1: `--measure` on a host with no GPU says so without importing torch (which took 43 s and 550 MB to
find nothing). The investigation's measurement tools ask the scripts for a GPU (`require_gpu`); `probe --gemm/--comm`
keep their CPU sanity runs. A stand-in `torch` package on the interpreter's path records any import of it."""

from __future__ import annotations

import sys

import pytest

from orchestrator.hosts.local import LocalHost
from orchestrator.prongs.tensor_core_specs.probe import run_comm_probe, run_gemm_probe
from orchestrator.probes.scripts import load

pytestmark = pytest.mark.skipif(any(p.startswith(("nvidia", "kfd", "dxg")) for p in __import__("os").listdir("/dev")),
                                reason="this machine has a GPU device file")


@pytest.fixture
def torch_marker(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "torch"
    pkg.mkdir(parents=True)
    marker = tmp_path / "torch-was-imported"
    (pkg / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\nraise ImportError('stand-in torch')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    return marker


async def test_the_gemm_probe_without_a_gpu_says_so_and_never_imports_torch(torch_marker):
    sweep = await run_gemm_probe(LocalHost(), python=sys.executable, budget_s=10, params={"require_gpu": True})
    assert sweep.available is False
    assert "no GPU on this host" in (sweep.reason or "") and "torch was not imported" in (sweep.reason or "")
    assert not torch_marker.exists()


async def test_the_all_reduce_probe_without_a_gpu_says_so_and_never_imports_torch(torch_marker):
    sweep = await run_comm_probe(LocalHost(), python=sys.executable, budget_s=10, params={"require_gpu": True})
    assert sweep.available is False and "no GPU on this host" in (sweep.reason or "")
    assert not torch_marker.exists()


async def test_without_require_gpu_the_script_still_reaches_torch(torch_marker):
    # `probe --gemm` on a CPU host (tests, CI) still imports torch, here the stand-in that refuses
    sweep = await run_gemm_probe(LocalHost(), python=sys.executable, budget_s=10, params={"cpu_sanity": True})
    assert torch_marker.exists() and "torch does not import" in (sweep.reason or "")


async def test_the_investigation_tools_ask_for_a_gpu(torch_marker, tmp_path):
    from orchestrator.api import investigate

    result = await investigate("why is the GEMM slow?", offline=True, measure=True, transcript=tmp_path / "t.jsonl")
    sweeps = [e for e in result.events if getattr(e, "tool", None) in ("gemm_benchmark", "comm_benchmark")
              and getattr(e, "type", "") == "tool_result"]
    assert sweeps, "the offline plan runs the measurement tools with --measure"
    assert all("torch was not imported" in e.content for e in sweeps)
    assert not torch_marker.exists()


def test_the_device_check_is_in_the_shared_prelude_of_both_scripts():
    assert all("def gpu_device_files" in load(s) for s in ("gemm_bench", "comm_bench"))
