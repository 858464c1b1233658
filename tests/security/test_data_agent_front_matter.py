"""Issue 23: an agent definition's front matter (agents/*.md, `--agents DIR`, INVESTIGATE_AGENTS_DIR) is YAML a user
hands us like any other: loaded bounded (orchestrator/safeload.py). An alias bomb, nesting thousands deep, a
5,000-digit integer, a duplicate key or a file of gigabytes is one clear line and exit 2, in bounded time and memory,
before anything runs.

The run is a real `investigate` subprocess under an address-space limit, so a bomb that is walked cannot take the
machine down with it: before the fix the alias bomb ran out of memory (a MemoryError traceback) when the run recorded
the definitions, and the deep nesting was a RecursionError traceback.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orchestrator.agentdefs import AgentDefError, parse_agent_file

NESTED_BOMB = "[&a [x, x, x, x, x, x, x, x, x], " + ", ".join(
    f"&{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]" for i in range(9)) + "]"
"""9 levels of 9 aliases: 9^10 values once expanded, a few hundred bytes composed."""

CASES = {
    "alias bomb": (f"plan:\n  - tool: knowledge_search\n    args: {{query: {NESTED_BOMB}}}\n", "alias"),
    "deep nesting": ("plan:\n  - tool: knowledge_search\n    args: {query: " + "[" * 3000 + "]" * 3000 + "}\n",
                     "nested more than"),
    "huge int": ("max_turns: " + "9" * 5000 + "\n", "5,000 digits"),
    "duplicate key": ("tools: [knowledge_search]\ntools: [shell]\n", "duplicate key 'tools'"),
}


def _agent(d: Path, extra: str) -> Path:
    path = d / "hostile.md"
    path.write_text(f"---\nname: hostile\ndescription: a hostile definition\n{extra}---\nYou are hostile.\n")
    return path


def _limit_memory() -> None:  # 1.5 GiB of address space: a walked bomb fails here instead of eating the machine
    resource.setrlimit(resource.RLIMIT_AS, (1536 * 2**20, 1536 * 2**20))


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_front_matter_is_one_line_and_exit_2_before_anything_runs(tmp_path, case):
    extra, needle = CASES[case]
    d = tmp_path / "agents"
    d.mkdir()
    path = _agent(d, extra)
    transcript = tmp_path / "t.jsonl"
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "why slow?", "--agents", str(d), "--offline", "--no-progress",
         "--transcript", str(transcript)],
        capture_output=True, text=True, timeout=120, env=env, preexec_fn=_limit_memory,
    )
    elapsed = time.monotonic() - started
    err = proc.stderr
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("notice:", "warning:"))]
    assert "Traceback" not in err and "MemoryError" not in err, err[-2000:]
    assert proc.returncode == 2, (proc.returncode, err[-2000:])
    assert len(lines) == 1 and lines[0].startswith("investigate: "), err[-2000:]
    assert str(path) in lines[0] and needle in lines[0], lines[0]
    assert elapsed < 30, f"{elapsed:.1f} s"
    assert not transcript.exists()  # refused before the run


def test_the_loader_names_the_file_and_the_problem_in_one_line(tmp_path):
    for extra, needle in CASES.values():
        path = _agent(tmp_path, extra)
        started = time.monotonic()
        with pytest.raises(AgentDefError) as info:
            parse_agent_file(path)
        msg = str(info.value)
        assert msg.startswith(str(path)) and needle in msg and "\n" not in msg, msg
        assert time.monotonic() - started < 2


def test_an_oversized_definition_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.md"
    with path.open("w") as f:
        f.write("---\nname: big\ndescription: d\n---\n")
        f.truncate(64 * 2**20)  # sparse: 64 MiB that cost nothing to make
    with pytest.raises(AgentDefError, match="bytes, more than"):
        parse_agent_file(path)


def test_the_built_in_definitions_still_load():
    from orchestrator.agentdefs import load_agents

    agents = load_agents()
    assert "lead" in agents and all(a.description for a in agents.values())
