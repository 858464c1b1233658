"""The checks every entry point shares (the CLI and the library): one path, so a notebook gets the CLI's errors.

A leaf beside `errors.py`: it imports nothing heavier, so the CLI can run these checks before it imports the engine.
"""

from __future__ import annotations

from orchestrator.errors import InputError

MAX_QUESTION_CHARS = 2000
"""A question is a sentence or a paragraph; anything longer is a file pasted by mistake (use observations)."""


def check_question(question: object) -> str:
    """The question, stripped; InputError when it is not text, empty or longer than `MAX_QUESTION_CHARS`."""
    if not isinstance(question, str):
        raise InputError(f"the question must be text, not {type(question).__name__}; ask something like "
                         "\"why is FP4 slow?\"")
    q = question.strip()
    if not q:
        raise InputError("the question is empty; ask something like \"why is FP4 slow?\"")
    if len(q) > MAX_QUESTION_CHARS:
        raise InputError(f"the question is {len(q):,} characters long (at most {MAX_QUESTION_CHARS:,}); ask it in a "
                         "sentence and pass measurements with --observations FILE")
    return q


def check_backend_choice(model: str | None, offline: bool | None) -> None:
    """`model` (a Claude model) and `offline` (the deterministic backend) choose the backend two ways: one only."""
    if model and offline:
        raise InputError("--model and --offline exclude each other; pass one")
