"""Terminal-safe text: what hosts, logs, web pages and questions put in our output cannot drive the user's terminal.

C0 and C1 control characters other than newline and tab, ANSI/VT escape sequences (CSI, OSC such as title setting
and hyperlinks, DCS/PM/APC strings), bidirectional overrides (text that displays in another order than it reads) and
lone surrogates (unencodable) are removed or shown escaped: a sequence disappears, a lone control shows as `\\xNN`.
Applied, with redaction, at every output boundary through `orchestrator.redact.scrub_*`.
"""

from __future__ import annotations

import re

# ESC-introduced sequences (7-bit) and their 8-bit C1 forms (CSI 0x9b, OSC 0x9d, DCS 0x90, SOS 0x98, PM 0x9e, APC 0x9f)
_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"                     # CSI ... final
    r"|\x9b[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])"      # OSC, DCS, SOS, PM, APC: a string up to ST or BEL
    r"[^\x07\x1b\x9c]{0,4096}(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"                            # other escapes (ESC c resets the terminal, ESC ( B charsets)
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_ANY = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    if "\ud800" <= ch <= "\udfff":
        return "\ufffd"
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def sanitize(text: str) -> str:
    """text without terminal control: escape sequences removed, other controls (not \\n, \\t) shown escaped."""
    if not _ANY.search(text):
        return text
    return _CONTROL.sub(_escape, _SEQUENCE.sub("", text))
