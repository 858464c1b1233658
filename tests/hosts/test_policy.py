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
    "lscpu",
    "free -g",
    "nproc",
    "uptime",
    "which nvcc",
    "wc -l /etc/passwd",
    "nvcc --version",
    "dmesg -T",
    "dmesg --level=err,warn -T",
    "dmesg -lcrit",
    "file -b /usr/bin/ls",
    "pip list --format json -l",
    "pip show -f torch",
    "pip freeze -l --all",
    "lspci -vvv -nn",
    "ls -la /dev",
    "stat /dev/nvidia0",
    "find /dev -name 'nvidia*'",
    "du -sh /dev/shm",
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
    ("env touch /tmp/x", "environment"),
    ("env", "environment"),
    ("printenv", "environment"),
    ("hostname evil", "without arguments"),
    ("date -s 2020-01-01", "without arguments"),
    ("dmesg -c", "dmesg option"),
    ("cuobjdump -xelf all lib.so", "listing"),
    # getopt clusters and abbreviations reach the same refused options
    ("dmesg -Tc", "dmesg option"),
    ("dmesg -xC", "dmesg option"),
    ("dmesg --read-c", "dmesg option"),
    ("dmesg --cle", "dmesg option"),
    ("dmesg -n1", "dmesg option"),
    ("dmesg --console-l=1", "dmesg option"),
    ("file -bC -m /tmp/magic", "file option"),
    ("file --comp -m /tmp/magic", "file option"),
    # pip: --local-log is an alias of --log (writes), abbreviations, the network, another interpreter
    ("pip list --local-log /tmp/x", "not allowed"),
    ("pip3 freeze --log-f /tmp/x", "not allowed"),
    ("pip list --cache-d /tmp/x", "not allowed"),
    ("pip list --outdated --index-url http://evil/", "not allowed"),
    ("pip list --python /tmp/evil", "not allowed"),
    # a value flag must not swallow an option the real parser may still act on
    ("nvidia-smi -q -d -r", "needs a value"),
    ("nvidia-smi -i -pm", "needs a value"),
    ("nvidia-smi nvlink -i -r", "needs a GPU index"),
    ("lspci -xxx", "lspci options"),
    ("lspci -x -xx", "lspci options"),
    ("lspci -H1", "lspci options"),
    # reading a device or a consuming file changes the machine
    ("cat /dev/watchdog", "device"),
    ("head -c 1 //dev/../dev/watchdog", "device"),
    ("cat /proc/1/root/dev/watchdog", "device"),
    ("grep -f/dev/watchdog x /etc/hosts", "device"),
    ("grep --file=/dev/watchdog x /etc/hosts", "device"),
    ("wc --files0-from=/dev/tty", "device"),
    ("cat ../../dev/watchdog", "absolute path"),
    ("cat /proc/kmsg", "consumed"),
    ("cat /sys/kernel/tracing/trace_pipe", "consumed"),
    ("find / -files0-from /dev/watchdog", "find option"),
    ("du --files0-from=/dev/watchdog", "du option"),
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


SECRET_READS = [
    "cat /root/.ssh/id_ed25519", "head -n 5 /home/u/.ssh/authorized_keys", "cat ~/.aws/credentials", "tail /etc/shadow",
    "cat id_rsa", "cat server.key", "cat /srv/tls/cert.pem", "cat .env", "cat /root/.cache/huggingface/token",
    "grep -r token /root", "grep -R x /", "grep -rn api_key .", "grep -ri key /home", "cat /root/.netrc",
]


@pytest.mark.parametrize("command", SECRET_READS)
def test_reading_credentials_is_refused(command):
    decision = check_command(command)
    assert not decision.allowed and ("credentials" in decision.reason), decision.reason


@pytest.mark.parametrize("command", ["cat /etc/hosts", "grep -rn 'default MoE config' /var/log/vllm",
                                     "ls -la /root/.ssh", "head -c 4096 /root/.cache/flashinfer/0.5.3/x.json"])
def test_ordinary_reads_stay_allowed(command):
    assert check_command(command).allowed
