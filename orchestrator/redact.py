"""Secret redaction applied to every transcript line before it is written (and to replay fingerprints)."""

from __future__ import annotations

import functools
import hashlib
import sys
import threading
from collections import OrderedDict
import re
from typing import Any

REDACTED = "[REDACTED]"

# Order matters: key blocks first (they span lines), then token shapes, then generic assignments.
_KEY_BEGIN = r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
# Without its END line a key block is redacted to its plausible extent: armor headers (Proc-Type:, Version:), blank
# lines, base64 lines (a short last line only with its `=` padding), a PGP checksum line; not the rest of the output.
_KEY_BODY = r"(?:\r?\n(?:[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9+/]{1,15}={1,2}|[A-Za-z][A-Za-z-]*: [^\n]*|=[A-Za-z0-9+/]{4}|[ \t]*(?=\r?\n)))*"
_SECRET_NAMES = (
    r"(?:[_-]KEY|[_-]TOKEN|[_-]SECRET|PASSWORD|PASSWD|PASSPHRASE|APIKEY|[_-]PASS|[_-]PWD|[_-]AUTH|CREDENTIALS?)"
)
_STEMS = r"(?:pass|pwd|secret|token|key|credential|auth|psk)"
"""Where a name that holds a secret has one of these inside it (`secret_name` decides from the whole name)."""
class _Anchored:
    """A name-then-value pattern run only where a name can hold a secret: at the words around each `_STEMS` hit.

    `re.sub` with such a pattern tries every position of the text (a lazy name part before the stem), which cost
    ~0.3 s per 400 kB; this tries the few positions of the name that holds each stem, leftmost first, with the same
    result. Its work grows linearly with the text: a name ends where its word does and is followed by a separator,
    so a word whose end no separator follows (`tokens/s`, `token_token_..._token_`) is passed over whole, and a
    position where the pattern failed is not tried again for the word's next stem."""

    _STEM = re.compile(r"(?i)(?=[pstkca])" + _STEMS)  # the lookahead only makes the scan faster (0.8 s -> 0.4 s/18 MB)
    _NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
    _SEPARATOR = frozenset("\"'=:\x00")
    """What can follow a name in either pattern: a quote, `=`, `:`, a NUL, or whitespace (`str.isspace`)."""
    _DOT = re.compile(r"\.")

    def __init__(self, pattern: str, flags: int = 0):
        self.pattern = re.compile(pattern, flags)

    @classmethod
    def _in_word(cls, ch: str) -> bool:
        # what the patterns' name parts take (`[\w.\-]`; `[A-Z]` under IGNORECASE also takes the long s and the
        # Kelvin sign), which reaches beyond ASCII
        return ch in cls._NAME or (ch > "\x7f" and (ch.isalnum() or ch == "_"))

    def sub(self, repl: Any, text: str) -> str:
        out: list[str] = []
        pos = 0
        n = len(text)
        word_end = -1  # the end of the word of the last stem seen: its stems share a start, an end and its dots
        word_ok = False
        word_start = 0
        dots: list[int] = []
        next_dot = 0  # dots before this one were tried (or lie before every later stem's window)
        tried_starts: set[int] = set()
        for stem in self._STEM.finditer(text):
            at = stem.start()
            if at < pos:
                continue
            if at >= word_end:
                word_end = stem.end()
                while word_end < n and self._in_word(text[word_end]):
                    word_end += 1
                word_ok = word_end < n and (text[word_end] in self._SEPARATOR or text[word_end].isspace())
                if word_ok:
                    word_start = at
                    while word_start > 0 and self._in_word(text[word_start - 1]):
                        word_start -= 1
                    dots = [d.start() for d in self._DOT.finditer(text, word_start, word_end)]
                    next_dot = 0
            if not word_ok:
                continue
            # a name starts where the word does (at most 200 characters before the stem), or (secret-assignment)
            # right after a `.` inside it; a position where the pattern failed fails again for a later stem
            start = max(word_start, pos, at - 200)
            candidates = [] if start in tried_starts else [start]
            tried_starts.add(start)
            while next_dot < len(dots) and dots[next_dot] < at:
                if dots[next_dot] >= start:
                    candidates.append(dots[next_dot] + 1)
                next_dot += 1
            for s in candidates:
                m = self.pattern.match(text, s)
                if m is not None and m.end() > at:
                    out += [text[pos:m.start()], repl(m) if callable(repl) else m.expand(repl)]
                    pos = m.end()
                    break
        return text if not out else "".join(out) + text[pos:]


