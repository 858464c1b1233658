"""Where the time goes: the resource account (prongs/resource_account/probe.py) turned into findings, and the bound it sets.

The USE method (https://www.brendangregg.com/usemethod.html): for every resource its utilization, saturation and
errors, and the saturated one is the bound. The GPU is the bound only when the GPUs are busy over the window; when
they are not, the account says so first, with the numbers, and names what they wait for: a serving thread at a full
core, the cgroup's CPU quota, the host's CPUs, memory and swap, a network or FUSE filesystem, I/O, a NIC, the
engine's queue, or the load the client offered. When nothing is saturated it says that, and names the next
measurement. Pure: evidence in, findings out.

Thresholds are named here, each with why; percentages are of the sampling window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orchestrator.prongs.resource_account.load_rules import burst_queue, client_limited, flat_throughput
from orchestrator.prongs.resource_account.queue_rules import BOUNDS_BATCH, engine_queue
from orchestrator.diagnosis import Bound, Number
from orchestrator.findings import BoundClaim, Finding, Symptom, capitalized
from orchestrator.ranks import ONLY_ELSEWHERE, Rank
from orchestrator.prongs.resource_account.models import ProcessAccount, ResourceAccount, ThreadAccount

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView

GPU_BUSY_PCT = 80.0
"""At or above: the GPUs are the busy resource and the roofline (kernels, memory, compute) decides the bound."""
GPU_IDLE_PCT = 60.0
"""Below: the GPUs wait much of the window, and the account names what for before any kernel finding leads."""
THREAD_SATURATED_PCT = 85.0
"""A thread at this share of one core is saturated: a single-threaded stage runs flat out (Python holds one core)."""
CLOCK_LOW = 0.6
"""A busy thread's CPU at or below this share of its maximum clock runs clocked down (powersave, a power cap)."""
THROTTLED_PCT = 20.0
"""Share of the window's CFS periods in which the cgroup ran out of quota (cgroup-v2.rst cpu.stat nr_throttled)."""
SWAP_PAGES_S = 100.0
"""Pages swapped in+out per second (/proc/vmstat pswpin/pswpout): sustained swapping, not a stray page."""
PSI_PCT = 10.0
"""Share of the window some task stalled on a resource (psi.rst `some`): above this the stall is a real cost."""
ALLOWED_SATURATED = 0.85
"""Share of the CPUs a process may run on (its affinity) that its serving processes used: the allowed set is full."""
HOST_CPU_PCT = 90.0
STEAL_PCT = 10.0
IOWAIT_PCT = 20.0
FS_READ_BPS = 10e6
"""A process reading its model files this fast from a network or FUSE filesystem is loading from it."""
LOCAL_LOAD_BPS = 200e6
"""A process reading its model files from local storage this fast is loading them (a steady-state server reads
its weights once, at start-up)."""
GUEST_SHARES = ("9p", "virtiofs")
"""Filesystems a virtual machine reads from its host (WSL2's drvfs is 9p): remote to the guest even on one box."""
NIC_PCT = 80.0
NIC_IN_USE_PCT = 10.0
"""A NIC carrying at least this share of its line rate, but below NIC_PCT, is named with its headroom: the link the
traffic takes is not what limits it (a healthy term said healthy, with its figure)."""
EXCHANGE_SHARE = 0.6
"""A saturated NIC whose other direction carries at least this share of the busy one: traffic exchanged with peers."""
TURNS_SHARE = 0.6
"""Share of busy samples in which exactly one GPU was busy: GPUs taking turns, not working together."""
SHM_ENOUGH_BYTES = 1 << 30
"""A /dev/shm at least this large holds what a multi-GPU server puts there: NCCL's SHM-transport and proxy segments
(several MB each, one per peer connection and channel: NCCL's own warnings print sizes such as 7340384 and 9637888
bytes) and the tensors PyTorch's multiprocessing shares between the API server and the workers. TGI's docker
instructions give --shm-size 1g, vLLM's --ipc=host or --shm-size; Docker's default is 64 MB."""
NCCL_SHM_SEGMENT_BYTES = (7340384, 33030528)
"""NCCL shared-memory segments as NCCL's warnings print them ("misc/shmutils.cc NCCL WARN Error while creating shared
memory segment /dev/shm/nccl-… (size 7340384)" in MiniMax-AI/MiniMax-01#42 with NCCL 2.21.5; "(size 33030528), error:
No space left on device (28)" in ai-dynamo/dynamo#1408): the smallest and the largest, the units the /dev/shm size is
counted in."""
MEMLOCK_ENOUGH_BYTES = 1 << 30
"""A locked-memory limit below this, on a process that holds RDMA verbs devices open, is a container's or a login's
default (Docker: 8 MiB; many distributions: 64 KiB), not a setting for RDMA: NCCL's troubleshooting guide asks for
`ulimit -l unlimited` with InfiniBand, since every buffer it registers with the HCA pins pages that count against
the limit."""
HOST_SYMPTOMS: list[Symptom] = ["throughput", "itl", "ttft", "startup"]
"""A saturated host resource while the GPUs wait slows whatever the GPUs wait for, start-up (weights read from a slow
filesystem, a throttled loader) included."""


@dataclass
class Account:
    """The account's evidence and the numbers the findings share."""

    ev: str
    acct: ResourceAccount
    busy: float | None
    """Mean GPU busy share of the window (the GPUs the serving processes hold)."""

    @property
    def window(self) -> str:
        return f"{self.acct.window_s:.1f} s"

    def gpus_line(self) -> str:
        gpus = self.acct.sampled_gpus()
        per = ", ".join(f"GPU {g.index} {g.busy_pct:.0f} %" for g in gpus[:8])
        return f"{per}; {gpus[0].samples} samples" if gpus else ""


def _account(v: "EvidenceView") -> Account | None:
    for ev, m in v.probes("resource_account"):
        if isinstance(m, ResourceAccount):
            return Account(ev.id, m, m.gpu_busy_pct())
    return None


def _num(name: str, value: float, unit: str, ev: str, note: str = "", peak: float | None = None) -> Number:
    return Number(name=name, value=round(value, 2), unit=unit, source=ev, note=note, peak=peak)


def _busiest_thread(acct: ResourceAccount) -> tuple[ProcessAccount, ThreadAccount] | None:
    pairs = [(p, t) for p in acct.processes for t in p.threads]
    return max(pairs, key=lambda pt: pt[1].cpu_pct, default=None)


def _idle_words(a: Account) -> str:
    return f"GPU busy {a.busy:.0f} % of the {a.window} window ({a.gpus_line()})"


def _mb(x: float) -> str:
    return f"{x / 1e6:.0f} MB/s"


# --- the saturated resources, in the order the account follows them ------------------------------------------------


