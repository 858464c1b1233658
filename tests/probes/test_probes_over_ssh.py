"""The probes over SSH (real sshd on loopback, staged env via SetEnv) return the same evidence as over local."""

import shutil

import pytest

from orchestrator.hosts import open_host
from orchestrator.hosts.local import LocalHost
from orchestrator.prongs.autotune.probe import collect_autotune_caches
from orchestrator.probes.gpu import collect_gpu_inventory
from orchestrator.prongs.kernel_research.probe import collect_kernel_inventory
from orchestrator.probes.logscan import scan_logs
from orchestrator.probes.pyenv import collect_python_env
from orchestrator.knowledge import log_signatures
from orchestrator.settings import Settings
from support.staged_host import ALL_CACHES, RTX_PRO_6000, stage_host

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(shutil.which("sshd") is None and not
                                                   __import__("os").path.exists("/usr/sbin/sshd"),
                                                   reason="OpenSSH sshd not installed")]

VOLATILE = {"host", "commands", "probe_s", "timings"}  # wall times differ run to run


async def _evidence(host, log: str) -> list[dict]:
    out = [
        await collect_gpu_inventory(host),
        await collect_python_env(host),
        await collect_autotune_caches(host, device_name=RTX_PRO_6000, expert_shape={"E": [256], "N": [256]}),
        await collect_kernel_inventory(host),
        await scan_logs(host, [log], log_signatures()),
    ]
    return [m.model_dump(exclude=VOLATILE) for m in out]


async def test_probes_over_ssh_match_probes_over_local(tmp_path, sshd_factory):  # noqa: F811
    s = stage_host(tmp_path, caches=ALL_CACHES)
    log = tmp_path / "vllm.log"
    log.write_text("x\nGPU does not have native support for FP4\n")
    local = await _evidence(s.wrap(LocalHost()), str(log))
    sshd = sshd_factory(env=s.env)
    host = await open_host(sshd.alias, ssh_config=str(sshd.ssh_config), settings=Settings())
    try:
        remote = await _evidence(host, str(log))
    finally:
        await host.aclose()
    for a, b in zip(local, remote):
        assert a == b, a["kind"]
    assert remote[0]["gpus"][0]["name"] == RTX_PRO_6000 and remote[4]["matches"][0]["line_no"] == 2


async def test_a_probes_parameters_travel_on_stdin_and_its_command_line_is_plain_words(tmp_path, sshd_factory):
    """JSON on the command line cannot pass a login shell as it is: it went hex-encoded and an `awk` on the host
    decoded it, a process per probe, and `ps` showed the parameters (log paths) to the host's other users."""
    from orchestrator.hosts.ssh import remote_command
    from orchestrator.probes.runner import run_script
    from support.staged_host import CountingHost

    s = stage_host(tmp_path)
    log = tmp_path / "it's a log; $HOME `id`.log"
    log.write_text("x\nGPU does not have native support for FP4\n")
    sshd = sshd_factory(env=s.env)
    host = CountingHost(await open_host(sshd.alias, ssh_config=str(sshd.ssh_config), settings=Settings()))
    params = {"paths": [str(log)], "signatures": [{"id": "fp4", "pattern": "native support for FP4"}]}
    try:
        got = await run_script(host, "python3", "logscan", params, timeout_s=30, isolated=True)
    finally:
        await host.aclose()
    assert host.calls == [["python3", "-I", "-S", "-"]]
    assert remote_command(host.calls[0], 30, stdin=True).endswith(" i l python3 -I -S -")  # plain words: no decoding
    assert got["files"] == [str(log)] and got["matches"][0]["line_no"] == 2  # the script read its parameters
