"""Typed evidence of the node-health probe: GPU health, links, kernel-log Xids, the interconnect and NCCL.

`NodeHealth.facts()` flattens it for the failure-mode catalog. Namespaces and keys (values are str, int, float or
bool; a key is absent when the probe could not determine it, never guessed):

- `gpu.<i>.*` (i = nvidia-smi index): `name, bus_id, uuid, temperature_c, utilization_pct, pstate,
  power.draw_w, power.limit_w (requested), power.enforced_limit_w (current), power.default_limit_w,
  power.min_limit_w, power.max_limit_w, power.enforced_vs_default (ratio),
  clocks.sm_mhz, clocks.max_sm_mhz, clocks.mem_mhz, clocks.max_mem_mhz, clocks.app_sm_mhz,
  clocks.default_app_sm_mhz, clocks.app_mem_mhz, clocks.sm_vs_max (ratio),
  clocks_event.<reason>` (bool; reasons gpu_idle, applications_clocks_setting, sw_power_cap, hw_slowdown,
  hw_thermal_slowdown, hw_power_brake_slowdown, sync_boost, sw_thermal_slowdown, display_clocks_setting),
  `clocks_event.active` (comma list), `clocks_event.throttled` (bool: HW slowdown, HW thermal, HW power brake or SW thermal active),
  `clocks_event_us.<counter>` (cumulative µs), `ecc.mode (enabled|disabled), ecc.pending_mode,
  ecc.volatile.dbe, ecc.volatile.sbe, ecc.aggregate.dbe, ecc.aggregate.sbe, ecc.sram_threshold_exceeded,
  ecc.volatile.dram_dbe, ecc.volatile.sram_dbe, ecc.aggregate.dram_dbe, ecc.aggregate.sram_dbe, ecc.sram_sources
  (`l2=1, sm=0`-style list of the units with aggregate SRAM errors), ecc.unrepairable_memory, ecc.channel_repair_pending,
  ecc.active (bool: an uncorrectable error since the driver loaded, a pending remap / retirement / repair, or
  SRAM threshold exceeded / remap failure / unrepairable memory),
  retired_pages.pending, retired_pages.sbe, retired_pages.dbe, remapped_rows.correctable,
  remapped_rows.uncorrectable, remapped_rows.pending, remapped_rows.failure, pcie.gen, pcie.gen_max,
  pcie.gen_device_max, pcie.width, pcie.width_max, pcie.replays, pcie.width_downtrained (bool),
  pcie.gen_downtrained (bool: gen below max while the GPU is busy; the link idles at Gen1 by design),
  pcie.lspci_speed_gts, pcie.lspci_width, pcie.lspci_downgraded, persistence_mode (bool),
  mig_mode (enabled|disabled), mig_pending, processes.count, processes.other_count, processes.other_names,
  nvlink.links, nvlink.links_up, nvlink.links_down, nvlink.crc_errors, nvlink.replay_errors,
  nvlink.recovery_errors (counts since the driver loaded), nvlink.window_s, nvlink.crc_delta, nvlink.replay_delta,
  nvlink.recovery_delta, nvlink.crc_per_s (growth between two reads window_s apart), fabric.state, fabric.status, recovery_action,
  xid.count, xid.codes, xid.fatal_count, xid.fatal_codes, xid.app_count, xid.app_codes, xid.worst,
  xid.worst_name, xid.worst_meaning, xid.worst_action, xid.worst_class, xid.worst_line, numa.node, numa.cpus,
  numa.process_pid, numa.process_cpus, numa.process_cpu_overlap` (fraction of the serving process's allowed CPUs
  local to the GPU), `numa.process_pinned` (its allowed CPUs are not all of the host's).
- `host.*`: `gpu_count, driver_version, cuda_version, nvlink (any GPU pair on NVLink), nvswitch (fabric state
  supported), iommu (pt|on|off), iommu_cmdline, acs_enabled, acs_bridges, numa_nodes, rdma_devices,
  rdma_active_ports, rdma_link_layers, libibverbs, fabricmanager, fabricmanager_running, kernel_log.readable,
  kernel_log.source, xid.count, xid.fatal_count, xid.unmatched_fatal_count, xid.unmatched_line,
  serving_processes`.
- `env.<NAME>`: allowlisted variables of the serving processes (filtered on the host by the probe script), and
  `<NAME> set by environment to <v>` lines of NCCL's own log when no process showed the variable.
- `nccl.*`: `version, channels, transport.p2p, transport.shm, transport.net_socket, transport.net_ib,
  transport.net_other` (channel-connection counts), `gdr` (bool), `network (IB|Socket|<plugin>), ib_no_device,
  p2p_disabled_warning`.

`log_lines()` returns the kernel log's NVRM/Xid lines (source `kernel`) and the NCCL lines of the given logs
(source `nccl`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from orchestrator.probes.results import GpuTopology, ProbeModel

FactValue = str | int | float | bool


class NodeGap(BaseModel):
    """A part of the node the probe could not read (a missing or refused command): a gap, not an error."""

    what: str
    why: str


class NvLink(BaseModel):
    link: int
    up: bool
    speed_gbs: float | None = None
    replay_errors: int | None = None
    recovery_errors: int | None = None
    crc_errors: int | None = None
    replay_delta: int | None = None
    """How much each counter grew between the node script's two reads (`GpuHealth.nvlink_window_s` apart)."""
    recovery_delta: int | None = None
    crc_delta: int | None = None