def _memlock(a: Account) -> Finding | None:
    """A resource too small rather than saturated: the locked-memory limit (RLIMIT_MEMLOCK, /proc/PID/limits) of a
    serving process that uses RDMA (it holds /dev/infiniband verbs devices open). Registering a buffer with the HCA
    (ibv_reg_mr) pins its pages, and pinned pages count against the limit: NCCL's NET/IB buffers (several MB per
    channel and peer) exceed a default limit of KiB or a few MiB, the registration fails with 'Cannot allocate memory'
    and the communicator does not come up (or the transfer library falls back to a slower path). Sources:
    https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html (InfiniBand: ulimit -l unlimited),
    https://github.com/NVIDIA/nccl-tests/issues/206 (ibv_reg_mr_iova2 failed, ulimit -l was 8192),
    https://github.com/NVIDIA/cudf-spark/pull/7632 (a container's memlock limit, --ulimit memlock=-1)."""
    for p in a.acct.processes:
        lim = p.memlock_bytes
        if not p.rdma_fds or p.memlock_unlimited or lim is None or lim >= MEMLOCK_ENOUGH_BYTES:
            continue
        kib = lim / 1024
        size = f"{kib / 1024:g} MiB" if kib >= 1024 else f"{kib:g} KiB"
        claim = (f"The serving process {p.name} ({p.pid}) holds {p.rdma_fds} RDMA verbs device(s) open "
                 f"(/dev/infiniband: it talks to an InfiniBand / RoCE adapter) and may lock only {size} of memory "
                 "(/proc/PID/limits 'Max locked memory', RLIMIT_MEMLOCK). Every buffer registered with the adapter "
                 "(ibv_reg_mr) pins its pages against that limit, and NCCL registers several MB per channel and peer "
                 f"for its NET/IB transport: at {size} the registration fails with 'Cannot allocate memory', NCCL "
                 "reports a system error and the communicator between the hosts does not start "
                 "[https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html].")
        return Finding(
            id="account-memlock-small", category="environment", confidence=0.75, evidence=[a.ev], bound=None,
            title=f"Locked memory is limited to {size} for a process using RDMA: NCCL cannot register its buffers",
            claim=claim, short=f"the serving process may lock only {size} of memory while it uses RDMA (NCCL's "
                               "buffers cannot be registered).",
            symptoms=["errors", "startup"],
            numbers=[_num("locked-memory limit (RLIMIT_MEMLOCK)", kib, "KiB", a.ev),
                     _num("RDMA verbs devices open", p.rdma_fds, "devices", a.ev)],
            recommendations=["Lift the locked-memory limit of the serving processes: `docker run --ulimit "
                             "memlock=-1:-1`; a systemd unit or the container runtime's: LimitMEMLOCK=infinity; a "
                             "login or Slurm job: `* - memlock unlimited` in /etc/security/limits.conf (and "
                             "PropagateResourceLimits); check inside the serving environment with `ulimit -l` "
                             "(it must print unlimited)."])
    return None


def _shm(a: Account) -> Finding | None:
    """A resource too small rather than saturated: the /dev/shm the serving processes see (their mount namespace's,
    /proc/PID/mountinfo) against what processes sharing GPUs put there. Several GPUs driven from one server exchange
    through it: NCCL's SHM transport and proxy segments, and PyTorch's inter-process tensors. A container's own tmpfs
    of tens of MB (Docker's default 64 MB) runs out: shm_open/posix_fallocate fail with 'No space left on device',
    NCCL returns 'unhandled system error' and the engine dies at start-up or on its first collective, or a worker
    is killed by SIGBUS touching a page the tmpfs cannot back. Sources: https://docs.vllm.ai/en/latest/deployment/
    docker.html (--ipc=host or --shm-size), https://github.com/vllm-project/vllm/issues/1710,
    https://github.com/NVIDIA/nccl/issues/342."""
    gpus = {i for p in a.acct.processes for i in p.gpus}
    if len(gpus) < 2:
        return None
    total_kb = a.acct.host_account.mem_total_kb
    for p in a.acct.processes:
        s = p.shm
        if s is None or s.fstype != "tmpfs":
            continue
        size = s.size_bytes
        if size is None and s.size_pct_of_ram and total_kb:
            size = int(s.size_pct_of_ram / 100 * total_kb * 1024)
        if size is None or size >= SHM_ENOUGH_BYTES:
            continue
        mib = size / 2**20
        small, large = NCCL_SHM_SEGMENT_BYTES
        fits = size // small
        claim = (f"The serving process {p.name} ({p.pid}) sees a /dev/shm of {mib:.0f} MiB (a tmpfs of its own mount "
                 f"namespace, mountinfo options {s.options!r}) while the serving processes drive {len(gpus)} GPUs "
                 f"together. Processes sharing GPUs exchange through /dev/shm: NCCL places a segment of several MB per "
                 f"peer connection and channel there ({small} to {large} bytes each in NCCL's own warnings, so "
                 f"{mib:.0f} MiB holds {size // large} to {fits} of them for the whole server) and PyTorch passes "
                 "tensors between the API server and its workers through it. "
                 "When it fills, creating a segment fails ('No space left on device'), NCCL reports 'unhandled system "
                 "error' and the engine stops at start-up or at its first collective, or a worker dies of a bus "
                 "error; a container gets a 64 MB /dev/shm unless it is started with --shm-size or --ipc=host "
                 "[https://docs.vllm.ai/en/latest/deployment/docker.html].")
        return Finding(
            id="account-shm-small", category="environment", confidence=0.75, evidence=[a.ev], bound=None,
            title=f"/dev/shm is {mib:.0f} MiB for a server on {len(gpus)} GPUs: too small for NCCL and the workers",
            claim=claim, short=f"the container's /dev/shm is only {mib:.0f} MiB for {len(gpus)} GPUs' NCCL "
                               "segments and worker tensors.",
            symptoms=["errors", "startup"],
            numbers=[_num("/dev/shm size", mib, "MiB", a.ev, s.options[:80], peak=SHM_ENOUGH_BYTES / 2**20),
                     _num(f"NCCL segments of {small} bytes that fit", fits, "segments", a.ev)],
            recommendations=["Give the container the host's shared memory or a large /dev/shm: `docker run "
                             "--ipc=host` or `--shm-size=16g` (Kubernetes: an emptyDir with medium: Memory mounted at "
                             "/dev/shm); check inside it with `df -h /dev/shm`."])
    return None


def _cgroup(a: Account) -> Finding | None:
    for p in a.acct.processes:
        c = p.cgroup
        if c is None:
            continue
        pct = c.throttled_pct()
        if pct is None or pct < THROTTLED_PCT:
            continue
        quota = f"{c.cpu_quota_cores:g} CPUs" if c.cpu_quota_cores else "its quota"
        used = f", using {c.cpu_used_cores:g} CPUs" if c.cpu_used_cores is not None else ""
        knob = "cpu.max" if c.version == 2 else "cpu.cfs_quota_us"
        claim = (f"The serving process {p.name} ({p.pid}) runs in cgroup {c.path} limited to {quota} ({knob}){used}: "
                 f"it was throttled in {c.nr_throttled_delta} of {c.nr_periods_delta} scheduler periods ({pct:.0f} %) "
                 f"of the window, {c.throttled_ms_per_s or 0:.0f} ms per second. The engine's CPU threads (scheduler, "
                 "tokenizer, kernel launches) stop for the rest of each period while the GPU waits "
                 "[https://docs.kernel.org/admin-guide/cgroup-v2.html#cpu-interface-files].")
        return Finding(
            id="account-cgroup-throttled", category="workload", confidence=0.85, evidence=[a.ev], bound="latency",
            title=f"The container's CPU quota throttles the engine ({pct:.0f} % of periods throttled, {quota})",
            claim=claim, short=f"the cgroup's CPU quota ({quota}) throttled the engine in {pct:.0f} % of periods.",
            symptoms=HOST_SYMPTOMS, numbers=[
                _num("cgroup periods throttled", pct, "%", a.ev, f"{c.nr_throttled_delta}/{c.nr_periods_delta} periods"),
                *([_num("cgroup CPU quota", c.cpu_quota_cores, "CPUs", a.ev)] if c.cpu_quota_cores else [])],
            recommendations=["Raise or remove the container's CPU limit (Kubernetes resources.limits.cpu, docker "
                             "--cpus, the cgroup's cpu.max) so the engine's threads are not throttled; give it at "
                             "least one core per GPU worker plus the API server."])
    return None


