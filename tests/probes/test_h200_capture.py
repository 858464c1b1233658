"""The probes turn the raw inputs captured on a real H200 machine into the evidence they produced there.

tests/probes/data/h200_capture holds both (see its README): raw nvidia-smi output, distribution metadata, the cache
trees' small files, and the JSON each probe script printed on the machine.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

from orchestrator.hosts.local import LocalHost
from orchestrator.probes import scripts
from orchestrator.prongs.autotune.probe import report_from_output, script_params
from orchestrator.probes.gpu import collect_gpu_inventory, inventory_from_outputs
from orchestrator.prongs.kernel_research.probe import inventory_from_output
from orchestrator.probes.power import sampling_from_output
from orchestrator.probes.pyenv import env_from_output
from support.staged_host import stage_host

CAP = Path(__file__).parent / "data" / "h200_capture"
MACHINE_ROOT = "/tmp/investigate-capture"


def _probe(name: str) -> dict:
    return json.loads((CAP / "probe" / f"{name}.json").read_text())


def _run_script(name: str, params: dict, env: dict | None = None, pythonpath: Path | None = None) -> dict:
    import os

    e = dict(os.environ, **(env or {}))
    if pythonpath:
        e["PYTHONPATH"] = str(pythonpath)
    out = subprocess.run([sys.executable, "-", json.dumps(params)], input=scripts.load(name), text=True,
                         capture_output=True, env=e, check=True, timeout=60)
    return json.loads(out.stdout)


def test_raw_nvidia_smi_capture_is_two_nvlinked_h200s():
    inv = inventory_from_outputs((CAP / "nvidia-smi-q.xml").read_text(),
                                 (CAP / "nvidia-smi-query-probe.csv").read_text(),
                                 (CAP / "nvidia-smi-topo.txt").read_text())
    assert [(g.name, g.compute_cap, g.architecture) for g in inv.gpus] == [("NVIDIA H200", "9.0", "Hopper")] * 2
    assert inv.driver_version == "580.159.04" and inv.cuda_version == "13.0"
    assert inv.topology.nvlink and {g.power_limit_w for g in inv.gpus} == {700.0}
    assert {g.uuid for g in inv.gpus} == {"GPU-00000000-0000-0000-0000-000000000000"}


async def test_gpu_probe_over_a_host_serving_the_raw_capture_gives_the_same_inventory(tmp_path):
    s = stage_host(tmp_path, variant="h200x2", caches=())
    inv = await collect_gpu_inventory(s.wrap(LocalHost()))
    raw = inventory_from_outputs((CAP / "nvidia-smi-q.xml").read_text(),
                                 (CAP / "nvidia-smi-query-probe.csv").read_text(),
                                 (CAP / "nvidia-smi-topo.txt").read_text())
    assert inv.model_dump(exclude={"commands", "host"}) == raw.model_dump(exclude={"commands", "host"})


def test_pyenv_from_raw_metadata_matches_the_machine(tmp_path):
    machine = env_from_output(_probe("pyenv"))
    assert machine.packages["torch"] == "2.11.0" and machine.packages["triton"] == "3.6.0"
    assert machine.torch_cuda == "13.0" and {"sm_90", "sm_120"} <= set(machine.torch_arch_list)
    assert machine.virtualenv == "/opt/torch/.venv" and machine.python_version.startswith("3.12")
    # Rebuild the site-packages the probe read from the raw captures and run the same script over it here.
    site = tmp_path / "site"
    for meta in (CAP / "meta").glob("*.dist-info.METADATA"):
        d = site / meta.name.removesuffix(".METADATA")
        d.mkdir(parents=True)
        shutil.copy(meta, d / "METADATA")
    (site / "torch").mkdir()
    shutil.copy(CAP / "meta" / "torch_version.py", site / "torch" / "version.py")
    here = env_from_output(_run_script("pyenv", {"packages": ["torch", "triton"], "import_torch": False},
                                       pythonpath=site))
    assert {k: here.packages[k] for k in ("torch", "triton")} == {k: machine.packages[k] for k in ("torch", "triton")}
    assert here.torch_cuda == machine.torch_cuda
    dists = dict(line.split("==", 1) for line in (CAP / "meta" / "distributions.txt").read_text().splitlines())
    assert dists["torch"] == machine.packages["torch"] and dists["triton"] == machine.packages["triton"]


def _comparable(report, root: str) -> list[tuple]:
    return sorted(
        (f.format, f.path.replace(root, "<root>"), f.entries, f.fallback_entries, tuple(f.ops),
         json.dumps([e.model_dump() for e in f.sample], sort_keys=True), f.error)
        for f in report.files
    )


def test_autotune_caches_from_the_raw_cache_tree_match_the_machine(tmp_path):
    machine_data = _probe("caches")
    machine = report_from_output(machine_data, device_name="NVIDIA H200", compute_cap="9.0")
    assert {f.format for f in machine.files} == {"triton_autotune", "inductor", "tunableop"}
    assert machine.persisted_any
    tunable = next(f for f in machine.files if f.format == "tunableop")
    assert tunable.fallback_entries == tunable.entries == 2  # TunableOp ran but kept the Default solutions
    # Restore the captured small files and run the same inventory here.
    root = tmp_path / "investigate-capture"
    shutil.copytree(CAP / "files", root)
    env = {"HOME": str(tmp_path / "home"), "TRITON_CACHE_DIR": str(root / "triton"),
           "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"),
           "PYTORCH_TUNABLEOP_FILENAME": str(root / "tunableop" / "tunableop_results%d.csv")}
    data = _run_script("caches", script_params(["NVIDIA H200"]), env=env)
    data["packages"] = machine_data["packages"]  # versions are the machine's, not this one's
    here = report_from_output(data, device_name="NVIDIA H200", compute_cap="9.0")
    assert _comparable(here, str(root)) == _comparable(machine, MACHINE_ROOT)
    # the capture predates the JIT caches caches.yaml added since: compare the locations both inventories have
    old = {loc.format for loc in machine.locations}
    assert {(loc.format, loc.exists, loc.env_var) for loc in here.locations if loc.format in old} == \
        {(loc.format, loc.exists, loc.env_var) for loc in machine.locations}


def test_machine_kernel_inventory_and_power_samples_parse():
    k = inventory_from_output(_probe("kernels"))
    torch = next(lib for lib in k.libraries if lib.name == "torch")
    assert k.cuobjdump and {"sm_90", "sm_90a", "sm_120"} <= set(torch.compiled_archs)
    p = sampling_from_output(_probe("sampler"), 3.0, 0.5)
    assert [s.gpu for s in p.summary] == [0, 1] and {s.power_limit_w for s in p.summary} == {700.0}
    assert all(s.samples >= 6 for s in p.summary)
