"""The measurement probes: send the fixed GEMM / all-reduce scripts to a host's Python and type what they print.

Both load the GPU, so callers run them only when the user asked (`--measure`, `probe --gemm/--comm`). Parameters
go to the script as one JSON argument; the script's text is the file as shipped.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeVar

from pydantic import ValidationError

from orchestrator.prongs.tensor_core_specs.arithmetic import attach_comm_arithmetic, attach_gemm_arithmetic, tp_message_bytes
from orchestrator.prongs.tensor_core_specs.peaks import peaks_for
from orchestrator.hosts.base import CommandResult, Host
from orchestrator.observations import Observations
from orchestrator.probes import scripts
from orchestrator.prongs.tensor_core_specs.models import CommSweep, GemmSweep, Peaks
from orchestrator.probes.results import GpuTopology
from orchestrator.probes.nvidia_smi import NvidiaSmiParseError, parse_topo

DEFAULT_M = [16 << i for i in range(11)]
HOLD_S = 1.0
"""Seconds each held GEMM point runs on (see gemm_params)."""
SAMPLE_INTERVAL_S = 0.1
"""Seconds between the GEMM sweep's power/clock samples: about ten in a held point."""
STARTUP_S = 90.0
"""Time allowed on top of the budget for the interpreter to start and import torch (and NCCL to initialise)."""


def _obs(observations: Observations | dict[str, Any] | None) -> Observations | None:
    if observations is None or isinstance(observations, Observations):
        return observations
    return Observations.model_validate(observations)