def _cpu_allowance(a: Account) -> Finding | None:
    """The CPUs the serving processes may run on (their affinity: taskset, a container's cpuset, a CPU manager's
    exclusive cores; Cpus_allowed_list in /proc/PID/status, proc(5)) used up: a utilization of the allowed set, not
    of the host, so a host with idle cores still starves the engine. Every serving process sharing one allowed set
    counts against it."""
    h = a.acct.host_account
    groups: dict[str, list[ProcessAccount]] = {}
    for p in a.acct.processes:
        if p.cpus_allowed and p.cpus_allowed_count:
            groups.setdefault(p.cpus_allowed, []).append(p)
    for allowed, procs in groups.items():
        n = procs[0].cpus_allowed_count or 0
        if h.cpus_online and n >= h.cpus_online:
            continue
        used = sum(p.cpu_pct for p in procs) / 100.0
        if used < ALLOWED_SATURATED * n:
            continue
        threads = [t for p in procs for t in p.threads]
        runnable = sum(1 for t in threads if t.state == "R")
        ivcs = sum(t.involuntary_ctxt_per_s for t in threads)
        busiest = max(threads, key=lambda t: t.cpu_pct, default=None)
        names = ", ".join(f"{p.name} ({p.pid}) {p.cpu_pct:.0f} %" for p in procs[:6])
        host = f" of the host's {h.cpus_online}" if h.cpus_online else ""
        cg = next((p.cgroup for p in procs if p.cgroup and p.cgroup.cpuset), None)
        via = f"; the cgroup's cpuset.cpus.effective is {cg.cpuset!r}" if cg and cg.cpuset else ""
        share = (f"; {runnable} of their {len(threads)} sampled threads were runnable (R) and they were preempted "
                 f"{ivcs:.0f} times/s (involuntary context switches)" if threads else "")
        top = (f" No single thread is at a full core (the busiest, {busiest.comm}, at {busiest.cpu_pct:.0f} %): they "
               "take turns on the same CPUs." if busiest and busiest.cpu_pct < THREAD_SATURATED_PCT and n <= 2 else "")
        pl = "CPU" if n == 1 else "CPUs"
        claim = (f"The serving processes may run on only {n} {pl}{host} (Cpus_allowed_list {allowed!r}{via}) and "
                 f"used {used:.2f} {pl} of them over the window ({names}){share}.{top} The engine's host work "
                 "(API server, scheduler, tokenizer, kernel launches) queues for these CPUs while the GPU waits, "
                 "however idle the rest of the host is [https://man7.org/linux/man-pages/man5/proc.5.html].")
        return Finding(
            id="account-cpu-allowance", category="workload", confidence=0.8, evidence=[a.ev], bound="latency",
            title=f"The engine is confined to {n} {pl} and uses all of it ({used:.2f} of {n})",
            claim=claim, short=(f"the serving processes may run on only {n} {pl}{host} ({allowed}) and used "
                                f"{used:.2f} of them."),
            symptoms=HOST_SYMPTOMS, numbers=[
                _num("CPUs the serving processes may run on", n, "CPUs", a.ev, f"Cpus_allowed_list {allowed}"),
                _num("CPU used by the serving processes", used, "CPUs", a.ev, peak=float(n))],
            recommendations=["Widen the CPUs the engine may run on: the container's cpuset (docker --cpuset-cpus, "
                             "Kubernetes' static CPU manager gives exactly the integer CPUs requested), `taskset -c` / "
                             "numactl --physcpubind on the launch command, or a launcher's binding; give it at least "
                             "one core for the API server, one for the engine core and one per GPU worker, on the "
                             "GPUs' NUMA node (`nvidia-smi topo -m`'s CPU Affinity column). Check with `taskset -pc "
                             "<pid>`."])
    return None


def _clock(threads: list[ThreadAccount], who: str = "it") -> tuple[str, list[str]]:
    """A sentence and a recommendation when the busy threads' CPUs run well below their maximum clock (cpufreq
    scaling_cur_freq against cpuinfo_max_freq, Documentation/admin-guide/pm/cpufreq.rst): a saturated thread on a
    clocked-down core does that much less work per second. ('', []) when the clock is near its maximum or unread."""
    slow = [t for t in threads if t.cur_mhz and t.max_mhz and t.cur_mhz <= CLOCK_LOW * t.max_mhz]
    if not slow:
        return "", []
    t = min(slow, key=lambda x: (x.cur_mhz or 0) / (x.max_mhz or 1))
    gov = f", governor {t.governor}" if t.governor else ""
    return (f" The CPU {who} ran on (CPU {t.last_cpu}) was clocked at {t.cur_mhz} of its {t.max_mhz} MHz"
            f"{gov}: a core-bound thread there does {(t.cur_mhz or 0) / (t.max_mhz or 1):.0%} of the work per second "
            "it could [https://docs.kernel.org/admin-guide/pm/cpufreq.html]."), [
        "Run the host's CPUs at full clock: the `performance` cpufreq governor (`cpupower frequency-set -g "
        "performance`, or a tuned profile such as latency-performance), and a BIOS power profile that does not "
        "cap the clock or park cores in deep C-states; check with `grep MHz /proc/cpuinfo` under load."]


def _clock_clause(a: Account, threads: list[ThreadAccount], who: str = "it") -> tuple[str, list[str]]:
    """The busy threads' measured core clock where it was read (`_clock`), else what the governor implies
    (`_slow_clock`); ('', []) when neither says the core ran slow."""
    claim, recs = _clock(threads, who)
    if claim:
        return claim, recs
    claim, rec = _slow_clock(a)
    return claim, [rec] if rec else []


def _is_python(p: ProcessAccount) -> bool:
    """A Python process (py-spy can read its stacks): the interpreter, or a Python engine's renamed processes."""
    names = " ".join(x for x in (p.argv0, p.comm) if x).lower()
    return any(k in names for k in ("python", "vllm", "sglang", "text-generation", "trtllm", "uvicorn"))


def _role(p: ProcessAccount) -> str:
    """What a serving process does, from its name: the engine's core loop or its front end (the API server)."""
    names = " ".join(x for x in (p.argv0, p.comm) if x).lower()
    if "enginecor" in names or "scheduler" in names or "worker" in names:
        return ("the engine core's loop (scheduling, the per-step bookkeeping of every request, structured-output "
                "grammar masks, sampling on the host)")
    if "tokenizer" in names or "detokenizer" in names:
        return "tokenization or detokenization"
    return "a single-threaded stage (tokenization, detokenization, scheduling or the API server's event loop)"


