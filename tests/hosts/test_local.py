"""LocalHost: real subprocesses, concurrent capped output, timeouts that kill the process group, file access."""

from __future__ import annotations

import os
import sys
import time

import anyio

from orchestrator.hosts.local import LocalHost
from orchestrator.hosts.output import CappedBuffer

MIB = 1 << 20
# 20 MiB to stdout and to stderr, interleaved, so a reader that drains one stream at a time deadlocks
FLOOD = (
    "import sys\n"
    "chunk = b'x' * 65536\n"
    "for _ in range(320):\n"
    "    sys.stdout.buffer.write(chunk); sys.stderr.buffer.write(chunk)\n"
    "sys.stdout.buffer.write(b'END'); sys.stderr.buffer.write(b'END')\n"
    "sys.exit(7)\n"
)


async def test_large_stdout_and_stderr_do_not_hang_and_are_capped_with_a_marker():
    host = LocalHost()
    with anyio.fail_after(30):
        res = await host.run([sys.executable, "-c", FLOOD], max_output=100_000)
    assert res.exit_code == 7
    assert res.stdout_truncated and res.stderr_truncated
    assert "omitted by the output cap" in res.stdout and res.stdout.endswith("END")
    assert "omitted by the output cap" in res.stderr and res.stderr.endswith("END")
    assert len(res.stdout) < 100_200


async def test_timeout_kills_the_whole_process_group(tmp_path):
    marker = tmp_path / "grandchild-survived"
    # the grandchild would write the marker after 1 s unless the timeout kills the whole group
    script = f"sleep 1 && touch {marker} & sleep 100"
    host = LocalHost()
    started = time.monotonic()
    res = await host.run(["sh", "-c", script], timeout_s=0.3)
    assert res.timed_out and res.exit_code is None
    assert time.monotonic() - started < 5
    await anyio.sleep(1.3)
    assert not marker.exists()


async def test_stdin_reaches_the_program_and_exit_code_is_kept():
    res = await LocalHost().run([sys.executable, "-c", "import sys; d=sys.stdin.read(); print(d[::-1]); sys.exit(3)"],
                                stdin="abc")
    assert res.exit_code == 3 and res.stdout == "cba\n"


async def test_missing_program_exits_127_like_a_shell():
    res = await LocalHost().run(["no-such-program-xyz"])
    assert res.exit_code == 127 and "no-such-program-xyz" in res.stderr


async def test_read_file_is_capped_and_missing_file_raises(tmp_path):
    p = tmp_path / "big.bin"
    p.write_bytes(os.urandom(10_000))
    host = LocalHost()
    assert await host.read_file(str(p), max_bytes=100) == p.read_bytes()[:100]
    try:
        await host.read_file(str(tmp_path / "nope"))
    except FileNotFoundError:
        pass
    else:
        raise AssertionError("missing file did not raise")


async def test_find_matches_basenames_recursively_and_caps(tmp_path):
    for d in ("a", "a/b", "c"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
    for f in ("a/x.json", "a/b/y.json", "c/z.txt", "top.json"):
        (tmp_path / f).write_text("{}")
    host = LocalHost()
    found = await host.find(str(tmp_path), "*.json")
    assert found == sorted(str(tmp_path / f) for f in ("a/x.json", "a/b/y.json", "top.json"))
    assert len(await host.find(str(tmp_path), "*", max_results=2)) == 2
    assert await host.find(str(tmp_path / "missing")) == []


def test_capped_buffer_keeps_head_and_tail_with_count():
    buf = CappedBuffer(30)
    buf.feed(b"H" * 50)
    buf.feed(b"T" * 50)
    text = buf.text()
    assert text.startswith("H" * 20) and text.endswith("T" * 10)
    assert "[... 70 bytes omitted by the output cap ...]" in text


async def test_read_file_opens_only_regular_files_and_never_blocks_on_a_fifo(tmp_path):
    import threading

    import pytest

    link = tmp_path / "looks-like-a-log"
    link.symlink_to("/dev/zero")  # a device behind an innocent name
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def unblock() -> None:  # without the check, open() on the FIFO blocks until a writer comes
        time.sleep(3)
        with open(fifo, "wb"):
            pass

    threading.Thread(target=unblock, daemon=True).start()
    host = LocalHost()
    for path in (link, fifo):
        started = time.monotonic()
        with pytest.raises(OSError) as err:
            await host.read_file(str(path), max_bytes=16)
        assert "regular file" in str(err.value)
        assert time.monotonic() - started < 1
    with pytest.raises(PermissionError):
        await host.read_file("/proc/kmsg")


async def test_read_file_and_find_have_a_deadline(tmp_path):
    import pytest

    host = LocalHost(io_timeout_s=0.5)
    # a slow filesystem stands in as a walk that never ends
    import orchestrator.hosts.walk as walk_mod

    def slow_walk(root, pattern="*", max_results=10000):
        time.sleep(3)
        return [], False

    original = walk_mod.walk
    walk_mod.walk = slow_walk
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await host.find(str(tmp_path))
        assert time.monotonic() - started < 2
    finally:
        walk_mod.walk = original