class _KeyBlocks:
    """Private key blocks, looked for only at each `-----BEGIN ... PRIVATE KEY-----`, the next END of its label
    found once per label: `re.sub` looked for an END from every BEGIN to the end of the text (224 kB of BEGIN lines
    took 16 s). A block runs to its END, or without one over its plausible extent (`_KEY_BODY`). The same matches
    as `re.sub` with `_KEY_BEGIN .*? END | _OPEN_KEY` would find."""

    _BEGIN = re.compile(r"(?=" + _KEY_BEGIN + r")")

    def __init__(self, open_block: str):
        self.open_block = re.compile(open_block)

    def sub(self, repl: str, text: str) -> str:
        out: list[str] = []
        pos = 0
        ends: dict[str, int] = {}  # label -> where its next END begins (-1: none after the last BEGIN looked at)
        for begin in self._BEGIN.finditer(text):
            at = begin.start()
            if at < pos:
                continue
            label = begin.group(1)
            head = at + len(f"-----BEGIN {label}-----")
            end = ends.get(label)
            if end is None or (end != -1 and end < head):
                end = ends[label] = text.find(f"-----END {label}-----", head)
            if end != -1:
                stop = end + len(f"-----END {label}-----")
            else:
                m = self.open_block.match(text, at)
                if m is None:
                    continue
                stop = m.end()
            out += [text[pos:at], repl]
            pos = stop
        return text if not out else "".join(out) + text[pos:]


class _AtSchemes:
    """URL credentials, looked for only before each `://`: `re.sub` tried the pattern at every letter of a word
    (`a.a.a...a://` took quadratic time) and looked for an `@` to the end of the word from every `://` in it.
    Whether the part after `://` can match is decided first (a word's end and last `@` looked up once per word);
    then the pattern runs from the first position of the scheme where it can begin. The same matches as `re.sub`."""

    # what `[a-z0-9+.\-]` takes under IGNORECASE: ASCII, and four letters whose case folds to ASCII ones
    _SCHEME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-\u017f\u0130\u0131\u212a")
    _PASSWORD_HEAD = re.compile(r"(?i)[^/\s:@\"']*:")
    _USER = re.compile(r"(?i)[^/\s:@\"'?#\x00&,<>\[\]]+@(?=[A-Za-z0-9\[])")
    _WORD_END = re.compile(r"[\s\"']")

    def __init__(self, pattern: str):
        self.pattern = re.compile(pattern)

    def sub(self, repl: str, text: str) -> str:
        out: list[str] = []
        pos = 0
        word = [-1, -1, -1]  # start, end and last `@` of the word the last lookup was in
        c = text.find("://")
        while c != -1:
            if self._can_follow(text, c + 3, word):
                start = c
                while start > pos and text[start - 1] in self._SCHEME:
                    start -= 1
                for p in range(start, c):
                    m = self.pattern.match(text, p)
                    if m is not None:
                        out += [text[pos:p], m.expand(repl)]
                        pos = m.end()
                        break
            c = text.find("://", max(c + 1, pos))
        return text if not out else "".join(out) + text[pos:]

    def _can_follow(self, text: str, at: int, word: list[int]) -> bool:
        """Whether the pattern's part after `://` matches at `at`: a user name and `@`, or a password and `@`."""
        if self._USER.match(text, at):
            return True
        head = self._PASSWORD_HEAD.match(text, at)
        if head is None:
            return False
        h = head.end()
        if not word[0] <= h < word[1]:
            w = self._WORD_END.search(text, h)
            word[0], word[1] = h, len(text) if w is None else w.start()
            word[2] = text.rfind("@", h, word[1])
        return word[2] >= h


class _CommandFlag:
    """`PROGRAM ... -p SECRET` on one line (mysql, sshpass), looked for without the quadratic cost of `re.sub`: its
    lazy gap ran from every occurrence of the program's name to the end of the line (`mysql ` x 20,000 on one line,
    120 kB, took 11 s). Each line's places where the flag and its value can begin are found once; the pattern then
    runs only from a name that has one after it on its line. The same matches as `re.sub` with the pattern."""

    MARGIN = 300
    """How far past a line's end the flag's tail may reach (a newline before `-p`, the value after up to 256 blanks)."""

    def __init__(self, pattern: str, name: str, flag: str, flags: int = 0):
        self.pattern = re.compile(pattern, flags)
        self.name = re.compile(name, flags)
        self.flag = re.compile(f"(?=(?:{flag}))", flags)

    def sub(self, repl: str, text: str) -> str:
        import bisect

        out: list[str] = []
        pos = 0
        line_end = -1
        heads: list[int] = []
        for w in self.name.finditer(text):
            at = w.start()
            if at < pos:
                continue
            if at > line_end:  # the first name on its line: where the flag can begin on this line, once
                line_start = text.rfind("\n", 0, at) + 1
                line_end = text.find("\n", at)
                line_end = len(text) if line_end == -1 else line_end
                heads = [h.start() for h in self.flag.finditer(text, line_start, min(len(text), line_end + self.MARGIN))
                         if h.start() <= line_end]
            i = bisect.bisect_left(heads, w.end())
            if i == len(heads):
                continue
            m = self.pattern.match(text, at)
            if m is not None:
                out += [text[pos:at], m.expand(repl)]
                pos = m.end()
        return text if not out else "".join(out) + text[pos:]


