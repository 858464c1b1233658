"""Every scenario case (tests/scenarios/<class>/<case>/case.yaml) staged behind a real sshd and diagnosed offline.

The scorecard (cases passed per class) is printed at the end of the session by conftest.py.
"""

from __future__ import annotations

import os
import shutil

import pytest
from harness import discover, failed_outcome, run_case

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(shutil.which("sshd") is None and not os.path.exists("/usr/sbin/sshd"),
                                                   reason="OpenSSH sshd not installed")]

CASES = discover()
RESULTS: list = []
"""Outcomes of this session's cases, for the scorecard."""


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
async def test_scenario(path, tmp_path):
    try:
        outcome = await run_case(path, tmp_path)
    except BaseException as e:  # a case that cannot run counts as failed on the scorecard too
        RESULTS.append(failed_outcome(path, f"{type(e).__name__}: {e}"))
        raise
    RESULTS.append(outcome)
    assert outcome.passed, (f"{outcome.case.id} ({', '.join(outcome.case.sources)}):\n  - "
                            + "\n  - ".join(outcome.failures) + f"\n--- diagnosis words ---\n{outcome.words}")
