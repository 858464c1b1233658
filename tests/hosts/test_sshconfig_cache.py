"""A config file is parsed once while it is unchanged, and again once edited (never a stale destination)."""

from __future__ import annotations

import os

from orchestrator.hosts.sshconfig import load_config, resolve_destination


def test_an_unchanged_file_is_parsed_once_and_an_edited_one_again(tmp_path):
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host box\n  HostName 127.0.0.1\n  Port 2201\n")
    assert load_config(str(cfg)) is load_config(str(cfg))
    assert resolve_destination("box", str(cfg)).port == 2201
    st = cfg.stat()
    cfg.write_text("Host box\n  HostName 127.0.0.1\n  Port 2202\n")  # same size: only the mtime tells
    os.utime(cfg, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert resolve_destination("box", str(cfg)).port == 2202


def test_a_destination_is_resolved_again_when_the_user_environment_changes(tmp_path, monkeypatch):
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host box\n  HostName 127.0.0.1\n  IdentityFile ~/.ssh/id_box\n")
    monkeypatch.setenv("HOME", str(tmp_path / "a"))
    first = resolve_destination("box", str(cfg))
    assert first.identity_files == [str(tmp_path / "a" / ".ssh" / "id_box")]
    first.identity_files.append("/changed/by/the/caller")  # the caller's copy, not the remembered one
    assert resolve_destination("box", str(cfg)).identity_files == [str(tmp_path / "a" / ".ssh" / "id_box")]
    monkeypatch.setenv("HOME", str(tmp_path / "b"))
    assert resolve_destination("box", str(cfg)).identity_files == [str(tmp_path / "b" / ".ssh" / "id_box")]


def test_resolving_in_a_large_file_asks_for_the_local_user_rarely_and_match_blocks_still_apply(tmp_path, monkeypatch):
    import getpass

    me = getpass.getuser()
    blocks = "".join(f"Host h{i:02d}\n  HostName 127.0.0.{i + 1}\n  Port {2200 + i}\n" for i in range(64))
    cfg = tmp_path / "ssh_config"
    cfg.write_text(blocks + f"Match user {me} originalhost h63\n  IdentityFile ~/.ssh/id_matched\n")
    calls = []
    real = getpass.getuser
    monkeypatch.setattr(getpass, "getuser", lambda: calls.append(1) or real())
    t = resolve_destination("h63", str(cfg))
    assert t.port == 2263 and t.hostname == "127.0.0.64"
    assert any(f.endswith("id_matched") for f in t.identity_files)  # the Match block applied
    assert len(calls) <= 8, len(calls)  # not once per Host block (131 times without the shortcut)
    assert not any(f.endswith("id_matched") for f in resolve_destination("h01", str(cfg)).identity_files)
