"""Issue 17 item 2: start-up stays cheap because the CLI imports the heavy layers only in the commands that need them
(a logic check, not a timing one: `bench/startup.py` measures the CPU time)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from support.cli import cli_env

HEAVY = ["paramiko", "anthropic", "httpx", "orchestrator.api", "orchestrator.loop", "orchestrator.agentdefs",
         "orchestrator.hosts", "orchestrator.analysis.rules", "orchestrator.analysis.synthesis",
         "orchestrator.knowledge.catalog", "rich.markdown"]


def _loaded_after(code: str) -> set[str]:
    probe = f"import sys, json\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=cli_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.splitlines()[-1]))


def test_importing_the_cli_imports_no_heavy_layer():
    loaded = _loaded_after("import orchestrator.cli")
    assert not [m for m in HEAVY if m in loaded]


@pytest.mark.parametrize("argv", [["--help"], ["specs", "H200"], ["--version"], ["roofline", "--gpu", "H200", "--dtype",
                                                                                  "fp8", "-m", "1", "-n", "2", "-k", "3"]])
def test_quick_commands_import_no_heavy_layer(argv):
    code = ("import contextlib, io, orchestrator.cli as c\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    rc = c.main({argv!r})\nassert rc == 0, rc")
    loaded = _loaded_after(code)
    assert not [m for m in HEAVY if m in loaded]


def test_specs_as_a_command_does_not_even_build_the_parser():
    code = ("import contextlib, io, runpy, sys\nsys.argv = ['investigate', 'specs', 'H200']\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n    try:\n"
            "        runpy.run_module('orchestrator.cli', run_name='__main__')\n"
            "    except SystemExit as e:\n        assert e.code == 0, e.code")
    loaded = _loaded_after(code)
    assert "typer" not in loaded and not [m for m in HEAVY if m in loaded]


def test_a_run_registers_the_fetch_tool_without_importing_an_http_client():
    # every investigation builds the registry; only a fetch call needs httpx (~50 ms of CPU at each CLI start)
    loaded = _loaded_after("from orchestrator.tools.registry import default_registry\n"
                           "assert 'fetch' in default_registry().names()")
    assert "httpx" not in loaded
