"""Fleet comparison (pure): across N >= 2 comparable hosts, the facts that should be identical, and the odd ones out.

A fleet of replicas is slow when one node is sick, and the answer to "why is node 7 slower than the others?" is the
difference. This module reads the flat facts of every host's probe results (each probe model's `facts()` where it
has one -- the node, engine and cache probes -- and, for the inventory and Python environment probes, the facts
derived here), keeps the facts that should be the same on every replica (GPU model and count, driver, CUDA, library
versions, power limits, clocks events, ECC / remapped rows / Xid, PCIe link, NVLink, NCCL transport and environment,
engine configuration, cache state, measured GEMM and all-reduce) and leaves out what legitimately varies (power
draw, current clocks, temperature, utilization, memory in use, processes, metrics).

Hosts are compared within their role (prefill with prefill, decode with decode); hosts without a role form one
group. For each fact the majority value is the reference: a host whose value differs is odd on that fact; a fact
without a strict majority (two hosts that disagree) is shown but blames no one. Measured numbers compare with a
tolerance around the median instead of by equality. Hosts are ranked by the weight of the facts they are odd on.
"""

from __future__ import annotations

import fnmatch
import functools
import re
import statistics
from collections import Counter
from collections.abc import Iterable
from typing import Any

from orchestrator.analysis.evidence_view import probe_facts
from orchestrator.diagnosis import FleetOutlier, FleetRow, FleetTable
from orchestrator.evidence import Evidence
from orchestrator.findings import Finding

FactValue = str | int | float | bool

# (pattern, weight, label): the first matching pattern decides. Weight 0 = never compared (varies legitimately).
COMPARED: list[tuple[str, float, str]] = [
    ("gpu.*.power.draw_w", 0, ""), ("gpu.*.clocks.sm_mhz", 0, ""), ("gpu.*.clocks.mem_mhz", 0, ""),
    ("gpu.*.temperature_c", 0, ""), ("gpu.*.utilization_pct", 0, ""), ("gpu.*.memory_used_mib", 0, ""),
    ("gpu.*.memory.used_mib", 0, ""), ("gpu.*.numa_node", 0, ""),
    # the node prong's facts that follow load or count events since boot: not a configuration difference
    ("gpu.*.pstate", 0, ""), ("gpu.*.clocks_event_us.*", 0, ""), ("gpu.*.clocks.sm_vs_max", 0, ""),
    ("gpu.*.clocks_event.active", 0, ""), ("gpu.*.pcie.gen", 0, ""), ("gpu.*.pcie.lspci_speed_gts", 0, ""),
    ("gpu.*.pcie.lspci_gen", 0, ""), ("gpu.*.pcie.replays", 0, ""), ("gpu.*.xid.worst_line", 0, ""),
    ("gpu.*.xid.worst_meaning", 0, ""), ("gpu.*.xid.worst_action", 0, ""), ("gpu.*.ecc.*.sbe", 0, ""),
    ("gpu.*.retired_pages.sbe", 0, ""), ("gpu.*.remapped_rows.correctable", 0, ""),
    ("gpu.*.clocks.default_app_sm_mhz", 0, ""), ("gpu.*.power.enforced_vs_default", 0, ""),
    ("gpu.*.processes.*", 0, ""), ("gpu.*.clocks_event.gpu_idle", 0, ""), ("gpu.*.bus_id", 0, ""),
    ("gpu.*.uuid", 0, ""), ("gpu.*.index", 0, ""), ("metrics.*", 0, ""), ("obs.*", 0, ""),
    ("gpu.*.name", 3, "GPU {1} model"),
    ("gpu.*.cc", 3, "GPU {1} compute capability"),
    ("host.gpu_count", 3, "GPU count"),
    ("host.driver_version", 2, "driver version"),
    ("host.cuda_version", 2, "CUDA version"),
    ("gpu.*.power.*limit_w", 3, "GPU {1} {2}"),
    ("gpu.*.clocks_event.*", 3, "GPU {1} clocks event {2}"),
    ("gpu.*.clocks.*", 2, "GPU {1} {2}"),
    ("gpu.*.ecc.*", 3, "GPU {1} ECC {2}"),
    ("gpu.*.retired_pages.*", 3, "GPU {1} retired pages {2}"),
    ("gpu.*.remapped_rows.*", 3, "GPU {1} remapped rows {2}"),
    ("gpu.*.xid*", 3, "GPU {1} {2}"),
    ("gpu.*.pcie.*", 3, "GPU {1} PCIe {2}"),
    ("gpu.*.nvlink.*", 3, "GPU {1} NVLink {2}"),
    ("gpu.*.fabric.*", 2, "GPU {1} fabric {2}"),
    ("gpu.*.mig_mode", 2, "GPU {1} MIG mode"),
    ("gpu.*.persistence_mode", 1, "GPU {1} persistence mode"),
    ("gpu.*.memory_total_mib", 2, "GPU {1} memory"), ("gpu.*.memory.total_mib", 2, "GPU {1} memory (MiB)"),
    ("gpu.*", 1, "GPU {1} {2}"),
    ("xid.*", 3, "Xid {1}"),
    ("kernel.*", 3, "kernel log {1}"),
    ("host.*", 1, "{1}"),
    ("nccl.*", 2, "NCCL {1}"),
    ("env.*", 1, "env {1}"),
    ("lib.*.version", 2, "{1}"),
    ("lib.*", 1, "{1} {2}"),
    ("python.*", 1, "Python {1}"),
    ("engine.*", 2, "engine {1}"),
    ("cache.*", 1, "cache {1}"),
    ("measure.*", 2, "measured {1}"),
    ("torch.*", 2, "torch {1}"), ("kernels.*", 1, "kernels {1} {2}"),
    ("slurm.*", 0, ""),
]
MEASURED_TOLERANCE = 0.10
"""Measured numbers within this fraction of the hosts' median are the same."""

