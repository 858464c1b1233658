"""Issue 23, "also broken" (host files), against a real sshd: credential locations that were not covered, find_files
under the credential policy, log_scan reading log files only, PCI configuration space through sysfs."""

from __future__ import annotations

import glob
import os
import time

import pytest

from orchestrator.hosts.policy import check_command, log_refusal, secret_path, unsafe_read
from orchestrator.hosts.ssh import SshHost
from orchestrator.probes.logscan import scan_logs
from orchestrator.settings import Settings
from orchestrator.tools.base import execute
from support.security import REGISTRY, make_ctx

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- cluster: {certificate-authority-data: LS0tLS1CRUdJTg==, server: 'https://10.0.0.1:6443'}
  name: kubernetes
users:
- name: kubernetes-admin
  user:
    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
    client-key-data: KUBEKEYMARKERLS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQ==
"""
WPA = 'network={\n\tssid="lab"\n\tpsk="WPAPSKMARKER-passphrase"\n}\n'  # wpa_supplicant.conf(5)
CEPH = "[client.admin]\n\tkey = CEPHKEYMARKERAQBvaBFZAAAAABAA9VHgwCg==\n\tcaps mon = \"allow *\"\n"  # ceph keyring


async def _tool(host, tool, args):
    ctx = make_ctx(host)
    return (await execute(REGISTRY.get(tool), tool, args, ctx)).output, ctx


@pytest.fixture
async def host(sshd_factory):
    h = await SshHost(sshd_factory().target(), Settings()).connect()
    yield h
    await h.aclose()


async def test_cluster_wifi_and_ceph_credentials_are_never_read(host, tmp_path):
    files = {"kubeconfig": KUBECONFIG, "admin.kubeconfig": KUBECONFIG, "wpa_supplicant/wpa_supplicant.conf": WPA,
             "wpa_supplicant.conf": WPA, "ceph/ceph.client.admin.keyring": CEPH, "osd-0/keyring": CEPH}
    for rel, text in files.items():
        p = tmp_path / "etc" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        (tmp_path / ("innocent-" + rel.replace("/", "-") + ".log")).symlink_to(p)
    for rel in files:
        for path in (tmp_path / "etc" / rel, tmp_path / ("innocent-" + rel.replace("/", "-") + ".log")):
            for tool, args in (("read_file", {"path": str(path)}), ("shell", {"command": f"cat {path}"}),
                               ("shell", {"command": f"grep -r MARKER {tmp_path / 'etc'}"})):
                out, _ = await _tool(host, tool, args)
                assert not any(m in out.text for m in ("KUBEKEYMARKER", "WPAPSKMARKER", "CEPHKEYMARKER")), \
                    (tool, args, out.text)
    for path in ("/etc/kubernetes/admin.conf", "/etc/kubernetes/pki/ca.key", "/etc/rancher/k3s/k3s.yaml",
                 "/etc/NetworkManager/system-connections/lab.nmconnection"):
        assert secret_path(path), path


async def test_find_files_never_lists_credential_locations(host, tmp_path):
    home = tmp_path / "home"
    for rel in (".ssh/id_ed25519", ".ssh/config", ".ssh/authorized_keys", "app/server.log", "app/.env",
                "app/tls/server.key", ".kube/config", "app/kubeconfig"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("x\n")
    (tmp_path / "looks-like-logs").symlink_to(home / ".ssh")
    out, ctx = await _tool(host, "find_files", {"root": str(home), "pattern": "*"})
    assert out.data["paths"] == [str(home / "app" / "server.log")], out.text
    assert ".ssh" not in out.text and "id_ed25519" not in out.text and ".env" not in out.text
    assert "not listed" in out.text
    for root in (home / ".ssh", tmp_path / "looks-like-logs", "/proc/1", "/root", "/etc"):
        out, ctx = await _tool(host, "find_files", {"root": str(root), "pattern": "*"})
        assert out.is_error and "refused" in out.text and ctx.refusals, (root, out.text)
        assert "id_ed25519" not in out.text


async def test_log_scan_reads_log_files_only_and_never_hangs(host, tmp_path):
    key = tmp_path / "keys" / "id_rsa"
    key.parent.mkdir()
    key.write_text("ERROR KEYMARKER\n")
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "server.log").write_text("INFO start\nERROR CUDA out of memory\n")
    (logs / "environ.log").symlink_to("/proc/1/environ")
    (logs / "key.log").symlink_to(key)
    (logs / "kmsg.log").symlink_to("/proc/kmsg")
    os.mkfifo(logs / "fifo.log")
    (logs / "dev.log").symlink_to("/dev/zero")
    given = ["/proc/self/environ", "/proc/1/environ", "/proc/kmsg", "/dev/zero", "/sys/kernel/debug/x",
             *(str(logs / n) for n in ("environ.log", "key.log", "kmsg.log", "fifo.log", "dev.log")),
             str(logs / "server.log")]
    started = time.monotonic()
    scan = await scan_logs(host, given, [{"id": "oom", "pattern": "out of memory"}])
    assert time.monotonic() - started < 30
    assert scan.files == [str(logs / "server.log")] and [m.signature_id for m in scan.matches] == ["oom"]
    assert sorted(scan.refused) == sorted(given[:-1]), scan.refused
    assert "KEYMARKER" not in scan.model_dump_json()
    # the tool says why, one line each
    out, _ = await _tool(host, "log_scan", {"paths": given})
    assert out.text.count("refused: ") == len(given) - 1, out.text
    # nothing the scan opened is left open on the host (nothing of /proc was opened at all)
    for fd in glob.glob("/proc/[0-9]*/fd/*"):
        try:
            assert os.readlink(fd) != "/proc/kmsg", fd
        except OSError:
            pass


def test_pci_configuration_space_through_sysfs_is_refused_like_lspci_xxx():
    paths = ["/sys/bus/pci/devices/0000:17:00.0/config", "/sys/bus/pci/devices/0000:17:00.0/resource0",
             "/sys/bus/pci/devices/0000:17:00.0/rom", "/sys/devices/pci0000:00/0000:00:01.0/0000:17:00.0/config",
             "/sys/devices/pci0000:16/0000:16:02.0/resource1_wc"]
    paths += glob.glob("/sys/bus/pci/devices/*/config")[:3]
    for p in paths:
        assert unsafe_read(p), p
        for command in (f"cat {p}", f"head -c 64 {p}", f"md5sum {p}", f"file {p}", f"wc -c {p}"):
            assert not check_command(command).allowed, command
    assert not check_command("lspci -xxx").allowed
    assert unsafe_read("/sys/bus/pci/devices/0000:17:00.0/current_link_speed") is None
    assert log_refusal("/var/log/vllm/server.log") is None


async def test_pci_config_behind_a_link_is_refused_over_ssh(host, tmp_path):
    real = sorted(glob.glob("/sys/bus/pci/devices/*/config"))
    if not real:
        pytest.skip("no PCI devices in this machine's sysfs")
    link = tmp_path / "gpu-info.txt"
    link.symlink_to(real[0])
    for tool, args in (("read_file", {"path": str(link)}), ("shell", {"command": f"cat {link}"})):
        out, ctx = await _tool(host, tool, args)
        assert out.is_error and "PCI" in out.text and ctx.refusals, out.text