class GpuProcess(BaseModel):
    pid: int
    name: str | None = None
    type: str | None = None
    used_memory_mib: float | None = None
    serving: bool | None = None
    """True when the process is (part of) the serving engine, False when it is another tenant, None unknown."""


class PciLink(BaseModel):
    """One device of `lspci -vv` (GPUs, bridges, NICs): link capability vs status, and its ACS control."""

    address: str
    description: str
    cap_speed_gts: float | None = None
    cap_width: int | None = None
    sta_speed_gts: float | None = None
    sta_width: int | None = None
    downgraded: bool | None = None
    acs_ctl: str | None = None
    acs_redirect: bool | None = None
    """ACSCtl with SrcValid+ / ReqRedir+ / CmpltRedir+: peer-to-peer requests go up to the root complex."""


class GpuHealth(BaseModel):
    index: int
    name: str
    bus_id: str | None = None
    uuid: str | None = None
    pstate: str | None = None
    temperature_c: float | None = None
    utilization_pct: float | None = None
    power_draw_w: float | None = None
    power_limit_w: float | None = None
    power_enforced_w: float | None = None
    power_default_w: float | None = None
    power_min_w: float | None = None
    power_max_w: float | None = None
    sm_mhz: float | None = None
    max_sm_mhz: float | None = None
    mem_mhz: float | None = None
    max_mem_mhz: float | None = None
    app_sm_mhz: float | None = None
    default_app_sm_mhz: float | None = None
    app_mem_mhz: float | None = None
    clocks_event: dict[str, bool] = Field(default_factory=dict)
    clocks_event_us: dict[str, float] = Field(default_factory=dict)
    ecc_mode: str | None = None
    ecc_pending_mode: str | None = None
    ecc_volatile_dbe: int | None = None
    ecc_volatile_sbe: int | None = None
    ecc_aggregate_dbe: int | None = None
    ecc_aggregate_sbe: int | None = None
    sram_threshold_exceeded: bool | None = None
    ecc_volatile_dram_dbe: int | None = None
    ecc_volatile_sram_dbe: int | None = None
    ecc_aggregate_dram_dbe: int | None = None
    ecc_aggregate_sram_dbe: int | None = None
    """Hopper-era drivers split uncorrectable counts into DRAM (HBM) and SRAM (on-chip); None: not split."""
    sram_sources: dict[str, int] = Field(default_factory=dict)
    """Units of the aggregate uncorrectable SRAM errors (l2, sm, microcontroller, pcie, other) -> count, nonzero."""
    unrepairable_memory: bool | None = None
    channel_repair_pending: bool | None = None
    retired_sbe: int | None = None
    retired_dbe: int | None = None
    retired_pending: bool | None = None
    remapped_correctable: int | None = None
    remapped_uncorrectable: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_gen_device_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    pcie_replays: int | None = None
    persistence_mode: bool | None = None
    mig_mode: str | None = None
    mig_pending: str | None = None
    fabric_state: str | None = None
    fabric_status: str | None = None
    recovery_action: str | None = None
    processes: list[GpuProcess] = Field(default_factory=list)
    nvlinks: list[NvLink] = Field(default_factory=list)
    nvlink_all_inactive: bool = False
    nvlink_window_s: float | None = None
    """Seconds between the two reads of the NVLink error counters (None: read once)."""
    """`nvidia-smi nvlink -s` said every link of this GPU is inactive."""


