"""The kernel-inventory and torch-arch rules, each with a positive and a negative case."""

from __future__ import annotations

from support.evidence import ev, inventory, pyenv
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.analysis.rules import kernel_inventory, torch_arch
from orchestrator.probes.results import KernelInventory, LibraryKernels


def kernels(**lib) -> KernelInventory:
    return KernelInventory(host="gpu-box", arch="sm_120", libraries=[LibraryKernels(name="flashinfer", version="0.5.3", **lib)])


def test_library_without_binaries_for_this_arch_is_a_finding():
    view = EvidenceView([ev("ev-1.1", inventory(), tool="gpu_inventory"),
                         ev("ev-1.2", kernels(compiled_archs=["sm_90a", "sm_100a"]), tool="kernel_inventory")])
    found = {f.id: f for f in kernel_inventory(view)}
    assert "kernels-missing-flashinfer" in found and found["kernels-missing-flashinfer"].evidence == ["ev-1.2"]
    assert "sm_120" in found["kernels-missing-flashinfer"].claim


def test_library_with_binaries_for_this_arch_is_no_finding():
    view = EvidenceView([ev("ev-1.1", inventory(), tool="gpu_inventory"),
                         ev("ev-1.2", kernels(compiled_archs=["sm_100a", "sm_120a"]), tool="kernel_inventory")])
    assert [f.id for f in kernel_inventory(view)] == []


def test_tile_candidates_are_counted_for_a_gpu_with_a_peer_architecture():
    view = EvidenceView([ev("ev-1.1", inventory(), tool="gpu_inventory"),
                         ev("ev-1.2", kernels(tile_candidates=["128x128x128", "128x128x256"]), tool="kernel_inventory")])
    (f,) = kernel_inventory(view)
    assert f.id == "kernels-tiles-flashinfer" and "2 tile candidates" in f.claim


def test_torch_without_this_gpus_arch_is_a_finding():
    env = pyenv()
    env.torch_arch_list = ["sm_80", "sm_90"]
    view = EvidenceView([ev("ev-1.1", inventory(), tool="gpu_inventory"), ev("ev-1.2", env, tool="python_env")])
    (f,) = torch_arch(view)
    assert f.id == "torch-arch-missing" and set(f.evidence) == {"ev-1.1", "ev-1.2"} and "sm_120" in f.claim


def test_torch_with_this_gpus_arch_or_no_gpu_is_no_finding():
    view = EvidenceView([ev("ev-1.1", inventory(), tool="gpu_inventory"), ev("ev-1.2", pyenv(), tool="python_env")])
    assert torch_arch(view) == []
    env = pyenv()
    env.torch_arch_list = ["sm_80"]
    assert torch_arch(EvidenceView([ev("ev-1.2", env, tool="python_env")])) == []


def test_a_build_for_an_older_minor_of_the_same_major_runs_on_ada():
    """Binary compatibility: sm_80/sm_86 cubins run on sm_89 (L4, L40S, RTX 4090); PTX runs on any later capability;
    an arch-specific sm_90a only on 9.0 (CUDA C++ Programming Guide, 'Binary Compatibility', 'PTX Compatibility')."""
    from orchestrator.analysis.rules import runs_on

    stock = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    assert runs_on(stock, "8.9") is True and runs_on(stock, "8.6") is True
    assert runs_on(stock, "12.0") is False  # no Blackwell cubin, no PTX
    assert runs_on(stock + ["compute_90"], "12.0") is True  # PTX JIT
    assert runs_on(["sm_90a"], "10.0") is False and runs_on(["sm_90a"], "9.0") is True
    assert runs_on(["sm_100"], "8.9") is False and runs_on(["weird"], "8.9") is None
