"""Wall times of the read-only probes and of whole runs on the machine this runs on (meant for a real GPU box).

    python bench/realhost.py [--runs N] [--out DIR] [--question Q] [--observations FILE]

Prints three tables and writes realhost.json (and the transcripts) under --out:
  1. each probe alone, called through the library on the local host, in `investigate probe`'s order (cold first
     call, then the same call again: the second shows what the operating system's file cache gives);
  2. `investigate probe --json` as a command, N times;
  3. an offline investigation without --measure as a command, N times, with each tool call's wall time and each
     probe's own duration read back from its transcript.
No network, no API key: the offline backend. Run it through `bench/realhost.sh` on the device machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))


async def _probes_alone() -> list[dict]:
    from orchestrator.hosts import open_host
    from orchestrator.prongs.autotune.probe import collect_autotune_caches
    from orchestrator.probes.gpu import collect_gpu_inventory
    from orchestrator.prongs.kernel_research.probe import arch_of, collect_kernel_inventory
    from orchestrator.probes.power import sample_power
    from orchestrator.probes.pyenv import collect_python_env
    from orchestrator.settings import load_settings

    settings = load_settings()
    rows = []
    host = await open_host(None, settings=settings)
    try:
        gpus = None
        for attempt in ("first", "again"):
            t = time.perf_counter()
            gpus = await collect_gpu_inventory(host)
            rows.append(_row("gpu_inventory", attempt, t, gpus))
        first = gpus.gpus[0] if gpus and gpus.gpus else None
        steps = [
            ("power_sample", lambda: sample_power(host, duration_s=settings.power_sample_s)),
            ("python_env", lambda: collect_python_env(host, None)),
            ("autotune_caches", lambda: collect_autotune_caches(host, None, device_name=first.name if first else None)),
            ("kernel_inventory", lambda: collect_kernel_inventory(
                host, arch=arch_of(first.compute_cap) if first else None, python=None)),
        ]
        try:  # the node and serving-engine prongs' probes, where this version has them
            from orchestrator.prongs.serving_engine.probe import collect_engine_report
            from orchestrator.prongs.node_health.probe import collect_node_health

            steps += [("node_health", lambda: collect_node_health(host, [])),
                      ("engine_config", lambda: collect_engine_report(host, []))]
        except ImportError:
            pass
        for name, call in steps:
            for attempt in ("first", "again"):
                _clear_shared(host)
                t = time.perf_counter()
                model = await call()
                rows.append(_row(name, attempt, t, model))
    finally:
        await host.aclose()
    return rows


def _clear_shared(host) -> None:
    """Forget what an earlier call shared for this host (so that each row times its probe's own work)."""
    try:
        from orchestrator.probes import session
    except ImportError:
        return
    session.forget(host)


def _row(name: str, attempt: str, started: float, model) -> dict:
    wall = time.perf_counter() - started
    data = model.model_dump(mode="json")
    return {"probe": name, "attempt": attempt, "wall_s": round(wall, 3), "available": data.get("available"),
            "reason": data.get("reason"), "probe_s": data.get("probe_s"), "timings": data.get("timings"),
            "model": data}


def _command(argv: list[str], runs: int, label: str) -> list[dict]:
    out = []
    for i in range(runs):
        t = time.perf_counter()
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=HERE,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                  [str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])])})
        wall = time.perf_counter() - t
        out.append({"what": label, "run": i + 1, "wall_s": round(wall, 3), "exit": proc.returncode,
                    "stderr_tail": proc.stderr.decode("utf-8", "replace").strip().splitlines()[-3:],
                    "stdout": proc.stdout.decode("utf-8", "replace")})
    return out


def _tools_of(transcript: Path) -> list[dict]:
    from orchestrator.transcript import read_transcript

    rows = []
    t = read_transcript(transcript, strict=False)
    for ev in t.events:
        if getattr(ev, "type", None) == "tool_result":
            data = ev.data or {}
            rows.append({"agent": ev.agent_id, "tool": ev.tool, "call_s": ev.duration_s,
                         "probe_s": data.get("probe_s"), "timings": data.get("timings"),
                         "available": data.get("available")})
    return rows


