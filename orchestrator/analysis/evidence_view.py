"""A read-only view over recorded evidence that the rules query: parsed probes, the host's GPU, observations."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, TypeVar

from orchestrator import knowledge
from orchestrator.evidence import Evidence
from orchestrator.observations import Observations
from orchestrator.probes.results import GpuInventory, ProbeModel, norm_lib, parse_probe


T = TypeVar("T")


@dataclass
class HostGpu:
    """The GPU the evidence shows, with the evidence ids that show it."""

    name: str
    count: int
    cc: str | None
    spec: knowledge.GpuSpec | None
    caps: knowledge.ArchCaps | None
    evidence: list[str]


def _parse(ev: Evidence) -> ProbeModel | None:
    return parse_probe(ev.data)


def probe_model(ev: Evidence) -> ProbeModel | None:
    """The probe model of a recorded payload (None when it is not a probe's), parsed once for every view of the
    run (recorded evidence does not change; analysis only reads models); raises when the payload does not fit."""
    return ev.derived("probe_model", _parse)


def _facts(ev: Evidence) -> dict[str, Any]:
    model = probe_model(ev)
    return model.facts() if model is not None else {}


def probe_facts(ev: Evidence) -> dict[str, Any]:
    """The model's flat `facts()`, worked out once for the run (the catalog and the fleet comparison both read
    them). Read only."""
    return ev.derived("model_facts", _facts)


@dataclass
class EvidenceView:
    evidence: list[Evidence]
    observations: Observations | None = None
    question: str = ""
    """The run's question, when the caller has it (the serving rules say which phase it is about)."""
    _probes: dict[str, list[tuple[Evidence, ProbeModel]]] = field(default_factory=dict, init=False)
    _fanout: list[tuple[Evidence, ProbeModel]] = field(default_factory=list, init=False)
    """Probe results of multi-host fan-out calls (a tool's `host` argument): in `models()` (per-host facts, gaps)
    but not in `probes()`, whose single-host rules read the primary host; prongs/fleet/rules.py compares hosts."""
    notices: list[tuple[str, str]] = field(default_factory=list, init=False)
    """(what, why) of evidence that failed validation and rules or catalog entries that raised: become gaps."""
    _facts: dict[str, Any] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        for ev in self.evidence:
            if ev.is_error:
                continue  # an error result is never cited as support
            try:
                model = probe_model(ev)
            except Exception as e:  # a payload that does not fit its model is not evidence of anything: say so
                first = str(e).splitlines()[0] if str(e) else type(e).__name__
                self.notice(f"evidence {ev.id} ({ev.tool})", f"its {(ev.data or {}).get('kind')} payload does not "
                            f"validate and was not used: {first}")
                model = None
            if model is not None and ev.args.get("host") is not None:
                self._fanout.append((ev, model))
            elif model is not None:
                self._probes.setdefault(model.kind, []).append((ev, model))

    def fact(self, name: str, compute: Callable[[], T]) -> T:
        """A fact of this evidence, computed once for the view: what one rule needs of another's evidence (the KV
        cache's fit, the engine's work that returns nothing) is read here, never by calling that rule."""
        if name not in self._facts:
            self._facts[name] = compute()
        return self._facts[name]

    def notice(self, what: str, why: str) -> None:
        """Record something that did not work (a failing rule, invalid evidence), once."""
        if (what, why) not in self.notices:
            self.notices.append((what, why))

    def models(self) -> list[tuple[Evidence, ProbeModel]]:
        """Every parsed probe result (available or not), in evidence order."""
        items = [x for group in self._probes.values() for x in group] + self._fanout
        order = {id(e): i for i, e in enumerate(self.evidence)}
        return sorted(items, key=lambda t: order.get(id(t[0]), 0))

    def probes(self, kind: str) -> list[tuple[Evidence, Any]]:
        """Available probe results of a kind, with their evidence."""
        return [(ev, m) for ev, m in self._probes.get(kind, []) if m.available]

    def unavailable(self) -> list[tuple[Evidence, ProbeModel]]:
        return [(ev, m) for ev, m in self.models() if not m.available]

    def of_kind(self, kind: str) -> list[Evidence]:
        return [e for e in self.evidence if not e.is_error and e.kind == kind]

    @property
    def ids(self) -> set[str]:
        return {e.id for e in self.evidence}

    @cached_property
    def gpu(self) -> HostGpu | None:
        """The investigated host's GPU, from the inventory probe or the gpu_specs tool; None when none is shown."""
        for ev, inv in self.probes("gpu_inventory"):
            assert isinstance(inv, GpuInventory)
            if not inv.gpus:
                return None  # the host was looked at and has no GPU: no GPU claims
            g = inv.gpus[0]
            spec = knowledge.gpu_spec(g.name)
            cc = g.compute_cap or (spec.cc if spec else None)
            return HostGpu(g.name, inv.count, cc, spec, knowledge.arch_caps(cc), [ev.id])
        for ev in self.of_kind("gpu_specs"):
            gpus = (ev.data or {}).get("gpus") or []
            if not gpus:
                continue
            first = gpus[0]
            spec = knowledge.gpu_spec(first.get("name"))
            cc = first.get("cc") or (spec.cc if spec else None)
            return HostGpu(first.get("name", "?"), int(first.get("count") or 1), cc, spec,
                           knowledge.arch_caps(cc), [ev.id])
        return None

    @cached_property
    def observed_gpu(self) -> HostGpu | None:
        """The GPU the observations name (`gpu.name`, `gpu.count`), when the spec database knows it: what the
        user measured on, for arithmetic over their figures (the roofline floor of their latency) when the host
        investigated shows no GPU (the report's floor column would stay empty)."""
        oe = self.observations_evidence
        if oe is None or oe[1].gpu is None or not oe[1].gpu.name:
            return None
        spec = knowledge.gpu_spec(oe[1].gpu.name)
        if spec is None:
            return None
        return HostGpu(spec.name, int(oe[1].gpu.count or 1), spec.cc, spec, knowledge.arch_caps(spec.cc), [oe[0].id])

    @cached_property
    def observations_evidence(self) -> tuple[Evidence, Observations] | None:
        """The recorded observations (from the `observations` tool), so claims about them can cite an id."""
        for ev in self.of_kind("observations"):
            raw = (ev.data or {}).get("observations")
            if raw:
                try:
                    return ev, Observations.model_validate(raw)
                except Exception:
                    continue
        return None

    @cached_property
    def libraries(self) -> dict[str, tuple[str | None, str]]:
        """Installed inference libraries: normalized name -> (version, evidence id)."""
        libs: dict[str, tuple[str | None, str]] = {}
        for ev, env in self.probes("python_env"):
            for name, ver in env.packages.items():
                libs.setdefault(_norm_lib(name), (ver, ev.id))
        for ev, inv in self.probes("kernel_inventory"):
            for lib in inv.libraries:
                libs.setdefault(_norm_lib(lib.name), (lib.version, ev.id))
        return libs

    def workload_dtype(self) -> tuple[str | None, list[str]]:
        """The quantization the observations name, with the evidence id that recorded it."""
        oe = self.observations_evidence
        if oe and oe[1].model and oe[1].model.quantization:
            return oe[1].model.quantization.lower(), [oe[0].id]
        return None, []


_norm_lib = norm_lib