_PATTERNS: list[tuple[str, Any, Any]] = [
    (
        "pem-private-key",
        # (a key block this pattern already replaced is not one without its END)
        _KeyBlocks(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?!\[REDACTED\])" + _KEY_BODY),
        "-----BEGIN PRIVATE KEY-----" + REDACTED + "-----END PRIVATE KEY-----",
    ),
    ("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"), "sk-ant-" + REDACTED),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}"), "sk-" + REDACTED),
    ("stripe-key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}"), "sk_live_" + REDACTED),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{20,}"), "hf_" + REDACTED),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), "AKIA" + REDACTED),
    ("github-token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"), "gh_" + REDACTED),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"), "glpat-" + REDACTED),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), "npm_" + REDACTED),
    ("vault-token", re.compile(r"\bhv[sbr]\.[A-Za-z0-9_\-]{20,}"), "hvs." + REDACTED),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), "AIza" + REDACTED),
    ("slack-token", re.compile(r"\bxox[bpase]-[A-Za-z0-9\-]{10,}"), "xox-" + REDACTED),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{8,}"), "eyJ" + REDACTED),
    ("bearer", re.compile(r"(?i)\b(Bearer)\s+[A-Za-z0-9._~+/\-]{8,}=*"), r"\1 " + REDACTED),
    ("basic-auth", re.compile(r"(?i)\b(Basic)\s+[A-Za-z0-9+/]{8,}={0,2}"), r"\1 " + REDACTED),
    ("azure-account-key", re.compile(r"(?i)\b((?:AccountKey|SharedAccessKey|SharedAccessSignature)=)[^;\s\"']+"),
     r"\1" + REDACTED),
    # the password may itself hold `@`: the credentials end at the LAST `@` before the host
    # ... and the user may be empty: redis://:password@host:6379 (Redis has no user before 6.0's ACLs)
    # ... or the user name alone is the secret: a proxy or webhook URL carries its token there (http://TOKEN@proxy)
    ("url-credentials", _AtSchemes(r"(?i)\b([a-z][a-z0-9+.\-]*://)(?:[^/\s:@\"']*:[^\s\"']*@(?=[^\s@\"']*(?:[\s\"']|$))"
                                   r"|[^/\s:@\"'?#\x00&,<>\[\]]+@(?=[A-Za-z0-9\[]))"),
     r"\1" + REDACTED + "@"),
    # (a line `password = X` is an assignment, not netrc's `password X`: its value is not the `=`)
    ("netrc-password", re.compile(r"(?im)(\b(?:login|machine)\s+\S+\s+(?:login\s+\S+\s+)?password\s+|^\s*password\s+)"
                                  r"(?![=:](?:\s|$))\S+"),
     r"\1" + REDACTED),
    # hostname:port:database:username:password, as in ~/.pgpass (also quoted inside a log line)
    ("pgpass-line", re.compile(r"(?<![\w.:/\-])([A-Za-z0-9_.\-*]+:(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:)[^\s:]+(?=\s|$)"),
     r"\1" + REDACTED),
    ("cli-password-flag", re.compile(
        r"(?i)((?<![\w-])--(?:password|passwd|pass|token|api-key|apikey|secret|auth-token|access-token|passphrase)"
        r"(?:\s+|=))(?!-)(\"[^\"]*\"|'[^']*'|\S+)"), r"\1" + REDACTED),
    ("mysql-p-flag", _CommandFlag(r"(\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p)(?=\S)\S+",
                                  r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b", r"\s-p(?=\S)", re.I),
     r"\1" + REDACTED),
    # formats with a fixed shape (gitleaks' rules name each: https://github.com/gitleaks/gitleaks/tree/master/cmd/generate/config/rules)
    ("slack-webhook", re.compile(r"(?i)(hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_\-]{8,}"),
     r"\1" + REDACTED),
    ("sendgrid-key", re.compile(r"\bSG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{30,64}"), "SG." + REDACTED),
    ("telegram-bot-token", re.compile(r"(?<![\w:])\d{8,10}:AA[A-Za-z0-9_\-]{32,33}(?![\w-])"), REDACTED),
    ("twilio-key", re.compile(r"\b(?:AC|SK)[a-f0-9]{32}\b"), "SK" + REDACTED),
    ("age-secret-key", re.compile(r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b", re.I), "AGE-SECRET-KEY-" + REDACTED),
    ("databricks-token", re.compile(r"\bdapi[a-f0-9]{32}(?:-\d)?\b"), "dapi" + REDACTED),
    ("sshpass-p-flag", _CommandFlag(r"(\bsshpass\b[^\n]*?(?:\s|\x00)-p(?:\s|\x00){0,256})(?!-)[^\s\x00]+",
                                    r"\bsshpass\b", r"(?:\s|\x00)-p(?:\s|\x00){0,256}(?!-)[^\s\x00]"),
     r"\1" + REDACTED),
    # any flag or setting whose NAME says it holds a secret (--admin-token X, --db-password=X, client-key-data: X,
    # argv joined by NULs as /proc/PID/cmdline has it); `secret_name` decides, benign values (numbers, booleans,
    # paths) stay
    ("secret-named-value", _Anchored(
        r"(?i)(?<![\w/.\-])(?:(?P<flag>(?>--?(?=[a-z])[\w.\-]*?" + _STEMS + r"[\w.\-]*))(?P<fsep>[ \t]*=[ \t]*|[ \t]+(?=[^\s-])|\x00(?=[^\x00-]))"
        r"|(?P<name>(?>(?=[a-z_])[\w.\-]*?" + _STEMS + r"[\w.\-]*))(?P<sep>[\"']?[ \t]*[=:][ \t]*))"
        r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s\x00\"',;}]+)"), lambda m: _named(m)),
    (
        "secret-assignment",
        _Anchored(
            # not after "/": "/etc/passwd: ..." is a path, not an assignment
            # --api-key=..., API_KEY=..., {'api_key': '...'}, "password": "...", DB_PASS=..., "auth": "..."
            r"(?i)(?<![\w/-])(-{0,2}[A-Z0-9_-]*" + _SECRET_NAMES + r"|password|passwd|passphrase|pwd|credentials?|"
            r"api[_-]?key|token|secret|auth|identitytoken)"
            r"([\"']?\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s\"',;}]+)"
        ),
        lambda m: m.group(0) if _counted_tokens(m) else
        m.group(1) + m.group(2) + (m.group(3)[0] + REDACTED + m.group(3)[0] if m.group(3)[:1] in ("\"", "'")
                                   else REDACTED),
    ),
    # a bare AWS secret access key: 40 characters of base64 alphabet with upper, lower and digits, standing alone
    ("aws-secret-key", re.compile(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])"
                                  r"(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"), REDACTED),
    # a long random string of any provider (entropy: mixed case and digits in short runs, see `_random`)
    # (not from the `//` of `scheme://`: what follows it is a host or a user name, see url-credentials; `NAME=VALUE`
    # is two tokens whatever VALUE is, so that redacting VALUE does not make NAME a token on the next pass)
    ("high-entropy", re.compile(r"(?<![A-Za-z0-9+/_\-])(?!(?<=:)//)[A-Za-z0-9+/_\-]{24,}"
                                r"(?:={1,2}(?![A-Za-z0-9+/=_\-])|(?![A-Za-z0-9+/_\-]))"),
     lambda m: REDACTED if _random(m.group(0)) and not _in_url(m) and not _fingerprint(m) else m.group(0)),
    # a long hex string standing alone (an API token, a Twilio auth token), not a digest, a path part or a UUID
    ("long-hex", re.compile(r"(?<![\w./:@\-])(?:[a-f0-9]{32,}|[A-F0-9]{32,})(?![\w./\-])"),
     lambda m: m.group(0) if _hash_context(m) else REDACTED),
]