CLOCKS_EVENTS = ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "hw_thermal_slowdown",
                 "hw_power_brake_slowdown", "sync_boost", "sw_thermal_slowdown", "display_clocks_setting")


SUFFIX_LABELS = {
    "power.limit_w": "power limit (W)", "power.enforced_limit_w": "enforced power limit (W)",
    "power.default_limit_w": "default power limit (W)", "power.max_limit_w": "max power limit (W)",
    "clocks.max_sm_mhz": "max SM clock (MHz)", "clocks.app_sm_mhz": "application SM clock (MHz)",
    "memory_total_mib": "memory (MiB)", "pcie.gen": "PCIe generation", "pcie.width": "PCIe width",
}


_FIRST_RULE = re.compile("|".join(f"(?P<r{i}>{fnmatch.translate(p)})" for i, (p, _, _) in enumerate(COMPARED)))
"""Every pattern of COMPARED, in order, as one regex: the alternative that matches is the first pattern that does."""


@functools.lru_cache(maxsize=1 << 16)
def _rule_for(fact: str) -> tuple[float, str]:
    """(weight, label) of a fact name (pure; every host of a fleet shows the same names, so it is cached)."""
    m = _FIRST_RULE.match(fact)
    if m is None or m.lastgroup is None:
        return 1, fact
    _pattern, weight, label = COMPARED[int(m.lastgroup[1:])]
    parts = fact.split(".")

    def part(m: re.Match, parts: list[str] = parts) -> str:
        i = int(m.group(1))
        if i == 2:
            rest = ".".join(parts[2:])
            return SUFFIX_LABELS.get(rest, rest)
        return parts[i] if i < len(parts) else ""

    label = re.sub(r"\{(\d)\}", part, label)
    return weight, re.sub(r"(?<=[a-z])[._](?=[a-z])", " ", label).strip()


def _collapse_gpus(rows: list[FleetRow]) -> list[FleetRow]:
    """Rows of the same per-GPU fact with the same values on several GPUs become one row naming the GPUs."""
    groups: dict[tuple, list[FleetRow]] = {}
    order: list[tuple] = []
    for r in rows:
        m = re.match(r"^gpu\.(\d+)\.(.+)$", r.fact)
        key = (m.group(2), tuple(sorted(r.values.items())), r.majority, tuple(r.odd)) if m else (r.fact,)
        if key not in groups:
            order.append(key)
        groups.setdefault(key, []).append(r)
    out = []
    for key in order:
        g = groups[key]
        if len(g) == 1:
            out.append(g[0])
            continue
        idx = [int(r.fact.split(".")[1]) for r in g]
        span = f"{min(idx)}-{max(idx)}" if idx == list(range(min(idx), max(idx) + 1)) else ",".join(map(str, idx))
        label = re.sub(r"^GPU \d+ ", f"GPUs {span} ", g[0].label)
        out.append(g[0].model_copy(update={
            "fact": f"gpu.[{','.join(map(str, idx))}].{key[0]}", "label": label,
            "evidence": list(dict.fromkeys(e for r in g for e in r.evidence))}))
    return out