def _slow_clock(a: Account) -> tuple[str, str]:
    """What the CPU frequency governor adds to a CPU-bound finding: a claim clause and a recommendation ("" when the
    governor is performance or unknown). powersave / conservative hold a core below its top clock, and a CPU-bound
    serving thread runs only as fast as its core's clock (kernel admin-guide/pm/cpufreq.rst: powersave sets the
    lowest frequency within the policy limits; with intel_pstate, powersave is its dynamic mode)."""
    gov = (a.acct.host_account.governor or "").strip()
    if not gov or gov == "performance":
        return "", ""
    claim = (f" The CPU frequency governor is '{gov}' (cpu0/cpufreq/scaling_governor), not 'performance': the "
             "saturated core can run below its top clock, and the work on it takes that much longer "
             "[https://docs.kernel.org/admin-guide/pm/cpufreq.html].")
    rec = ("Set the CPU frequency governor to performance on the serving host (`cpupower frequency-set -g "
           f"performance`, or write performance to /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor; now '{gov}') "
           "and check the clock while serving (`grep MHz /proc/cpuinfo`, `turbostat`).")
    return claim, rec


def _thread(a: Account) -> Finding | None:
    got = _busiest_thread(a.acct)
    if got is None or got[1].cpu_pct < THREAD_SATURATED_PCT:
        return None
    p, t = got
    hot = [x for x in p.threads if x.cpu_pct >= THREAD_SATURATED_PCT]
    if len(hot) >= 2:
        # a pool of threads each at a full core is computation on the CPU, not one serial stage
        cores = sum(x.cpu_pct for x in hot) / 100.0
        claim = (f"{len(hot)} threads of the serving process {p.name} ({p.pid}) each ran at "
                 f"{min(x.cpu_pct for x in hot):.0f}-{max(x.cpu_pct for x in hot):.0f} % of a core over the window "
                 f"({cores:.1f} cores together): the process computes on the host's CPUs with a thread pool, so part "
                 "of the model's work runs on the CPU (layers not offloaded to the GPU, CPU offload of weights, or a "
                 "CPU compute backend) and each step waits for the CPU's share.")
        clock, clock_recs = _clock_clause(a, hot, "the slowest of them")
        claim += clock
        how = (f"`py-spy top --pid {p.pid} --native`" if _is_python(p) else f"`perf top -p {p.pid}`")
        return Finding(
            id="account-cpu-thread", category="workload", confidence=0.8, evidence=[a.ev], bound="latency",
            title=f"The model computes on the CPU: {len(hot)} threads of {p.name} at a full core each",
            claim=claim, short=f"{len(hot)} threads of {p.name} each ran at a full core ({cores:.1f} cores): the "
                               "CPU computes part of the model.",
            symptoms=HOST_SYMPTOMS + ["startup"],
            numbers=[_num(f"threads of {p.name} at a full core", len(hot), "threads", a.ev),
                                             _num(f"CPU of {p.name}'s busy threads", 100 * cores, "% of one core", a.ev)],
            recommendations=[f"See what the pool computes ({how}); check how much of the model the engine put on the "
                             "GPU (llama.cpp/Ollama: 'offloaded N/M layers to GPU' in the load log and `ollama ps`'s "
                             "PROCESSOR column; vLLM: --cpu-offload-gb) and put all of it there: a smaller "
                             "quantization, a shorter context, or more GPU memory."] + clock_recs)
    others = [x.cpu_pct for x in p.threads if x is not t]
    rest = f"; the next busiest thread ran at {max(others):.0f} %" if others else ""
    role = _role(p)
    claim = (f"Thread {t.comm!r} (tid {t.tid}, state {t.state}) of the serving process {p.name} ({p.pid}) ran at "
             f"{t.cpu_pct:.0f} % of one core over the window{rest}: {role} runs flat out on one core, and the GPU "
             "waits for it.")
    clock, clock_recs = _clock_clause(a, [t])
    claim += clock
    look = (f"`py-spy dump --pid {p.pid}` (or `py-spy top --pid {p.pid}`)" if _is_python(p) else
            f"`perf top -t {t.tid}`")
    return Finding(
        id="account-cpu-thread", category="workload", confidence=0.8, evidence=[a.ev], bound="latency",
        title=f"A CPU thread of the engine is saturated: {t.comm} at {t.cpu_pct:.0f} % of one core",
        claim=claim, short=f"thread {t.comm} of {p.name} ran at {t.cpu_pct:.0f} % of one core.",
        symptoms=HOST_SYMPTOMS + ["startup"],
        numbers=[_num(f"thread {t.comm} CPU", t.cpu_pct, "% of one core", a.ev, peak=100.0)],
        recommendations=[f"See what thread {t.comm} spends its core on: {look}; then move that work off the "
                         "critical thread (" + (
                             "per-request host work the engine core does each step: structured-output grammars (a "
                             "faster backend such as xgrammar), logprobs, n > 1; or more engine replicas (data "
                             "parallel) so each core drives fewer requests" if role.startswith("the engine core") else
                             "more API-server or tokenizer processes, a fast tokenizer, detokenization off the "
                             "scheduler") + ")."] + clock_recs)


def _memory(a: Account) -> Finding | None:
    h = a.acct.host_account
    swap = h.swap_pages_per_s()
    mem_psi = h.psi.get("memory")
    psi_pct = mem_psi.pct() if mem_psi else None
    oom = {k: v for p in a.acct.processes if p.cgroup for k, v in p.cgroup.memory_events.items()
           if k in ("oom", "oom_kill", "max") and v}
    if not ((swap or 0) >= SWAP_PAGES_S or (psi_pct or 0) >= PSI_PCT):
        return None
    avail = f"{h.mem_available_kb / 1048576:.1f} GiB" if h.mem_available_kb is not None else "?"
    total = f"{h.mem_total_kb / 1048576:.1f} GiB" if h.mem_total_kb is not None else "?"
    parts = [f"the host swapped {h.pswpin_per_s or 0:.0f} pages/s in and {h.pswpout_per_s or 0:.0f} out"]
    if psi_pct is not None:
        parts.append(f"tasks stalled on memory {psi_pct:.0f} % of the window (PSI some)")
    parts.append(f"MemAvailable {avail} of {total}")
    if oom:
        parts.append("the cgroup's memory.events count " + ", ".join(f"{k} {v}" for k, v in sorted(oom.items())))
    swapping = (swap or 0) >= SWAP_PAGES_S
    majflt = sum(p.majflt_per_s for p in a.acct.processes)
    if swapping:
        why = ("Pages of the engine (weights held in host memory, pinned buffers, the Python heap) are read back from "
               "swap while the GPU waits")
        title = f"Host memory is saturated: swapping {swap or 0:.0f} pages/s"
        short = f"the host swapped {swap or 0:.0f} pages/s with memory stalls {psi_pct or 0:.0f} % of the window."
    else:
        # stalls without swapping: reclaim of the page cache, so file pages (the mapped weights) are evicted and
        # read again from storage (the serving processes' major faults)
        faults = f" (the serving processes took {majflt:.0f} major faults/s)" if majflt else ""
        why = ("Nothing is swapped, so the stalls are reclaim: the page cache cannot hold the files the engine reads "
               "(the weights it maps or loads), and their pages are evicted and read again from storage"
               f"{faults}, so the model is read more than once")
        title = f"Host memory is exhausted: MemAvailable {avail}, memory stalls {psi_pct or 0:.0f} % (no swapping)"
        short = (f"host memory is exhausted (MemAvailable {avail} of {total}) and tasks stalled on memory "
                 f"{psi_pct or 0:.0f} % of the window: the page cache cannot hold the weights.")
    claim = ("Host memory is saturated: " + "; ".join(parts) + f". {why} "
             "[https://docs.kernel.org/accounting/psi.html].")
    return Finding(
        id="account-memory-swap", category="workload", confidence=0.8, evidence=[a.ev], bound="latency",
        title=title, claim=claim, short=short,
        symptoms=HOST_SYMPTOMS + ["startup"], numbers=[
            _num("swap in+out", swap or 0, "pages/s", a.ev),
            *([_num("memory PSI some", psi_pct, "% of window", a.ev)] if psi_pct is not None else [])],
        recommendations=["Free host memory or add it: fewer processes per host, no swap on inference hosts "
                         "(swapoff -a), smaller CPU offload / swap space in the engine (vLLM --cpu-offload-gb, "
                         "--swap-space), and check what else holds memory (`ps aux --sort=-rss`)."] + ([] if swapping else [
                             "With less host memory than the model, load the weights without staging them whole in "
                             "RAM (stream them to the GPU, e.g. vLLM --load-format runai_streamer) or give the host at "
                             "least the model's size in free RAM."]))


