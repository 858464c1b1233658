"""Issue 30 item 4: host messages that point at the right fix. An alias known only to the `--ssh-config` file is
trusted with `ssh -F FILE alias` (plain `ssh alias` does not know it); a hosts file meant as YAML with a syntax error
says where the YAML breaks, not that a line is a bad role."""

from __future__ import annotations

import shlex

import pytest

from orchestrator.hosts import HostKeyRefused, open_host
from orchestrator.settings import Settings
from support.cli import investigate, one_line


async def test_the_trust_hint_names_the_ssh_config_file_an_alias_lives_in(sshd_factory):
    sshd = sshd_factory(name="nokey-box", trust=False)
    with pytest.raises(HostKeyRefused) as err:
        await open_host(sshd.alias, ssh_config=str(sshd.ssh_config), settings=Settings())
    assert f"`ssh -F {shlex.quote(str(sshd.ssh_config))} nokey-box`" in str(err.value)


def test_a_yaml_hosts_file_with_a_syntax_error_is_named_as_yaml(tmp_path):
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text("prefill: [p1, p2\ndecode: d1\n")
    line = one_line(investigate("why slow", "--offline", "--hosts", hosts, tmp_path=tmp_path), 2,
                    "is not valid YAML at line 2", "fix the syntax")
    assert "role" not in line.split("fix the syntax")[0]


def test_a_plain_hosts_file_still_reads_as_lines(tmp_path):
    from orchestrator.hosts.multi import parse_hosts_text

    entries = parse_hosts_text("root@gpu-a:2222 prefill\ngpu-b  # the second\n")
    assert [(e.dest, e.role) for e in entries] == [("root@gpu-a:2222", "prefill"), ("gpu-b", None)]
