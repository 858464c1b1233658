"""The account's host-side limits that no thread alone shows: the CPUs a process may run on (its affinity) used up,
a NIC saturated both ways (an exchange with peers), a busy thread's CPU clocked down, a VM's 9p share behind the
weights; pure, on ResourceAccount models, plus the real affinity read back through the probe over real sshd."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support.evidence import ev, inventory

from orchestrator.analysis.synthesis import bound_of
from orchestrator.ranks import Rank
from orchestrator.prongs.resource_account.rules import account_findings


def account_bound(found):
    """The bound the account's own claims set (None when none of its findings claims it)."""
    if not any(f.sets_bound and int(f.sets_bound.rank) == Rank.ACCOUNT for f in found):
        return None
    return bound_of(found)
from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.prongs.resource_account.models import (
    FileMount, GpuBusy, HostAccount, Nic, ProcessAccount, ResourceAccount, ThreadAccount,
)


def acct(busy: float, procs: list[ProcessAccount], cpus: int = 64, nics: list[Nic] | None = None) -> ResourceAccount:
    return ResourceAccount(host="box", window_s=2.0, gpus=[GpuBusy(index=0, samples=10, busy_pct=busy,
                                                                      series=[busy] * 10)],
                           processes=procs, host_account=HostAccount(cpus_online=cpus, cpu_busy_pct=3,
                                                                     steal_pct=0, nics=nics or []))


def proc(pid: int, cpus: list[float], allowed: str | None = None, count: int | None = None, **kw) -> ProcessAccount:
    threads = [ThreadAccount(tid=pid + i, comm=f"t{i}", state="R", cpu_pct=100 * c, involuntary_ctxt_per_s=500)
               for i, c in enumerate(cpus)]
    return ProcessAccount(pid=pid, comm=f"p{pid}", gpus=[0], threads=threads, cpu_pct=100 * sum(cpus),
                          cpus_allowed=allowed, cpus_allowed_count=count, **kw)


def findings(a: ResourceAccount):
    v = EvidenceView([ev("e1", inventory("NVIDIA L40S", "8.9"), tool="gpu_inventory"),
                      ev("e9", a, tool="resource_account")])
    return account_findings(v)


def test_processes_sharing_one_allowed_cpu_that_they_fill_set_the_bound():
    a = acct(33, [proc(10, [0.35, 0.1], "3", 1), proc(20, [0.45, 0.06], "3", 1)])
    bound, reasoning, setter = account_bound(findings(a))  # type: ignore[misc]
    assert setter is not None and setter.id == "account-cpu-allowance" and bound == "latency"
    assert "may run on only 1 CPU of the host's 64 (3) and used 0.96 of them" in reasoning
    assert "take turns on the same CPUs" in setter.claim and "--cpuset-cpus" in setter.recommendations[0]


def test_an_allowed_set_with_headroom_or_the_whole_host_is_not_a_limit():
    # planted check: comparing the use with one CPU instead of the allowed count fails the first assertion
    assert "account-cpu-allowance" not in {f.id for f in findings(acct(33, [proc(10, [0.9, 0.9], "0-7", 8)]))}
    # every CPU of the host allowed: a saturated thread, not a confinement
    got = {f.id for f in findings(acct(33, [proc(10, [0.95], "0-63", 64)]))}
    assert "account-cpu-allowance" not in got and "account-cpu-thread" in got


def test_a_nic_full_in_both_directions_is_an_exchange_with_peers_and_one_way_is_not():
    both = acct(25, [proc(10, [0.3])], nics=[Nic(name="eth0", rx_bytes_per_s=11.2e9, tx_bytes_per_s=11.3e9,
                                                    speed_mbit=100000)])
    f = next(x for x in findings(both) if x.id == "account-nic")
    assert "exchange with peers" in f.claim and "RDMA" in f.recommendations[0] and "receiving at line" not in f.claim
    down = acct(25, [proc(10, [0.3])], nics=[Nic(name="eth0", rx_bytes_per_s=11.5e9, tx_bytes_per_s=2e8,
                                                    speed_mbit=100000)])
    f = next(x for x in findings(down) if x.id == "account-nic")
    assert "exchange with peers" not in f.claim and "receiving at line rate" in f.claim


def test_a_saturated_thread_on_a_clocked_down_core_says_the_clock_and_a_full_clock_does_not():
    slow = proc(10, [0.98])
    slow.threads[0] = slow.threads[0].model_copy(update=dict(last_cpu=4, cur_mhz=800, max_mhz=3500,
                                                             governor="powersave"))
    f = next(x for x in findings(acct(30, [slow])) if x.id == "account-cpu-thread")
    assert "clocked at 800 of its 3500 MHz, governor powersave" in f.claim and "23%" in f.claim
    assert any("performance" in r for r in f.recommendations)
    full = proc(10, [0.98])
    full.threads[0] = full.threads[0].model_copy(update=dict(last_cpu=4, cur_mhz=3300, max_mhz=3500))
    f = next(x for x in findings(acct(30, [full])) if x.id == "account-cpu-thread")
    assert "clocked" not in f.claim and not any("frequency-set" in r for r in f.recommendations)