def gemm_params(observations: Observations | None, budget_s: float) -> dict[str, Any]:
    """The GEMM script's parameters: the model's expert shapes and the decode Ms it implies, when known."""
    params: dict[str, Any] = {"budget_s": budget_s, "m": list(DEFAULT_M)}
    model = observations.model if observations else None
    inter = (model.moe_intermediate_size or model.intermediate_size) if model else None
    if model and model.hidden_size and inter:
        params["shapes"] = [
            {"name": "gate_up", "n": 2 * inter, "k": model.hidden_size},
            {"name": "down", "n": model.hidden_size, "k": inter},
        ]
    if model and model.num_experts and model.top_k and observations:
        extra = set()
        for run in observations.runs:
            if run.decode_batch:
                m = math.ceil(run.decode_batch * model.top_k / model.num_experts)
                extra.add(max(16, -(-m // 16) * 16))  # multiples of 16: _scaled_mm's kernels want them
        params["m"] = sorted(set(params["m"]) | extra)
        hold = sorted(extra)
    else:
        hold = []
    # the decode-sized point(s) the question is about run on for HOLD_S so that the power sampler sees them
    # (a sweep point alone lasts ~20 ms, under one sampling interval); with no decode batch given, the smallest M
    params["hold_m"] = hold or [min(params["m"])]
    params["hold_s"] = HOLD_S
    params["sample_interval_s"] = SAMPLE_INTERVAL_S
    return params


def comm_params(observations: Observations | None, budget_s: float) -> dict[str, Any]:
    """The all-reduce script's parameters: decode message sizes and the TP group sizes of the observed runs."""
    params: dict[str, Any] = {"backend": "auto", "budget_s": budget_s}
    if observations is None:
        return params
    model = observations.model
    sizes = set()
    groups = set()
    for run in observations.runs:
        if run.tp > 1:
            groups.add(run.tp)
        if model and model.hidden_size and run.decode_batch:
            sizes.add(int(tp_message_bytes(model.hidden_size, run.decode_batch)))
    if sizes:
        params["sizes"] = sorted(sizes)
    if groups:
        # groups of one move no data: their time is the harness's per-call overhead, the baseline the rules
        # subtract (and "2 against 1" on a two-GPU machine)
        params["group_sizes"] = sorted(groups | {1}, reverse=True)
    return params


def _parse_json(res: CommandResult) -> dict[str, Any] | None:
    for line in reversed(res.stdout.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def _where(exc: ValidationError) -> str:
    err = exc.errors()[0]
    return f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']}"


def _failure(res: CommandResult, what: str) -> str:
    if res.timed_out:
        return f"{what} did not finish in {res.duration_s:.0f} s"
    tail = [ln for ln in res.stderr.strip().splitlines() if ln.strip()]
    return f"{what} exited {res.exit_code} without a JSON result" + (f": {tail[-1][:300]}" if tail else "")


SweepT = TypeVar("SweepT", GemmSweep, CommSweep)


async def _run_script(host: Host, script: str, model: type[SweepT], params: dict[str, Any], python: str | None,
                      timeout_s: float) -> tuple[SweepT, bool]:
    """Send a fixed measurement script to the host's interpreter and parse its one JSON document into `model`.

    The flag says whether the script's own result came back (False: an unavailable sweep saying why not)."""
    interp = python or "python3"
    cmd = f"{interp} - <{script}.py> {json.dumps(params)}"
    if python:  # a named interpreter is verified on the host before any script is sent to it
        from orchestrator.probes.interpreter import InterpreterRefused, verify
        try:
            await verify(host, python)
        except InterpreterRefused as exc:
            return model(host=host.name, available=False, reason=str(exc), commands=[cmd]), False
    res = await host.run([interp, "-", json.dumps(params)], stdin=scripts.load(script), timeout_s=timeout_s)
    data = _parse_json(res)
    if data is None:
        return model(host=host.name, available=False, reason=_failure(res, script), commands=[cmd]), False
    try:
        return model.model_validate({**data, "host": host.name, "commands": [cmd]}), True
    except ValidationError as exc:
        return model(host=host.name, available=False, commands=[cmd],
                     reason=f"{script} printed JSON that does not fit: {_where(exc)}"), False


async def run_gemm_probe(
    host: Host,
    python: str | None = None,
    observations: Observations | dict[str, Any] | None = None,
    budget_s: float = 60.0,
    peaks: Peaks | None = None,
    params: dict[str, Any] | None = None,
    measure_wait_s: float = 0.0,
) -> GemmSweep:
    """Time GEMMs on the host's GPU and attach fractions of peak and of the roofline (peaks: given, else looked up).
    The script first reads what else runs on the GPU and waits up to `measure_wait_s` for it to go."""
    p = {**gemm_params(_obs(observations), budget_s), "measure_wait_s": measure_wait_s, **(params or {})}
    sweep, ran = await _run_script(host, "gemm_bench", GemmSweep, p, python, budget_s + measure_wait_s + STARTUP_S)
    if not ran:
        return sweep
    return attach_gemm_arithmetic(sweep, peaks or peaks_for(sweep.gpu_name))


async def run_comm_probe(
    host: Host,
    python: str | None = None,
    observations: Observations | dict[str, Any] | None = None,
    budget_s: float = 60.0,
    params: dict[str, Any] | None = None,
    measure_wait_s: float = 0.0,
) -> CommSweep:
    """Measure all-reduce latency and bus bandwidth across the host's GPUs (gloo across CPU processes without),
    after reading what else runs on them (waiting up to `measure_wait_s` for it to go)."""
    p = {**comm_params(_obs(observations), budget_s), "measure_wait_s": measure_wait_s, **(params or {})}
    sweep, ran = await _run_script(host, "comm_bench", CommSweep, p, python,
                                   budget_s + measure_wait_s + 2 * STARTUP_S)
    if not ran:
        return sweep
    sweep = attach_comm_arithmetic(sweep)
    if sweep.topology_raw:
        sweep = sweep.model_copy(update={"topology": parse_topology(sweep.topology_raw)})
    return sweep


def parse_topology(raw: str) -> GpuTopology:
    """`nvidia-smi topo -m` into GpuTopology (raw text only when it does not parse)."""
    try:
        return parse_topo(raw)
    except NvidiaSmiParseError:
        return GpuTopology(raw=raw)