def _memory_limit(a: Account) -> Finding | None:
    """The container's memory limit reached: memory.current at memory.max, or the OOM killer counted in
    memory.events (cgroup-v2.rst); errors go with the resource they happen on."""
    for p in a.acct.processes:
        c = p.cgroup
        if c is None:
            continue
        kills = c.memory_events.get("oom_kill", 0)
        full = (c.memory_max_bytes and c.memory_current_bytes is not None
                and c.memory_current_bytes >= 0.95 * c.memory_max_bytes)
        if not (kills or full):
            continue
        gib = 2**30
        limit = f"{c.memory_max_bytes / gib:.1f} GiB" if c.memory_max_bytes else "its limit"
        used = f"{c.memory_current_bytes / gib:.1f} GiB" if c.memory_current_bytes is not None else "?"
        claim = (f"The serving process {p.name} ({p.pid}) runs in cgroup {c.path} whose memory is {used} of "
                 f"{limit} (memory.max)" + (f"; the OOM killer has killed {kills} process(es) in it (memory.events "
                                             f"oom_kill)" if kills else "") + ": at the limit the kernel reclaims "
                 "the engine's pages and kills its workers, which restart and reload "
                 "[https://docs.kernel.org/admin-guide/cgroup-v2.html#memory-interface-files].")
        return Finding(
            id="account-memory-limit", category="workload", confidence=0.75, evidence=[a.ev], bound="latency",
            title=f"The container's memory limit is reached ({used} of {limit}" + (f", {kills} OOM kills)" if kills
                                                                                 else ")"),
            claim=claim, short=f"the container's memory is at its limit ({used} of {limit}, {kills} OOM kills).",
            symptoms=["errors", "startup", "throughput"],
            numbers=[Number(name="cgroup OOM kills", value=kills, unit="count", source=a.ev)],
            recommendations=["Raise the container's memory limit (Kubernetes resources.limits.memory, the cgroup's "
                             "memory.max) above the engine's host memory (weights staged in RAM while loading, "
                             "pinned buffers, CPU offload, swap space)."])
    return None


def _host_cpu(a: Account) -> Finding | None:
    h = a.acct.host_account
    cpu_psi = h.psi.get("cpu")
    psi_pct = cpu_psi.pct() if cpu_psi else None
    busy, steal = h.cpu_busy_pct or 0, h.steal_pct or 0
    if not (busy >= HOST_CPU_PCT or steal >= STEAL_PCT):
        return None
    load = f", load {h.loadavg[0]:g} on {h.cpus_online} CPUs" if h.loadavg and h.loadavg[0] is not None else ""
    what = (f"the hypervisor stole {steal:.0f} % of the host's CPU time" if steal >= STEAL_PCT
            else f"the host's {h.cpus_online} CPUs were {busy:.0f} % busy")
    psi = f"; runnable tasks waited for a CPU {psi_pct:.0f} % of the window (PSI some)" if psi_pct is not None else ""
    serving = sum(p.cpu_pct for p in a.acct.processes) / 100.0
    claim = (f"The host's CPUs are saturated: {what}{load}{psi}. The serving processes used {serving:.1f} CPUs of it; "
             "the engine's threads queue for a CPU between GPU steps.")
    return Finding(
        id="account-host-cpu", category="workload", confidence=0.7, evidence=[a.ev], bound="latency",
        title=("CPU time stolen by the hypervisor" if steal >= STEAL_PCT else "The host's CPUs are saturated") +
        f" ({busy:.0f} % busy, {steal:.0f} % steal)", claim=claim,
        short=f"{what}{psi}.", symptoms=HOST_SYMPTOMS + ["startup"],
        numbers=[_num("host CPUs busy", busy, "%", a.ev), _num("host CPU steal", steal, "%", a.ev)],
        recommendations=["Find what else runs on the host (`top -H`, `pidstat -t 1`) and move it off, or pin the "
                         "engine to dedicated cores; with steal time, ask for dedicated (non-overcommitted) vCPUs."])


def _filesystem(a: Account) -> Finding | None:
    io_psi = a.acct.host_account.psi.get("io")
    io_pct = io_psi.pct() if io_psi else None
    for p in a.acct.processes:
        remote = [f for f in p.files if f.network or f.fuse]
        if not remote:
            continue
        rate = max(p.read_bytes_per_s or 0, p.rchar_per_s or 0)
        dstate = p.states.get("D", 0)
        if not (rate >= FS_READ_BPS or p.majflt_per_s >= 50 or dstate or (io_pct or 0) >= PSI_PCT):
            continue
        f = remote[0]
        shared = f.fstype.split(".")[0] in GUEST_SHARES
        kind = "FUSE" if f.fuse else (f"a {f.fstype} share from the VM's host" if shared else f.fstype.upper())
        parts = [f"it read {_mb(rate)}"]
        if p.majflt_per_s:
            parts.append(f"{p.majflt_per_s:.0f} major page faults/s (pages of the mapped weights fetched on touch)")
        if dstate:
            parts.append(f"{dstate} thread(s) in uninterruptible I/O wait (D)")
        if io_pct is not None:
            parts.append(f"I/O stalls {io_pct:.0f} % of the window (PSI some)")
        claim = (f"The model files of {p.name} ({p.pid}) live on {kind} ({f.fstype} {f.source} mounted at "
                 f"{f.mount_point}, e.g. {f.path}); over the window " + ", ".join(parts) + ". " + (
                     "Each read and page fault crosses from the virtual machine to its host (WSL2 mounts the "
                     "Windows drives over 9p; a VM's shared folder over 9p or virtiofs), far slower than a local "
                     "disk, and loading or paging the weights through it is what the GPU waits for." if shared else
                     "Loading or paging weights over the network is what the GPU waits for."))
        return Finding(
            id="account-filesystem", category="workload", confidence=0.8, evidence=[a.ev], bound="latency",
            title=f"The weights are read from {kind} ({f.source}) at {_mb(rate)}", claim=claim,
            short=f"the weights come from {kind} {f.source} ({_mb(rate)}, {p.majflt_per_s:.0f} major faults/s).",
            symptoms=["startup", "ttft", "throughput"],
            numbers=[_num("model file read rate", rate / 1e6, "MB/s", a.ev, f"{f.fstype} {f.source}"),
                     _num("major page faults", p.majflt_per_s, "/s", a.ev)],
            recommendations=[f"Copy the model to local NVMe (or tmpfs) and serve it from there instead of "
                             f"{f.fstype} {f.source}; for safetensors on network storage, load without mmap (vLLM "
                             "--load-format with a local copy, or prefetch the files into the page cache)."] + (
                                 ["Inside the VM, keep the model on its own filesystem (on WSL2, under the Linux "
                                  "home such as ~/models, not /mnt/c): its virtual disk is read at disk speed."]
                                 if shared else []))
    return None


