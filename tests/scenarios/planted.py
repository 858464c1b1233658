"""The planted-evidence runner shared by the account and held-out corpora (test_account_planted.py,
test_heldout_planted.py): a case, copied with its files, rewritten by a `without` function that takes its planted
evidence away, run end to end; the test fails when the rewritten case still passes (it was met by something other
than the evidence it plants)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from harness import ROOT, discover, run_case

SSH = [pytest.mark.ssh, pytest.mark.skipif(shutil.which("sshd") is None and not os.path.exists("/usr/sbin/sshd"),
                                           reason="OpenSSH sshd not installed")]
"""The marks of every planted-evidence test module (`pytestmark = planted.SSH`)."""


def cases_of(class_: str) -> list[Path]:
    """The case.yaml files of one scorecard class."""
    return [p for p in discover() if p.parent.parent == ROOT / class_]


async def assert_fails_without(path: Path, tmp_path: Path,
                               without: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Run the case at `path` with `without` applied to it; assert the diagnosis then fails the case."""
    work = tmp_path / path.parent.parent.name / path.parent.name
    shutil.copytree(path.parent, work)
    case = yaml.safe_load(path.read_text())
    (work / "case.yaml").write_text(yaml.safe_dump(without(case), sort_keys=False))
    outcome = await run_case(work / "case.yaml", tmp_path / "run")
    assert outcome.failures, f"{case['id']} still passes with its planted evidence removed:\n{outcome.words}"
