"""The probe scripts share one reviewed prelude, sent ahead of each; none carries its own drifting copy."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from importlib import resources

import pytest

from orchestrator.probes import scripts

NAMES = sorted(p.name[:-3] for p in resources.files(scripts).iterdir()
               if p.name.endswith(".py") and not p.name.startswith("_"))


def _top_level_names(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


PRELUDE = (_top_level_names(scripts.prelude()) | _top_level_names(scripts.environ()) | _top_level_names(scripts.smi())
           | _top_level_names(scripts.interp()))


def test_the_prelude_defines_the_shared_helpers():
    assert {"listdir", "size_of", "server_kind", "MODULES", "SCRIPTS"} <= PRELUDE


@pytest.mark.parametrize("name", NAMES)
def test_no_script_redefines_a_prelude_helper(name):
    own = (resources.files(scripts) / f"{name}.py").read_text()
    assert not (_top_level_names(own) & PRELUDE), f"{name}.py redefines prelude names; use the prelude's"
    ast.parse(scripts.load(name), feature_version=(3, 8))  # what is sent still runs on the host's Python 3.8


def test_prelude_helpers_behave_as_documented(tmp_path):
    probe = scripts.prelude() + "\nimport json, sys\nprint(json.dumps([size_of(sys.argv[1] + '/nope'), " \
        "listdir(sys.argv[1] + '/nope'), listdir(sys.argv[1]), server_kind(['python3', '-m', 'vllm.entrypoints.x']), " \
        "server_kind(['/usr/bin/sglang', 'serve']), server_kind(['grep', 'vllm'])]))\n"
    (tmp_path / "b").write_text("x")
    (tmp_path / "a").write_text("")
    out = subprocess.run([sys.executable, "-", str(tmp_path)], input=probe, text=True, capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [None, [], ["a", "b"], "vllm", "sglang", None]
