"""The host list (--host repeated, --hosts FILE in lines or YAML with roles), the in-flight gate, the CLI's lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from orchestrator.hosts.base import CommandResult
from orchestrator.hosts.multi import (
    GatedHost,
    HostGate,
    HostsFileError,
    entries_from_dests,
    parse_hosts_text,
)

REPO = Path(__file__).resolve().parents[2]


def test_lines_with_comments_and_roles():
    es = parse_hosts_text("# fleet\ngpu-a\nroot@gpu-b:2222  decode   # the decode box\n\nlocal\n")
    assert [(e.name, e.dest, e.via, e.role) for e in es] == [
        ("gpu-a", "gpu-a", "ssh", None), ("root@gpu-b:2222", "root@gpu-b:2222", "ssh", "decode"),
        ("local", "local", "local", None)]


def test_yaml_role_mapping_list_and_hosts_key():
    es = parse_hosts_text("prefill: [p1, p2]\ndecode:\n  - d1\n  - {host: d2, name: decode-2}\nrouter: r1\n")
    assert [(e.name, e.role) for e in es] == [("p1", "prefill"), ("p2", "prefill"), ("d1", "decode"),
                                              ("decode-2", "decode"), ("r1", "router")]
    es = parse_hosts_text("hosts:\n  - host: a\n    role: decode\n  - b\n")
    assert [(e.name, e.role) for e in es] == [("a", "decode"), ("b", None)]


@pytest.mark.parametrize("text, needle", [
    ("", "names no host"),
    ("a\na\n", "named twice"),
    ("a decode extra\n", "more than a destination"),
    ("a Decode!\n", "not a short lower-case word"),
    ("- {role: decode}\n", "has no `host`"),
    ("- {host: a, port: 22}\n", "unknown key"),
    ("Prefill: [a]\n", "is not a role"),
    ("decode: {a: 1}\n", "must list its hosts"),
])
def test_bad_hosts_files_say_what_and_how_to_fix(text, needle):
    with pytest.raises(HostsFileError, match=needle):
        parse_hosts_text(text)


def test_repeated_host_option():
    assert [e.name for e in entries_from_dests(["a", "b", "local"])] == ["a", "b", "local"]
    with pytest.raises(HostsFileError, match="named twice"):
        entries_from_dests(["a", "a"])


class SlowHost:
    def __init__(self, name):
        self.name = name

    async def run(self, argv, *, stdin=None, timeout_s=60.0, max_output=1_000_000):
        await anyio.sleep(0.05)
        return CommandResult(argv=argv, exit_code=0)

    async def read_file(self, path, *, max_bytes=1_000_000):
        return b""

    async def find(self, root, pattern="*", *, max_results=10_000):
        return []

    async def aclose(self):
        pass


async def test_gate_bounds_busy_hosts_and_lets_one_hosts_commands_share_its_slot():
    gate = HostGate(3)
    hosts = [GatedHost(SlowHost(f"h{i}"), f"h{i}", gate) for i in range(10)]
    started = anyio.current_time()
    async with anyio.create_task_group() as tg:
        for h in hosts:
            for _ in range(4):  # four commands per host run side by side within its one slot
                tg.start_soon(h.run, ["true"])
    elapsed = anyio.current_time() - started
    assert gate.peak == 3
    assert elapsed < 0.05 * 10  # 10 hosts, 3 at a time, each host's 4 commands concurrently: ~4 rounds, not 40


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          cwd=cwd or REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": "/tmp"},
                          timeout=60)


def test_cli_bad_hosts_file_is_one_line_exit_2(tmp_path):
    f = tmp_path / "hosts.yaml"
    f.write_text("decode: {a: 1}\n")
    r = _cli("why?", "--hosts", str(f), "--offline", "--no-progress")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "must list its hosts" in r.stderr, r.stderr
    r = _cli("why?", "--hosts", str(tmp_path / "missing"), "--offline", "--no-progress")
    assert r.returncode == 2 and "hosts file" in r.stderr and "not found" in r.stderr
    r = _cli("why?", "--host", "a", "--hosts", str(f), "--offline", "--no-progress")
    assert r.returncode == 2 and "exclude each other" in r.stderr, r.stderr
    r = _cli("why?", "--namespace", "x", "--offline", "--no-progress")
    assert r.returncode == 2 and "--k8s" in r.stderr


def test_host_tools_offer_the_host_argument_only_in_multi_host_runs():
    from types import SimpleNamespace

    from orchestrator.inputs import RunInputs
    from orchestrator.hosts.entry import HostEntry
    from orchestrator.tools.registry import default_registry

    reg = default_registry()
    on_host = {n for n in reg.names() if reg.get(n).on_host}
    assert {"shell", "read_file", "gpu_inventory", "node_health", "engine_config", "gemm_benchmark"} <= on_host
    assert not {"task", "submit_diagnosis", "gpu_specs", "roofline"} & on_host
    one = SimpleNamespace(inputs=RunInputs(question="q"), agents={})
    many = SimpleNamespace(inputs=RunInputs(question="q", hosts=[HostEntry(name="a", dest="a"),
                                                                  HostEntry(name="b", dest="b"),
                                                                  HostEntry(name="c", dest="c", error="down")]),
                           agents={})
    tool = reg.get("gpu_inventory")
    assert tool.prepare(tool.spec(), one) == tool.spec()  # a one-host run keeps the spec exactly
    assert tool.prepare(tool.spec(), many).input_schema["properties"]["host"]["enum"] == ["a", "b"]
    specs = reg.get("gpu_specs")
    assert specs.prepare(specs.spec(), many) == specs.spec()