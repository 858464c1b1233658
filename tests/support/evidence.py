"""Evidence builders for the analysis tests: probe models as the probes return them, wrapped as recorded Evidence."""

from __future__ import annotations

from orchestrator.evidence import Evidence
from orchestrator.probes.results import (
    AutotuneReport, CacheLocation, GpuInfo, GpuInventory, GpuLink, GpuTopology, KernelInventory, LibraryKernels,
    PythonEnv,
)

RTX = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"

SEED_OBS = {
    "model": {"name": "GLM-5-NVFP4", "quantization": "nvfp4", "num_layers": 78, "num_experts": 256, "top_k": 8,
              "hidden_size": 6144, "moe_intermediate_size": 2048},
    "runs": [{"tp": 8, "pp": 1, "ep": 1, "concurrency": 512, "total_tok_s": 2800},
             {"tp": 4, "pp": 2, "ep": 1, "concurrency": 512, "total_tok_s": 1318}],
    "gpu": {"power_w": 330, "power_limit_w": 600, "sm_occupancy": 0.98},
}


def ev(eid: str, model=None, *, tool: str = "probe", agent: str = "a1", data: dict | None = None, is_error=False,
       text: str = "") -> Evidence:
    payload = model.model_dump(mode="json") if model is not None else data
    return Evidence(id=eid, agent_id=agent, tool=tool, host="gpu-box", text=text or tool, data=payload,
                    is_error=is_error)


def inventory(name: str = RTX, cc: str = "12.0", n: int = 8, power=330.0, limit=600.0, util=98.0,
              nvlink: bool = False) -> GpuInventory:
    gpus = [GpuInfo(index=i, name=name, compute_cap=cc, power_draw_w=power, power_limit_w=limit,
                    utilization_pct=util) for i in range(n)]
    links = [GpuLink(a=i, b=j, kind="NV18" if nvlink else ("NODE" if (i < 4) == (j < 4) else "SYS"))
             for i in range(n) for j in range(n) if i != j]
    return GpuInventory(host="gpu-box", driver_version="580.95", cuda_version="13.0", gpus=gpus,
                        topology=GpuTopology(links=links, nvlink=nvlink))


def pyenv(**pkgs: str) -> PythonEnv:
    return PythonEnv(host="gpu-box", interpreter="/opt/venv/bin/python", python_version="3.12.3",
                     packages=pkgs or {"vllm": "0.11.0", "flashinfer-python": "0.6.6", "torch": "2.9.0"},
                     torch_cuda="12.9", torch_arch_list=["sm_90", "sm_100", "sm_120"])


def no_caches(device: str = RTX) -> AutotuneReport:
    return AutotuneReport(host="gpu-box", device_name=device, persisted_any=False, locations=[
        CacheLocation(format="vllm_flashinfer_autotune", path="/root/.cache/vllm/flashinfer_autotune_cache", exists=False),
        CacheLocation(format="flashinfer_jit", path="/root/.cache/flashinfer", exists=True, files=12),
    ])


def obs_ev(eid: str, raw: dict = SEED_OBS) -> Evidence:
    return ev(eid, tool="observations", data={"kind": "observations", "observations": raw})


def seed_evidence() -> list[Evidence]:
    return [
        ev("ev-1.1", inventory(), tool="gpu_inventory", agent="a1"),
        ev("ev-1.2", pyenv(), tool="python_env", agent="a1"),
        ev("ev-2.1", no_caches(), tool="autotune_caches", agent="a2"),
        ev("ev-2.2", KernelInventory(host="gpu-box", arch="sm_120", libraries=[LibraryKernels(
            name="flashinfer", version="0.6.6", tile_candidates=["128x128x128", "128x128x64", "256x128x64"])]),
           tool="kernel_inventory", agent="a2"),
        obs_ev("ev-3.1"),
    ]
