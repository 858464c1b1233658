"""Slurm as a host source and a transport: the nodes of a nodelist, a partition or the current allocation, each a
`Host` whose commands run through the real `srun` (one job step per command, on that node only).

`--slurm SPEC` names the nodes: a nodelist (`gpu[01-04],gpu07`), a partition (`gpu`), or `.` / `$SLURM_JOB_NODELIST`
for the allocation the command runs in. Names are expanded by `scontrol show hostnames`, a partition's nodes come
from `sinfo -h -p PART -o %N`. Each command becomes

    srun [--jobid J --overlap] -w NODE -N1 -n1 --quiet [--immediate=S] [-t MIN] -- timeout -k 2 T argv...

`--overlap` shares the allocation's resources with the job steps already running there (the serving process), so
probing never waits for the job or takes resources from it; outside an allocation srun asks for a fresh one-node
allocation per command and `--immediate` gives up at once when the node cannot take one (drained, down, busy).
The command policy is the one every host has: tools check argv before it gets here, and argv goes to srun after
`--` as a list (no shell), so nothing in it is read as an srun option. Node state from `scontrol show node`
(drained, reason, GRES) and the job's allocation and environment are evidence (see `prongs/fleet/tool.py`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from typing import Any

from orchestrator.errors import InputError
from orchestrator.hosts.base import CommandResult
from orchestrator.hosts.errors import HostConfigError, HostUnreachable
from orchestrator.hosts.local import LocalHost
from orchestrator.hosts.entry import HostEntry
from orchestrator.hosts.remote_io import FilesOverRun
from orchestrator.settings import Settings

_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-\[\],]*$")
_GRACE_S = 15.0
"""Seconds srun may take beyond the command's own limit (step launch and teardown)."""

JOB_ENV = re.compile(r"^(SLURM_(JOB_(ID|NAME|NODELIST|NUM_NODES|PARTITION|ACCOUNT|QOS|GPUS|CPUS_PER_NODE|RESERVATION)|"
                     r"NNODES|NTASKS|NTASKS_PER_NODE|TASKS_PER_NODE|GPUS|GPUS_PER_NODE|GPUS_PER_TASK|CPUS_PER_TASK|"
                     r"CPUS_PER_GPU|MEM_PER_NODE|MEM_PER_GPU|MEM_PER_CPU|GPU_BIND|GPU_FREQ|CLUSTER_NAME|"
                     r"DISTRIBUTION|STEP_GPUS|SUBMIT_HOST|TOPOLOGY_ADDR|NODEID|PROCID)|CUDA_VISIBLE_DEVICES|"
                     r"GPU_DEVICE_ORDINAL)$")
"""The Slurm job variables recorded as evidence: allocation shape and GPU binding, nothing else of the env."""

STEP_ENV = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "XDG_CACHE_HOME",
    # where the caches the probes inventory were moved to (probes/interpreter.py SERVER_ENV_KEYS: settings, not secrets)
    "FLASHINFER_WORKSPACE_BASE", "FLASHINFER_AUTOTUNER_LOAD_FROM_FILE", "TLLM_AUTOTUNER_CACHE_PATH",
    "VLLM_TUNED_CONFIG_FOLDER", "VLLM_CACHE_ROOT", "VLLM_FLASHINFER_AUTOTUNE_CACHE_DIR", "SGLANG_MOE_CONFIG_DIR",
    "TRITON_CACHE_DIR", "TRITON_HOME", "TORCHINDUCTOR_CACHE_DIR", "PYTORCH_TUNABLEOP_FILENAME",
    "INVESTIGATE_STAGED_TAG",  # a staged test host's processes carry it (probes/scripts/discover.py); unset in use
})
"""The variables of this machine a job step gets (`srun --export=NAMES`, plus Slurm's own SLURM_*): what the probes
need to find programs and caches. srun's default, --export=ALL, put every variable of the login shell (an API key,
cloud secrets) into every job step on the cluster's nodes. srun itself runs with these and its SLURM_* only."""