def _reload(a: Account) -> Finding | None:
    """A serving process reading its own model files from local storage at disk speed while the GPUs idle: the
    weights are being loaded (again) while requests wait. Read through `read()` (rchar, the page cache included) as
    well as from the device (read_bytes): a reload from the page cache is still a reload."""
    for p in a.acct.processes:
        local = [f for f in p.files if not (f.network or f.fuse)]
        rate = max(p.read_bytes_per_s or 0, p.rchar_per_s or 0)
        if not local or rate < LOCAL_LOAD_BPS:
            continue
        f = local[0]
        claim = (f"The serving process {p.name} ({p.pid}) read {_mb(rate)} of its model files over the window "
                 f"({f.path} on {f.fstype} {f.source}) while the GPUs were busy {a.busy:.0f} %: it is loading the "
                 "weights into GPU memory, in the middle of serving, so the requests that arrive meanwhile wait for "
                 "the load. A model that is loaded again while serving has been unloaded or replaced: evicted by "
                 "another model, expired after an idle timeout, or restarted because a request asked for different "
                 "load parameters (a context size, a GPU layer count) than the loaded instance has.")
        return Finding(
            id="account-model-reload", category="workload", confidence=0.75, evidence=[a.ev], bound="latency",
            title=f"The model is being loaded while serving: {p.name} reads its weights at {_mb(rate)}",
            claim=claim, short=f"{p.name} read its model files at {_mb(rate)} while serving: the weights are "
                               "being loaded again.",
            symptoms=["ttft", "startup", "throughput"],
            numbers=[_num("model file read rate", rate / 1e6, "MB/s", a.ev, f"{f.fstype} {f.source}")],
            recommendations=[
                "Keep one loaded instance serving every request: find what unloads it (the server's log around each "
                "load; Ollama: `ollama ps` and its 'loading model' lines), keep the model resident (Ollama "
                "OLLAMA_KEEP_ALIVE=-1 or keep_alive per request, OLLAMA_MAX_LOADED_MODELS at least the number of "
                "models used together, e.g. an embedding model and the LLM), and send the same load parameters "
                "with every request (a fixed num_ctx / context size) so none forces a reload."])
    return None


def _io(a: Account) -> Finding | None:
    h = a.acct.host_account
    io_psi = h.psi.get("io")
    io_pct = io_psi.pct() if io_psi else None
    if not ((io_pct or 0) >= 2 * PSI_PCT or (h.iowait_pct or 0) >= IOWAIT_PCT):
        return None
    claim = (f"Storage I/O is saturated: tasks stalled on I/O {io_pct or 0:.0f} % of the window (PSI some), iowait "
             f"{h.iowait_pct or 0:.0f} % of CPU time.")
    return Finding(id="account-io", category="workload", confidence=0.6, evidence=[a.ev], bound="latency",
                   title=f"Storage I/O stalls ({io_pct or 0:.0f} % of the window)", claim=claim, short=claim,
                   symptoms=["startup", "ttft", "throughput"],
                   numbers=[_num("I/O PSI some", io_pct or 0, "% of window", a.ev)],
                   recommendations=["Find the reader (`iotop -o`, `pidstat -d 1`) and move model and cache files "
                                    "to local fast storage."])


def _nic(a: Account) -> Finding | None:
    for n in a.acct.host_account.nics:
        use = n.use_pct()
        if use is not None and use >= NIC_PCT:
            rate = max(n.rx_bytes_per_s, n.tx_bytes_per_s)
            inbound = n.rx_bytes_per_s >= n.tx_bytes_per_s
            way = ("received" if inbound else "sent")
            claim = (f"NIC {n.name} {way} {_mb(rate)} ({use:.0f} % of its {n.speed_mbit:g} Mb/s line rate) over the "
                     "window: the network is saturated.")
            both = min(n.rx_bytes_per_s, n.tx_bytes_per_s) >= EXCHANGE_SHARE * rate
            if both:
                # as much sent as received: an exchange with peers (a collective's ring or tree sends and receives
                # alike), not a download or a client
                claim += (f" It sent {_mb(n.tx_bytes_per_s)} and received {_mb(n.rx_bytes_per_s)}: as much out as in "
                          "is an exchange with peers, the collectives of a model split across hosts (tensor or "
                          "pipeline parallel over this link, or KV-cache transfer), and each step waits for it.")
            elif inbound:
                claim += (" The host is receiving at line rate: a model download, weights read from network "
                          "storage, or peers' traffic (KV or activations) arriving.")
            recs = ["Find what fills the link (`iftop`, `sar -n DEV 1`); keep KV transfer, model downloads and "
                    "client traffic on separate links."]
            if both:
                recs.insert(0, "Keep the traffic of each step inside a host: tensor parallelism within a node's GPUs "
                               "(NVLink/PCIe) and only pipeline stages across hosts, or a faster inter-host fabric "
                               "(RDMA: InfiniBand or RoCE, which NCCL uses instead of its socket transport); "
                               "`NCCL_DEBUG=INFO` prints which transport it chose (NET/IB or NET/Socket).")
            elif inbound:
                recs.append("If it is the model download at start-up, fetch the weights once onto persistent local "
                            "storage (a model cache volume for HF_HOME, or `huggingface-cli download` ahead of the "
                            "start) so a restart does not download them again over this link.")
            return Finding(id="account-nic", category="workload", confidence=0.7, evidence=[a.ev],
                           bound="communication", title=f"NIC {n.name} at {use:.0f} % of line rate", claim=claim,
                           short=claim, symptoms=["throughput", "ttft", "itl", "startup"],
                           numbers=[_num(f"NIC {n.name} use", use, "% of line rate", a.ev)],
                           recommendations=recs)
    return None


def _nic_headroom(a: Account) -> tuple[str, float, str] | None:
    """The busiest NIC that carries traffic below saturation: (words, use %, name), or None."""
    best = None
    for n in a.acct.host_account.nics:
        use = n.use_pct()
        if use is not None and NIC_IN_USE_PCT <= use < NIC_PCT and (best is None or use > best[1]):
            best = (n, use)
    if best is None:
        return None
    n, use = best
    rate = max(n.rx_bytes_per_s, n.tx_bytes_per_s)
    way = "received" if n.rx_bytes_per_s >= n.tx_bytes_per_s else "sent"
    return (f"NIC {n.name} {way} {_mb(rate)} ({rate * 8 / 1e6:,.0f} Mb/s, {use:.0f} % of its {n.speed_mbit:g} Mb/s line "
            "rate): headroom, not the limit"), use, n.name


