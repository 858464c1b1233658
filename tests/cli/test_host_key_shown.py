"""Issue 43 item 3: the host key a user must verify comes with how to compare it, and the fallback `ssh` command
reaches the same host (the port and user of `user@host:port` kept; it said `ssh 127.0.0.1`: port 22, another
host)."""

from __future__ import annotations

from support.cli import investigate, one_line


def test_an_unknown_host_key_comes_with_a_command_that_reaches_the_host(sshd_factory, tmp_path):
    sshd = sshd_factory(name="nokey-box", trust=False)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    proc = investigate("why slow", "--host", sshd.dest, "--offline", tmp_path=tmp_path, env={"HOME": str(home)})
    line = one_line(proc, 2, f"[127.0.0.1]:{sshd.port} is not known", "nothing was run")
    assert f"`ssh -p {sshd.port} {sshd.user}@127.0.0.1`" in line
    assert f"ssh-keyscan -p {sshd.port} 127.0.0.1" in line
    assert "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub" in line  # where to read the fingerprint to compare
