"""Probe edge cases (scripts, parsers, persisted_any)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from orchestrator.probes import scripts
from orchestrator.prongs.autotune.probe import report_from_output, script_params
from orchestrator.prongs.autotune.cache_formats import CacheContext, parse_cache_file, parse_moe_config_name
from orchestrator.probes.gpu import inventory_from_outputs

DATA = Path(__file__).parent / "data"


def _run(name, params, prelude=""):
    """Run a probe script as the remote side does (`python - PARAMS`), optionally after a monkeypatching prelude."""
    code = scripts.load(name)
    if prelude:
        code = prelude + "\n" + code
    out = subprocess.run([sys.executable, "-", json.dumps(params)], input=code, text=True,
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_logscan_survives_a_file_that_cannot_be_read():
    # /proc/self/mem is a regular file whose read fails (EIO): the scan must go on, not die.
    good = DATA / "h200_capture/capture.log"
    data = _run("logscan", {"paths": ["/proc/self/mem", str(good)], "signatures": [{"id": "x", "pattern": "nvidia"}]})
    assert str(good) in data["files"] and "/proc/self/mem" in data["missing"]


def test_caches_script_survives_unlistable_cache_dirs(tmp_path):
    idir = tmp_path / "inductor"
    (idir / "sub").mkdir(parents=True)
    fi = tmp_path / "home" / ".cache" / "flashinfer" / "0.4.1"
    fi.mkdir(parents=True)
    prelude = (
        "import os\n_real_listdir = os.listdir\n"
        "def _deny(p='.'):\n"
        "    if str(p).rstrip('/') in (%r, %r):\n"
        "        raise PermissionError(13, 'Permission denied', p)\n"
        "    return _real_listdir(p)\n"
        "os.listdir = _deny\n" % (str(idir), str(fi.parent))
    )
    data = _run("caches", script_params(env={"HOME": str(tmp_path / "home"), "TORCHINDUCTOR_CACHE_DIR": str(idir)}),
                prelude)
    assert any(loc["format"] == "inductor" for loc in data["locations"])


def test_discover_keeps_the_virtualenv_interpreter_path(tmp_path):
    # /proc/PID/exe resolves the venv's python symlink to the base interpreter, which does not see the venv.
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    py = venv / "python3"
    py.symlink_to(os.path.realpath(sys.executable))
    proc = subprocess.Popen([str(py), "-c", "import time; time.sleep(60)", "-m", "vllm.entrypoints.openai.api_server"])
    try:
        time.sleep(0.3)
        data = _run("discover", {"env_keys": []})
        mine = [s for s in data["servers"] if s["pid"] == proc.pid]
        assert mine and mine[0]["exe"] == str(py)
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait()


def test_xml_index_is_nvidia_smi_order_not_the_device_minor_number():
    # In a container given only host GPU 3, nvidia-smi says index 0 but Minor Number 3.
    xml = (DATA / "h200/nvidia-smi-q.xml").read_text().replace("<minor_number>0</minor_number>",
                                                               "<minor_number>3</minor_number>")
    assert "<minor_number>3</minor_number>" in xml
    inv = inventory_from_outputs(xml, (DATA / "h200/nvidia-smi-query.csv").read_text(), None)
    assert inv.gpus[0].index == 0 and inv.gpus[0].compute_cap == "9.0"


def test_sglang_per_channel_quant_config_name_parses():
    name = "E=128,N=768,device_name=NVIDIA_H200,dtype=int8_w8a8,per_channel_quant=True.json"
    shape = parse_moe_config_name(name)
    assert shape is not None and shape["device_name"] == "NVIDIA_H200" and shape["dtype"] == "int8_w8a8"
    down = parse_moe_config_name("E=128,N=768,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128, 128],"
                                 "per_channel_quant=True_down.json")
    assert down is not None and down["block_shape"] == [128, 128] and down["part"] == "down"


def test_vllm_maps_the_h200_family_to_nvidia_h200_configs(tmp_path):
    ctx = CacheContext(device_name="NVIDIA H200 NVL")
    name = "E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8.json"
    assert parse_cache_file("vllm_fused_moe", name, "{}", ctx).matches_device is True
    # SGLang does not map: its lookup uses the exact name.
    assert parse_cache_file("sglang_fused_moe", name, "{}", ctx).matches_device is False
    assert parse_cache_file("vllm_fused_moe", name, "{}", CacheContext(device_name="NVIDIA GH200 480GB")
                            ).matches_device is False
    # and the caches script sends vLLM's NVIDIA_H200 file for an H200 NVL
    folder = tmp_path / "tuned"
    folder.mkdir()
    (folder / name).write_text('{"1": {"BLOCK_SIZE_M": 16}}')
    data = _run("caches", script_params(["NVIDIA H200 NVL"],
                                        env={"HOME": str(tmp_path), "VLLM_TUNED_CONFIG_FOLDER": str(folder)}))
    assert [f["path"] for f in data["files"] if f["format"] == "vllm_fused_moe"] == [str(folder / name)]
    rep = report_from_output(data, "NVIDIA H200 NVL")
    assert rep.tuned_config_for_device is True


def test_an_empty_autotune_cache_is_not_a_persisted_result():
    empty = json.dumps({"_metadata": {"flashinfer_version": "0.4.1", "gpu": "NVIDIA H200"}})
    data = {"files": [{"format": "flashinfer_autotune", "path": "/c/fi.json", "size": len(empty), "content": empty}],
            "locations": [], "packages": {}}
    assert report_from_output(data, "NVIDIA H200").persisted_any is False
    data["files"][0]["content"] = json.dumps({"_metadata": {"gpu": "NVIDIA H200"}, "('op', 'R', ((8, 8),))": ["R", 3]})
    assert report_from_output(data, "NVIDIA H200").persisted_any is True


def test_kernels_script_survives_an_unlistable_flashinfer_jit_cache(tmp_path):
    jit = tmp_path / ".cache" / "flashinfer"
    (jit / "0.4.1" / "120a" / "cached_ops").mkdir(parents=True)
    prelude = (
        "import os\n_real_listdir = os.listdir\n"
        "def _deny(p='.'):\n"
        "    if str(p).rstrip('/').endswith('cached_ops'):\n"
        "        raise PermissionError(13, 'Permission denied', p)\n"
        "    return _real_listdir(p)\n"
        "os.listdir = _deny\n"
    )
    data = _run("kernels", {"arch": "sm_120", "libraries": [], "home": str(tmp_path)}, prelude)
    assert data["flashinfer_jit"]["dirs"] == [{"dir": "0.4.1/120a", "cached_ops": 0}]


class _NoPythonHost:
    """A host without python3 whose logs cannot all be read."""

    name = "nopython"

    async def run(self, argv, **kw):
        from orchestrator.hosts.base import CommandResult
        if argv[:2] == ["/bin/sh", "-c"]:  # the resolver (hosts/resolve.py): sh answers, python3 is missing
            kinds = {"/var/log": "d"}
            return CommandResult(argv=list(argv), exit_code=0,
                                 stdout="".join(f"{kinds.get(p, 'f')} {p}\0" for p in argv[4:]))
        return CommandResult(argv=list(argv), exit_code=127, stderr="python3: not found")

    async def read_file(self, path, *, max_bytes=1_000_000):
        if path == "/var/log/secret.log":
            raise PermissionError(13, "Permission denied", path)
        if path == "/var/log":
            raise IsADirectoryError(21, "Is a directory", path)
        return b"[AutoTuner]: No tuned config covers this shape, tactic=-1\n"


async def test_log_scan_without_python_lists_unreadable_logs_instead_of_failing():
    from orchestrator.probes.logscan import scan_logs
    sigs = [{"id": "fallback", "pattern": r"tactic=-1"}]
    scan = await scan_logs(_NoPythonHost(), ["/var/log/secret.log", "/var/log", "/var/log/vllm.log"], sigs)
    assert scan.files == ["/var/log/vllm.log"] and len(scan.matches) == 1
    assert scan.missing == ["/var/log/secret.log"]
    assert list(scan.refused) == ["/var/log"]  # a directory is no log (issue 23: log_scan reads log files only)


def test_scripts_survive_non_utf8_bytes_in_torch_version_py(tmp_path):
    site = tmp_path / "site"
    (site / "torch-2.11.0.dist-info").mkdir(parents=True)
    (site / "torch-2.11.0.dist-info" / "METADATA").write_text("Name: torch\nVersion: 2.11.0\n\n")
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_bytes(b"# \xff\xfe built on h\xf6st\n__version__ = '2.11.0'\ncuda = '13.0'\n")
    env = dict(os.environ, PYTHONPATH=str(site))
    for name, params in (("pyenv", {"packages": ["torch"], "import_torch": False}),
                         ("caches", {"env": {"HOME": str(tmp_path)}})):
        out = subprocess.run([sys.executable, "-", json.dumps(params)], input=scripts.load(name), text=True,
                             capture_output=True, timeout=60, env=env)
        assert out.returncode == 0, out.stderr
        data = json.loads(out.stdout)
        cuda = data["torch_version_py"]["cuda"] if name == "pyenv" else data["packages"]["torch_cuda"]
        assert cuda == "13.0"
