"""Issue 30 item 4: messages name the real problem. A directory or a device given as a transcript is not "not found";
`--python /bin/sh` is refused with the value and the fix; `resume` of a finished run says there is nothing to resume
(the library says it too) instead of running it again."""

from __future__ import annotations

import pytest

from support.cli import ROOT, investigate, one_line

SEED = ROOT / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl"


@pytest.mark.parametrize("command", [["replay"], ["show"], ["resume"], ["report", "-o", "{d}/r.html"]])
def test_a_directory_or_a_device_as_a_transcript_is_named_as_such(tmp_path, command):
    rest = [a.format(d=tmp_path) for a in command[1:]]
    one_line(investigate(command[0], tmp_path, *rest, tmp_path=tmp_path), 2,
             f"transcript {tmp_path} is a directory, not a file")
    one_line(investigate(command[0], "/dev/zero", *rest, tmp_path=tmp_path), 2,
             "transcript /dev/zero is a device file, not a file")


def test_python_that_is_not_an_interpreter_is_refused_with_its_value(tmp_path):
    one_line(investigate("why slow", "--offline", "--python", "/bin/sh", tmp_path=tmp_path), 2,
             "--python '/bin/sh' refused: only python, python3 or python3.N", "pass the serving interpreter")


def test_resume_of_a_finished_run_says_there_is_nothing_to_resume(tmp_path):
    line = one_line(investigate("resume", SEED, "--transcript", tmp_path / "again.jsonl", tmp_path=tmp_path), 2,
                    "finished (status ok): nothing to resume", f"investigate replay {SEED}")
    assert not (tmp_path / "again.jsonl").exists(), line


async def test_the_library_refuses_to_resume_a_finished_run_too(tmp_path):
    from orchestrator.api import resume
    from orchestrator.errors import InputError

    with pytest.raises(InputError, match="nothing to resume"):
        await resume(SEED, question="why is FP4 slow?", host="gpu-box", transcript=tmp_path / "again.jsonl")