_COUNT = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d{1,5}")


def _counted_tokens(m: re.Match) -> bool:
    """`token = 52,973` is a count of a model's tokens (a diagnosis's "KV per token = 52,973 bytes"), not a secret: a
    name that is the bare word `token`, whose value is a plain number (thousands separators allowed) and continues
    as one: with thousands separators or a decimal point, or at most five digits (a longer bare number may be a PIN
    or a numeric token). A number under a password's or a secret's name stays redacted."""
    if m.group(1).strip("-").lower() != "token":
        return False
    rest = m.string[m.start(3):m.start(3) + 40]
    num = _COUNT.match(rest)
    return num is not None and not rest[num.end():num.end() + 1].isalnum()


# ---------------------------------------------------------------------------------------------------------------
# key-name heuristics and entropy: a secret is recognised by the name it is stored under, or by looking random

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SECRET_WORDS = frozenset({"password", "passwd", "pass", "pwd", "passphrase", "secret", "secrets", "token",
                           "credential", "credentials", "apikey", "psk", "auth", "authorization", "privatekey",
                           "oauth", "sas"})
_SECRET_SUFFIXES = ("password", "passwd", "secret", "apikey", "accesskey", "secretkey", "privatekey", "signingkey",
                    "masterkey", "authkey", "credential", "credentials", "authtoken", "accesstoken", "apitoken",
                    "bottoken", "refreshtoken", "sessiontoken", "idtoken", "bearertoken")
_KEY_QUALIFIERS = frozenset({"api", "access", "secret", "private", "client", "signing", "master", "auth", "encryption",
                             "session", "account", "shared", "admin", "license", "subscription", "app", "consumer",
                             "storage", "service", "deploy", "webhook", "x", "ssh", "gpg", "pgp", "decryption"})
