"""Serious #6 and #7 of issue 23, against a real sshd: a path is read as it was checked.

#6: the resolver's records are NUL-framed, so a symlink whose target holds a newline cannot make the next record
(what `read_file` or `cat A B` then reads) name something else than what was checked.
#7: a log flipped between a regular file and a symlink to a private key (or a FIFO) while `read_file` and `shell cat`
read it: each read opens the checked path once, with no symlink followed, checks the descriptor and reads from it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from orchestrator.hosts.resolve import resolve_paths
from orchestrator.hosts.ssh import SshHost
from orchestrator.settings import Settings
from orchestrator.tools.base import execute
from support.security import REGISTRY, make_ctx

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")
SECRET = "SECRETKEYMATERIAL0123"


@pytest.fixture
def key(tmp_path):
    k = tmp_path / "keys" / "id_rsa"
    k.parent.mkdir()
    k.write_text(f"key material {SECRET}\n")  # (no PEM armour: what is asserted is what was read, not redaction)
    return k


async def _tool(host, tool, args):
    return (await execute(REGISTRY.get(tool), tool, args, make_ctx(host))).output


async def test_a_newline_in_a_symlink_target_cannot_reframe_what_is_read(sshd_factory, tmp_path, key):
    att = tmp_path / "att"
    att.mkdir()
    # read_file: the real path is "ATT/q\nf /etc/shadow" (a harmless file); under line framing its record read as
    # "f ATT/q", and ATT/q is a link to the key
    (att / "q").symlink_to(key)
    decoy = att / "q\nf " / "etc" / "shadow"
    decoy.parent.mkdir(parents=True)
    decoy.write_text("harmless decoy\n")
    (att / "app.log").symlink_to(decoy)
    # cat A B: A's real path "ATT/x\nf ATT/innocent.log" frames a second record that stands for B, a link to the key
    innocent = att / "innocent.log"
    innocent.write_text("innocent\n")
    a_real = att / ("x\nf " + str(innocent).lstrip("/"))
    a_real.parent.mkdir(parents=True)
    a_real.write_text("line A\n")
    os.symlink("x\nf " + str(innocent).lstrip("/"), att / "a.log")
    (att / "b.log").symlink_to(key)

    host = await SshHost(sshd_factory().target(), Settings()).connect()
    try:
        out = await _tool(host, "read_file", {"path": str(att / "app.log")})
        assert SECRET not in out.text and "harmless decoy" in out.text, out.text
        out = await _tool(host, "shell", {"command": f"cat {att / 'a.log'} {att / 'b.log'}"})
        assert SECRET not in out.text and out.is_error and "refused" in out.text, out.text
        out = await _tool(host, "shell", {"command": f"cat {att / 'a.log'} {innocent}"})
        assert "line A" in out.text and "innocent" in out.text and SECRET not in out.text, out.text
        got = await resolve_paths(host, [str(att / "a.log"), str(att / "b.log"), str(att / "app.log")])
        assert got == [("f", str(a_real)), ("f", str(key)), ("f", str(decoy))]
    finally:
        await host.aclose()


_FLIP = """
import os, sys, time
path, key, other = sys.argv[1], sys.argv[2], sys.argv[3]
regular, alt = path + ".reg", path + ".other"
while True:
    with open(regular, "w") as f:
        f.write("vllm INFO ordinary log line\\n")
    os.replace(regular, path)
    time.sleep(0.01)
    if other == "key_link":
        os.symlink(key, alt)
    else:
        os.mkfifo(alt)
    os.replace(alt, path)
    time.sleep(0.005)
"""


class Flipper:
    """A process that swaps `path` between a regular file and a link to the key (or a FIFO) every few ms."""

    def __init__(self, path, key, other):
        self.args = [sys.executable, "-c", _FLIP, str(path), str(key), other]

    def __enter__(self):
        self.proc = subprocess.Popen(self.args)
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


@pytest.mark.parametrize("other", ["key_link", "fifo"])
async def test_a_log_flipped_under_the_readers_never_gives_the_key_or_hangs(sshd_factory, tmp_path, key, other):
    log = tmp_path / "logs" / "server.log"
    log.parent.mkdir()
    log.write_text("vllm INFO ordinary log line\n")

    host = await SshHost(sshd_factory().target(), Settings()).connect()
    leaks, reads = {"read_file": 0, "shell": 0}, {"read_file": 0, "shell": 0}
    try:
        with Flipper(log, key, other) as flipper:
            for _ in range(40):
                for tool, args in (("read_file", {"path": str(log)}), ("shell", {"command": f"cat {log}"})):
                    started = time.monotonic()
                    out = await _tool(host, tool, args)
                    assert time.monotonic() - started < 10, f"{tool} hung on a {other}"
                    leaks[tool] += SECRET in out.text
                    reads[tool] += "ordinary log line" in out.text
            assert flipper.proc.poll() is None  # it flipped all along
    finally:
        await host.aclose()
    assert leaks == {"read_file": 0, "shell": 0}, (leaks, reads)
    if other == "key_link":  # (a FIFO in its place makes the check refuse most reads: no count to expect)
        assert reads["read_file"] + reads["shell"], reads  # the regular file is still read when it is one


async def test_reads_on_checked_descriptors_name_the_files_as_given(sshd_factory, tmp_path):
    """The programs read /dev/fd/N of what was checked; what they print names the files as the model gave them."""
    d = tmp_path / "logs"
    (d / "sub").mkdir(parents=True)
    (d / "a.log").write_text("alpha ERROR one\n")
    (d / "sub" / "b.log").write_text("beta ERROR two\n")
    host = await SshHost(sshd_factory().target(), Settings()).connect()
    try:
        a, b = d / "a.log", d / "sub" / "b.log"
        out = await _tool(host, "shell", {"command": f"head -n 1 {a} {b}"})
        assert f"==> {a} <==" in out.text and f"==> {b} <==" in out.text and "/dev/fd" not in out.text, out.text
        out = await _tool(host, "shell", {"command": f"file {a}"})
        assert f"{a}: ASCII text" in out.text, out.text
        out = await _tool(host, "shell", {"command": f"md5sum {a}"})
        assert out.text.split("--- stdout ---\n")[1].split()[1] == str(a), out.text
        out = await _tool(host, "shell", {"command": f"grep -rn ERROR {d}"})
        assert f"{a}:1:alpha ERROR one" in out.text and f"{b}:1:beta ERROR two" in out.text, out.text
        assert out.data["argv"][0] == "grep" and "/dev/fd" not in out.text
        out = await _tool(host, "shell", {"command": f"cat {d / 'missing.log'}"})
        assert "does not exist" in out.text, out.text
    finally:
        await host.aclose()
