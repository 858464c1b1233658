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


def needs_module(module: str, python: str = sys.executable, why: str = "") -> pytest.MarkDecorator:
    where = "this interpreter" if python == sys.executable else f"{python} (the interpreter probes run under here)"
    return pytest.mark.skipif(not python_has(module, python),
                              reason=f"needs {module} importable by {where}{why} (bash .ci/run installs it)")


needs_torch = needs_module("torch", why=", torch's CPU build is enough")
needs_torch_on_path = needs_module("torch", "python3", why=", torch's CPU build is enough")
