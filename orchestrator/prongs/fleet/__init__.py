"""Fleet: a run over several hosts (several --host, --hosts, --slurm, --k8s) probes every host and names the odd one
out among hosts of the same role."""

from orchestrator.prong import Prong

PRONG = Prong(
    name="fleet",
    agent="fleet",
    tools=("orchestrator.prongs.fleet.tool:FleetHostsTool", "orchestrator.prongs.fleet.tool:SlurmNodesTool"),
    rules=("orchestrator.prongs.fleet.rules:fleet_rule",),
)
