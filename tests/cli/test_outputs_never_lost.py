"""Issue 30 item 2: outputs are checked before the run and never lose the result. A report or transcript path that
cannot be written is refused up front (a missing folder is not created, /proc takes no files); a report is HTML or
Markdown as its extension says, anything else refused; a report that fails at the end still leaves the diagnosis
printed and the transcript named."""

from __future__ import annotations

import pytest

from support.cli import ROOT, investigate, one_line

SEED = ROOT / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl"


def test_a_transcript_in_a_missing_folder_is_refused_and_the_folder_not_created(tmp_path):
    where = tmp_path / "nonexistent" / "t.jsonl"
    one_line(investigate("why slow", "--offline", "--transcript", where, tmp_path=tmp_path), 2,
             "cannot write the transcript", "does not exist", "--transcript")
    assert not where.parent.exists()


def test_a_report_under_proc_is_refused_before_the_run(tmp_path):
    transcript = tmp_path / "t.jsonl"
    one_line(investigate("why slow", "--offline", "--report", "/proc/r.html", "--transcript", transcript,
                         tmp_path=tmp_path), 2, "cannot write the report /proc/r.html", "--report")
    assert not transcript.exists()  # refused before anything ran


@pytest.mark.parametrize("argv", [["replay", str(SEED), "--report", "{d}/r.txt"],
                                  ["report", str(SEED), "-o", "{d}/x.pdf"],
                                  ["why slow", "--offline", "--report", "{d}/r"]])
def test_a_report_extension_that_is_neither_html_nor_markdown_is_refused(tmp_path, argv):
    argv = [a.format(d=tmp_path) for a in argv]
    one_line(investigate(*argv, tmp_path=tmp_path), 2, "reports are HTML or Markdown", ".html or .md")
    assert not (tmp_path / "r.txt").exists() and not (tmp_path / "x.pdf").exists() and not (tmp_path / "r").exists()


def test_a_markdown_report_from_a_run_is_markdown(tmp_path):
    out = tmp_path / "r.md"
    proc = investigate("replay", SEED, "--report", out, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert text.startswith("# Diagnosis: why is FP4 slow?") and "<html" not in text


def test_a_report_that_fails_at_the_end_still_prints_the_diagnosis_and_the_transcript(tmp_path, capsys):
    import orchestrator.cli as cli
    from orchestrator.api import replay_sync

    result = replay_sync(SEED, transcript=tmp_path / "t.jsonl")
    gone = tmp_path / "gone" / "r.html"  # passed the early check, then its folder went away during the run
    with pytest.raises(cli.BadInput) as err:
        cli._emit_result(result, as_json=False, report=gone)
    out = capsys.readouterr()
    assert "Causes (ranked)" in out.out
    assert f"transcript: {tmp_path / 't.jsonl'}" in out.err
    assert "the diagnosis is printed above and kept in the transcript" in str(err.value)
    assert "investigate report TRANSCRIPT -o FILE" in str(err.value)