_NOT_SECRET_TOKEN = frozenset({"bos", "eos", "pad", "unk", "sep", "cls", "mask", "start", "end", "special", "added",
                               "image", "video", "audio", "stop", "id", "ids", "type", "count", "limit", "len",
                               "length", "file", "path", "dir", "url", "endpoint", "uri", "env", "name", "implicit",
                               "latency", "throughput", "per", "time", "total", "first", "output", "input", "usage",
                               "rate", "budget", "max", "min", "num", "speed", "cost", "price"})


@functools.lru_cache(maxsize=4096)
def secret_name(name: str) -> bool:
    """Whether a flag, setting, environment variable or JSON key of this name holds a secret.

    The name's words (split at `-`, `_`, `.` and camelCase) decide: password, passwd, pass, pwd, secret, token,
    credential(s), passphrase, auth, psk, or `key` next to api/access/secret/private/client/...; not a tokenizer's
    `bos_token`, not `max_num_batched_tokens` (plural), not NCCL's `NCCL_IB_PKEY` or `StrictHostKeyChecking`."""
    words = [w.lower() for w in _WORDS.findall(name)]
    if not words:
        return False
    if any(w in ("token",) for w in words) and _NOT_SECRET_TOKEN.intersection(words):
        return False
    if any(w in _SECRET_WORDS or w.endswith(_SECRET_SUFFIXES) for w in words):
        return True
    return "key" in words and bool(_KEY_QUALIFIERS.intersection(words))


_BENIGN = re.compile(r"(?i)(?:-?\d{1,12}(?:\.\d+)?|[{\[].*|true|false|yes|no|on|off|none|null|nil|auto|default|required|"
                     r"optional|disabled?|enabled?|\*+|x+|<.*|\$\{?\w+\}?|[~.]?/\S*|\[REDACTED\])")


def benign_value(value: str) -> bool:
    """A value that is no secret whatever its name says: a number, a boolean, empty, a path, a placeholder."""
    v = value.strip().strip("\"'").strip()
    return not v or REDACTED in v or bool(_BENIGN.fullmatch(v))


def _named(m: re.Match[str]) -> str:
    name = m.group("flag") or m.group("name")
    value = m.group("value")
    if not secret_name(name.lstrip("-")) or benign_value(value):
        return m.group(0)
    q = value[0] if value[:1] in ("\"", "'") and len(value) > 1 and value[-1] == value[0] else ""
    return m.group(0)[: m.start("value") - m.start(0)] + q + REDACTED + q


_RUNS = re.compile(r"[A-Z]+|[a-z]+|[0-9]+|[^A-Za-z0-9]+")


def _random(token: str) -> bool:
    """Whether a long token looks random (a key) rather than named (a kernel, a model, a path, an identifier).

    20+ characters of upper and lower case letters and digits (12+ distinct) whose lowercase runs are short: a random
    base64 string switches case every ~2 characters, while a CamelCase, snake_case or mangled C++ name (`_Z...`) is
    made of word-long lowercase runs, and a name has a `-`, `_` or `.` every few characters where a URL-safe random
    token has one in ~30."""
    if token.startswith("_Z"):
        return False
    body = token.rstrip("=")
    piece = re.sub(r"[_\-.]", "", body)
    if len(piece) < 20 or len(set(piece)) < 12 or (len(body) - len(piece)) * 10 > len(body):
        return False
    runs = _RUNS.findall(piece)
    lower = [len(r) for r in runs if r.islower()]
    if not lower or not any(r.isupper() for r in runs) or not any(r.isdigit() for r in runs):
        return False
    if sum(lower) / len(lower) > 2.5 or len(piece) / len(runs) > 3.5:
        return False
    # a segment of a URL's path is an id (a YouTube channel, a short link), not a key: those that are keys (Slack,
    # Telegram) have patterns of their own, and `?token=` values have a name
    return True


_URL_PART_END = re.compile(r"[\s\"'<>()\[\]\x00&?,#]")
"""Where the part of a URL that holds ids ends: a query (`?sig=`, `&token=`), a fragment, the next argv element
(NUL in /proc/PID/cmdline), a list separator, a bracket or a quote."""


def _in_url(m: re.Match[str]) -> bool:
    """Whether the match is a segment of a URL's host or path (`https://host/channel/<id>`): the text before it,
    back to the last space, quote, NUL, `?`, `&`, `,` or bracket, holds `://`. A query value is no path segment."""
    before = m.string[max(0, m.start() - 512): m.start()].replace(REDACTED, "R")  # a marker is a word, not brackets
    return "://" in _URL_PART_END.split(before)[-1]


