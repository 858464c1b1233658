"""Typed evidence of the resource-account probe: where the time went on the host over one sampling window.

One model per resource, each with the window it was measured over and its numbers (USE method: utilization,
saturation, errors; https://www.brendangregg.com/usemethod.html). Percentages are of the window; `cpu_pct` of a
thread or process is of one core (100 = one core busy the whole window). What the probe could not read is a gap.

Facts (`ResourceAccount.facts()`): `account.window_s`, `account.gpu_busy_pct` (mean over the GPUs),
`account.gpu.<i>.busy_pct`, `account.host.cpu_busy_pct`, `account.host.steal_pct`, `account.host.iowait_pct`,
`account.host.swap_pages_per_s`, `account.host.psi.<res>.some_pct`, `account.thread.max_cpu_pct`,
`account.cgroup.throttled_pct`, `account.fs.network` (bool).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.probes.results import ProbeModel

FactValue = str | int | float | bool


class AccountGap(BaseModel):
    what: str
    why: str


class GpuBusy(BaseModel):
    """One GPU over the window (nvidia-smi --query-gpu ... -lms, or rocm-smi)."""

    index: int
    bus_id: str | None = None
    samples: int = 0
    busy_pct: float | None = None
    """Mean of utilization.gpu over the samples: the share of time a kernel was running (NVML's definition)."""
    busy_min_pct: float | None = None
    busy_max_pct: float | None = None
    mem_bw_util_pct: float | None = None
    """Mean utilization.memory: the share of time device memory was being read or written."""
    power_w: float | None = None
    sm_clock_mhz: float | None = None
    memory_used_mib: float | None = None
    memory_total_mib: float | None = None
    series: list[float] = Field(default_factory=list)
    """utilization.gpu per sample, in order (whether GPUs take turns)."""


class PsiLine(BaseModel):
    avg10: float | None = None
    """The kernel's 10 s running average, percent of time some (or all) tasks stalled."""
    window_pct: float | None = None
    """Stalled share of this window, from the `total` counter (microseconds)."""


class Psi(BaseModel):
    some: PsiLine | None = None
    full: PsiLine | None = None

    def pct(self) -> float | None:
        """The `some` stall share of the window (or its avg10 when the window's is unknown)."""
        if self.some is None:
            return None
        return self.some.window_pct if self.some.window_pct is not None else self.some.avg10


class Nic(BaseModel):
    name: str
    rx_bytes_per_s: float = 0
    tx_bytes_per_s: float = 0
    speed_mbit: float | None = None

    def use_pct(self) -> float | None:
        if not self.speed_mbit:
            return None
        return 100.0 * max(self.rx_bytes_per_s, self.tx_bytes_per_s) * 8 / (self.speed_mbit * 1e6)


class HostAccount(BaseModel):
    cpus_online: int | None = None
    cpu_busy_pct: float | None = None
    iowait_pct: float | None = None
    steal_pct: float | None = None
    loadavg: list[float | None] = Field(default_factory=list)
    runnable: int | None = None
    governor: str | None = None
    mem_total_kb: int | None = None
    mem_available_kb: int | None = None
    swap_total_kb: int | None = None
    swap_free_kb: int | None = None
    pswpin_per_s: float | None = None
    pswpout_per_s: float | None = None
    pgmajfault_per_s: float | None = None
    psi: dict[str, Psi] = Field(default_factory=dict)
    nics: list[Nic] = Field(default_factory=list)

    def swap_pages_per_s(self) -> float | None:
        if self.pswpin_per_s is None and self.pswpout_per_s is None:
            return None
        return (self.pswpin_per_s or 0) + (self.pswpout_per_s or 0)


class CgroupAccount(BaseModel):
    version: Literal[1, 2] | None = None
    path: str | None = None
    cpu_quota_cores: float | None = None
    """cpu.max (v2) or cfs_quota_us / cfs_period_us (v1) in cores; None: unlimited or unknown."""
    nr_periods: int | None = None
    nr_throttled: int | None = None
    nr_periods_delta: int | None = None
    nr_throttled_delta: int | None = None
    throttled_ms_per_s: float | None = None
    cpu_used_cores: float | None = None
    memory_max_bytes: int | None = None
    memory_current_bytes: int | None = None
    memory_events: dict[str, int] = Field(default_factory=dict)
    cpuset: str | None = None
    psi: dict[str, Psi] = Field(default_factory=dict)

    def throttled_pct(self) -> float | None:
        """Share of the window's scheduler periods in which the group was throttled (cgroup-v2.rst cpu.stat)."""
        if self.nr_periods_delta:
            return 100.0 * (self.nr_throttled_delta or 0) / self.nr_periods_delta
        return None


class ThreadAccount(BaseModel):
    tid: int
    comm: str
    state: str
    cpu_pct: float
    """Of one core over the window."""
    voluntary_ctxt_per_s: float = 0
    involuntary_ctxt_per_s: float = 0
    majflt_per_s: float = 0
    last_cpu: int | None = None
    """The CPU it last ran on (/proc/PID/task/TID/stat field 39), read for busy threads."""
    cur_mhz: int | None = None
    """That CPU's clock at the end of the window and its maximum (cpufreq scaling_cur_freq, cpuinfo_max_freq)."""
    max_mhz: int | None = None
    governor: str | None = None


class FileMount(BaseModel):
    path: str
    mount_point: str
    fstype: str
    source: str
    network: bool = False
    fuse: bool = False


class ShmMount(BaseModel):
    """The /dev/shm a process sees (its mount namespace's: a container's own tmpfs, or the host's under --ipc=host)."""

    fstype: str
    source: str = ""
    options: str = ""
    size_bytes: int | None = None
    """tmpfs size= in bytes; None when the option is absent (tmpfs's default, half of RAM) or given as a %."""
    size_pct_of_ram: float | None = None


class ProcessAccount(BaseModel):
    pid: int
    kind: str | None = None
    argv0: str | None = None
    comm: str | None = None
    cpu_pct: float = 0
    threads_total: int = 0
    states: dict[str, int] = Field(default_factory=dict)
    threads: list[ThreadAccount] = Field(default_factory=list)
    """The busiest threads (capped), by CPU."""
    majflt_per_s: float = 0
    read_bytes_per_s: float | None = None
    """Bytes the process caused to be fetched from storage (/proc/PID/io read_bytes)."""
    rchar_per_s: float | None = None
    """Bytes it read through read() and friends, page cache included (/proc/PID/io rchar)."""
    io_readable: bool = False
    rss_bytes: int | None = None
    """Host memory it holds (/proc/PID/status VmRSS): weights offloaded to the CPU show here."""
    gpus: list[int | str] = Field(default_factory=list)
    cgroup: CgroupAccount | None = None
    files: list[FileMount] = Field(default_factory=list)
    """The mounts behind the model files it maps or holds open (and its --model path)."""
    cpus_allowed: str | None = None
    """The CPUs it may run on (Cpus_allowed_list of /proc/PID/status: taskset, a cpuset, a CPU manager)."""
    cpus_allowed_count: int | None = None
    memlock_bytes: int | None = None
    """Its locked-memory limit (RLIMIT_MEMLOCK, /proc/PID/limits "Max locked memory", soft), bytes; None: unlimited
    (memlock_unlimited) or not read."""
    memlock_unlimited: bool = False
    rdma_fds: int = 0
    """Open RDMA verbs devices (/dev/infiniband/*): it registers memory with an HCA (NCCL NET/IB, KV transfer)."""
    shm: ShmMount | None = None
    """Its /dev/shm mount (/proc/PID/mountinfo): NCCL's SHM transport and PyTorch's worker tensors live there."""

    @property
    def name(self) -> str:
        return self.comm or self.argv0 or str(self.pid)


class ResourceAccount(ProbeModel):
    kind: Literal["resource_account"] = "resource_account"
    window_s: float = 0.0
    clk_tck: int = 100
    gpus: list[GpuBusy] = Field(default_factory=list)
    host_account: HostAccount = Field(default_factory=HostAccount)
    processes: list[ProcessAccount] = Field(default_factory=list)
    gaps: list[AccountGap] = Field(default_factory=list)

    def sampled_gpus(self) -> list[GpuBusy]:
        """GPUs with a busy fraction measured over the window (at least three samples)."""
        return [g for g in self.gpus if g.busy_pct is not None and g.samples >= 3]

    def gpu_busy_pct(self) -> float | None:
        """Mean busy share of the GPUs the serving processes hold (all sampled GPUs when none is known held)."""
        gpus = self.sampled_gpus()
        held = {i for p in self.processes for i in p.gpus if isinstance(i, int)}
        if held:
            gpus = [g for g in gpus if g.index in held] or gpus
        if not gpus:
            return None
        return sum(g.busy_pct or 0 for g in gpus) / len(gpus)

    def facts(self) -> dict[str, FactValue]:
        out: dict[str, FactValue] = {"account.window_s": self.window_s}
        busy = self.gpu_busy_pct()
        if busy is not None:
            out["account.gpu_busy_pct"] = round(busy, 1)
        for g in self.sampled_gpus():
            out[f"account.gpu.{g.index}.busy_pct"] = g.busy_pct or 0
        h = self.host_account
        for key in ("cpu_busy_pct", "steal_pct", "iowait_pct"):
            v = getattr(h, key)
            if v is not None:
                out[f"account.host.{key}"] = v
        swap = h.swap_pages_per_s()
        if swap is not None:
            out["account.host.swap_pages_per_s"] = swap
        for res, p in h.psi.items():
            pct = p.pct()
            if pct is not None:
                out[f"account.host.psi.{res}.some_pct"] = pct
        threads = [t.cpu_pct for p in self.processes for t in p.threads]
        if threads:
            out["account.thread.max_cpu_pct"] = max(threads)
        thr = [t for p in self.processes if p.cgroup for t in [p.cgroup.throttled_pct()] if t is not None]
        if thr:
            out["account.cgroup.throttled_pct"] = max(thr)
        if any(f.network or f.fuse for p in self.processes for f in p.files):
            out["account.fs.network"] = True
        return out


ACCOUNT_MODELS: tuple[type[ProbeModel], ...] = (ResourceAccount,)