def _turns(a: Account) -> Finding | None:
    gpus = a.acct.sampled_gpus()
    if len(gpus) < 2:
        return None
    n = min(len(g.series) for g in gpus)
    if n < 3:
        return None
    busy_samples = [[g.series[i] >= 50 for g in gpus] for i in range(n)]
    any_busy = [s for s in busy_samples if any(s)]
    if len(any_busy) < 3:
        return None
    one = sum(1 for s in any_busy if sum(s) == 1) / len(any_busy)
    if one < TURNS_SHARE:
        return None
    alone = {s.index(True) for s in any_busy if sum(s) == 1}
    if len(alone) == 1 and all(sum(s) == 1 for s in any_busy):
        return _one_gpu_works(a, gpus, gpus[alone.pop()])
    claim = (f"The {len(gpus)} GPUs take turns: in {one:.0%} of the samples in which any GPU was busy, exactly one "
             f"was ({a.gpus_line()}). The work is serialized across them (a pipeline without enough micro-batches, "
             "requests pinned to one GPU, or a synchronizing step), so adding GPUs adds no throughput.")
    return Finding(id="account-gpus-take-turns", category="workload", confidence=0.7, evidence=[a.ev],
                   bound="latency", title=f"The GPUs take turns ({one:.0%} of busy samples had one GPU busy)",
                   claim=claim, short=f"the GPUs take turns ({one:.0%} of busy samples had exactly one GPU busy).",
                   symptoms=["throughput"], numbers=[_num("samples with one GPU busy", 100 * one, "%", a.ev)],
                   recommendations=["Overlap the GPUs' work: tensor parallelism instead of pipeline stages for one "
                                    "replica, or enough concurrent requests (micro-batches) to fill every stage; "
                                    "check with a profile trace of a few steps per rank."])


IDLE_GPU_MEMORY_MIB = 1024.0
"""Memory a GPU holds with no engine on it (the driver's and a monitoring process's own, well under 1 GiB)."""


def _one_gpu_works(a: Account, gpus: list[Any], busy: Any) -> Finding:
    """One and the same GPU busy in every sample, the others never: not GPUs taking turns, but GPUs unused. Those
    that hold no memory run nothing (a parallelism that does not span them); those that hold an engine's memory run
    an engine that gets no requests (the load reaches one replica)."""
    idle = [g for g in gpus if g is not busy]
    empty = [g for g in idle if g.memory_used_mib is not None and g.memory_used_mib < IDLE_GPU_MEMORY_MIB]
    loaded = [g for g in idle if g.memory_used_mib is not None and g.memory_used_mib >= IDLE_GPU_MEMORY_MIB]
    names = ", ".join(str(g.index) for g in idle)
    claim = (f"Only GPU {busy.index} worked in the window ({busy.busy_pct:.0f} % busy); GPU{'s' if len(idle) > 1 else ''}"
             f" {names} stayed idle in every sample ({a.gpus_line()}). The GPUs do not take turns: "
             f"{len(idle)} of {len(gpus)} do no work.")
    recs = []
    if empty and len(empty) == len(idle):
        claim += (f" They hold no memory (under {IDLE_GPU_MEMORY_MIB:.0f} MiB each): nothing runs on them, so the "
                  "engine's parallelism (tensor, pipeline or data parallel size) spans fewer GPUs than it was given.")
        recs.append("Make the engine use the GPUs it was given: a tensor parallel size equal to the GPU count for one "
                    "replica, or one replica per GPU (data parallel); or give it only the GPUs it uses.")
    elif loaded and len(loaded) == len(idle):
        mib = sum(g.memory_used_mib for g in loaded) / len(loaded)
        claim += (f" They hold {mib:,.0f} MiB each: an engine is loaded on each and gets no requests, so the load "
                  "reaches one replica of several (whatever spreads the requests sends them all to one).")
        recs.append("Spread the requests over every replica: balance per request (a gateway or an L7 balancer that "
                    "knows each replica), not per connection; compare each replica's own request counter.")
    else:
        recs.append("Find why the other GPUs get no work: the engine's parallel sizes against the GPU count, and each "
                    "replica's request counter.")
    return Finding(id="account-one-gpu-works", category="workload", confidence=0.7, evidence=[a.ev],
                   bound="latency", title=f"Only GPU {busy.index} of {len(gpus)} works; {len(idle)} stay idle",
                   claim=claim, short=f"only GPU {busy.index} of {len(gpus)} works; {len(idle)} stay idle.",
                   symptoms=["throughput"], recommendations=recs,
                   numbers=[_num(f"GPU {g.index} busy", g.busy_pct or 0.0, "%", a.ev) for g in gpus[:8]])


def _engine_queue(v: "EvidenceView", a: Account) -> Finding | None:
    """The engine's own queue (prongs/resource_account/queue_rules.py): what bounds its batch, or no request reaching it."""
    return engine_queue(v, a.busy, a.ev)


# --- the findings and the bound ------------------------------------------------------------------------------------


SATURATION = (_shm, _memlock, _cgroup, _cpu_allowance, _memory, _memory_limit, _filesystem, _reload, _thread,
              _host_cpu, _io, _nic, _turns)
"""In the order the account follows them when several fire: the cause before its symptom (a throttled cgroup
makes its threads look saturated; swapping and network filesystems make the CPU wait)."""