def step_environ(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The environment srun runs with: STEP_ENV and SLURM_* of this process (SLURM_CONF, the job, auth), nothing
    else."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if k in STEP_ENV or k.startswith("SLURM_")}


def slurm_available() -> str | None:
    """Why Slurm cannot be used from here, or None."""
    missing = [c for c in ("srun", "sinfo", "scontrol") if shutil.which(c) is None]
    if missing:
        return f"{', '.join(missing)} not found on PATH: run on a Slurm login node, or install the Slurm client"
    return None


def job_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The allocation's Slurm variables (allowlisted: nothing else of the environment is kept)."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in sorted(env.items()) if JOB_ENV.match(k)}


async def _local(argv: list[str], timeout_s: float = 30.0) -> CommandResult:
    return await LocalHost("slurm").run(argv, timeout_s=timeout_s, max_output=4_000_000)


async def expand_nodes(spec: str) -> list[str]:
    """Node names of a nodelist, a partition, or the current allocation (`.`); raises HostConfigError (one line)."""
    why = slurm_available()
    if why:
        raise HostConfigError(f"--slurm {spec}: {why}")
    spec = spec.strip()
    if spec in (".", "", "$SLURM_JOB_NODELIST"):
        spec = os.environ.get("SLURM_JOB_NODELIST", "")
        if not spec:
            raise HostConfigError("--slurm .: not inside a Slurm allocation (SLURM_JOB_NODELIST is not set); name a "
                                  "nodelist or partition")
    if not _NODE.match(spec):
        raise HostConfigError(f"--slurm {spec!r} is neither a nodelist nor a partition name; pass e.g. gpu[01-04]")
    part = await _local(["sinfo", "-h", "-p", spec, "-o", "%N"])
    nodelist = spec
    if part.ok and part.stdout.strip():
        nodelist = ",".join(x.strip() for x in part.stdout.split() if x.strip())
    res = await _local(["scontrol", "show", "hostnames", nodelist])
    if not res.ok:
        err = " ".join(res.stderr.split()) or f"exit {res.exit_code}"
        raise HostConfigError(f"--slurm {spec}: scontrol cannot expand it ({err}); check the nodelist or partition")
    nodes = [n for n in res.stdout.split() if n]
    if not nodes:
        raise HostConfigError(f"--slurm {spec} names no node; check the nodelist or partition (sinfo lists them)")
    known = await _local(["sinfo", "-h", "-N", "-o", "%N"])
    if known.ok and known.stdout.strip():
        have = set(known.stdout.split())
        unknown = [n for n in nodes if n not in have]
        if unknown:
            raise HostConfigError(f"--slurm {spec}: no such node(s) {', '.join(unknown[:5])} in this cluster; "
                                  "sinfo -N lists the nodes")
    return list(dict.fromkeys(nodes))


async def slurm_entries(spec: str, settings: Settings | None = None) -> list[HostEntry]:
    """The host entries of `--slurm SPEC`: one per node, reached through srun (inside the allocation if any)."""
    try:
        nodes = await expand_nodes(spec)
    except HostConfigError as exc:
        raise InputError(str(exc)) from None
    job = os.environ.get("SLURM_JOB_ID")
    detail = {"job_id": job} if job else {}
    states = {}
    if not job:  # outside an allocation a drained or down node takes no job step: a gap, said with its reason
        recs, _ = await show_nodes(nodes)
        states = {r["name"]: r for r in recs}
    out = []
    for n in nodes:
        rec = states.get(n) or {}
        flags = [f for f in re.split(r"[+*~#!%$@^]", str(rec.get("state") or "").upper()) if f]
        down = [f for f in flags if f.startswith(("DRAIN", "DOWN", "FAIL", "NOT_RESPONDING", "INVAL", "FUTURE"))]
        error = None
        if down:
            error = (f"Slurm node {n} is {rec.get('state')}" + (f" (reason: {rec['reason']})" if rec.get("reason")
                     else "") + ": it takes no job step outside an existing allocation")
        out.append(HostEntry(name=n, dest=n, via="slurm", detail=dict(detail), error=error))
    return out


def parse_scontrol_oneliner(text: str) -> list[dict[str, str]]:
    """`scontrol show node -o` (or `show job -o`): one record per line of `Key=Value` pairs.

    Values may hold spaces (`Reason=GPU 3 Xid 79 [root@2026-...]`, `OS=Linux 6.1 #1 SMP`): a token that is not
    `Key=` continues the previous value.
    """
    out: list[dict[str, str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        rec: dict[str, str] = {}
        key = None
        for tok in line.split(" "):
            m = re.match(r"^([A-Za-z][A-Za-z0-9_/:.]*)=(.*)$", tok)
            if m and (key is None or not rec.get(key, "").endswith("\\")):
                key = m.group(1)
                rec[key] = m.group(2)
            elif key is not None:
                rec[key] = (rec[key] + " " + tok) if tok or rec[key] else rec[key]
        out.append({k: v.strip() for k, v in rec.items()})
    return out


def node_state(rec: dict[str, str]) -> dict[str, Any]:
    """What evidence keeps of one node record: state, reason (and who set it when), GRES, CPUs, memory."""
    reason = rec.get("Reason") or None
    reason_time = None
    if reason:
        m = re.match(r"^(.*?)\s*\[([^\]@]+)@([^\]]+)\]$", reason)
        if m:
            reason, reason_time = m.group(1), f"by {m.group(2)} at {m.group(3)}"
    return {
        "name": rec.get("NodeName"), "state": rec.get("State"), "reason": reason, "reason_time": reason_time,
        "gres": rec.get("Gres"), "gres_used": rec.get("GresUsed"), "partitions": rec.get("Partitions"),
        "cpus": rec.get("CPUTot"), "cpus_alloc": rec.get("CPUAlloc"), "real_memory_mb": rec.get("RealMemory"),
        "cfg_tres": rec.get("CfgTRES"), "alloc_tres": rec.get("AllocTRES"), "version": rec.get("Version"),
    }


async def show_nodes(nodes: list[str]) -> tuple[list[dict[str, Any]], str | None]:
    """`scontrol show node -o` of the nodes (state, reason, GRES), or an error line."""
    res = await _local(["scontrol", "show", "node", "-o", ",".join(nodes)])
    if not res.ok and not res.stdout.strip():
        return [], " ".join(res.stderr.split()) or f"scontrol exited {res.exit_code}"
    return [node_state(r) for r in parse_scontrol_oneliner(res.stdout) if r.get("NodeName")], None


async def show_job(job_id: str) -> dict[str, str] | None:
    """The allocation (`scontrol show job -o ID`): nodes, TRES/GRES, partition, state; no command line or env."""
    res = await _local(["scontrol", "show", "job", "-o", job_id])
    recs = parse_scontrol_oneliner(res.stdout) if res.ok else []
    if not recs:
        return None
    keep = ("JobId", "JobName", "JobState", "Partition", "NodeList", "NumNodes", "NumCPUs", "NumTasks", "TRES",
            "TresPerNode", "TresPerJob", "Gres", "Reason", "RunTime", "TimeLimit", "OverSubscribe")
    return {k: v for k, v in recs[0].items() if k in keep}


_SRUN_STATUS = re.compile(r"^srun: error: \S+: tasks? [0-9,\-]+: (Exited with exit code \d+|Killed|Terminated)$\n?",
                          re.M)
"""srun's own report of how the step's tasks ended (Slurm's src/plugins/launch/slurm/launch_slurm.c:
`error("%s: %s %s: Exited with exit code %d", hosts, task_str, tasks, rc)`, and the signal's name for a killed task),
appended to stderr: not the program's output, and the exit code says it already."""


def _without_srun_status(stderr: str) -> str:
    return _SRUN_STATUS.sub("", stderr)


class SlurmHost(FilesOverRun):
    """One Slurm node, reached through `srun -w NODE` from this (login) machine."""

    def __init__(self, node: str, settings: Settings | None = None, *, job_id: str | None = None,
                 immediate_s: int = 5):
        if not _NODE.match(node) or any(c in node for c in "[],"):
            raise HostConfigError(f"{node!r} is not a single Slurm node name")
        self.node = node
        self.name = node
        self.settings = settings or Settings()
        self.job_id = job_id
        self.immediate_s = immediate_s
        self._local = LocalHost(node)

    def srun_argv(self, argv: list[str], timeout_s: float) -> list[str]:
        """The srun command line that runs argv on this node only, as one job step."""
        out = ["srun"]
        if self.job_id:
            out += ["--jobid", self.job_id, "--overlap"]
        else:
            out += [f"--immediate={self.immediate_s}", "-t", str(max(1, int(timeout_s // 60) + 1))]
        # only the named variables (and SLURM_*) reach the step, never the rest of this machine's environment
        exported = sorted(k for k in step_environ() if k in STEP_ENV)
        out += ["--export=" + (",".join(exported) or "NONE")]
        out += ["-w", self.node, "-N1", "-n1", "--quiet", "--kill-on-bad-exit=1", "--"]
        # the remote command is bounded on the node itself: killing srun alone may leave the step running
        out += ["timeout", "-k", "2", f"{max(timeout_s, 1):g}", *argv]
        return out

    async def run(self, argv: list[str], *, stdin: str | None = None, timeout_s: float = 60.0,
                  max_output: int = 1_000_000) -> CommandResult:
        self._local.env = step_environ()  # srun itself sees only what a step may get (and its SLURM_*)
        res = await self._local.run(self.srun_argv(list(argv), timeout_s), stdin=stdin,
                                    timeout_s=timeout_s + _GRACE_S, max_output=max_output)
        res.argv = list(argv)
        res.stderr = _without_srun_status(res.stderr)  # the program's stderr only, as every Host returns it
        if res.exit_code == 124:  # coreutils timeout
            res.timed_out, res.exit_code = True, None
        return res

    async def connect(self) -> SlurmHost:
        """Run `true` on the node: a drained, down or unknown node fails here, with its state and reason."""
        res = await self.run(["true"], timeout_s=self.settings.ssh_connect_timeout_s)
        if res.ok:
            return self
        err = " ".join(res.stderr.split())[:300] or f"srun exited {res.exit_code}"
        nodes, _ = await show_nodes([self.node])
        state = ""
        if nodes:
            n = nodes[0]
            state = f"; node state {n['state']}" + (f", reason \"{n['reason']}\"" if n.get("reason") else "")
        raise HostUnreachable(f"srun on Slurm node {self.node} failed ({err}{state}): check `scontrol show node "
                              f"{self.node}`")

    async def aclose(self) -> None:
        """Nothing to release: every command was its own job step."""

    def __repr__(self) -> str:
        return f"SlurmHost({self.node!r}, job={self.job_id!r}) via {shlex.join(self.srun_argv(['...'], 60))}"


async def open_entry(entry: HostEntry, ssh_config: str | None, settings: Settings) -> SlurmHost:
    """The `slurm` opener of the registry (orchestrator/hosts/entry.py): a job step on the entry's node."""
    return await SlurmHost(entry.dest, settings, job_id=entry.detail.get("job_id")).connect()
