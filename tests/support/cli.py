"""Run the `investigate` command as a user does: a subprocess, this worktree's package, no API key, no user config."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository root (tests/support/cli.py is two levels below it)."""


def cli_env(tmp_path: Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "INVESTIGATE_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["INVESTIGATE_ALLOW_MODEL_REQUESTS"] = "0"  # the kill switch stays on in every subprocess
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "120"
    if tmp_path is not None:  # the user's config and state folders: empty, private to the test
        env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
        env["XDG_STATE_HOME"] = str(tmp_path / "state")
    env.update(extra)
    return env


def investigate(*args: str, tmp_path: Path | None = None, env: dict[str, str] | None = None, cwd=None,
                timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env={**cli_env(tmp_path), **(env or {})}, timeout=timeout)


def one_line(proc: subprocess.CompletedProcess, code: int = 2, *needles: str) -> str:
    """The command failed with `code`, one line on stderr holding every needle, nothing on stdout, no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith("investigate: "), lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert proc.stdout == ""
    return lines[0]
