"""`NodeHealth.facts()`: the flat dotted facts the failure-mode catalog reads (keys documented in node_models)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.knowledge.workloads import engine_of
from orchestrator.prongs.node_health.pci import GEN_OF_SPEED, same_pci

if TYPE_CHECKING:
    from orchestrator.prongs.node_health.models import FactValue, GpuHealth, NodeHealth, XidEvent

# Reasons that mean something holds the clocks down (idle, app clocks and sync boost are not throttles, and neither is
# SW power cap alone: a busy H200 at its default 700 W limit shows it; the lowered limit is the fault, not the cap).
THROTTLES = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")


def cpu_set(spec: str | None) -> set[int] | None:
    """CPUs of a list like "0-31,64-95" (None when absent or unparsable)."""
    if not spec or spec in ("N/A", "[N/A]"):
        return None
    out: set[int] = set()
    try:
        for part in spec.replace(" ", "").split(","):
            if not part:
                continue
            if "-" in part:
                a, b = part.split("-", 1)
                out.update(range(int(a), int(b) + 1))
            else:
                out.add(int(part))
    except ValueError:
        return None
    return out or None


def worst(events: list[XidEvent]) -> XidEvent | None:
    """The most serious event (then the latest)."""
    if not events:
        return None
    return max(enumerate(events), key=lambda p: (p[1].rank, p[0]))[1]


def _put(facts: dict[str, FactValue], key: str, value: object) -> None:
    if value is None:
        return
    if isinstance(value, (bool, int, float, str)):
        facts[key] = value


def _busy(g: GpuHealth) -> bool:
    """Whether the GPU is working (the PCIe link trains down at idle by design, so only a busy GPU's link counts)."""
    if g.clocks_event.get("gpu_idle"):
        return False
    if g.utilization_pct is not None:
        return g.utilization_pct >= 10
    return g.pstate in ("P0", "P1", "P2")


def gpu_facts(node: NodeHealth, g: GpuHealth, serving_pids: set[int] | None) -> dict[str, FactValue]:
    f: dict[str, FactValue] = {}
    p = f"gpu.{g.index}."
    for key, value in (
        ("index", g.index), ("name", g.name), ("bus_id", g.bus_id), ("uuid", g.uuid), ("pstate", g.pstate),
        ("temperature_c", g.temperature_c), ("utilization_pct", g.utilization_pct),
        ("power.draw_w", g.power_draw_w), ("power.limit_w", g.power_limit_w),
        ("power.enforced_limit_w", g.power_enforced_w), ("power.default_limit_w", g.power_default_w),
        ("power.min_limit_w", g.power_min_w), ("power.max_limit_w", g.power_max_w),
        ("clocks.sm_mhz", g.sm_mhz), ("clocks.max_sm_mhz", g.max_sm_mhz), ("clocks.mem_mhz", g.mem_mhz),
        ("clocks.max_mem_mhz", g.max_mem_mhz), ("clocks.app_sm_mhz", g.app_sm_mhz),
        ("clocks.default_app_sm_mhz", g.default_app_sm_mhz), ("clocks.app_mem_mhz", g.app_mem_mhz),
        ("ecc.mode", g.ecc_mode), ("ecc.pending_mode", g.ecc_pending_mode),
        ("ecc.volatile.dbe", g.ecc_volatile_dbe), ("ecc.volatile.sbe", g.ecc_volatile_sbe),
        ("ecc.aggregate.dbe", g.ecc_aggregate_dbe), ("ecc.aggregate.sbe", g.ecc_aggregate_sbe),
        ("ecc.sram_threshold_exceeded", g.sram_threshold_exceeded),
        ("ecc.volatile.dram_dbe", g.ecc_volatile_dram_dbe), ("ecc.volatile.sram_dbe", g.ecc_volatile_sram_dbe),
        ("ecc.aggregate.dram_dbe", g.ecc_aggregate_dram_dbe), ("ecc.aggregate.sram_dbe", g.ecc_aggregate_sram_dbe),
        ("ecc.unrepairable_memory", g.unrepairable_memory), ("ecc.channel_repair_pending", g.channel_repair_pending),
        ("retired_pages.pending", g.retired_pending), ("retired_pages.sbe", g.retired_sbe),
        ("retired_pages.dbe", g.retired_dbe),
        ("remapped_rows.correctable", g.remapped_correctable), ("remapped_rows.uncorrectable", g.remapped_uncorrectable),
        ("remapped_rows.pending", g.remap_pending), ("remapped_rows.failure", g.remap_failure),
        ("pcie.gen", g.pcie_gen), ("pcie.gen_max", g.pcie_gen_max), ("pcie.gen_device_max", g.pcie_gen_device_max),
        ("pcie.width", g.pcie_width), ("pcie.width_max", g.pcie_width_max), ("pcie.replays", g.pcie_replays),
        ("persistence_mode", g.persistence_mode), ("mig_mode", g.mig_mode), ("mig_pending", g.mig_pending),
        ("fabric.state", g.fabric_state), ("fabric.status", g.fabric_status), ("recovery_action", g.recovery_action),
    ):
        _put(f, p + key, value)
    if g.sram_sources:
        f[p + "ecc.sram_sources"] = ", ".join(f"{unit.upper() if unit in ('l2', 'sm', 'pcie') else unit} {n}"
                                              for unit, n in sorted(g.sram_sources.items()))
    # an uncorrectable error since the driver loaded, something waiting for a reset, or a flag that calls for action
    # (SRAM threshold exceeded, remap failure, unrepairable memory): the record is active, not history (NVIDIA GPU memory error management: volatile counters reset at driver load, aggregate ones persist)
    flags = [g.remap_pending, g.retired_pending, g.channel_repair_pending, g.sram_threshold_exceeded,
             g.remap_failure, g.unrepairable_memory]
    if g.ecc_volatile_dbe is not None or any(v is not None for v in flags):
        f[p + "ecc.active"] = bool(g.ecc_volatile_dbe) or any(v is True for v in flags)
    if g.power_enforced_w and g.power_default_w:
        f[p + "power.enforced_vs_default"] = round(g.power_enforced_w / g.power_default_w, 3)
    if g.sm_mhz is not None and g.max_sm_mhz:
        f[p + "clocks.sm_vs_max"] = round(g.sm_mhz / g.max_sm_mhz, 3)
    for reason, state in g.clocks_event.items():
        f[p + f"clocks_event.{reason}"] = state
    active = [r for r, s in g.clocks_event.items() if s]
    if g.clocks_event:
        f[p + "clocks_event.active"] = ",".join(active) or "none"
        f[p + "clocks_event.throttled"] = any(g.clocks_event.get(r) for r in THROTTLES)
    for counter, us in g.clocks_event_us.items():
        f[p + f"clocks_event_us.{counter}"] = us
    # PCIe: width below max is a fault at any load; gen below max only while the GPU is busy
    if g.pcie_width is not None and g.pcie_width_max is not None:
        f[p + "pcie.width_downtrained"] = g.pcie_width < g.pcie_width_max
    if g.pcie_gen is not None and g.pcie_gen_max is not None:
        f[p + "pcie.gen_downtrained"] = g.pcie_gen < g.pcie_gen_max and _busy(g)
    for dev in node.pci:
        if same_pci(dev.address, g.bus_id):
            _put(f, p + "pcie.lspci_speed_gts", dev.sta_speed_gts)
            _put(f, p + "pcie.lspci_width", dev.sta_width)
            _put(f, p + "pcie.lspci_cap_speed_gts", dev.cap_speed_gts)
            _put(f, p + "pcie.lspci_cap_width", dev.cap_width)
            _put(f, p + "pcie.lspci_downgraded", dev.downgraded)
            if dev.sta_speed_gts in GEN_OF_SPEED:
                f[p + "pcie.lspci_gen"] = GEN_OF_SPEED[dev.sta_speed_gts]
            break
    # processes
    f[p + "processes.count"] = len(g.processes)
    # a process named as an engine's or a framework's, or in another PID namespace (nvidia-smi lists host PIDs a
    # container cannot see), is the deployment's own: only a visible process nothing names can be another tenant, and
    # it shares a serving GPU only beside one of the deployment's processes (a GPU it holds alone is another matter)
    by_pid = {sp.pid: sp for sp in node.processes}
    unnamed = [x for x in g.processes if x.pid not in (serving_pids or ())
               and engine_of(x.name, by_pid[x.pid].comm if x.pid in by_pid else None) is None
               and x.pid in by_pid and by_pid[x.pid].visible]
    if len(unnamed) < len(g.processes):
        others = unnamed
    else:  # nothing of the deployment on this GPU: more than one such process on it is the contention
        others = unnamed[1:] if serving_pids is None else []
    f[p + "processes.other_count"] = len(others)
    if others:
        f[p + "processes.other_names"] = ", ".join(f"{x.name or '?'} (pid {x.pid}, {x.used_memory_mib or 0:g} MiB)"
                                                 for x in others[:5])
    # NVLink
    if g.nvlinks or g.nvlink_all_inactive:
        up = sum(1 for link in g.nvlinks if link.up)
        total = len(g.nvlinks)
        down = total - up
        if g.nvlink_all_inactive:
            others_links = [len(o.nvlinks) for o in node.gpus if o.nvlinks and not o.nvlink_all_inactive]
            total = max(total, max(others_links, default=1))
            down, up = total, 0
        f[p + "nvlink.links"] = total
        f[p + "nvlink.links_up"] = up
        f[p + "nvlink.links_down"] = down
        for attr, key in (("crc_errors", "crc_errors"), ("replay_errors", "replay_errors"),
                          ("recovery_errors", "recovery_errors")):
            vals = [getattr(link, attr) for link in g.nvlinks if getattr(link, attr) is not None]
            if vals:
                f[p + f"nvlink.{key}"] = sum(vals)
        if g.nvlink_window_s:
            # DCGM's health watch judges the change over a window: CRC errors per second, new replays/recoveries
            f[p + "nvlink.window_s"] = g.nvlink_window_s
            for key in ("crc_delta", "replay_delta", "recovery_delta"):
                deltas = [getattr(link, key) for link in g.nvlinks if getattr(link, key) is not None]
                if deltas:
                    f[p + f"nvlink.{key}"] = sum(deltas)
            crc = [link.crc_delta for link in g.nvlinks if link.crc_delta is not None]
            if crc:
                f[p + "nvlink.crc_per_s"] = round(sum(crc) / g.nvlink_window_s, 1)
        if down:
            f[p + "nvlink.down_list"] = ", ".join(str(link.link) for link in g.nvlinks if not link.up) or "all"
    # Xid
    mine = [x for x in node.xids if x.gpu_index == g.index]
    f[p + "xid.count"] = len(mine)
    if mine:
        f[p + "xid.codes"] = ",".join(str(c) for c in sorted({x.code for x in mine}))
        fatal = [x for x in mine if x.klass in ("fatal", "memory", "nvlink", "hardware")]
        app = [x for x in mine if x.klass == "app"]
        f[p + "xid.fatal_count"] = len(fatal)
        f[p + "xid.app_count"] = len(app)
        if fatal:
            f[p + "xid.fatal_codes"] = ",".join(str(c) for c in sorted({x.code for x in fatal}))
        if app:
            f[p + "xid.app_codes"] = ",".join(str(c) for c in sorted({x.code for x in app}))
        w = worst(mine)
        if w is not None:
            _put(f, p + "xid.worst", w.code)
            _put(f, p + "xid.worst_name", w.mnemonic)
            _put(f, p + "xid.worst_meaning", w.meaning)
            _put(f, p + "xid.worst_action", w.action)
            _put(f, p + "xid.worst_class", w.klass)
            _put(f, p + "xid.worst_line", w.line[:300])
    else:
        f[p + "xid.fatal_count"] = 0
        f[p + "xid.app_count"] = 0
    # NUMA: the GPU's local CPUs (topo -m) against the serving process on it
    topo = node.topology
    gpu_cpus = cpu_set(topo.cpu_affinity.get(g.index)) if topo else None
    if topo and g.index in topo.numa_affinity:
        _put(f, p + "numa.node", topo.numa_affinity[g.index])
    if gpu_cpus:
        f[p + "numa.cpus"] = topo.cpu_affinity[g.index]  # type: ignore[union-attr]
        by_pid = {sp.pid: sp for sp in node.processes}
        for proc in g.processes:
            sp = by_pid.get(proc.pid)
            allowed = cpu_set(sp.cpus_allowed) if sp else None
            if not sp or not allowed or (serving_pids is not None and proc.pid not in serving_pids):
                continue
            f[p + "numa.process_pid"] = proc.pid
            f[p + "numa.process_cpus"] = sp.cpus_allowed or ""
            f[p + "numa.process_cpu_overlap"] = round(len(allowed & gpu_cpus) / len(allowed), 3)
            # an unpinned process may run anywhere (the scheduler's business); only a pinned one is misplaced
            host_cpus = set().union(*(cpu_set(c) or set() for c in node.numa_nodes.values())) or \
                set().union(*(cpu_set(c) or set() for c in topo.cpu_affinity.values()))  # type: ignore[union-attr]
            f[p + "numa.process_pinned"] = bool(host_cpus) and not host_cpus <= allowed
            break
    return f


def node_facts(node: NodeHealth) -> dict[str, FactValue]:
    if not node.available:
        return {}
    facts: dict[str, FactValue] = {}
    serving = {p.pid for p in node.processes if p.kind}
    serving |= {x.pid for g in node.gpus for x in g.processes if engine_of(x.name) is not None}
    serving_pids = serving or None
    for g in node.gpus:
        facts.update(gpu_facts(node, g, serving_pids))
    h = "host."
    facts[h + "gpu_count"] = len(node.gpus)
    _put(facts, h + "driver_version", node.driver_version)
    _put(facts, h + "cuda_version", node.cuda_version)
    if node.topology is not None:
        facts[h + "nvlink"] = node.topology.nvlink
        kinds = sorted({link.kind for link in node.topology.links})
        if kinds:
            facts[h + "gpu_links"] = ",".join(kinds)
    if any(g.nvlinks for g in node.gpus):
        facts[h + "nvlink"] = True
    states = [g.fabric_state for g in node.gpus if g.fabric_state and g.fabric_state not in ("N/A", "Not Supported")]
    facts[h + "nvswitch"] = bool(states)
    if states:
        bad = [g for g in node.gpus if g.fabric_state and g.fabric_state not in ("N/A", "Not Supported", "Completed")]
        facts[h + "fabric_incomplete_gpus"] = len(bad)
        if bad:
            facts[h + "fabric_state_example"] = f"GPU {bad[0].index} ({bad[0].bus_id}): {bad[0].fabric_state}"
    _put(facts, h + "iommu", node.iommu)
    if node.iommu_cmdline:
        facts[h + "iommu_cmdline"] = " ".join(node.iommu_cmdline)
    acs = [d for d in node.pci if d.acs_redirect is not None]
    if acs:
        on = [d for d in acs if d.acs_redirect]
        facts[h + "acs_enabled"] = bool(on)
        facts[h + "acs_bridges"] = len(on)
        if on:
            facts[h + "acs_example"] = f"{on[0].address} ACSCtl: {on[0].acs_ctl}"
    if node.numa_nodes:
        facts[h + "numa_nodes"] = len(node.numa_nodes)
    facts[h + "rdma_devices"] = len(node.rdma_devices)
    if node.rdma_devices:
        facts[h + "rdma_names"] = ",".join(d.name for d in node.rdma_devices)
        ports = [p for d in node.rdma_devices for p in d.ports]
        facts[h + "rdma_active_ports"] = sum(1 for p in ports if p.state and "ACTIVE" in p.state.upper())
        layers = sorted({p.link_layer for p in ports if p.link_layer})
        if layers:
            facts[h + "rdma_link_layers"] = ",".join(layers)
    facts[h + "libibverbs"] = node.libibverbs is not None
    _put(facts, h + "fabricmanager", node.fabricmanager)
    _put(facts, h + "fabricmanager_running", node.fabricmanager_running)
    facts[h + "kernel_log.readable"] = node.kernel_log_source is not None
    _put(facts, h + "kernel_log.source", node.kernel_log_source)
    facts[h + "xid.count"] = len(node.xids)
    fatal = [x for x in node.xids if x.klass in ("fatal", "memory", "nvlink", "hardware")]
    facts[h + "xid.fatal_count"] = len(fatal)
    unmatched = [x for x in fatal if x.gpu_index is None]
    facts[h + "xid.unmatched_fatal_count"] = len(unmatched)
    if unmatched:
        w = worst(unmatched)
        assert w is not None
        facts[h + "xid.unmatched_code"] = w.code
        facts[h + "xid.unmatched_pci"] = w.pci
        _put(facts, h + "xid.unmatched_name", w.mnemonic)
        _put(facts, h + "xid.unmatched_action", w.action)
        facts[h + "xid.unmatched_line"] = w.line[:300]
    facts[h + "serving_processes"] = len(serving)
    # env: serving processes first (the engine's own), then what NCCL's log says it was given
    for proc in sorted(node.processes, key=lambda p: (p.kind is None, p.pid)):
        for name, value in proc.env.items():
            facts.setdefault(f"env.{name}", value)
    for name, value in node.nccl.env_from_log.items():
        facts.setdefault(f"env.{name}", value)
    n = node.nccl
    if n.lines:
        _put(facts, "nccl.version", n.version)
        facts["nccl.channels"] = n.channels
        for kind in ("p2p", "shm", "net_socket", "net_ib", "net_other"):
            facts[f"nccl.transport.{kind}"] = n.transports.get(kind, 0)
        _put(facts, "nccl.gdr", n.gdr)
        _put(facts, "nccl.network", n.network)
        facts["nccl.ib_no_device"] = n.ib_no_device
        facts["nccl.p2p_disabled_warning"] = n.p2p_disabled_warning
    return facts
