"""Secret redaction applied to every transcript line before it is written (and to replay fingerprints)."""

from __future__ import annotations

import functools
import re

REDACTED = "[REDACTED]"

# Order matters: PEM blocks first (they span lines), then token shapes, then generic assignments.
_PATTERNS: list[tuple[str, re.Pattern[str], str]] = [
    (
        "pem-private-key",
        re.compile(
            r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY)-----.*?-----END \1-----|-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY)-----.*",
            re.S,
        ),
        "-----BEGIN PRIVATE KEY-----" + REDACTED + "-----END PRIVATE KEY-----",
    ),
    ("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"), "sk-ant-" + REDACTED),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}"), "sk-" + REDACTED),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{20,}"), "hf_" + REDACTED),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), "AKIA" + REDACTED),
    ("github-token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"), "gh_" + REDACTED),
    ("slack-token", re.compile(r"\bxox[bpase]-[A-Za-z0-9\-]{10,}"), "xox-" + REDACTED),
    ("bearer", re.compile(r"(?i)\b(Bearer)\s+[A-Za-z0-9._~+/\-]{8,}=*"), r"\1 " + REDACTED),
    ("url-credentials", re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@\"']+:[^/\s@\"']+@"), r"\1" + REDACTED + "@"),
    (
        "secret-assignment",
        re.compile(
            # not after "/": "/etc/passwd: ..." is a path, not an assignment
            # --api-key=..., API_KEY=..., {'api_key': '...'}, "password": "..."
            r"(?i)(?<![\w/-])(-{0,2}[A-Z0-9_-]*(?:[_-]KEY|[_-]TOKEN|[_-]SECRET|PASSWORD|PASSWD)|password|passwd|"
            r"api[_-]key|token|secret)"
            r"([\"']?\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s\"',;}]+)"
        ),
        r"\1\2" + REDACTED,
    ),
]


# Every pattern above needs one of these substrings; most strings have none and skip the substitutions.
_TRIGGER = re.compile(
    r"PRIVATE KEY|sk-|hf_|AKIA|ASIA|gh[pousr]_|github_pat_|xox[bpase]-|bearer|://|key|token|secret|passw",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=8192)
def redact(text: str) -> str:
    """Replace every secret shape in text with a marker; idempotent."""
    if not _TRIGGER.search(text):
        return text
    for _name, pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def pattern_names() -> list[str]:
    return [name for name, _, _ in _PATTERNS]


def redact_obj(obj):
    """Redact every string inside a JSON-like structure; returns the same object when nothing changed."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        changed = False
        out = {}
        for k, v in obj.items():
            r = redact_obj(v)
            changed |= r is not v
            out[k] = r
        return out if changed else obj
    if isinstance(obj, list):
        items = [redact_obj(v) for v in obj]
        return items if any(a is not b for a, b in zip(items, obj)) else obj
    return obj
