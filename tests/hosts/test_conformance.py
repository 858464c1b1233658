"""One conformance suite for every `Host` implementation: the probes rely on exactly these behaviours.

Each test runs against `LocalHost`, `SshHost` over a real OpenSSH sshd on 127.0.0.1, `SlurmHost` through the real
`srun` of a Slurm cluster started on loopback (tests/support/slurm.py; skipped only when Slurm/munge are not
installed), and `K8sHost` through the stand-in `kubectl` (tests/hosts_multi/data/kubectl: `exec`'s argv run on this
machine; no API server can run here) — the way inspect_ai checks every sandbox with one suite. A new transport joins
by adding a fixture parameter.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from support.slurm import missing as slurm_missing
from support.slurm import start_cluster

from orchestrator.hosts.base import CommandResult, Host
from orchestrator.hosts.k8s import K8sHost
from orchestrator.hosts.local import LocalHost
from orchestrator.hosts.slurm import SlurmHost
from orchestrator.hosts.mock import FindRequest, MockHost, ReadRequest, RunRequest
from orchestrator.hosts.ssh import SshHost
from orchestrator.settings import Settings

HAVE_SSHD = os.path.exists("/usr/sbin/sshd")


KUBECTL_STANDIN = Path(__file__).resolve().parents[1] / "hosts_multi" / "data"


@pytest.fixture(scope="module")
def conformance_cluster(tmp_path_factory):
    why = slurm_missing()
    if why:
        pytest.skip(why)
    c = start_cluster(tmp_path_factory.mktemp("slurm-conformance"), nodes=1)
    yield c
    c.stop()


@pytest.fixture(params=["local", pytest.param("ssh", marks=[
    pytest.mark.ssh, pytest.mark.skipif(not HAVE_SSHD, reason="needs OpenSSH sshd (apt-get install openssh-server)")]),
    pytest.param("slurm", marks=pytest.mark.slow), "k8s"])
async def host(request, sshd_factory, monkeypatch) -> Host:
    if request.param == "local":
        h: Host = LocalHost()
    elif request.param == "ssh":
        h = await SshHost(sshd_factory().target(), Settings()).connect()
    elif request.param == "slurm":
        cluster = request.getfixturevalue("conformance_cluster")
        for k, v in cluster.env().items():
            monkeypatch.setenv(k, v)
        h = await SlurmHost("gpu1", Settings()).connect()
    else:
        monkeypatch.setenv("PATH", f"{KUBECTL_STANDIN}:{os.environ['PATH']}")
        h = await K8sHost("conformance-0", Settings(), namespace="inference").connect()
    try:
        yield h
    finally:
        await h.aclose()


async def test_stdout_stderr_and_exit_code_are_kept_apart(host):
    r = await host.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (r.stdout, r.stderr, r.exit_code, r.ok, r.timed_out) == ("out\n", "err\n", 3, False, False)


async def test_argv_reaches_the_program_literally_without_any_shell(host, tmp_path):
    d = tmp_path / "shell"
    d.mkdir()
    hostile = "a b; touch {0}/x $(touch {0}/y) `touch {0}/z` '\\' (touch {0}/w) > {0}/v".format(d)
    r = await host.run(["printf", "%s", hostile])
    assert r.ok and r.stdout == hostile
    assert sorted(os.listdir(d)) == []


async def test_stdin_is_delivered_and_a_program_without_input_reads_eof(host):
    r = await host.run(["cat"], stdin="line one\nline two\n")
    assert r.ok and r.stdout == "line one\nline two\n"
    r = await host.run(["cat"], timeout_s=10)
    assert r.ok and r.stdout == "" and not r.timed_out


async def test_a_missing_program_exits_127_like_a_shell_would(host):
    r = await host.run(["definitely-not-a-program-xyz"])
    assert r.exit_code == 127 and not r.ok


async def test_a_timeout_returns_promptly_with_no_exit_code(host):
    started = time.monotonic()
    r = await host.run(["sleep", "30"], timeout_s=0.5)
    assert r.timed_out and r.exit_code is None and not r.ok
    assert time.monotonic() - started < 10


async def test_output_is_capped_and_the_cut_is_flagged(host):
    r = await host.run(["sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x"], max_output=1000)
    # head and tail are kept within the cap, and a visible marker says how much was left out between them
    assert r.stdout_truncated and r.stdout.count("x") <= 1000 and r.stdout.startswith("x" * 600)
    assert "299000 bytes omitted by the output cap" in r.stdout
    r = await host.run(["echo", "short"], max_output=1000)
    assert not r.stdout_truncated


async def test_read_file_returns_bytes_up_to_the_cap_and_raises_for_a_missing_file(host, tmp_path):
    p = tmp_path / "f.txt"
    p.write_bytes(b"0123456789" * 10)
    assert await host.read_file(str(p)) == b"0123456789" * 10
    assert await host.read_file(str(p), max_bytes=15) == b"012345678901234"
    with pytest.raises(FileNotFoundError):
        await host.read_file(str(tmp_path / "missing"))
    with pytest.raises(OSError):
        await host.read_file(str(tmp_path))  # a directory is not a file


async def test_find_matches_basenames_below_root_and_honours_the_limit(host, tmp_path):
    for rel in ("a/x.json", "a/b/y.json", "a/b/z.txt", "c.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    found = sorted(await host.find(str(tmp_path), "*.json"))
    assert found == sorted(str(tmp_path / r) for r in ("a/x.json", "a/b/y.json", "c.json"))
    assert len(await host.find(str(tmp_path), "*", max_results=2)) == 2
    assert await host.find(str(tmp_path / "nowhere"), "*") == []


# --- the double ------------------------------------------------------------------------------------------------------


async def test_mock_host_answers_from_its_handler_records_requests_and_applies_caps():
    def handler(req):
        if isinstance(req, RunRequest):
            if req.argv[0] == "fail":
                return 2
            if req.argv[0] == "full":
                return CommandResult(argv=[], exit_code=0, stdout="y" * 50, stderr="warn")
            return "x" * 100
        if isinstance(req, ReadRequest):
            if req.path == "/missing":
                raise FileNotFoundError(req.path)
            return "abcdef"
        assert isinstance(req, FindRequest)
        return ["/a", "/b", "/c"]

    host = MockHost(handler)
    r = await host.run(["echo"], max_output=10)
    assert r.ok and r.stdout_truncated and r.argv == ["echo"]
    assert r.stdout.count("x") == 10 and "90 bytes omitted" in r.stdout
    assert (await host.run(["fail"])).exit_code == 2
    full = await host.run(["full", "-v"])
    assert full.argv == ["full", "-v"] and full.stderr == "warn"
    assert await host.read_file("/f", max_bytes=3) == b"abc"
    with pytest.raises(FileNotFoundError):
        await host.read_file("/missing")
    assert await host.find("/", max_results=2) == ["/a", "/b"]
    assert [type(r).__name__ for r in host.requests] == [
        "RunRequest", "RunRequest", "RunRequest", "ReadRequest", "ReadRequest", "FindRequest"]
    await host.aclose()
    assert host.closed


async def test_mock_host_names_a_handler_that_returns_the_wrong_type():
    host = MockHost(lambda req: None)
    with pytest.raises(TypeError, match="CommandResult"):
        await host.run(["x"])
    with pytest.raises(TypeError, match="bytes or str"):
        await host.read_file("/x")


async def test_mock_host_awaits_an_async_handler_so_latency_and_cancellation_can_be_simulated():
    import anyio

    started: list[str] = []

    async def slow(req):
        started.append(type(req).__name__)
        await anyio.sleep(5 if isinstance(req, RunRequest) and req.argv == ["hang"] else 0.01)
        return "ok\n" if isinstance(req, RunRequest) else (b"data" if isinstance(req, ReadRequest) else ["/a"])

    h = MockHost(slow)
    assert (await h.run(["echo"])).stdout == "ok\n"
    assert await h.read_file("/x") == b"data" and await h.find("/") == ["/a"]
    t0 = time.monotonic()
    with anyio.move_on_after(0.2) as scope:
        await h.run(["hang"])
    assert scope.cancelled_caught and time.monotonic() - t0 < 2  # the caller's cancel scope reached the handler
    assert started == ["RunRequest", "ReadRequest", "FindRequest", "RunRequest"]


async def test_hosts_are_opened_through_the_opener_registry(monkeypatch):
    from orchestrator.hosts.base import HostError
    from orchestrator.hosts.entry import _OPENERS, HostEntry, opener_for, register_opener
    from orchestrator.hosts.multi import open_hosts

    monkeypatch.setattr("orchestrator.hosts.entry._OPENERS", dict(_OPENERS))
    opened: list[str] = []

    async def custom(entry, ssh_config, settings):
        opened.append(entry.dest)
        return MockHost(lambda req: "hi\n", name=entry.name)

    register_opener("local", custom)  # any via can be served by another opener without touching multi.py
    hs = await open_hosts([HostEntry(name="a", dest="box-a", via="local")])
    assert opened == ["box-a"] and (await hs.hosts["a"].run(["x"])).stdout == "hi\n"
    await hs.aclose()
    with pytest.raises(HostError, match="no way to reach a host via 'nope'; known: .*k8s, local, slurm, ssh"):
        opener_for("nope")
    assert opener_for("slurm").__module__ == "orchestrator.hosts.slurm"  # imported on first use


def test_a_via_is_whatever_the_opener_registry_accepts(monkeypatch):
    from pydantic import ValidationError

    from orchestrator.hosts.entry import _OPENERS, HostEntry, register_opener

    monkeypatch.setattr("orchestrator.hosts.entry._OPENERS", dict(_OPENERS))
    with pytest.raises(ValidationError, match="no way to reach a host via 'pigeon'; known: k8s, local, slurm, ssh"):
        HostEntry(name="a", dest="box-a", via="pigeon")
    register_opener("pigeon", "somewhere:open_entry")  # a fifth transport, registered from outside the package
    assert HostEntry(name="a", dest="box-a", via="pigeon").via == "pigeon"