# --- facts per host ---------------------------------------------------------------------------------------------


def _inventory_facts(data: dict[str, Any]) -> dict[str, FactValue]:
    """Facts of a gpu_inventory payload (what the node prong's richer facts add to, or replace)."""
    out: dict[str, FactValue] = {}
    gpus = data.get("gpus") or []
    out["host.gpu_count"] = len(gpus)
    for k in ("driver_version", "cuda_version"):
        if data.get(k):
            out[f"host.{k}"] = str(data[k])
    for g in gpus:
        i = g.get("index")
        if i is None:
            continue
        p = f"gpu.{i}."
        for src, dst in (("name", "name"), ("compute_cap", "cc"), ("power_limit_w", "power.limit_w"),
                         ("sm_clock_max_mhz", "clocks.max_sm_mhz"), ("memory_total_mib", "memory_total_mib"),
                         ("power_draw_w", "power.draw_w"), ("sm_clock_mhz", "clocks.sm_mhz"),
                         ("pci_bus_id", "bus_id")):
            if g.get(src) is not None:
                out[p + dst] = g[src]
        active = set(g.get("clocks_throttle_reasons") or [])
        for reason in CLOCKS_EVENTS:
            out[f"{p}clocks_event.{reason}"] = reason in active
    return out


def _pyenv_facts(data: dict[str, Any]) -> dict[str, FactValue]:
    out: dict[str, FactValue] = {}
    for name, version in (data.get("packages") or {}).items():
        out[f"lib.{re.sub(r'[-_.]+', '-', name).lower()}.version"] = str(version)
    if data.get("torch_cuda"):
        out["lib.torch.cuda"] = str(data["torch_cuda"])
    if data.get("python_version"):
        out["python.version"] = str(data["python_version"])
    return out


def _gemm_facts(data: dict[str, Any]) -> dict[str, FactValue]:
    """`measure.gemm.<dtype>.<shape>.m<M>.tflops`: the measured throughput of each point (compared with a
    tolerance around the fleet's median)."""
    out: dict[str, FactValue] = {}
    for p in data.get("points") or []:
        if p.get("tflops") is not None:
            out[f"measure.gemm.{p.get('dtype')}.{p.get('shape') or p.get('name') or 'gemm'}.m{p.get('m')}.tflops"] = \
                round(float(p["tflops"]), 3)
    return out


def _comm_facts(data: dict[str, Any]) -> dict[str, FactValue]:
    """`measure.allreduce.g<group>.<bytes>B.ms`: the measured all-reduce latency of each point."""
    out: dict[str, FactValue] = {}
    for p in data.get("points") or []:
        if p.get("ms") is not None:
            out[f"measure.allreduce.g{p.get('group_size')}.{p.get('bytes')}B.ms"] = round(float(p["ms"]), 4)
    return out


_FALLBACK = {"gpu_inventory": _inventory_facts, "python_env": _pyenv_facts, "gemm_sweep": _gemm_facts,
             "comm_sweep": _comm_facts}


def evidence_facts(ev: Evidence) -> dict[str, FactValue]:
    """The flat facts one piece of evidence shows: the probe model's own `facts()` over the fallbacks here."""
    if ev.is_error or not ev.data or ev.data.get("available") is False:
        return {}
    out: dict[str, FactValue] = {}
    fallback = _FALLBACK.get(str(ev.data.get("kind")))
    if fallback is not None:
        try:
            out.update(fallback(ev.data))
        except Exception:  # a payload of an older shape: no facts rather than no comparison
            pass
    try:
        facts = probe_facts(ev)
    except Exception:
        facts = {}
    out.update({k: v for k, v in facts.items() if isinstance(v, (str, int, float, bool))})
    return out