def test_weights_on_a_vms_9p_share_are_named_as_such_and_nfs_as_the_network():
    f9 = FileMount(path="/mnt/c/m/model.bin", mount_point="/mnt/c", fstype="9p", source="C:\\134", network=True)
    p = proc(10, [0.1], majflt_per_s=900, read_bytes_per_s=40e6, files=[f9])
    f = next(x for x in findings(acct(0, [p])) if x.id == "account-filesystem")
    assert "9p share from the VM's host" in f.claim and "over the network" not in f.claim
    assert any("not /mnt/c" in r for r in f.recommendations)
    nfs = FileMount(path="/m/model.safetensors", mount_point="/m", fstype="nfs4", source="10.0.0.5:/m", network=True)
    p = proc(10, [0.1], majflt_per_s=900, read_bytes_per_s=40e6, files=[nfs])
    f = next(x for x in findings(acct(0, [p])) if x.id == "account-filesystem")
    assert "over the network" in f.claim and "VM's host" not in f.claim


@pytest.mark.ssh
@pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="OpenSSH sshd not installed")
@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no sched_setaffinity on this platform")
async def test_a_real_process_pinned_to_one_cpu_is_read_back_with_its_affinity(sshd_factory, tmp_path):
    """A real process pinned with sched_setaffinity (what taskset does), read through the real probe over sshd: its
    Cpus_allowed_list, the count, and the CPU its spinning thread last ran on are what the kernel says."""
    from test_account_real import ENGINE, _account  # the stand-in engine and the probe call over sshd

    import uuid

    tag = uuid.uuid4().hex
    script = tmp_path / "bin" / "vllm"
    script.parent.mkdir()
    script.write_text(ENGINE)
    cpu = max(os.sched_getaffinity(0))
    p = subprocess.Popen([sys.executable, str(script), "spin"], env={**os.environ, "INVESTIGATE_STAGED_TAG": tag},
                         stdout=subprocess.PIPE, preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == b"ready"
        a = await _account(sshd_factory, tag, 1.0)
        [got] = [x for x in a.processes if x.pid == p.pid]
        assert got.cpus_allowed == str(cpu) and got.cpus_allowed_count == 1
        spin = next(t for t in got.threads if t.comm == "detokenizer")
        if spin.cpu_pct >= 50:  # busy threads carry the CPU they last ran on (and its clock where cpufreq exists)
            assert spin.last_cpu == cpu
            has_freq = os.path.exists(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq")
            assert (spin.cur_mhz is not None) == has_freq
    finally:
        p.kill()
        p.wait()
        if p.stdout is not None:
            p.stdout.close()


def test_a_proc_stat_that_does_not_advance_is_a_gap_not_a_fully_busy_host(tmp_path):
    """The probe script run for real on a root whose /proc/stat does not move between its two readings (a stale or
    replaced file; a starved stager): no CPU share, a gap saying why. Planted: without the check it reported the
    host 100 % busy (a zero total read as all busy), and this test failed."""
    import json
    from orchestrator.probes.scripts import load

    proc = tmp_path / "proc"
    (proc / "pressure").mkdir(parents=True)
    (proc / "stat").write_text("cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 100 0 50 1000 0 0 0 0 0 0\n")
    (proc / "loadavg").write_text("0.10 0.10 0.10 1/100 999\n")
    (proc / "meminfo").write_text("MemTotal:       1000000 kB\nMemAvailable:    900000 kB\n")
    (proc / "vmstat").write_text("pswpin 0\npswpout 0\npgmajfault 0\n")
    (proc / "net").mkdir()
    (proc / "net" / "dev").write_text("Inter-|\n face |\n    lo: 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
    script = tmp_path / "account_sent.py"
    script.write_text(load("account"))  # the source as the probe sends it (prelude first)
    env = {"INVESTIGATE_NODE_ROOT": str(tmp_path), "INVESTIGATE_STAGED_TAG": "none-such", "PATH": "/nonexistent"}
    out = subprocess.run([sys.executable, "-I", "-S", str(script), json.dumps({"sample_s": 0.2})], env=env,
                         capture_output=True, text=True, timeout=60)
    data = json.loads(out.stdout)
    assert data["host"].get("cpu_busy_pct") is None
    assert any(g["what"] == "/proc/stat" and "did not advance" in g["why"] for g in data["gaps"])
