"""Item 5 of issue 15: terminal control sequences never reach the user's terminal raw."""

from __future__ import annotations

import pytest

from orchestrator.sanitize import sanitize

HOSTILE = [
    ("\x1b]0;pwned\x07title", "title"),                 # OSC 0: set the window title
    ("\x1b]2;pwned\x1b\\rest", "rest"),                  # OSC with ST
    ("\x1b[2J\x1b[Hcleared", "cleared"),                 # clear screen, home
    ("\x1b]8;;http://evil/\x1b\\link\x1b]8;;\x1b\\", "link"),  # hyperlink
    ("\x1b[31mred\x1b[0m", "red"),
    ("\x9b2Jc1", "c1"),                                  # 8-bit CSI
    ("\x9d0;t\x9cafter", "after"),                       # 8-bit OSC ... ST
    ("\x1bcreset", "reset"),                             # RIS: full reset
    ("\x1bP+q\x1b\\dcs", "dcs"),                        # DCS (terminal queries)
    ("a\rb", "a\\x0db"),                                # carriage return overwrites the line
    ("bell\x07", "bell\\x07"),
    ("back\x08space", "back\\x08space"),
    ("del\x7f", "del\\x7f"),
    ("rtl\u202eevil", "rtl\\u202eevil"),                # bidi override
    ("lone\ud800x", "lone\ufffdx"),                      # unencodable surrogate
]


@pytest.mark.parametrize("raw,want", HOSTILE)
def test_controls_are_removed_or_escaped(raw, want):
    assert sanitize(raw) == want


def test_newline_tab_and_unicode_pass():
    text = "line 1\n\tline 2 — µs, 日本語, emoji 🚀"
    assert sanitize(text) is text


def test_scrub_model_walks_models_and_dataclasses_and_copies_only_what_changes():
    from orchestrator.redact import scrub_model
    from orchestrator.render.timeline import AgentSpan, Timeline, ToolSpan

    clean = Timeline(run_id="r", agents=[AgentSpan(agent_id="lead", tool_calls=[ToolSpan(call_id="c", tool="t",
                                                                                          start_s=0.0)])])
    assert scrub_model(clean) is clean
    dirty = Timeline(run_id="r", question="q", agents=[
        clean.agents[0], AgentSpan(agent_id="w", error="boom \x1b]0;T\x07 password=hunter2secret",
                                   overlaps=["lead", "x\u202ey"])])
    out = scrub_model(dirty)
    assert out is not dirty and out.agents[0] is clean.agents[0]  # what did not change is shared
    assert "hunter2secret" not in out.agents[1].error and "\x1b" not in out.agents[1].error
    assert out.agents[1].overlaps == ["lead", "x\\u202ey"]
    assert dirty.agents[1].error.startswith("boom \x1b")  # the original is left as it was