def compared_facts(ev: Evidence) -> dict[str, tuple[FactValue, str]]:
    """The facts of one piece of evidence that the comparison weighs (`COMPARED`), each with the evidence id: kept
    with the evidence for the run, so they are worked out once per evidence, and only these (a host's full fact set
    is thousands of keys)."""
    return {k: (v, ev.id) for k, v in evidence_facts(ev).items() if _rule_for(k)[0] > 0}


def precompute(ev: Evidence) -> None:
    """The evidence's compared facts as `host_facts` reads them (see analysis.precompute)."""
    ev.derived("fleet_facts", compared_facts)


def _id_key(eid: str) -> tuple:
    return tuple(int(x) if x.isdigit() else 0 for x in re.findall(r"\d+", eid)) or (0,)


def host_facts(evidence: Iterable[Evidence]) -> dict[str, dict[str, tuple[FactValue, str]]]:
    """host -> fact -> (value, evidence id). The fan-out calls (one probe on every host, at the same time) win over
    what other prongs gathered on the primary host; then the lowest id (not completion order: a replay, whose calls
    complete in another order, compares the same way)."""
    per_host: dict[str, list[Evidence]] = {}
    for ev in sorted(evidence, key=lambda e: (e.args.get("host") is None, _id_key(e.id))):
        if ev.host and ev.derived("fleet_facts", compared_facts):
            per_host.setdefault(ev.host, []).append(ev)
    # a host's merged facts are a function of its evidence, in this order: merged once for every view that has it
    return {host: evs[0].derived("fleet_merged:" + ",".join(e.id for e in evs), functools.partial(_merged, evs))
            for host, evs in per_host.items()}


def _merged(evidence: list[Evidence], _anchor: Evidence) -> dict[str, tuple[FactValue, str]]:
    mine: dict[str, tuple[FactValue, str]] = {}
    for ev in reversed(evidence):  # the first evidence with a fact wins: it is applied last
        mine.update(ev.derived("fleet_facts", compared_facts))
    return mine


# --- the comparison ---------------------------------------------------------------------------------------------


