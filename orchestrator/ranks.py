"""`Rank`: the tiers of precedence at which a finding sets the diagnosis's bound (a leaf: the prongs' records name
the tiers their findings may claim without importing the findings' models)."""

from __future__ import annotations


class Rank:
    """Tiers of the precedence at which a finding sets the diagnosis's bound (lower first). A rule that makes a
    finding able to set the bound gives it a `BoundClaim` at its tier, plus a fraction below 1 that orders findings of
    one tier; the synthesis takes the lowest claim among the findings that explain the asked symptom."""

    RESIDUAL = -100
    """A residual of the request account whose mechanism the evidence confirms (prongs/request): where the user's
    time or the GPU's work went, which a measurement flaw or the GPUs' idle share only locate."""
    FLAW = 0
    """The figure asked about does not measure the server (a TTFT that is the whole request, runs not comparable)."""
    ACCOUNT = 100
    """The GPUs idle most of the window, and what they wait on: a saturated resource, a residual of the request account
    between two measuring points, then (from `ACCOUNT + ONLY_ELSEWHERE`) what says only that the time goes elsewhere."""
    COMM_EXPERIMENT = 200
    """The user's parallelism experiment implicates all-reduce."""
    COMM_MEASURED = 300
    """Measured all-reduce time exceeds the GEMMs' roofline time."""
    CATALOG = 400
    """A confident, high-severity failure from the catalog that states a bound (chosen by confidence)."""
    TRACE = 500
    """A profile's account of a step: the ground truth of where its time went."""
    BATCH_HELD = 600
    """The engine's batch held below the load: requests wait for a place in it."""
    FAR_BELOW_ROOF = 700
    """Decode far below every roofline: the time goes to something other than GPU work."""
    MOE_ROOFLINE = 800
    """The MoE decode roofline."""
    GEMM_EXPERIMENT = 850
    """The parallelism experiment puts the cost in the per-GPU GEMMs, without saying memory or compute."""
    SERVING_FLOOR = 900
    """Measured serving latency against its roofline floor (the phase asked about first)."""
    POWER_STALL = 1000
    """Low power while the GPU is busy: it stalls, on what is not said."""
    POWER_LIMITED = 1100
    """The GPU runs at its power limit."""


ONLY_ELSEWHERE = 0.5
"""Within `Rank.ACCOUNT`: claims from `Rank.ACCOUNT + ONLY_ELSEWHERE` on say only that the GPUs' time goes elsewhere
(their idle share, the load the client offers, nothing on the host saturated); a claim below it says where (a
saturated resource, or two figures of the request account that should agree and do not, with the layer between
them). What says where comes first: the idle share and the load are what the user already sees."""
