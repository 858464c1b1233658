"""What this machine has: tests that need a part it lacks skip, naming the part and how CI gets it (issue 14 item 9).

`.ci/run` installs everything (torch's CPU build, OpenSSH server, Chromium); a plain checkout may lack some of it,
and a virtualenv without system site packages sees other modules than the `python3` on PATH that probes run under.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from functools import lru_cache

import pytest


@lru_cache(maxsize=None)
def python_has(module: str, python: str = sys.executable) -> bool:
    """Whether `python` (a path or a name on PATH) imports `module` (checked in a subprocess, as the probes run)."""
    exe = python if "/" in python else shutil.which(python)
    if not exe:
        return False
    try:
        return subprocess.run([exe, "-c", f"import {module}"], capture_output=True, timeout=120).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class _Lacks:
    """True when `python` cannot import `module`, asked only when pytest evaluates the skip mark, at a marked test's
    setup: every process that collects the suite (each xdist worker, the serial pass) imports the decorated modules,
    and a check at import started `python -c "import torch"` (about 1 CPU-s) twice in each of them."""

    def __init__(self, module: str, python: str) -> None:
        self.module, self.python = module, python

    def __bool__(self) -> bool:
        return not python_has(self.module, self.python)


def needs_module(module: str, python: str = sys.executable, why: str = "") -> pytest.MarkDecorator:
    where = "this interpreter" if python == sys.executable else f"{python} (the interpreter probes run under here)"
    return pytest.mark.skipif(_Lacks(module, python),
                              reason=f"needs {module} importable by {where}{why} (bash .ci/run installs it)")


needs_torch = needs_module("torch", why=", torch's CPU build is enough")
needs_torch_on_path = needs_module("torch", "python3", why=", torch's CPU build is enough")