def _run_seconds(transcript: Path) -> float | None:
    """The run's own duration (RunFinished): the rest of the command's wall time is start-up and exit."""
    from orchestrator.transcript import read_transcript

    for ev in read_transcript(transcript, strict=False).events:
        if getattr(ev, "type", None) == "run_finished":
            return ev.duration_s
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/realhost")))
    ap.add_argument("--question", default="why is FP8 slow at small batch?")
    ap.add_argument("--observations", default=str(HERE / "bench/device/h200_obs.yaml"))
    ap.add_argument("--skip-alone", action="store_true", help="skip table 1 (each probe alone)")
    ns = ap.parse_args()
    ns.out.mkdir(parents=True, exist_ok=True)
    import anyio

    report: dict = {"python": sys.version.split()[0], "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if not ns.skip_alone:
        report["alone"] = anyio.run(_probes_alone)
        print("\n1. each probe alone (library call on the local host)")
        print(f"{'probe':<18} {'attempt':<7} {'wall s':>7} {'probe s':>8}  timings")
        for r in report["alone"]:
            tim = ", ".join(f"{k} {v:g}" for k, v in (r["timings"] or {}).items() if isinstance(v, (int, float)))
            ps = "" if r["probe_s"] is None else f"{r['probe_s']:.3f}"
            print(f"{r['probe']:<18} {r['attempt']:<7} {r['wall_s']:>7.3f} {ps:>8}  {tim}"
                  + ("" if r["available"] else f"  [unavailable: {(r['reason'] or '')[:80]}]"))

    py = [sys.executable, "-m", "orchestrator.cli"]
    report["probe_cmd"] = _command([*py, "probe", "--json"], ns.runs, "investigate probe --json")
    (ns.out / "probe.json").write_text(report["probe_cmd"][-1].pop("stdout"))
    for r in report["probe_cmd"]:
        r.pop("stdout", None)
    runs = []
    for i in range(ns.runs):
        tr = ns.out / f"investigation-{i + 1}.jsonl"
        argv = [*py, ns.question, "--offline", "--no-progress", "--json", "--transcript", str(tr)]
        if ns.observations:
            argv += ["--observations", ns.observations]
        r = _command(argv, 1, "offline investigation")[0]
        r["run"] = i + 1
        r.pop("stdout", None)
        try:
            r["run_s"] = _run_seconds(tr)
            r["tools"] = _tools_of(tr)
        except Exception as exc:  # a failed run leaves no readable transcript; the exit code says why
            r["tools"] = []
            r["transcript_error"] = str(exc)
        runs.append(r)
    report["investigation"] = runs

    print("\n2./3. whole runs (commands)")
    print(f"{'command':<28} {'run':>3} {'wall s':>7} {'exit':>4} {'run s':>6}  (run s: the investigation itself; "
          "the rest is start-up and exit)")
    for r in [*report["probe_cmd"], *runs]:
        rs = f"{r['run_s']:6.3f}" if r.get("run_s") is not None else " " * 6
        print(f"{r['what']:<28} {r['run']:>3} {r['wall_s']:>7.3f} {r['exit']:>4} {rs}"
              + ("" if r["exit"] == 0 else "  " + " | ".join(r["stderr_tail"])[:200]))
    if runs and runs[-1]["tools"]:
        print(f"\ntool calls of investigation run {runs[-1]['run']} (call s: the agent's wait; probe s: the probe's own)")
        print(f"{'agent':<26} {'tool':<18} {'call s':>7} {'probe s':>8}")
        for t in runs[-1]["tools"]:
            ps = "" if t["probe_s"] is None else f"{t['probe_s']:.3f}"
            print(f"{t['agent']:<26} {t['tool']:<18} {t['call_s']:>7.3f} {ps:>8}")
    (ns.out / "realhost.json").write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
