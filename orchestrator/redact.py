"""Secret redaction applied to every transcript line before it is written (and to replay fingerprints)."""

from __future__ import annotations

import functools
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
_PATTERNS: list[tuple[str, re.Pattern[str], Any]] = [
    (
        "pem-private-key",
        re.compile(_KEY_BEGIN + r".*?-----END \1-----|-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----" + _KEY_BODY,
                   re.S),
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
    ("url-credentials", re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@\"']+:[^\s\"']*@(?=[^\s@\"']*(?:[\s\"']|$))"),
     r"\1" + REDACTED + "@"),
    ("netrc-password", re.compile(r"(?im)(\b(?:login|machine)\s+\S+\s+(?:login\s+\S+\s+)?password\s+|^\s*password\s+)\S+"),
     r"\1" + REDACTED),
    # hostname:port:database:username:password, as in ~/.pgpass (also quoted inside a log line)
    ("pgpass-line", re.compile(r"(?<![\w.:/\-])([A-Za-z0-9_.\-*]+:(?:\d{1,5}|\*):[^:\s]+:[^:\s]+:)[^\s:]+(?=\s|$)"),
     r"\1" + REDACTED),
    ("cli-password-flag", re.compile(
        r"(?i)((?<![\w-])--(?:password|passwd|pass|token|api-key|apikey|secret|auth-token|access-token|passphrase)"
        r"(?:\s+|=))(?!-)(\"[^\"]*\"|'[^']*'|\S+)"), r"\1" + REDACTED),
    ("mysql-p-flag", re.compile(r"(?i)(\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p)(?=\S)\S+"), r"\1" + REDACTED),
    (
        "secret-assignment",
        re.compile(
            # not after "/": "/etc/passwd: ..." is a path, not an assignment
            # --api-key=..., API_KEY=..., {'api_key': '...'}, "password": "...", DB_PASS=..., "auth": "..."
            r"(?i)(?<![\w/-])(-{0,2}[A-Z0-9_-]*" + _SECRET_NAMES + r"|password|passwd|passphrase|pwd|credentials?|"
            r"api[_-]?key|token|secret|auth|identitytoken)"
            r"([\"']?\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s\"',;}]+)"
        ),
        lambda m: m.group(1) + m.group(2) + (m.group(3)[0] + REDACTED + m.group(3)[0]
                                             if m.group(3)[:1] in ("\"", "'") else REDACTED),
    ),
    # a bare AWS secret access key: 40 characters of base64 alphabet with upper, lower and digits, standing alone
    ("aws-secret-key", re.compile(r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])"
                                  r"(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"), REDACTED),
]


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
    "secret-assignment": re.compile(
        r"(?i)(?:key|token|secret|password|passwd|passphrase|pwd|credentials?|auth|_pass)[\"']?\s*[=:]"),
    "aws-secret-key": re.compile(r"[A-Za-z0-9/+]{40}"),
}


_LITERAL_GUARDS = [(name, g) for name, g in _GUARDS.items() if isinstance(g, tuple)]
_REGEX_GUARDS = [(name, g) for name, g in _GUARDS.items() if not isinstance(g, tuple)]
assert {n for n, _, _ in _PATTERNS} == set(_GUARDS), "every pattern needs a guard"


@functools.lru_cache(maxsize=8192)
def redact(text: str) -> str:
    """Replace every secret shape in text with a marker; idempotent.

    Most strings hold no secret-shaped substring: cheap literal checks (and two cheap regexes) decide which patterns
    run at all, so redacting every event of a run costs little (bench/fanout.py)."""
    low = text.lower()
    hits = {name for name, lits in _LITERAL_GUARDS if any(lit in low for lit in lits)}
    for name, guard in _REGEX_GUARDS:
        if name == "pgpass-line" and ":" not in text:
            continue
        if name == "secret-assignment" and "=" not in text and ":" not in text:
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


_PLAIN = frozenset({int, float, bool, type(None)})
"""Values with no string inside: passed over without a call (a fleet's events hold tens of thousands)."""


def redact_obj(obj):
    """Redact every string inside a JSON-like structure; returns the same object when nothing changed (a dict or
    list is copied only when something in it was redacted)."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, (dict, list)):
        is_dict = isinstance(obj, dict)
        out = None
        for k, v in obj.items() if is_dict else enumerate(obj):
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


def scrub_obj(obj):
    """scrub_text over every string (and key) of a JSON-like structure."""
    if isinstance(obj, str):
        return scrub_text(obj)
    if isinstance(obj, dict):
        return {scrub_text(k) if isinstance(k, str) else k: scrub_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub_obj(v) for v in obj]
    return obj


def scrub_model(model):
    """A pydantic model fit to print: every string scrubbed (the same object when nothing changed)."""
    dumped = model.model_dump(mode="json")
    clean = scrub_obj(dumped)
    return model if clean == dumped else type(model).model_validate(clean)
