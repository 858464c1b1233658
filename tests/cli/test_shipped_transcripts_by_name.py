"""Issue 43, smaller problems: the shipped transcripts can be named from anywhere, as the README names them
(`transcripts/seed-....jsonl`) or by their name alone; a wheel keeps them inside the package, where the README's
relative path is no file."""

from __future__ import annotations

import shutil

import pytest

from orchestrator import agentdefs, cli
from support.cli import ROOT, investigate, one_line


@pytest.mark.parametrize("name", ["transcripts/seed-rtx-pro-6000-fp4.jsonl", "seed-rtx-pro-6000-fp4",
                                  "seed-rtx-pro-6000-fp4.jsonl"])
def test_a_shipped_transcript_is_found_from_any_folder(name, tmp_path):
    proc = investigate("replay", name, "--json", tmp_path=tmp_path, cwd=tmp_path)  # not the repository
    assert proc.returncode == 0, proc.stderr
    assert '"question": "why is FP4 slow?"' in proc.stdout


def test_a_wheel_layout_is_read(tmp_path, monkeypatch):
    wheel = tmp_path / "site-packages" / "orchestrator" / "_builtin" / "transcripts"
    wheel.mkdir(parents=True)
    shutil.copy(ROOT / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl", wheel)
    monkeypatch.setattr(agentdefs, "builtin_dir", lambda kind: wheel)
    monkeypatch.chdir(tmp_path)
    assert cli._recorded(cli.Path("transcripts/seed-rtx-pro-6000-fp4.jsonl")) == wheel / "seed-rtx-pro-6000-fp4.jsonl"
    with pytest.raises(cli.BadInput, match="the shipped examples are seed-rtx-pro-6000-fp4"):
        cli._recorded(cli.Path("transcripts/seed-typo.jsonl"))
    assert cli._recorded(cli.Path("runs/mine.jsonl")) == cli.Path("runs/mine.jsonl")  # the reader names it


def test_a_missing_name_lists_the_shipped_ones(tmp_path):
    one_line(investigate("show", "seed-typo", tmp_path=tmp_path, cwd=tmp_path), 2, "transcript seed-typo not found",
             "seed-rtx-pro-6000-fp4", "h200-fp8-small-batch")


def test_the_library_finds_them_from_any_folder_too(tmp_path, monkeypatch):
    """docs/library.md's `orchestrator.replay_sync("transcripts/seed-rtx-pro-6000-fp4.jsonl")` raised "not found"
    in a notebook whose folder is not the repository; the command found it."""
    import orchestrator

    monkeypatch.chdir(tmp_path)
    assert orchestrator.load_transcript("h200-fp8-small-batch").header.run_id
    result = orchestrator.replay_sync("transcripts/seed-rtx-pro-6000-fp4.jsonl")
    assert result.status == "ok" and result.diagnosis.question == "why is FP4 slow?"
