"""Resource account: where the time goes on the host while the workload runs (GPUs busy or idle over a window, the
serving processes and their threads, cgroup, CPUs, memory, PSI, filesystems, NICs), what the load and the
benchmark runs say, what fits in GPU memory, and the engine's work that returns nothing."""

from orchestrator.ranks import Rank
from orchestrator.prong import Prong

PRONG = Prong(
    name="resource_account",
    agent="resource-account",
    tools=("orchestrator.prongs.resource_account.tool:ResourceAccountTool",),
    probe_models=("orchestrator.prongs.resource_account.models:ACCOUNT_MODELS",),
    rules=("orchestrator.prongs.resource_account.rules:resource_account",
           "orchestrator.prongs.resource_account.load_rules:load_runs",
           "orchestrator.prongs.resource_account.fit_rules:what_fits",
           "orchestrator.prongs.resource_account.engine_work_rules:engine_work",
           "orchestrator.prongs.resource_account.bench_rules:bench_without_gpu"),
    bound_tiers=(Rank.FLAW, Rank.ACCOUNT, Rank.BATCH_HELD),
)
