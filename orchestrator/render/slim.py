"""What the report renderers read of each event, and nothing more: `report` holds a run's events this small.

The renderers (html.py, diagnosis.py, engine.py, settings.py, trace.py, timeline.py) read a tool result's data and
an excerpt of its text (`evidence_entries`: the first 400 characters with whitespace collapsed), and a model call's
usage, turn and times; never the conversation a model call carried nor a tool result's full text, so a report of a
200 MB transcript does not hold it in memory (bench/transcript_memory.py measures it).
"""

from __future__ import annotations

from typing import Any, Callable

from orchestrator.events import ModelCall, ToolResult
from orchestrator.messages import ModelResponse
from orchestrator.transcript import tidy

EXCERPT_BASIS = 401
"""Characters of a result's whitespace-collapsed text kept: one more than an excerpt shows, so that the renderer
still sees whether it cut the text (and adds its ellipsis) exactly as on the full text."""


def collapsed_prefix(text: str, n: int = EXCERPT_BASIS) -> str:
    """`" ".join(text.split())[:n]`, without splitting all of a long text."""
    window = 4 * n
    while window < len(text):
        words = text[:window].split()
        # the last word may go on past the window unless the window ends in whitespace: only the words before it
        # are certain
        certain = " ".join(words if text[window - 1].isspace() else words[:-1])
        if len(certain) >= n:
            return certain[:n]
        window *= 4
    return " ".join(text.split())[:n]


def report_view(ev: Any, clean: Callable[[str], str] = lambda s: s) -> Any:
    """The event as the report renderers need it (the same object when nothing is dropped; a copy held as compactly
    as the reader holds events, `transcript.tidy`).

    `clean` is applied to a tool result's whole text before it is cut (the caller's redaction and terminal scrub): a
    secret that straddles the cut is still recognised whole."""
    if isinstance(ev, ModelCall):
        if not (ev.messages or ev.system or ev.tools or ev.response.content):
            return ev
        response = ModelResponse(content=[], stop_reason=ev.response.stop_reason, model=ev.response.model,
                                 usage=ev.response.usage)
        return tidy(ev.model_copy(update={"messages": [], "system": "", "tools": [], "response": response}))
    if isinstance(ev, ToolResult) and len(ev.content) > EXCERPT_BASIS:
        return tidy(ev.model_copy(update={"content": collapsed_prefix(clean(ev.content))}))
    return ev
