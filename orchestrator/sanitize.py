"""Terminal-safe text: what hosts, logs, web pages and questions put in our output cannot drive the user's terminal.

C0 and C1 control characters other than newline and tab, ANSI/VT escape sequences (CSI, OSC such as title setting
and hyperlinks, DCS/PM/APC strings), bidirectional marks and overrides (text that displays in another order than it
reads), line/paragraph separators and lone surrogates (unencodable) are shown escaped (`\\xNN`, `\\uNNNN`);
escape sequences, zero-width and tag characters (text a reader cannot see) are removed.
Applied, with redaction, at every output boundary through `orchestrator.redact.scrub_*`.
"""

from __future__ import annotations

import re

# ESC-introduced sequences (7-bit) and their 8-bit C1 forms (CSI 0x9b, OSC 0x9d, DCS 0x90, SOS 0x98, PM 0x9e, APC 0x9f)
_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"                     # CSI ... final
    r"|\x9b[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])"      # OSC, DCS, SOS, PM, APC: a string up to ST or BEL
    r"[^\x07\x1b\x9c]{0,4096}(?:\x07|\x1b\\|\x9c)"     # (unterminated: only its introducer goes, below)
    r"|\x1b[ -/]*[0-~]?"                            # other escapes (ESC c resets the terminal, ESC ( B charsets)
)
# Shown escaped: C0/C1 controls (not \n, \t); bidirectional marks, embeddings, overrides and isolates (LRM, RLM,
# ALM U+061C, U+202A-E, U+2066-9: text that displays in another order than it reads, "Trojan Source", CVE-2021-42574);
# line and paragraph separators U+2028/9 (line breaks that terminals and `splitlines` honour where our one-line
# checks do not); lone surrogates (unencodable) become U+FFFD.
_ESCAPED = r"\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff"
# Removed: characters that only hide text from a reader: zero-width space/joiners, word joiner and invisible
# operators (U+200B-D, U+2060-4), BOM/ZWNBSP U+FEFF, soft hyphen U+00AD, Mongolian vowel separator U+180E, and the
# Unicode tag characters U+E0000-E007F, an invisible copy of ASCII that models read ("ASCII smuggling").
_HIDDEN_CHARS = r"\xad\u180e\u200b-\u200d\u2060-\u2064\ufeff\U000e0000-\U000e007f"
_CONTROL = re.compile(f"[{_ESCAPED}]")
_HIDDEN = re.compile(f"[{_HIDDEN_CHARS}]")
_ANY = re.compile(f"[{_ESCAPED}{_HIDDEN_CHARS}]")


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    if "\ud800" <= ch <= "\udfff":
        return "\ufffd"
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def sanitize(text: str) -> str:
    """text without terminal control: escape sequences removed, other controls (not \\n, \\t) shown escaped."""
    if not _ANY.search(text):
        return text
    return _CONTROL.sub(_escape, _HIDDEN.sub("", _SEQUENCE.sub("", text)))


# Characters a reader (or a model) takes for `<`, `[`, `-` or a Latin letter, folded by `fold` so that a fence's tags
# and markers cannot be imitated with them: the angle brackets and brackets of other scripts and blocks
# (‹ ⟨ 〈 〈 ❮ ˂ ᐸ ＜ ﹤, ［ 【 ⟦ 〔 ﹝); every dash and hyphen (the Unicode dash punctuation, the minus sign, the
# hyphen bullet: `</untrusted–data>` with an en dash); and the Cyrillic, Greek and Armenian letters drawn like the
# Latin ones (`</untrustеd-data>` with a Cyrillic е), after Unicode's confusables list (UTS #39, confusables.txt).
_DASHES = ("\u058a\u05be\u1400\u1806\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\u2e17\u2e1a\u2e3a\u2e3b"
           "\u2e40\u301c\u3030\u30a0\ufe31\ufe32\ufe58\ufe63\uff0d\u02d7\u2796\U00010ead")
_LETTERS = {
    "a": "\u0430\u03b1\u0251\u0410\u0391", "b": "\u0412\u0392\u042c", "c": "\u0441\u03f2\u0421\u03f9\u217d",
    "d": "\u0501\u217e", "e": "\u0435\u0415\u0395\u04bd", "h": "\u04bb\u041d\u0397", "i": "\u0456\u0406\u03b9\u0399\u0131\u04cf\u2170",
    "j": "\u0458\u0408", "k": "\u041a\u039a", "l": "\u04cf\u217c", "m": "\u041c\u039c\u217f",
    "n": "\u039d\u0578", "o": "\u043e\u03bf\u041e\u039f\u0585\u0d20", "p": "\u0440\u03c1\u0420\u03a1",
    "q": "\u051b", "r": "\u0433", "s": "\u0455\u0405", "t": "\u0422\u03a4\u03c4", "u": "\u03c5\u057d",
    "v": "\u03bd\u0475\u2174", "w": "\u051d", "x": "\u0445\u0425\u03a7\u2179", "y": "\u0443\u0423\u03a5\u04af",
    "z": "\u0396",
}
_LOOKALIKE = str.maketrans({c: "<" for c in "\u2039\u27e8\u3008\u2329\u276e\u02c2\u1438\uff1c\ufe64\u276c\u29fc"}
                           | {c: "[" for c in "\uff3b\u3010\u27e6\u3014\ufe5d\u2045\u298b"}
                           | {c: "-" for c in _DASHES}
                           | {c: latin for latin, alike in _LETTERS.items() for c in alike})


def fold(text: str) -> str:
    """`text` with the same length, each character replaced by what a reader takes it for: look-alike brackets as
    `<`/`[`, dashes as `-`, Cyrillic/Greek/Armenian look-alike letters as Latin ones, fullwidth and other
    compatibility forms by their NFKC letter (`ｕ` as `u`), lower case. For finding imitations of our own markers in
    untrusted text; the original is what gets shown."""
    import unicodedata

    out = []
    for ch in text.translate(_LOOKALIKE):
        if ch.isascii():
            out.append(ch.lower())
        else:
            n = unicodedata.normalize("NFKC", ch)
            low = n.lower() if len(n) == 1 else ch
            out.append(low if len(low) == 1 else ch)  # one character for one: offsets stay those of `text`
    return "".join(out)


def strip_hidden(text: str) -> str:
    """`text` without the characters that only hide text (zero-width, soft hyphen, tag characters)."""
    return _HIDDEN.sub("", text) if _HIDDEN.search(text) else text


class _Sanitized:
    """A renderable drawn as another is, its text sanitized (rich's own styles and cursor control are not text)."""

    def __init__(self, renderable):
        self.renderable = renderable

    def __rich_console__(self, console, options):
        from rich.segment import Segment

        for seg in console.render(self.renderable, options):
            if seg.control or not _ANY.search(seg.text):
                yield seg
            else:
                yield Segment(sanitize(seg.text), seg.style)


class _SanitizeHook:
    """A rich render hook (`Console.push_render_hook`): every renderable printed is drawn through `_Sanitized`."""

    def process_renderables(self, renderables):
        return [_Sanitized(r) for r in renderables]


def sanitized(console):
    """`console` (a rich Console) made unable to pass terminal control through: whatever a renderer prints on it (a
    table cell holding host text, a title), its text is sanitized after rendering; rich's own styles and cursor
    control are not text and still work on a terminal. Renderers still scrub what they draw (so that a table is laid
    out for the text it shows): this is the net under them."""
    console.push_render_hook(_SanitizeHook())
    return console
