"""A real Slurm cluster on this machine for tests: munged, slurmctld and one slurmd per node name, on loopback.

Debian's `slurm-wlm` and `munge` packages (installed by .ci/run). Every node is this machine: `NodeName=gpuN
NodeHostname=localhost NodeAddr=127.0.0.1 Port=P` with its own slurmd (`slurmd -N gpuN`), spool and log; the
controller, the daemons and the clients share a generated slurm.conf (`SLURM_CONF`) and a munge socket of their own,
so nothing of a system Slurm or munge is used or touched. Job steps run as the current user (root on CI).

Usage::

    cluster = start_cluster(tmp_path, nodes=3)
    env = cluster.env()            # SLURM_CONF for clients (srun, sinfo, scontrol)
    cluster.scontrol("update", "NodeName=gpu3", "State=DRAIN", "Reason=GPU 3 Xid 79")
    cluster.stop()

`slurm_cluster` is a module-scoped fixture; `missing()` says why the cluster cannot run (packages absent), and the
fixture skips with that reason only then.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from support.sshd import free_port

BINARIES = {"munged": "munge", "mungekey": "munge", "slurmctld": "slurmctld", "slurmd": "slurmd",
            "srun": "slurm-client", "sinfo": "slurm-client", "scontrol": "slurm-client"}
SBIN = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")


def _which(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for d in SBIN:
        p = Path(d) / name
        if p.exists():
            return str(p)
    return None


def missing() -> str | None:
    """Why a local Slurm cluster cannot be started here, or None."""
    absent = sorted({pkg for b, pkg in BINARIES.items() if _which(b) is None})
    if absent:
        return (f"Slurm/munge binaries not installed ({', '.join(absent)}): `apt-get install slurm-wlm munge` "
                "(.ci/run installs them)")
    if os.geteuid() != 0:
        return "the local Slurm cluster runs its daemons as root (SlurmUser=root); run the tests as root as CI does"
    return None


def _plugin_dir() -> str | None:
    for d in ("/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib/aarch64-linux-gnu/slurm-wlm", "/usr/lib/slurm-wlm",
              "/usr/lib64/slurm", "/usr/lib/slurm"):
        if Path(d, "select_cons_tres.so").exists():
            return d
    return None


@dataclass
class Cluster:
    dir: Path
    nodes: list[str]
    partition: str = "gpu"
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def conf(self) -> Path:
        return self.dir / "slurm.conf"

    def env(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=check,
                              env={**os.environ, **self.env()})

    def scontrol(self, *args: str) -> str:
        return self.run("scontrol", *args).stdout

    def wait_idle(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        out = ""
        while time.monotonic() < deadline:
            out = self.run("sinfo", "-h", "-N", "-o", "%N %T", check=False).stdout
            states = dict(line.split() for line in out.splitlines() if len(line.split()) == 2)
            if all(states.get(n, "").startswith("idle") for n in self.nodes):
                return
            if any(v.startswith("inval") for v in states.values()):
                reasons = self.run("sinfo", "-h", "-R", "-o", "%N %E", check=False).stdout
                raise RuntimeError(f"Slurm nodes invalid: {reasons.strip()}; logs in {self.dir / 'log'}")
            time.sleep(0.3)
        raise RuntimeError(f"Slurm nodes did not come up idle: {out!r}; logs in {self.dir / 'log'}")

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs.clear()


def _spawn(argv: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    with log.open("ab") as fh:
        return subprocess.Popen(argv, stdout=fh, stderr=fh, start_new_session=True, env=env)


def start_cluster(tmp_path: Path, nodes: int = 3, partition: str = "gpu") -> Cluster:
    d = Path(tmp_path) / "slurm"
    for sub in ("state", "spool", "log"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    d.chmod(0o755)  # munged insists that its socket's directory be traversable
    names = [f"gpu{i}" for i in range(1, nodes + 1)]
    for n in names:
        (d / "spool" / n).mkdir(exist_ok=True)
    c = Cluster(d, names, partition)
    key = d / "munge.key"
    subprocess.run([_which("mungekey"), "-c", "-k", str(key)], check=True, capture_output=True)
    key.chmod(0o600)
    sock = d / "munge.sock"
    env = {**os.environ, "SLURM_CONF": str(c.conf)}
    c.procs.append(_spawn([_which("munged"), "-F", "--force", f"--socket={sock}", f"--key-file={key}",
                           f"--log-file={d / 'log' / 'munged.log'}", f"--pid-file={d / 'munged.pid'}",
                           f"--seed-file={d / 'munged.seed'}"], d / "log" / "munged.out", env))
    deadline = time.monotonic() + 10
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    ctld, slurmd = free_port(), free_port()
    plugins = _plugin_dir()
    lines = [
        "ClusterName=investigate", "SlurmctldHost=localhost(127.0.0.1)", f"SlurmctldPort={ctld}",
        f"SlurmdPort={slurmd}", "AuthType=auth/munge", f"AuthInfo=socket={sock}", "CredType=cred/munge",
        "SlurmUser=root", "SlurmdUser=root", f"StateSaveLocation={d / 'state'}",
        f"SlurmdSpoolDir={d / 'spool'}/%n", f"SlurmctldPidFile={d / 'slurmctld.pid'}",
        f"SlurmdPidFile={d / 'spool'}/slurmd-%n.pid", f"SlurmctldLogFile={d / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={d / 'log'}/slurmd-%n.log", "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_CPU", "SchedulerType=sched/builtin",
        "ReturnToService=2", "MpiDefault=none", "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none", "SlurmctldTimeout=30", "SlurmdTimeout=60",
        "MessageTimeout=20", "GresTypes=gpu",
    ]
    if plugins:
        lines.append(f"PluginDir={plugins}")
    for n in names:
        lines.append(f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={free_port()} CPUs=2 "
                     "Gres=gpu:h200:8 State=UNKNOWN")
    lines.append(f"PartitionName={partition} Nodes={','.join(names)} Default=YES MaxTime=INFINITE State=UP "
                 "OverSubscribe=FORCE")
    c.conf.write_text("\n".join(lines) + "\n")
    # GPUs as generic resources whose "device files" are plain files here: Slurm counts and schedules them
    devs = d / "dev"
    devs.mkdir(exist_ok=True)
    for i in range(8):
        (devs / f"nvidia{i}").touch()
    (d / "gres.conf").write_text(f"AutoDetect=off\nNodeName={','.join(names)} Name=gpu Type=h200 "
                                 f"File={devs}/nvidia[0-7]\n")
    c.procs.append(_spawn([_which("slurmctld"), "-D", "-f", str(c.conf)], d / "log" / "slurmctld.out", env))
    time.sleep(0.5)
    for n in names:
        c.procs.append(_spawn([_which("slurmd"), "-D", "-N", n, "-f", str(c.conf)], d / "log" / f"slurmd-{n}.out",
                              env))
    try:
        c.wait_idle()
    except Exception:
        c.stop()
        raise
    return c


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    """A running 3-node Slurm cluster (gpu1..gpu3, partition gpu) for the module's tests; skipped only when the
    Slurm/munge packages are not installed."""
    why = missing()
    if why:
        pytest.skip(why)
    c = start_cluster(tmp_path_factory.mktemp("slurm"), nodes=3)
    yield c
    c.stop()
