"""The GEMM probe's default sweep on this GPU, against an independent timing of every point (issue 17, item 3).

    python3 bench/device/gemm_check.py OUTDIR [OBSERVATIONS.yaml]

1. runs the probe as `investigate --measure` does (run_gemm_probe on the local host, the question's observations,
   the default budget): its wall time against the budget, its held points (power vs limit, SM clock);
2. times every point again with Triton's `do_bench_cudagraph` (a different harness: Triton's graph capture and
   timing loop) over the same number of rotating input sets, and prints probe / independent per point and the median.
Writes OUTDIR/gemm_check.json.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(HERE))


def independent(points: list[dict], l2: int) -> list[dict]:
    import torch
    from triton.testing import do_bench_cudagraph

    dev = torch.device("cuda", 0)
    out = []
    for p in points:
        m, n, k, dt = p["m"], p["n"], p["k"], p["dtype"]
        per = (m * k + k * n) * (2 if dt == "bf16" else 1) + m * n * 2
        count = max(2, min(64, -(-2 * l2 // per)))
        sets = []
        for _ in range(count):
            if dt == "bf16":
                sets.append((torch.randn(m, k, device=dev, dtype=torch.bfloat16),
                             torch.randn(k, n, device=dev, dtype=torch.bfloat16)))
            else:
                one = torch.tensor(1.0, device=dev)
                sets.append((torch.randn(m, k, device=dev).to(torch.float8_e4m3fn),
                             torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t(), one, one))

        def fn(sets=sets, dt=dt):
            for s in sets:
                if dt == "bf16":
                    torch.mm(s[0], s[1])
                else:
                    torch._scaled_mm(s[0], s[1], s[2], s[3], out_dtype=torch.bfloat16)

        ms = do_bench_cudagraph(fn, rep=50, return_mode="median") / count
        out.append({"shape": p["shape"], "dtype": dt, "m": m, "probe_ms": p["ms"], "independent_ms": ms,
                    "ratio": p["ms"] / ms, "buffers": count})
        del sets
        torch.cuda.empty_cache()
    return out


def main() -> int:
    import anyio

    from orchestrator.hosts.local import LocalHost
    from orchestrator.observations import load_observations
    from orchestrator.prongs.tensor_core_specs.probe import run_gemm_probe
    from orchestrator.settings import Settings

    outdir = Path(sys.argv[1])
    obs = load_observations(Path(sys.argv[2])) if len(sys.argv) > 2 else None
    budget = Settings().gemm_budget_s
    t = time.perf_counter()
    sweep = anyio.run(lambda: run_gemm_probe(LocalHost(), observations=obs, budget_s=budget))
    wall = time.perf_counter() - t
    d = sweep.model_dump(mode="json")
    print(f"gemm probe: {len(sweep.points)}/{sweep.planned_points} points, script {sweep.elapsed_s} s, wall {wall:.1f} s, "
          f"budget {budget:g} s, stopped early {sweep.stopped_early}, sampler {sweep.sampler}, "
          f"power limit {sweep.power_limit_w} W, {len(sweep.samples)} samples; reason: {sweep.reason}")
    for p in sweep.points:
        if p.hold_s is not None:
            print(f"  held {p.shape} {p.dtype} M={p.m}: {p.hold_s:.2f} s, {p.hold_calls} GEMMs, {p.hold_ms:.5f} ms each "
                  f"(sweep {p.ms:.5f} ms): {p.mean_power_w} W of {sweep.power_limit_w} W "
                  f"({p.fraction_of_power_limit}), SM {p.mean_sm_clock_mhz} MHz over {p.power_samples} samples")
    rows = independent([p.model_dump() for p in sweep.points], sweep.l2_bytes or 60 * 2**20) if sweep.points else []
    ratios = [r["ratio"] for r in rows]
    within = sum(1 for r in ratios if abs(r - 1) <= 0.10)
    print(f"{'shape':<8} {'dtype':<5} {'M':>6} {'probe ms':>10} {'indep ms':>10} {'ratio':>6}")
    for r in rows:
        print(f"{r['shape']:<8} {r['dtype']:<5} {r['m']:>6} {r['probe_ms']:>10.5f} {r['independent_ms']:>10.5f} "
              f"{r['ratio']:>6.3f}")
    if ratios:
        print(f"median ratio {statistics.median(ratios):.3f}; {within} of {len(ratios)} points within 10 %")
    (outdir / "gemm_check.json").write_text(json.dumps({"sweep": d, "wall_s": wall, "independent": rows,
                                                        "median_ratio": statistics.median(ratios) if ratios else None,
                                                        "within_10pct": within}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
