"""Issue 25 item 4: one validation path. The library entry checks what the CLI checks (a notebook gets the CLI's
errors, word for word), and every bad-input exception the package raises is an `InputError`."""

from __future__ import annotations

import importlib

import pytest

from orchestrator.api import investigate_sync, replay_sync
from orchestrator.errors import InputError
from support.cli import investigate, one_line

BAD_INPUT_CLASSES = [
    ("orchestrator.agentdefs", "AgentDefError"), ("orchestrator.observations", "ObservationsError"),
    ("orchestrator.transcript", "TranscriptError"), ("orchestrator.render.specs", "UnknownGpu"),
    ("orchestrator.hosts.multi", "HostsFileError"), ("orchestrator.models.base", "AnthropicConfigError"),
    ("orchestrator.hosts.errors", "HostUnreachable"), ("orchestrator.hosts.errors", "HostAuthFailed"),
    ("orchestrator.hosts.errors", "HostConfigError"), ("orchestrator.hosts.base", "HostKeyRefused"),
]


@pytest.mark.parametrize("module,name", BAD_INPUT_CLASSES, ids=[c[1] for c in BAD_INPUT_CLASSES])
def test_every_bad_input_exception_is_an_input_error(module, name):
    assert issubclass(getattr(importlib.import_module(module), name), InputError)


def test_a_host_lost_during_a_run_is_not_bad_input():
    from orchestrator.hosts.base import HostLost

    assert not issubclass(HostLost, InputError)


def _cli_line(*args, tmp_path) -> str:
    return one_line(investigate(*args, tmp_path=tmp_path), 2).removeprefix("investigate: ")


def test_a_long_question_gets_the_same_error_from_the_library_as_from_the_cli(tmp_path):
    question = "why is it slow " * 200
    with pytest.raises(InputError) as err:
        investigate_sync(question, offline=True, transcript=False)
    assert str(err.value) == _cli_line(question, "--offline", tmp_path=tmp_path)
    assert "at most 2,000" in str(err.value)


def test_model_and_offline_together_are_refused_by_the_library_as_by_the_cli(tmp_path):
    with pytest.raises(InputError) as err:
        investigate_sync("why slow", offline=True, model="claude-sonnet-4-5", transcript=False)
    assert str(err.value) == _cli_line("why slow", "--offline", "--model", "claude-sonnet-4-5", tmp_path=tmp_path)
    with pytest.raises(InputError, match="exclude each other"):
        replay_sync("transcripts/seed-rtx-pro-6000-fp4.jsonl", offline=True, model="claude-sonnet-4-5")


def test_a_question_that_is_not_text_is_refused_by_the_library():
    with pytest.raises(InputError, match="must be text"):
        investigate_sync(b"why slow", offline=True, transcript=False)  # type: ignore[arg-type]