def _show(v: FactValue) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _row(fact: str, values: dict[str, tuple[FactValue, str]], weight: float, label: str) -> FleetRow:
    shown = {h: _show(v) for h, (v, _) in values.items()}
    nums = {h: float(v) for h, (v, _) in values.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    majority: str | None = None
    odd: list[str] = []
    if fact.startswith("measure.") and len(nums) == len(values) and len(nums) >= 2:
        med = statistics.median(nums.values())
        majority = f"~{med:g}"
        odd = [h for h, x in nums.items() if med and abs(x - med) / abs(med) > MEASURED_TOLERANCE]
        if len(odd) * 2 >= len(values):  # no clear reference: blame no one
            majority, odd = None, []
    else:
        counts = Counter(shown.values())
        value, n = counts.most_common(1)[0]
        if n * 2 > len(shown):
            majority = value
            odd = [h for h, s in shown.items() if s != value]
    ev_ids = [values[h][1] for h in odd]
    if majority is not None:
        ref = next((values[h][1] for h, s in shown.items() if h not in odd), None)
        if ref:
            ev_ids.append(ref)
    else:
        ev_ids = [e for _, e in values.values()]
    return FleetRow(fact=fact, label=label, values=shown, majority=majority, odd=odd, weight=weight,
                    evidence=list(dict.fromkeys(ev_ids)))


def compare(facts: dict[str, dict[str, tuple[FactValue, str]]], group: str = "all") -> FleetTable | None:
    """The comparison of hosts' facts (host -> fact -> (value, evidence id)); None with fewer than two hosts."""
    hosts = [h for h, f in facts.items() if f]
    if len(hosts) < 2:
        return None
    names = sorted({k for h in hosts for k in facts[h]})
    rows: list[FleetRow] = []
    identical = 0
    for fact in names:
        weight, label = _rule_for(fact)
        if weight <= 0:
            continue
        values = {h: facts[h][fact] for h in hosts if fact in facts[h]}
        if len(values) < 2:
            continue
        if len({(type(v), v) for v, _ in values.values()}) == 1:
            identical += 1  # one value everywhere (most rows of a fleet): nothing to show or weigh
            continue
        row = _row(fact, values, weight, label)
        if len(set(row.values.values())) == 1 and not row.odd:
            identical += 1
            continue
        if row.majority is not None and not row.odd:
            identical += 1  # measured values within tolerance
            continue
        rows.append(row)
    rows = _collapse_gpus(rows)
    score: dict[str, float] = {}
    differs: dict[str, list[str]] = {}
    for r in rows:
        for h in r.odd:
            score[h] = score.get(h, 0.0) + r.weight
            differs.setdefault(h, []).append(f"{r.label}: {r.values[h]} (others {r.majority})")
    outliers = [FleetOutlier(host=h, score=s, differs=differs[h])
                for h, s in sorted(score.items(), key=lambda kv: (-kv[1], hosts.index(kv[0])))]
    rows.sort(key=lambda r: (-r.weight * max(len(r.odd), 1 if r.majority is None else 0), r.fact))
    return FleetTable(group=group, hosts=hosts, rows=rows, identical=identical, outliers=outliers)


def _roles(evidence: list[Evidence], entries: Iterable[Any] | None) -> dict[str, str | None]:
    """host -> role, from the run's host entries (or the `fleet_hosts` evidence a replay carries)."""
    roles: dict[str, str | None] = {}
    for e in entries or []:
        d = e if isinstance(e, dict) else e.model_dump()
        if not d.get("error"):
            roles[d["name"]] = d.get("role")
    if not roles:
        for ev in evidence:
            if ev.kind == "fleet_hosts" and not ev.is_error:
                for d in (ev.data or {}).get("hosts", []):
                    if not d.get("error"):
                        roles[d["name"]] = d.get("role")
    return roles


def fleet_tables(evidence: list[Evidence], entries: Iterable[Any] | None = None) -> list[FleetTable]:
    """One comparison per role group of two or more hosts with facts.

    The fleet prong, the lead and the diagnosis each ask for the comparison of the same evidence: it is worked out
    once per set of evidence and roles (kept with the evidence, which does not change once recorded); callers get
    copies."""
    roles = _roles(evidence, entries)
    if not evidence:
        return _fleet_tables(evidence, roles)
    key = "fleet_tables:" + repr((sorted(e.id for e in evidence), sorted((h, r or "") for h, r in roles.items())))
    anchor = min(evidence, key=lambda e: _id_key(e.id))
    tables: list[FleetTable] = anchor.derived(key, lambda _e: _fleet_tables(evidence, roles))
    return [t.model_copy(deep=True) for t in tables]


def _fleet_tables(evidence: list[Evidence], roles: dict[str, str | None]) -> list[FleetTable]:
    facts = host_facts(evidence)
    if roles:
        facts = {h: f for h, f in facts.items() if h in roles}
    order = list(roles) if roles else sorted(facts)
    groups: dict[str, dict[str, dict[str, tuple[FactValue, str]]]] = {}
    for h, f in sorted(facts.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)):
        groups.setdefault(roles.get(h) or "all", {})[h] = f
    tables = [compare(g, name) for name, g in groups.items()]
    return [t for t in tables if t is not None]


def fleet_table(evidence: list[Evidence], entries: Iterable[Any] | None = None) -> list[FleetTable] | None:
    """The diagnosis' fleet section (None when no group has two hosts to compare)."""
    return fleet_tables(evidence, entries) or None


# --- rules ------------------------------------------------------------------------------------------------------


def _fix_for(row: FleetRow, host: str) -> str | None:
    f = row.fact
    m = re.match(r"gpu\.\[?([\d,]+)\]?\.power\.\w*limit", f)
    if m and row.majority:
        gpus = m.group(1)
        return (f"restore the power limit of GPU(s) {gpus} on {host} to the fleet's {row.majority} W "
                f"(`nvidia-smi -i {gpus} -pl {row.majority}`, persistence mode on)")
    if f.startswith("host.driver_version") or f.startswith("host.cuda_version"):
        return f"install the fleet's driver {row.majority} on {host} (a different driver changes kernels and clocks)"
    if f.startswith("lib."):
        return f"install the fleet's {row.label} {row.majority} on {host}"
    if ".clocks_event." in f:
        return f"find why {host} reports {row.label} (power cap, thermals, power brake) while its peers do not"
    if ".pcie." in f:
        return f"reseat or replace the riser/slot of the GPU on {host} whose link trained below the fleet's"
    if ".ecc." in f or "remapped" in f or "retired" in f or "xid" in f:
        return f"drain {host} and run the field diagnostic on the GPU with errors"
    return None


