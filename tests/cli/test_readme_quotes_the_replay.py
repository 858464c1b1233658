"""Issue 30 items 11 and 12: the README's quoted replay output is what `investigate replay` prints today (the lead's
`python3 scripts/record_seed.py` rewrites the quote when it re-records the seed), the library's sync entry points
take the async ones' keywords with their types (no **kwargs), and `investigate -h` shows the question form."""

from __future__ import annotations

import inspect
import re

from support.cli import ROOT, investigate

SEED = "transcripts/seed-rtx-pro-6000-fp4.jsonl"
QUOTE = re.compile(r"investigate replay transcripts/seed-rtx-pro-6000-fp4\.jsonl\n```\n\n> ([^\n]*)\n\n"
                   r"followed by (\d+) ranked causes")


def _words(text: str) -> str:
    return " ".join(text.split())


def test_the_readme_quotes_what_replay_prints(tmp_path):
    m = QUOTE.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert m, "the Quick start's quoted replay block"
    proc = investigate("replay", SEED, tmp_path=tmp_path, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert _words(m.group(1)) in _words(proc.stdout)
    json_proc = investigate("replay", SEED, "--json", tmp_path=tmp_path, cwd=ROOT)
    import json

    assert int(m.group(2)) == len(json.loads(json_proc.stdout)["causes"])


def test_the_sync_entry_points_take_the_async_keywords_with_their_types():
    from orchestrator import api

    for sync, async_ in ((api.investigate_sync, api.investigate), (api.replay_sync, api.replay)):
        s, a = inspect.signature(sync), inspect.signature(async_)
        assert not [p for p in s.parameters.values() if p.kind is p.VAR_KEYWORD]
        assert [(p.name, p.annotation, p.default, p.kind) for p in s.parameters.values()] == \
               [(p.name, p.annotation, p.default, p.kind) for p in a.parameters.values()]


def test_the_top_level_help_shows_the_question_form_and_its_main_options(tmp_path):
    proc = investigate("-h", tmp_path=tmp_path, env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    for needle in ("investigate QUESTION [OPTIONS]", "--host DEST", "--observations FILE", "--log PATH",
                   "--bench FILE", "--measure", "--report FILE.html", "investigate ask --help"):
        assert needle in proc.stdout, needle
    commands = proc.stdout.split("Commands:")[1]
    assert "..." not in commands  # no description cut short
    # the first screen a new user sees fits the terminal it was asked for
    wide = [ln for ln in proc.stdout.splitlines() if len(ln) > 80]
    assert wide == [], wide