def account_findings(v: "EvidenceView") -> list[Finding]:
    """The account's findings: the GPUs' busy share first, then each saturated resource, then what the load says."""
    a = _account(v)
    out: list[Finding] = []
    client = client_limited(v, a.ev if a else None, a.busy if a else None)
    flat = flat_throughput(v)
    burst = burst_queue(v, a.busy if a else None)
    if a is None or a.busy is None:
        q = engine_queue(v)
        return [f for f in (q if q and q.id in BOUNDS_BATCH else None, client, flat, burst) if f]
    idle_share = max(0.0, 1.0 - a.busy / 100.0)
    if a.busy < GPU_IDLE_PCT and not a.acct.processes:
        # no serving process and nothing on the GPUs while sampled: the window shows an idle box, not the workload
        # the question is about (the real H200 with no engine running read "GPUs idle 100 %" as the cause of a
        # kernel question); say so, and leave the bound to the other evidence
        return [_no_workload(a)] + [f for f in (client, flat) if f]
    saturated = [f for f in (rule(a) for rule in SATURATION) if f]
    queue = _engine_queue(v, a)
    if a.busy >= GPU_IDLE_PCT and queue is not None and queue.id not in BOUNDS_BATCH:
        queue = None  # a queue while the GPUs work is theirs to explain, unless the queue says what bounds the batch
    if a.busy >= GPU_BUSY_PCT:
        link = _nic_headroom(a)
        out.append(Finding(
            id="account-gpu-busy", category="workload", confidence=0.7, evidence=[a.ev], informational=True,
            title=f"The GPUs are the busy resource ({a.busy:.0f} % of the window)",
            claim=f"{_idle_words(a).replace('GPU busy', 'GPUs busy')}: the time goes to GPU work, so the roofline and "
                  "the kernels decide the bound." + (f" Meanwhile {link[0]}." if link else ""),
            short=f"the GPUs were busy {a.busy:.0f} % of the window.",
            numbers=[_num("GPU busy (mean over the window)", a.busy, "%", a.ev, peak=100.0)]
            + ([_num(f"NIC {link[2]} use", link[1], "% of line rate", a.ev)] if link else []),
            # the synthesis says, when nothing else is found, that the GPUs' own work is the limit
            symptoms=HOST_SYMPTOMS, data={"gpus_busy": a.busy}))
        out += [f.model_copy(update={"secondary": True}) for f in saturated if f.id == "account-gpus-take-turns"]
        out += [queue] if queue else []
    elif a.busy < GPU_IDLE_PCT:
        lead = saturated[0] if saturated else queue
        if lead is None and client is not None:
            lead = client
        if lead is None and flat is not None:
            lead = flat
        waits = (f"while {lead.short.rstrip('.')}" if lead else "and no resource on the host is saturated")
        # a lead that stops the engine (a failure, not a slowness: it explains none of the rates) leaves the GPUs idle
        # as its consequence; their idle share is then context, not a cause of its own
        failed = lead is not None and not set(lead.symptoms) & {"throughput", "itl", "ttft"}
        idle = Finding(
            id="account-gpu-idle", category="workload", confidence=0.8, evidence=[a.ev], bound=None,
            informational=failed, reads="idle",
            title=f"The GPUs are idle {100 - a.busy:.0f} % of the time: the time goes elsewhere",
            claim=(f"{_idle_words(a)} {waits}. The GPUs wait most of the time, so no kernel, memory or compute "
                   "limit explains the slowness until what they wait for is fixed."),
            short=f"{_idle_words(a)} {waits}.", symptoms=HOST_SYMPTOMS, explains=round(idle_share, 2),
            numbers=[_num("GPU busy (mean over the window)", a.busy, "%", a.ev, peak=100.0)])
        out.append(idle)
        for f in saturated + [x for x in (queue,) if x]:
            out.append(f.model_copy(update={"explains": round(idle_share, 2)}))
        if not saturated and queue is None and client is None and flat is None:
            out.append(_nothing(a))
        out += [f for f in (client, flat, burst) if f and f.id not in {x.id for x in out}]
        return _claim_bound(out, idle, lead, f"{_idle_words(a)}.")
    else:
        out += [queue] if queue else []
        out += [f.model_copy(update={"secondary": True}) for f in saturated]
    out += [f for f in (client, flat, burst) if f and f.id not in {x.id for x in out}]
    return out


def _no_workload(a: Account) -> Finding:
    return Finding(
        id="account-no-workload", category="workload", confidence=0.8, evidence=[a.ev], informational=True,
        title="No workload ran while the host was sampled",
        claim=(f"{_idle_words(a)}, and no serving process or process on the GPUs was seen during the window: the "
               "account describes an idle host, so it cannot say where the workload's time goes. Sample while the "
               "workload runs (start the investigation during a benchmark), or give the benchmark's results "
               "(--bench) and a profile trace (--trace)."),
        short="no workload ran while the host was sampled.", symptoms=HOST_SYMPTOMS,
        numbers=[_num("GPU busy (mean over the window)", a.busy or 0.0, "%", a.ev, peak=100.0)])


def _nothing(a: Account) -> Finding:
    h = a.acct.host_account
    t = _busiest_thread(a.acct)
    thread = f"busiest serving thread {t[1].comm} at {t[1].cpu_pct:.0f} % of a core" if t else "no serving thread seen"
    claim = (f"{_idle_words(a)}, and no resource on the host is saturated over the window ({thread}; host CPUs "
             f"{h.cpu_busy_pct or 0:.0f} % busy, steal {h.steal_pct or 0:.0f} %; swap {h.swap_pages_per_s() or 0:.0f} "
             "pages/s; no cgroup throttling). The GPUs wait for work that this account does not show: the load "
             "offered, or time spent between steps that a trace would show.")
    return Finding(
        id="account-nothing-saturated", category="workload", confidence=0.6, evidence=[a.ev],
        title="Nothing on the host is saturated while the GPUs idle: measure next", claim=claim,
        short="no resource on the host is saturated; the next measurement settles it.", symptoms=HOST_SYMPTOMS,
        recommendations=[
            "Take a profile trace of about 20 engine steps (vLLM: VLLM_TORCH_PROFILER_DIR and the /start_profile, "
            "/stop_profile endpoints; SGLang: /start_profile) and look at the gaps between kernels.",
            "Rerun the benchmark at a second concurrency (e.g. 4x the first): throughput that rises means the "
            "client offered too little load; flat throughput means a fixed-rate stage."])


BOUND_ORDER = ("account-shm-small", "account-memlock-small", "account-cgroup-throttled", "account-cpu-allowance",
               "account-memory-swap", "account-memory-limit", "account-filesystem", "account-model-reload",
               "account-cpu-thread", "account-host-cpu", "account-io", "account-nic", "account-gpus-take-turns",
               *BOUNDS_BATCH, "account-engine-queue", "account-client-limited", "account-low-concurrency",
               "account-no-load", "account-flat-throughput", "account-nothing-saturated")
"""Which of the account's findings sets the bound when the GPUs idle and several explain it: the cause before its
symptom, the host before the load."""
ONLY_LOAD = ("account-client-limited", "account-low-concurrency", "account-no-load", "account-flat-throughput",
             "account-nothing-saturated")
"""Those of them that say only that the time goes elsewhere (the load offered, nothing saturated): they claim from
`Rank.ACCOUNT + ONLY_ELSEWHERE` on, after anything that says where the time goes. Offered requests held before the
engine (`data["held_before_engine"]`: the client's pool or a proxy lets only some through) say where, and do not."""


def _claim_bound(out: list[Finding], idle: Finding, lead: Finding | None = None, bare: str = "") -> list[Finding]:
    """The GPUs idle most of the window: each finding that says what they wait on claims the bound at the account's
    tier, in BOUND_ORDER (the GPUs' numbers first in the reasoning), as long as the idle finding also explains the
    asked symptom; the idle finding itself claims it last, as unknown, in words that name what they wait on (`lead`)
    only where that finding explains the asked symptom too (the client's concurrency limits throughput, not the time
    to first token): else in its `bare` words."""
    for f in out:
        if f.id in BOUND_ORDER:
            reasoning = idle.short
            if f.id == "account-nothing-saturated":
                reasoning += " " + f.claim.split(". ", 1)[-1]
            elif f.short and f.short not in reasoning:
                reasoning += " " + capitalized(f.short)
            bound: Bound = f.bound if f.bound in ("latency", "communication") else "unknown"
            elsewhere = f.id in ONLY_LOAD and not f.data.get("held_before_engine")  # held on the way: it says where
            f.sets_bound = BoundClaim(rank=Rank.ACCOUNT + BOUND_ORDER.index(f.id) / 100
                                      + (ONLY_ELSEWHERE if elsewhere else 0.0), bound=bound,
                                      words=reasoning.strip(), needs=idle.id, otherwise=f.sets_bound)
    named = lead is not None and bool(bare)
    idle.sets_bound = BoundClaim(rank=Rank.ACCOUNT + 0.99, bound="unknown", words=idle.short,
                                 needs=lead.id if lead is not None and named else "",
                                 otherwise=BoundClaim(rank=Rank.ACCOUNT + 0.99, bound="unknown", words=bare)
                                 if named else None)
    return out


def resource_account(v: "EvidenceView") -> list[Finding]:
    """Where the time goes: the GPUs' busy share over a window and the saturated resource."""
    return account_findings(v)