_FINGERPRINT_DIGITS = {"SHA1": 27, "SHA256": 43, "SHA384": 64, "SHA512": 86}
"""An OpenSSH key fingerprint is `SHA256:` and the digest in unpadded base64 (`ssh-keygen -l`, the host key a user
is asked to check): these many characters for each digest."""
_FINGERPRINT_HEAD = re.compile(r"(?<![A-Za-z0-9])(SHA1|SHA256|SHA384|SHA512):$")


def _fingerprint(m: re.Match[str]) -> bool:
    """Whether the match is a key fingerprint (`SHA256:uNiVzt...`, 43 characters): public, shown for a person to
    compare, never a secret."""
    head = _FINGERPRINT_HEAD.search(m.string, max(0, m.start() - 7), m.start())
    return head is not None and len(m.group(0)) == _FINGERPRINT_DIGITS[head.group(1)]


_HASH_WORDS = re.compile(r"(?i)(?:sha\d*|md5|digest|hash|commit|checksum|uuid|git|rev(?:ision)?|blake\w*|crc\w*|"
                         r"fingerprint|build|image|id|etag|cache|version)\W{0,8}$")


def _hash_context(m: re.Match[str]) -> bool:
    """A long hex run that is a digest, commit or id by what precedes it (`sha256:`, `commit `, `id=`)."""
    before = m.string[max(0, m.start() - 24): m.start()]
    return bool(_HASH_WORDS.search(before))


# Per pattern, what must appear (lowercase literals, or a cheap regex) before the pattern itself is worth running.
_GUARDS: dict[str, tuple[str, ...] | re.Pattern[str]] = {
    "pem-private-key": ("private key",), "anthropic-key": ("sk-ant-",), "openai-key": ("sk-",),
    "stripe-key": ("_live_", "_test_"), "huggingface-token": ("hf_",), "aws-access-key": ("akia", "asia"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), "gitlab-token": ("glpat-",),
    "npm-token": ("npm_",), "vault-token": ("hvs.", "hvb.", "hvr."), "google-api-key": ("aiza",),
    "slack-token": ("xox",), "jwt": ("eyj",), "bearer": ("bearer",), "basic-auth": ("basic",),
    "azure-account-key": ("accountkey", "sharedaccess"), "url-credentials": ("://",),
    "netrc-password": ("password",), "mysql-p-flag": ("mysql", "mariadb"), "cli-password-flag": ("--",),
    "pgpass-line": re.compile(r":(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:"),
    # every keyword the pattern's name part can end with, right before the `=`/`:` (password=, PASSWD:, DB_PASS=)
    "secret-assignment": ("key", "token", "secret", "pass", "pwd", "credential", "auth"),
    "aws-secret-key": re.compile(r"[A-Za-z0-9/+]{40}"),
    "slack-webhook": ("hooks.slack.com",), "sendgrid-key": ("sg.",), "twilio-key": re.compile(r"(?:AC|SK)[a-f0-9]{32}"),
    "telegram-bot-token": (":aa",), "age-secret-key": ("age-secret-key-",), "databricks-token": ("dapi",),
    "sshpass-p-flag": ("sshpass",),
    "secret-named-value": ("pass", "pwd", "secret", "token", "key", "credential", "auth", "psk"),
    "high-entropy": re.compile(r"[A-Za-z0-9+/_\-]{24}"),
    "long-hex": re.compile(r"[a-fA-F0-9]{32}"),
}


_LONG_RUN = re.compile(r"[A-Za-z0-9+/_\-]{24}")
_NEED_LONG_RUN = frozenset({"aws-secret-key", "high-entropy", "long-hex"})
_LITERAL_GUARDS = [(name, g) for name, g in _GUARDS.items() if isinstance(g, tuple)]
# A short text is scanned for every guard literal at once (one pass of a regex, 1.7 us, against 7 us for a `lit in
# low` per literal; a long text is faster the other way): at each position the longest literal that starts there is
# reported, and the literals inside it are taken as found too (those that start at the same position are its prefixes).
_ALL_LITERALS = sorted({lit for _, lits in _LITERAL_GUARDS for lit in lits}, key=len, reverse=True)
_LITERAL_SCAN = re.compile("(?=(" + "|".join(map(re.escape, _ALL_LITERALS)) + "))")
_GUARDED_BY = {lit: frozenset(name for name, lits in _LITERAL_GUARDS if any(sub in lit for sub in lits))
               for lit in _ALL_LITERALS}
"""A literal found -> the patterns whose guard it satisfies (its own, and those of the literals inside it)."""
SHORT_SCAN = 4096
_REGEX_GUARDS = [(name, g) for name, g in _GUARDS.items() if not isinstance(g, tuple)]
assert {n for n, _, _ in _PATTERNS} == set(_GUARDS), "every pattern needs a guard"


CACHED_CHARS = 2048
"""Strings up to this long are remembered (the same short strings recur in every event); longer ones are redacted
each time: a run's tool outputs are never kept."""
CACHE_BYTES = 4 * 1024 * 1024
"""What the remembered strings may occupy, keys and answers counted as Python holds them (a string of emoji takes four
bytes a character): least recently used first out. An entry-count bound alone kept 60-96 MB after a run (issue 23)."""


