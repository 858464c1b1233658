"""What the resource account shows, as facts other prongs read (the serving floors cite it): the GPUs' busy share
over the window, how many GPUs the serving processes hold, and one sentence of where the time went.

The facts of other prongs this reads (the KV cache's fit, the engine's redone work, the engine's queue) are read as
facts of the evidence, computed once for the view, never by running their rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.prongs.resource_account.engine_work_rules import redone_work
from orchestrator.prongs.resource_account.rules import GPU_BUSY_PCT, GPU_IDLE_PCT, SATURATION, _account
from orchestrator.prongs.serving_engine.kv_rules import kv_holds_fewer
from orchestrator.prongs.resource_account.queue_rules import BOUNDS_BATCH, engine_queue

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView

__all__ = ["GPU_BUSY_PCT", "GPU_IDLE_PCT", "busy_with_batch_work", "gpus_busy", "serving_gpus", "where_time_went"]


def gpus_busy(v: "EvidenceView") -> float | None:
    """The serving GPUs' mean busy share over the account's window (percent), or None without an account."""
    a = _account(v)
    return a.busy if a is not None else None


def serving_gpus(v: "EvidenceView") -> int | None:
    """How many GPUs the serving processes hold (nvidia-smi's compute apps over the account's window), or None."""
    a = _account(v)
    if a is None:
        return None
    held = {i for p in a.acct.processes for i in p.gpus if isinstance(i, int)}
    return len(held) or None


def busy_with_batch_work(v: "EvidenceView") -> bool:
    """The GPUs were busy the whole window with the running batch's own work: no request waited for a place in the
    batch (the engine's queue, the KV cache's room) and the engine redid or discarded no work. Then time a request
    spends beyond its own GPU work is the other running requests' GPU work."""
    a = _account(v)
    if a is None or a.busy is None or a.busy < GPU_BUSY_PCT:
        return False
    q = engine_queue(v, a.busy, a.ev)
    if q is not None or kv_holds_fewer(v) is not None:
        return False
    redo = redone_work(v)
    return redo is None or redo.informational


def where_time_went(v: "EvidenceView") -> tuple[str | None, list[str]]:
    """One sentence of what the account shows (the GPUs' busy share, and the saturated resource if any) for a
    latency far above its floor to cite, with the account's evidence id; (None, []) without an account."""
    a = _account(v)
    if a is None or a.busy is None:
        return None, []
    sat = next((f for f in (rule(a) for rule in SATURATION) if f), None)
    if a.busy >= GPU_BUSY_PCT:
        q = engine_queue(v, a.busy, a.ev)
        held = q if q is not None and q.id in BOUNDS_BATCH else kv_holds_fewer(v)
        if held is not None:
            # busy GPUs at the batch the KV cache or the request limit allows: the wait is for a place in the batch
            return (f"the GPUs were busy {a.busy:.0f} % of its {a.window} window while {held.short.rstrip('.')}: "
                    "the extra time is waiting for a place in the batch, not GPU work."), \
                list(dict.fromkeys([a.ev, *held.evidence]))
        redo = redone_work(v)
        if redo is not None and not redo.informational:
            # busy GPUs doing work the engine throws away: prompts prefilled again, drafts rejected
            return (f"the GPUs were busy {a.busy:.0f} % of its {a.window} window while {redo.short.rstrip('.')}: the "
                    "extra time is GPU work the engine redoes or discards."), list(dict.fromkeys([a.ev, *redo.evidence]))
        return (f"the GPUs were busy {a.busy:.0f} % of its {a.window} window, so the extra time is GPU work beyond the "
                "floor (kernels below their roofline, recomputation)."), [a.ev]
    tail = f" while {sat.short}" if sat else ", and nothing on the host was saturated."
    return f"the GPUs were busy {a.busy:.0f} % of its {a.window} window{tail}", [a.ev]
