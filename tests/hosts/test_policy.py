"""The read-only command policy: allowed read-only forms pass, every shell or writing shape is refused."""

from __future__ import annotations

import pytest

from orchestrator.hosts.policy import check_argv, check_command

ALLOWED = [
    "nvidia-smi -q -x",
    "nvidia-smi --query-gpu=name,memory.total --format=csv,noheader",
    "nvidia-smi -i 0 -q -d CLOCK",
    "nvidia-smi topo -m",
    "nvidia-smi nvlink -s",
    "ls -la /root/.cache/flashinfer",
    "cat /proc/cpuinfo",
    "head -c 4096 '/tmp/a file.json'",
    "tail -n 50 /var/log/vllm.log",
    "grep -n -e 'CUDA out of memory' -e fallback /var/log/vllm.log",
    "find /root/.triton/cache -name '*.json' -type f",
    "stat /usr/bin/python3",
    "du -sh /root/.cache",
    "df -h",
    "uname -a",
    "pip list --format=json",
    "pip show torch",
    "pip3 freeze",
    "ps aux",
    "env",
    "lscpu",
    "free -g",
    "nproc",
    "uptime",
    "which nvcc",
    "wc -l /etc/passwd",
    "nvcc --version",
]

REFUSED = [
    ("ls; touch /tmp/x", "`;`"),
    ("ls && touch /tmp/x", "`&`"),
    ("ls || touch /tmp/x", "`|`"),
    ("ls | tee /tmp/x", "`|`"),
    ("sleep 100 &", "`&`"),
    ("echo $(touch /tmp/x)", "`$`"),
    ("cat $HOME/.bashrc", "`$`"),
    ("echo `touch /tmp/x`", "backtick"),
    ("ls > /tmp/x", "redirection"),
    ("cat < /etc/passwd", "redirection"),
    ("ls\ntouch /tmp/x", "newline"),
    ("FOO=1 ls", "environment assignment"),
    ("/???/t?uch /tmp/x", "glob"),
    ("/tmp/evil/cat /etc/passwd", "is a path"),
    ("./cat x", "is a path"),
    ("python -c 'print(1)'", "not an allowed"),
    ("python3 -", "not an allowed"),
    ("bash -c ls", "not an allowed"),
    ("sh -c ls", "not an allowed"),
    ("tee /tmp/x", "not an allowed"),
    ("cp /etc/passwd /tmp/x", "not an allowed"),
    ("mv /tmp/a /tmp/b", "not an allowed"),
    ("rm -rf /tmp/x", "not an allowed"),
    ("dd if=/dev/zero of=/tmp/x", "not an allowed"),
    ("sed -i s/a/b/ /tmp/x", "not an allowed"),
    ("touch /tmp/x", "not an allowed"),
    ("find /tmp -name x -delete", "-delete"),
    ("find /tmp -exec touch /tmp/x ;", "`;`"),
    ("find /tmp -exec touch /tmp/x +", "-exec"),
    ("find /tmp -fprint /tmp/x", "-fprint"),
    ("find /tmp -fprintf /tmp/x %p", "-fprintf"),
    ("nvidia-smi -pm 1", "not allowed"),
    ("nvidia-smi -pl 300", "not allowed"),
    ("nvidia-smi -q -f /tmp/x", "not allowed"),
    ("nvidia-smi --gpu-reset", "not allowed"),
    ("nvidia-smi -lgc 1000,1500", "not allowed"),
    ("pip install torch", "list"),
    ("pip list --log /tmp/x", "writes"),
    ("env touch /tmp/x", "without arguments"),
    ("hostname evil", "without arguments"),
    ("date -s 2020-01-01", "without arguments"),
    ("dmesg -c", "dmesg option"),
    ("cuobjdump -xelf all lib.so", "listing"),
    ("", "empty"),
    ("cat 'unbalanced", "quotes"),
]


@pytest.mark.parametrize("command", ALLOWED)
def test_read_only_commands_are_allowed(command):
    decision = check_command(command)
    assert decision.allowed, decision.reason
    assert decision.argv[0] == command.split()[0]


@pytest.mark.parametrize("command,why", REFUSED)
def test_shell_and_writing_shapes_are_refused_with_a_reason(command, why):
    decision = check_command(command)
    assert not decision.allowed
    assert why in decision.reason
    assert "\n" not in decision.reason


def test_quoted_arguments_stay_one_argument():
    assert check_command("grep -n 'out of memory' /var/log/x.log").argv == ["grep", "-n", "out of memory", "/var/log/x.log"]


def test_argv_with_an_operator_inside_an_argument_is_refused():
    assert not check_argv(["ls", "a;touch /tmp/x"]).allowed