class _ByteLRU:
    """A least-recently-used map of str to str bounded by the bytes its strings occupy (sys.getsizeof) and what each
    entry costs beside them (ENTRY_BYTES)."""

    ENTRY_BYTES = 170
    """The map's slot and order link, the (value, size) pair and the size's int: measured 168 bytes an entry. Not
    counted, 300,000 short strings held 16.8 MB in a cache of 4 MiB."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.bytes = 0
        self._d: OrderedDict[str, tuple[str, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> str | None:
        with self._lock:
            hit = self._d.get(key)
            if hit is None:
                return None
            self._d.move_to_end(key)
            return hit[0]

    def put(self, key: str, value: str) -> None:
        size = self.ENTRY_BYTES + sys.getsizeof(key) + (0 if value is key else sys.getsizeof(value))
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._d.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._d[key] = (value, size)
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, (_, freed) = self._d.popitem(last=False)
                self.bytes -= freed

    def __len__(self) -> int:
        return len(self._d)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()
            self.bytes = 0


_CACHE = _ByteLRU(CACHE_BYTES)


class _CleanDigests:
    """Digests of long strings that redaction leaves as they are (what it returned, or a text with nothing to
    redact): a run redacts each tool output three or four times (the tool's result, its recorded event, the next
    model request's fingerprint and its recorded event): an 18.6 MB log with a secret on every line took 8.3 s to
    redact, and 27 ms the next time, by its BLAKE2b digest. Only 16-byte digests are kept, never a text; bounded in
    count."""

    def __init__(self, max_entries: int = 4096):
        self.max_entries = max_entries
        self._d: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def digest(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def known(self, digest: bytes) -> bool:
        with self._lock:
            if digest not in self._d:
                return False
            self._d.move_to_end(digest)
            return True

    def add(self, digest: bytes) -> None:
        with self._lock:
            self._d[digest] = None
            self._d.move_to_end(digest)
            while len(self._d) > self.max_entries:
                self._d.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._d.clear()


_CLEAN = _CleanDigests()


FIXED_POINT_PASSES = 4
"""At most this many passes of the patterns over one text. One pass is not always a fixed point: a replacement
changes the context in which another match was judged (a random token that swallowed `/HF` of `/HF_TOKEN=x` leaves
`]_TOKEN=x` for secret-assignment). Over 200,000 compositions of every secret format the second pass was the last
that changed anything, and the next one confirms it; a text that is still changing after the last pass is returned
as it is then, and not remembered."""


def _fixed_point(text: str) -> tuple[str, bool]:
    """`text` redacted until a pass changes nothing (at most FIXED_POINT_PASSES passes); whether that was reached."""
    for _ in range(FIXED_POINT_PASSES):
        out = _redact(text)
        if out is text or out == text:
            return text, True
        text = out
    return text, False


def redact(text: str) -> str:
    """Replace every secret shape in text with a marker; idempotent: `redact(redact(x)) == redact(x)`.

    Most strings hold no secret-shaped substring: cheap literal checks (and cheap regexes) decide which patterns
    run at all, so redacting every event of a run costs little (bench/fanout.py). A long text is remembered only by
    the digest of a fixed point (a text that a pass leaves as it is), so that a text known clean is never one that
    a further pass would change."""
    if len(text) > CACHED_CHARS:
        digest = _CLEAN.digest(text)
        if _CLEAN.known(digest):
            return text
        out, fixed = _fixed_point(text)
        if fixed:
            _CLEAN.add(digest if out is text else _CLEAN.digest(out))
        return out
    done = _CACHE.get(text)
    if done is None:
        done, fixed = _fixed_point(text)
        if fixed:
            _CACHE.put(text, done)
    return done


def _redact(text: str) -> str:
    low = text.lower()
    if len(low) <= SHORT_SCAN:
        hits: set[str] = set()
        for found in {m.group(1) for m in _LITERAL_SCAN.finditer(low)}:
            hits |= _GUARDED_BY[found]
    else:
        hits = {name for name, lits in _LITERAL_GUARDS if any(lit in low for lit in lits)}
    long_run = None
    for name, guard in _REGEX_GUARDS:
        if name == "pgpass-line" and ":" not in text:
            continue
        if name in _NEED_LONG_RUN:  # one scan for a 24-character run decides whether these three can match at all
            long_run = _LONG_RUN.search(text) is not None if long_run is None else long_run
            if not long_run:
                continue
        if guard.search(text):
            hits.add(name)
    if not hits:
        return text
    for name, pattern, repl in _PATTERNS:
        if name in hits:
            text = pattern.sub(repl, text)
    return text


def pattern_names() -> list[str]:
    return [name for name, _, _ in _PATTERNS]


_STEM_IN = re.compile(r"(?i)" + _STEMS)
_HEX_FULL = re.compile(r"[a-f0-9]{32,}|[A-F0-9]{32,}")
_PLAIN = frozenset({int, float, bool, type(None)})
"""Values with no string inside: passed over without a call (a fleet's events hold tens of thousands)."""


def redact_obj(obj: Any) -> Any:
    """Redact every string inside a JSON-like structure; returns the same object when nothing changed (a dict or
    list is copied only when something in it was redacted).

    Names count too: a string under a key that names a secret (`{"VLLM_API_KEY": ...}`, `client-key-data`) and the
    element after a secret-named flag in a list (`["--api-key", X]`, an argv) are redacted unless benign."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, (dict, list)):
        is_dict = isinstance(obj, dict)
        out: Any = None
        prev: Any = None
        items: Any = obj.items() if isinstance(obj, dict) else enumerate(obj)
        for k, v in items:
            named = k if is_dict else (prev if isinstance(prev, str) and prev.startswith("-") and "=" not in prev
                                       else None)
            prev = v
            if isinstance(v, str) and isinstance(named, str) and _STEM_IN.search(named) \
                    and secret_name(named.lstrip("-")) and not benign_value(v):
                r: Any = REDACTED
            elif is_dict and isinstance(v, str) and len(v) >= 32 and isinstance(k, str) and _HEX_FULL.fullmatch(v) \
                    and _HASH_WORDS.search(k):
                r = v  # a run id, a digest, a commit under a key that says so (a bare long hex is redacted)
            else:
                r = v if type(v) in _PLAIN else redact_obj(v)
            if r is not v:
                if out is None:
                    out = dict(obj) if is_dict else list(obj)
                out[k] = r
        return obj if out is None else out
    return obj


def scrub_text(text: str) -> str:
    """What may be printed or written for a person: secrets redacted, terminal control removed."""
    from orchestrator.sanitize import sanitize

    return sanitize(redact(text))


RUN_ID = re.compile(r"[0-9a-f]{32}")
"""A run id as `investigate` makes it (uuid4, hex): not a secret, and how a reader joins `show --json` to its
transcript. Let through only under a `run_id` key or field; a 32-hex string anywhere else is redacted as before."""


def _is_run_id(key: object, value: str) -> bool:
    return key == "run_id" and RUN_ID.fullmatch(value) is not None


def scrub_obj(obj):
    """scrub_text over every string (and key) of a JSON-like structure (a run id under `run_id` is kept)."""
    if isinstance(obj, str):
        return scrub_text(obj)
    if isinstance(obj, dict):
        return {scrub_text(k) if isinstance(k, str) else k: v if isinstance(v, str) and _is_run_id(k, v)
                else scrub_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub_obj(v) for v in obj]
    return obj



def scrub_model(model: Any) -> Any:
    """A pydantic model (or dataclass) fit to print: every string in it, and every string key, scrubbed; the same
    object when nothing changed, else a copy sharing what did not.

    Walked in place rather than dumped to JSON and validated again: a timeline of 100,000 agents was copied twice
    (the dump and its scrubbed copy) to find the few strings that change; each distinct string is scrubbed once."""
    import dataclasses

    from pydantic import BaseModel

    memo: dict[str, str | None] = {}  # a string -> what it is scrubbed to, None when that is itself
    field_names: dict[type, tuple[str, ...]] = {}

    def walk(v: Any) -> Any:
        kind = type(v)
        if kind is str:
            if v in memo:
                done = memo[v]
            else:
                done = scrub_text(v)
                done = memo[v] = None if done == v else done
            return v if done is None else done
        if kind in _PLAIN or isinstance(v, str):  # (a str enum is ours: its values are constants)
            return v
        if kind is list or kind is tuple:
            items = [walk(x) for x in v]
            return v if all(a is b for a, b in zip(items, v)) else kind(items)
        if kind is dict:
            pairs = [(walk(k), field(k, x)) for k, x in v.items()]
            return v if all(k is k0 and x is x0 for (k, x), (k0, x0) in zip(pairs, v.items())) else dict(pairs)
        if isinstance(v, BaseModel):
            changes = {k: new for k, old in v.__dict__.items() if (new := field(k, old)) is not old}
            return v.model_copy(update=changes) if changes else v
        names = field_names.get(kind)
        if names is None:
            names = field_names[kind] = (tuple(f.name for f in dataclasses.fields(v))
                                         if dataclasses.is_dataclass(v) and not isinstance(v, type) else ())
        if names:
            changes = {k: new for k in names if (new := field(k, old := getattr(v, k))) is not old}
            return dataclasses.replace(v, **changes) if changes else v
        return v

    def field(name: str, v: Any) -> Any:
        if type(v) is str and _is_run_id(name, v):
            return v  # (hex digits only: nothing to sanitize either)
        return walk(v)

    return walk(model)