class XidEvent(BaseModel):
    """One `NVRM: Xid (PCI:…): <code>, …` line of the kernel log, classified from knowledge/xids.yaml."""

    line_no: int
    line: str
    code: int
    pci: str
    gpu_index: int | None = None
    mnemonic: str | None = None
    meaning: str | None = None
    action: str | None = None
    klass: str | None = None
    """fatal | hardware | memory | nvlink | app | sympathetic | info (see xids.yaml)."""
    rank: int = 0
    """How serious the class is: higher is worse (fatal > hardware/memory/nvlink > app > sympathetic > info)."""


class ServingProcess(BaseModel):
    pid: int
    kind: str | None = None
    """vllm | sglang | tensorrt_llm | engine worker | None (a GPU process that is no engine)."""
    comm: str | None = None
    visible: bool = True
    on_gpu: bool = False
    env: dict[str, str] = Field(default_factory=dict)
    """Allowlisted variables only: the probe dropped every other one on the host."""
    env_dropped: int = 0
    env_readable: bool = False
    cpus_allowed: str | None = None
    mems_allowed: str | None = None


class RdmaPort(BaseModel):
    port: str
    state: str | None = None
    rate: str | None = None
    link_layer: str | None = None


class RdmaDevice(BaseModel):
    name: str
    ports: list[RdmaPort] = Field(default_factory=list)


class NcclLine(BaseModel):
    path: str
    line_no: int
    line: str


class NcclSummary(BaseModel):
    version: str | None = None
    channels: int = 0
    transports: dict[str, int] = Field(default_factory=dict)
    """p2p, shm, net_socket, net_ib, net_other -> channel connections."""
    gdr: bool | None = None
    network: str | None = None
    ib_no_device: bool = False
    p2p_disabled_warning: bool = False
    env_from_log: dict[str, str] = Field(default_factory=dict)
    """`NCCL_X set by environment to V` lines."""
    lines: list[NcclLine] = Field(default_factory=list)


class NodeHealth(ProbeModel):
    kind: Literal["node_health"] = "node_health"
    driver_version: str | None = None
    cuda_version: str | None = None
    gpus: list[GpuHealth] = Field(default_factory=list)
    topology: GpuTopology | None = None
    pci: list[PciLink] = Field(default_factory=list)
    kernel_log_source: str | None = None
    """dmesg | journalctl -k | /var/log/kern.log; None when none was readable (see gaps)."""
    kernel_lines: list[NcclLine] = Field(default_factory=list)
    """The NVIDIA-related kernel-log lines kept (path = the source)."""
    xids: list[XidEvent] = Field(default_factory=list)
    processes: list[ServingProcess] = Field(default_factory=list)
    rdma_devices: list[RdmaDevice] = Field(default_factory=list)
    libibverbs: str | None = None
    iommu: str | None = None
    """pt | on | off (from the kernel command line and /sys/class/iommu); None unknown."""
    iommu_cmdline: list[str] = Field(default_factory=list)
    numa_nodes: dict[str, str] = Field(default_factory=dict)
    fabricmanager: str | None = None
    fabricmanager_running: bool | None = None
    nccl: NcclSummary = Field(default_factory=NcclSummary)
    gaps: list[NodeGap] = Field(default_factory=list)
    checked: list[str] = Field(default_factory=list)
    """What was looked at, in words (for the one-line healthy verdict)."""

    def gpu(self, index: int) -> GpuHealth | None:
        return next((g for g in self.gpus if g.index == index), None)

    def facts(self) -> dict[str, FactValue]:
        from orchestrator.prongs.node_health.facts import node_facts

        return node_facts(self)

    def log_lines(self) -> list[tuple[str, str, int, str]]:
        out: list[tuple[str, str, int, str]] = [
            ("kernel", k.path, k.line_no, k.line) for k in self.kernel_lines]
        out.extend(("nccl", n.path, n.line_no, n.line) for n in self.nccl.lines)
        return out


NODE_MODELS: tuple[type[ProbeModel], ...] = (NodeHealth,)
