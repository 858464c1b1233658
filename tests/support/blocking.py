"""A host command that the read-only policy allows and that never returns, for interrupt tests.

The shell policy refuses reading FIFOs and devices (they can hang the machine), so a blocked prong is staged as a fake
`nvidia-smi` that sleeps: `nvidia-smi -q` is an allowed query, and the sleep keeps the tool call open until cancelled.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

COMMAND = "nvidia-smi -q"


def blocking_path(tmp_path: Path) -> str:
    """A PATH whose first entry holds the sleeping `nvidia-smi` (the rest of the PATH follows)."""
    bindir = tmp_path / "blocking-bin"
    bindir.mkdir(exist_ok=True)
    exe = bindir / "nvidia-smi"
    exe.write_text("#!/bin/sh\nexec sleep 300\n")
    exe.chmod(0o755)
    return os.pathsep.join([str(bindir), os.environ.get("PATH", "")])


def wait_for(predicate, timeout: float = 30.0) -> bool:
    """Poll predicate every 50 ms until it holds (True) or timeout seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False
