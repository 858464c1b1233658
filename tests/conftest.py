"""Shared test setup: `tests/` on sys.path so `support.*` helpers import; no network beyond loopback."""

from __future__ import annotations

import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

# Fixtures every test directory may use without importing them (a test module never imports another's fixtures).
pytest_plugins = ["support.sshd", "support.web"]

# Tests never talk to the real API: a stray key in the environment must not select the anthropic backend.
os.environ.pop("ANTHROPIC_API_KEY", None)
os.environ.pop("ANTHROPIC_AUTH_TOKEN", None)
os.environ.pop("ANTHROPIC_BASE_URL", None)
# ...and the package's kill switch refuses any model request that is not to a loopback fake (subprocesses inherit it).
os.environ["INVESTIGATE_ALLOW_MODEL_REQUESTS"] = "0"

# A rule or catalog signal that raises re-raises under test (in use it becomes a gap naming it): no silent failures.
os.environ["INVESTIGATE_STRICT_RULES"] = "1"

# The engine probe on this machine (`--host` local) sees only serving engines carrying this session's tag: none but
# those a test stages, never the staged engines of another test session running on the same machine.
os.environ.setdefault("INVESTIGATE_STAGED_TAG", f"test-session-{os.getpid()}")
