"""Issue 30 item 4: a port that accepts TCP but never speaks SSH is named as such ("does not speak SSH"), within the
connect timeout, not "SSHException: No existing session". A real TCP listener on loopback that sends nothing."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from orchestrator.hosts import HostUnreachable, open_host
from orchestrator.settings import Settings


@pytest.fixture
def silent_port():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])  # accepted, then never a byte
            except OSError:
                continue

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join(5)
    for c in held:
        c.close()
    srv.close()


async def test_a_port_that_never_speaks_ssh_is_named_as_such(silent_port, tmp_path):
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host silent\n  HostName 127.0.0.1\n  Port {silent_port}\n  User root\n"
                   f"  UserKnownHostsFile {tmp_path / 'known_hosts'}\n")
    started = time.monotonic()
    with pytest.raises(HostUnreachable) as err:
        await open_host("silent", ssh_config=str(cfg), settings=Settings(ssh_connect_timeout_s=1.0))
    assert "does not speak SSH" in str(err.value) and f"port {silent_port}" in str(err.value)
    assert "No existing session" not in str(err.value)
    assert time.monotonic() - started < 10  # bounded by the connect timeout, not a fixed 15 s banner wait
