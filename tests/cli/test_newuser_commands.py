"""Issue 14 item 4: a mistyped subcommand is not run as a question; --version, -h, a cap on the question's length."""

from __future__ import annotations

import pytest

from support.cli import ROOT, investigate, one_line

SEED = ROOT / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl"


@pytest.mark.parametrize("argv,meant", [
    (["prob"], "probe"),
    (["shwo"], "show"),
    (["rooflin", "--gpu", "H200"], "roofline"),
    (["spec"], "specs"),
])
def test_lone_word_close_to_a_command_is_did_you_mean(tmp_path, argv, meant):
    proc = investigate(*argv, tmp_path=tmp_path)
    one_line(proc, 2, f"unknown command {argv[0]!r}", f"did you mean `investigate {meant}`?")
    assert not (tmp_path / "state").exists()  # no run, no transcript


def test_first_word_close_to_a_command_then_an_existing_file_is_did_you_mean(tmp_path):
    one_line(investigate("reply", SEED, tmp_path=tmp_path), 2, "did you mean `investigate replay`?")
    one_line(investigate("resme", SEED, "--json", tmp_path=tmp_path), 2, "did you mean `investigate resume`?")


def test_a_question_of_several_words_is_a_question(tmp_path):
    # the question's own checks answer (ask ran), not a did-you-mean
    proc = investigate("replay is slow on my box", "--observations", tmp_path / "nope.yaml", tmp_path=tmp_path)
    line = one_line(proc, 2, "observations file", "not found")
    assert "did you mean" not in line


def test_version_and_short_help(tmp_path):
    from orchestrator import __version__

    for flag in ("--version", "-V"):
        proc = investigate(flag, tmp_path=tmp_path)
        assert proc.returncode == 0 and proc.stdout == f"investigate {__version__}\n" and proc.stderr == ""
    for argv in (["-h"], ["--help"], ["help"], ["ask", "-h"], ["resume", "-h"], ["roofline", "-h"]):
        proc = investigate(*argv, tmp_path=tmp_path)
        assert proc.returncode == 0, (argv, proc.stderr)
        assert proc.stdout.startswith("Usage: investigate"), (argv, proc.stdout[:200])
        options = proc.stdout.partition("Options:")[2]
        assert "list[" not in options and "<path>" not in options and "<str>" not in options  # readable metavars
    top = investigate("-h", tmp_path=tmp_path).stdout
    assert "--version" in top and all(c in top for c in ("replay", "resume", "show", "probe", "specs", "roofline"))


def test_question_length_is_capped(tmp_path):
    transcript = tmp_path / "t.jsonl"
    one_line(investigate("why " * 1250, "--offline", "--transcript", transcript, tmp_path=tmp_path), 2,
             "the question is 4,999 characters long (at most 2,000)", "--observations")
    assert not transcript.exists()


def test_empty_question_is_bad_input(tmp_path):
    one_line(investigate("   ", "--offline", tmp_path=tmp_path), 2, "the question is empty")
