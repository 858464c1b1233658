"""The probe tools on a run's host: compact text, the model as data, untrusted, errors as tool errors."""

from orchestrator.inputs import RunInputs
from orchestrator.hosts.base import HostLost
from orchestrator.hosts.local import LocalHost
from orchestrator.probes.results import parse_probe
from orchestrator.settings import Settings
from orchestrator.tools.base import execute
from orchestrator.tools.registry import default_registry
from orchestrator.tools.mock import MockToolContext
from support.staged_host import stage_host

OBS = {"model": {"num_experts": 256, "moe_intermediate_size": 2048}, "runs": [{"tp": 8, "concurrency": 512}],
       "gpu": {"power_w": 330, "power_limit_w": 600, "sm_occupancy": 0.98}}


REGISTRY = default_registry()


def _ctx(host, **inputs) -> MockToolContext:
    return MockToolContext(host, inputs=RunInputs(question="why slow?", **inputs), settings=Settings(power_sample_s=0.4),
                           agent_id="autotune")


async def _call(ctx, name, args=None):
    return (await execute(REGISTRY.get(name), name, args or {}, ctx)).output


async def test_seed_case_through_the_tools(tmp_path):
    s = stage_host(tmp_path)
    log = tmp_path / "server.log"
    log.write_text("Using default MoE config. Performance might be sub-optimal! Config file not found at /x\n")
    ctx = _ctx(s.wrap(LocalHost()), observations=OBS, logs=[str(log)])
    gpu = await _call(ctx, "gpu_inventory")
    assert gpu.untrusted and gpu.host == "local" and not gpu.is_error
    assert "8 GPU(s)" in gpu.text and "330 W of 600 W" in gpu.text and "PCIe only" in gpu.text
    assert parse_probe(gpu.data).count == 8
    power = await _call(ctx, "power_sample", {"interval_s": 0.2})
    assert "mean 330 W" in power.text and parse_probe(power.data).summary[0].power_limit_w == 600
    caches = await _call(ctx, "autotune_caches")
    report = parse_probe(caches.data)
    assert report.expert_shape == {"E": [256], "N": [256, 2048]}  # N = 2048 / TP8, and unsplit
    assert "persisted autotune results: NONE" in caches.text and "fused-MoE tuned config for this device" in caches.text
    assert report.tuned_config_for_device is False
    env = await _call(ctx, "python_env")
    assert "flashinfer-python 0.5.3" in env.text
    kernels = await _call(ctx, "kernel_inventory")
    assert "tiles 128x128x128" in kernels.text
    logs = await _call(ctx, "log_scan")
    assert logs.data["matches"] and ":1 [" in logs.text


async def test_log_scan_without_logs_and_a_lost_host_are_tool_errors(tmp_path):
    s = stage_host(tmp_path)
    out = await _call(_ctx(s.wrap(LocalHost())), "log_scan")
    assert out.is_error and "--log" in out.text

    class Lost:
        name = "gpu-box"

        async def run(self, argv, **kw):
            raise HostLost("connection to gpu-box lost")

    out = await _call(_ctx(Lost()), "gpu_inventory")
    assert out.is_error and "HostLost" in out.text and "gpu-box" in out.text
    out = await _call(_ctx(None), "python_env")
    assert out.is_error and "no host" in out.text


async def test_no_gpu_host_is_reported_not_failed(tmp_path):
    s = stage_host(tmp_path, variant="no-nvidia-smi")
    out = await _call(_ctx(s.wrap(LocalHost())), "gpu_inventory")
    assert not out.is_error and "unavailable" in out.text and out.data["available"] is False


async def test_summarize_renders_every_probe_kind(tmp_path):
    from orchestrator.probes import run_probes
    from orchestrator.render.summaries import summarize

    s = stage_host(tmp_path)
    for m in await run_probes(s.wrap(LocalHost()), RunInputs(question="q"), Settings(power_sample_s=0.2)):
        assert summarize(m).strip()
