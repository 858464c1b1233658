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