def fleet_findings(evidence: list[Evidence], entries: Iterable[Any] | None = None) -> list[Finding]:
    """A finding per odd host: what differs from the majority of its peers, with the evidence of both sides."""
    out: list[Finding] = []
    for t in fleet_tables(evidence, entries):
        peers = f"{len(t.hosts) - 1} other {t.group + ' ' if t.group != 'all' else ''}host(s)"
        for o in t.outliers:
            rows = [r for r in t.rows if o.host in r.odd]
            diffs = "; ".join(f"{r.label} is {r.values[o.host]} where the others have {r.majority}" for r in rows[:6])
            more = f" (and {len(rows) - 6} more)" if len(rows) > 6 else ""
            ev = list(dict.fromkeys(e for r in rows for e in r.evidence))
            fixes = list(dict.fromkeys(x for r in rows if (x := _fix_for(r, o.host))))
            recs = ([f"On {o.host}: " + "; ".join(fixes[:3]) + "."] if fixes else
                    [f"Bring {o.host} in line with its peers ({', '.join(r.label for r in rows[:3])}), or drain it "
                     "and compare again."])
            heavy = max(r.weight for r in rows)
            out.append(Finding(
                id=f"fleet-outlier-{o.host}",
                claim=(f"{o.host} differs from the {peers} on {len(rows)} fact(s) that should be identical across "
                       f"replicas: {diffs}{more}. Of {len(t.hosts)} hosts compared, {o.host} is the odd one out."),
                confidence=0.8 if heavy >= 3 else 0.65 if heavy >= 2 else 0.5,
                evidence=ev, recommendations=recs, category="fleet", severity="high" if heavy >= 3 else "medium",
                title=f"{o.host} is the odd host: {', '.join(r.label for r in rows[:3])} differ from its peers",
                data={"host": o.host, "score": o.score, "group": t.group},
            ))
    return out


_BAD_STATES = ("DRAIN", "DOWN", "FAIL", "NOT_RESPONDING", "INVAL", "MAINT")


def slurm_findings(evidence: list[Evidence]) -> list[Finding]:
    """A finding per Slurm node that is drained, down or failing, with the reason the administrator gave."""
    out: list[Finding] = []
    seen: set[str] = set()
    for ev in evidence:
        if ev.kind != "slurm_nodes" or ev.is_error:
            continue
        for n in (ev.data or {}).get("nodes", []):
            state = str(n.get("state") or "")
            flags = [s for s in re.split(r"[+*~#!%$@^-]", state.upper()) if s]
            bad = [s for s in flags if any(s.startswith(b) for b in _BAD_STATES)]
            if not bad or n.get("name") in seen:
                continue
            seen.add(n["name"])
            reason = n.get("reason") or "no reason recorded"
            out.append(Finding(
                id=f"slurm-node-{n['name']}-{bad[0].lower()}",
                claim=(f"Slurm node {n['name']} is in state {state}: reason \"{reason}\""
                       + (f" (set {n['reason_time']})" if n.get("reason_time") else "")
                       + (f"; GRES {n['gres']}" if n.get("gres") and n["gres"] != "(null)" else "")
                       + ". A drained node takes no new jobs; a replica on it is missing from the fleet or runs on "
                         "hardware the administrator took out of service."),
                confidence=0.85, evidence=[ev.id], category="hardware",
                recommendations=[f"Act on the drain reason of {n['name']} (\"{reason}\"), then return it to service "
                                 f"with `scontrol update NodeName={n['name']} State=RESUME`."],
                title=(f"Slurm node {n['name']} is drained: {reason}" if bad[0].startswith("DRAIN")
                       else f"Slurm node {n['name']} is {state.lower()}: {reason}"),
                severity="high", data={"node": n["name"], "state": state},
                symptoms=["throughput", "errors"],  # a replica missing from the fleet: capacity, and failed jobs
            ))
    return out


def fleet_rule(view: Any) -> list[Finding]:
    """The analysis rule (see `rules.RULES`): odd hosts of a fleet, and Slurm nodes out of service."""
    return fleet_findings(view.evidence) + slurm_findings(view.evidence)
