"""The settings regression cases (issue 27) fail once their before-evidence is taken away, everything else of the case
staying: the run before (`--baseline`: the bench run labelled `baseline`) and the engine log before
(`--baseline-log`). A case that still passes was met by something other than the comparison it plants."""

from __future__ import annotations

import copy
import os
import shutil
from typing import Any

import pytest
import yaml
from harness import ROOT, run_case

pytestmark = [pytest.mark.ssh, pytest.mark.skipif(shutil.which("sshd") is None and not os.path.exists("/usr/sbin/sshd"),
                                                   reason="OpenSSH sshd not installed")]

PLANTED = {
    "sglang-upgrade-moe-finalize-baseline-bench": "baseline",  # the measured regression goes with the run before
    "vllm-upgrade-moe-padding-two-logs": "baseline_log",       # no two versions, no changed default
    "vllm-upgrade-allreduce-two-logs-baseline": "baseline_log",
}


def without_planted(case: dict[str, Any]) -> dict[str, Any]:
    case = copy.deepcopy(case)
    obs = case["observations"]
    if PLANTED[case["id"]] == "baseline":
        obs["bench"] = [b for b in obs["bench"] if b.get("label") != "baseline"]
    else:
        del obs["baseline_log"]
    return case


@pytest.mark.parametrize("name", sorted(PLANTED))
async def test_settings_regression_case_fails_without_its_baseline(name: str, tmp_path):
    path = ROOT / "settings" / name / "case.yaml"
    case = yaml.safe_load(path.read_text())
    assert PLANTED[name] in ("baseline", "baseline_log") and case["observations"]  # the case plants it
    work = tmp_path / "settings" / name
    shutil.copytree(path.parent, work)
    (work / "case.yaml").write_text(yaml.safe_dump(without_planted(case), sort_keys=False))
    outcome = await run_case(work / "case.yaml", tmp_path / "run")
    assert outcome.failures, f"{name} still passes with its baseline removed:\n{outcome.words}"
    # what fails is a cause the comparison made (its expected words), not something unrelated
    causes = case["expect"]["causes"]
    assert any(repr(c) in f or c in f for f in outcome.failures for c in causes), outcome.failures
