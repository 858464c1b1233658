"""`run_probes` (for `investigate probe`) and the interpreter choice."""

from orchestrator.inputs import RunInputs
from orchestrator.hosts.local import LocalHost
from orchestrator.probes import run_probes
from orchestrator.probes.interpreter import choose
from orchestrator.settings import Settings
from support.staged_host import stage_host

SERVER = {"pid": 4242, "kind": "vllm", "exe": "/opt/venv/bin/python3.12", "cmdline": "python -m vllm.entrypoints",
          "env": {"TRITON_CACHE_DIR": "/data/triton"}, "cwd": "/srv"}


def test_interpreter_choice_prefers_flag_then_server_then_python3():
    found = {"servers": [SERVER], "python3": "/usr/bin/python3"}
    flag = choose("/my/python", found)
    assert (flag.path, flag.source) == ("/my/python", "--python") and flag.server_env == SERVER["env"]
    server = choose(None, found)
    assert (server.path, server.source) == ("/opt/venv/bin/python3.12", "vllm process 4242")
    assert server.seen == ["/opt/venv/bin/python3.12", "/usr/bin/python3"] and server.server_cwds == ["/srv"]
    plain = choose(None, {"servers": [], "python3": "/usr/bin/python3"})
    assert (plain.path, plain.source) == ("python3", "python3 on PATH")


async def test_run_probes_on_the_seed_host_returns_every_probe(tmp_path):
    s = stage_host(tmp_path)
    log = tmp_path / "a.log"
    log.write_text("GPU does not have native support for FP4\n")
    inputs = RunInputs(question="why is FP4 slow?", logs=[str(log)],
                       observations={"model": {"num_experts": 256, "moe_intermediate_size": 2048},
                                     "runs": [{"tp": 8}]})
    models = await run_probes(s.wrap(LocalHost()), inputs, Settings(power_sample_s=0.3))
    assert [m.kind for m in models] == ["gpu_inventory", "power_sampling", "python_env", "autotune_caches",
                                        "kernel_inventory", "log_scan", "node_health"]
    assert models[3].persisted_any is False and models[4].arch == "sm_120"
    assert models[5].matches[0].signature_id  # from the knowledge base or the built-in list


async def test_run_probes_without_gpu_skips_power_and_says_why(tmp_path):
    s = stage_host(tmp_path, variant="no-nvidia-smi")
    models = await run_probes(s.wrap(LocalHost()), RunInputs(question="q"), Settings())
    assert [m.kind for m in models] == ["gpu_inventory", "python_env", "autotune_caches", "kernel_inventory",
                                        "node_health"]
    assert models[0].available is False
