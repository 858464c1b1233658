"""CPU cost of starting the CLI: `investigate --help` and `investigate specs H200`.

    python bench/startup.py [--runs N]

Runs each command once to warm up (bytecode cache written, as an installed package has it), then N times (`python -m orchestrator.cli ...`, this checkout first on PYTHONPATH) and prints the user +
system CPU seconds of the child (the median and the best of N), beside the bare interpreter's start-up for scale.
Target (issue 17): <= 0.2 s CPU for both commands.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "investigate --help": [sys.executable, "-m", "orchestrator.cli", "--help"],
    "investigate specs H200": [sys.executable, "-m", "orchestrator.cli", "specs", "H200"],
}
TARGET_S = 0.2


def cpu_seconds(argv: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measured as installed: with the bytecode cache
    print(f"| command | median CPU s | best CPU s | target |\n|---|--:|--:|---|")
    for name, argv in COMMANDS.items():
        cpu_seconds(argv, env)  # warm-up: writes the bytecode cache, fills the page cache
        runs = [cpu_seconds(argv, env) for _ in range(args.runs)]
        target = "" if name.startswith("python") else (
            f"≤ {TARGET_S} {'met' if statistics.median(runs) <= TARGET_S else 'MISSED'}")
        print(f"| `{name}` | {statistics.median(runs):.3f} | {min(runs):.3f} | {target} |")


if __name__ == "__main__":
    main()
