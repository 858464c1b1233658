"""Tools of multi-host runs: the run's hosts (roles, which could not be used) and the Slurm state of its nodes.

Probing every host needs no tool of its own: any host tool takes `host: NAME` in a multi-host run (see
`tools/base.py`), and an offline plan step with `foreach: hosts` makes one such call per host.
"""

from __future__ import annotations

from pydantic import BaseModel

from orchestrator.tools.base import Tool, ToolContext, ToolFailure, ToolOutput


class NoInput(BaseModel):
    pass


class FleetHostsTool(Tool):
    name = "fleet_hosts"
    description = (
        "The hosts of this multi-host run: name (pass it as `host` to any host tool to run it there), how it is "
        "reached (ssh, slurm, k8s), its role (prefill, decode, router...) and, for a host that could not be used, why."
    )
    Input = NoInput

    async def run(self, args: NoInput, ctx: ToolContext) -> ToolOutput:
        hosts = ctx.inputs.hosts
        if not hosts:
            raise ToolFailure("this run has one host; fleet_hosts describes runs over several (--host repeated, "
                              "--hosts, --slurm, --k8s)")
        lines = [f"{len(hosts)} host(s); {sum(1 for h in hosts if not h.error)} usable; primary: {ctx.inputs.host}"]
        for h in hosts:
            role = f" role={h.role}" if h.role else ""
            state = f" NOT USABLE: {h.error}" if h.error else ""
            lines.append(f"- {h.name} via {h.via}{role}{state}")
        data = {"kind": "fleet_hosts", "hosts": [h.model_dump(mode="json") for h in hosts]}
        return ToolOutput(text="\n".join(lines), data=data)


class SlurmNodesTool(Tool):
    name = "slurm_nodes"
    description = (
        "Slurm's view of the run's nodes (`scontrol show node`): state (idle, allocated, DRAIN, DOWN...), the reason "
        "an administrator drained a node, GRES (GPUs), CPUs and memory; and the allocation the run is inside "
        "(`scontrol show job`, allowlisted SLURM_* variables). Only for --slurm runs."
    )
    Input = NoInput

    async def run(self, args: NoInput, ctx: ToolContext) -> ToolOutput:
        from orchestrator.hosts.slurm import (
            job_env,
            show_job,
            show_nodes,
            slurm_available,
        )

        nodes = [h.dest for h in ctx.inputs.hosts if h.via == "slurm"]
        if not nodes:
            raise ToolFailure("this run's hosts are not Slurm nodes (use --slurm NODELIST_OR_PARTITION)")
        why = slurm_available()
        if why:
            raise ToolFailure(why)
        states, err = await show_nodes(nodes)
        if err and not states:
            raise ToolFailure(f"scontrol show node failed: {err}")
        job_id = next((h.detail.get("job_id") for h in ctx.inputs.hosts if h.detail.get("job_id")), None)
        job = await show_job(job_id) if job_id else None
        env = job_env() if job_id else {}
        lines = []
        for n in states:
            reason = f" reason=\"{n['reason']}\" ({n['reason_time']})" if n.get("reason") else ""
            lines.append(f"{n['name']}: state={n['state']} gres={n.get('gres')} cpus={n.get('cpus_alloc')}/"
                         f"{n.get('cpus')}{reason}")
        if job:
            lines.append("allocation: " + " ".join(f"{k}={v}" for k, v in job.items()))
        if env:
            lines.append("job env: " + " ".join(f"{k}={v}" for k, v in env.items()))
        data = {"kind": "slurm_nodes", "nodes": states, "job": job, "env": env}
        return ToolOutput(text="\n".join(lines) or "no node records", data=data, untrusted=True, host="slurm")
