"""Every scenario case (tests/scenarios/<class>/<case>/case.yaml) staged behind a real sshd and diagnosed offline.

The scorecard (cases passed per class) is printed at the end of the session by tests/support/scorecard.py.
"""

from __future__ import annotations

import os
import shutil

import pytest
from harness import RESIDUAL_CLASSES, discover, failed_outcome, known_failing, residual_mode, run_case

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(shutil.which("sshd") is None and not os.path.exists("/usr/sbin/sshd"),
                                                   reason="OpenSSH sshd not installed")]


def _marked(path):
    """A residual-class case as its mode says (harness.residual_mode): skipped, an expected failure, or plain; a
    development case listed in residual/KNOWN_FAILING.md is an expected failure whatever the mode but strict."""
    klass = path.parent.parent.name
    if klass not in RESIDUAL_CLASSES:
        return path
    mode = residual_mode(klass)
    if mode == "off":
        return pytest.param(path, marks=pytest.mark.skip(
            reason="held-back residual cases are scored by tests/scenarios/score.py (or INVESTIGATE_RESIDUAL=1)"))
    known = known_failing().get(path.parent.name) if klass == "residual" else None
    if mode == "xfail" or (known and os.environ.get("INVESTIGATE_RESIDUAL_STRICT", "") in ("", "0")):
        return pytest.param(path, marks=pytest.mark.xfail(strict=False, reason=known or "residual, expected to fail"))
    return path


CASES = [_marked(p) for p in discover()]
SCORE = "scenario"
"""The user property each case's report carries for the scorecard (tests/support/scorecard.py): its class, id, whether
it passed, its off-symptom causes, and its ranked causes now and as recorded in ranked.json. A report property, not a module list, so the scorecard also adds up the cases
that pytest-xdist's workers ran."""


def _score(request, outcome) -> None:
    request.node.user_properties.append(
        (SCORE, (outcome.case.class_, outcome.case.id, outcome.passed, list(getattr(outcome, "off_symptom", [])),
                 {"ranked": list(outcome.ranked), "held": list(outcome.held), "before": outcome.before})))


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}")
async def test_scenario(path, tmp_path, request):
    try:
        outcome = await run_case(path, tmp_path)
    except BaseException as e:  # a case that cannot run counts as failed on the scorecard too
        _score(request, failed_outcome(path, f"{type(e).__name__}: {e}"))
        raise
    _score(request, outcome)
    assert outcome.passed, (f"{outcome.case.id} ({', '.join(outcome.case.sources)}):\n  - "
                            + "\n  - ".join(outcome.failures) + f"\n--- diagnosis words ---\n{outcome.words}")
