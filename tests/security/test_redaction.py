"""Item 4 of issue 15: every listed secret format is redacted, from one place, everywhere it could leave the run."""

from __future__ import annotations

import pytest

from orchestrator.redact import pattern_names, redact, redact_obj
from security_corpus import SAMPLES  # noqa: E402  (tests/security is on sys.path for its own modules)


@pytest.mark.parametrize("name,text,secret", SAMPLES, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(SAMPLES)])
def test_each_pattern_redacts_its_format(name, text, secret):
    assert name in pattern_names()
    out = redact(text)
    assert secret not in out, out
    assert "[REDACTED]" in out
    assert redact(out) == out  # idempotent


def test_every_pattern_has_a_planted_sample():
    assert set(pattern_names()) <= {n for n, _, _ in SAMPLES}


@pytest.mark.parametrize("text", [
    "sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709 ok", "input_tokens: 5, output_tokens: 7", "/etc/passwd: 12 lines",
    "GPU 0: NVIDIA H200 (UUID: GPU-5c1a3f2e-1b2c-4d5e-8f90-a1b2c3d4e5f6)", "docker run -p8000:8000 img",
    "https://example.com/path?x=1", "ssh -p 2222 host", "the key point is bandwidth", "nvidia-smi -q -d CLOCK",
])
def test_ordinary_text_is_left_alone(text):
    assert redact(text) == text


def test_a_key_block_without_its_end_redacts_only_its_plausible_extent():
    text = ("boot\n-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,ABC\n\n"
            "MIIEpAIBAAKCAQEA0truncatedKeyMaterialLine1xxxxxxxxxxxxxxxxxxxxxxxxxxxx\nAbCdEfGh12345678==\n"
            "2026-11-30 12:00:00 INFO server ready on :8000\nnext line stays\n")
    out = redact(text)
    assert "truncatedKeyMaterial" not in out and "AbCdEfGh12345678" not in out
    assert out.startswith("boot\n") and "INFO server ready on :8000\nnext line stays\n" in out


def test_json_structures_keep_their_shape():
    obj = {"env": {"DB_PASS": "x", "line": "DB_PASS=hunter2secret"}, "n": 1}
    out = redact_obj(obj)
    assert out["n"] == 1 and "hunter2secret" not in out["env"]["line"]


# ---------------------------------------------------------------------------------------------------------------
# Redaction is a fixed point: what it returns, redacted again, is the same text. A long text is then remembered as
# clean by its digest, so a pass that would still change it must never be skipped.

_SEPARATORS = [" ", "\x00", "&", "?", ",", "[", "]", "/", "=", ":", ";", "@", "#", "\n", "\t", "'", '"', "|", ""]
_TEMPLATES = [
    "https://{a}@hooks.internal/v1/push?sig={b}",               # a token as the user name, a signature in the query
    "git\x00clone\x00https://{a}@git.internal/x.git\x00--seed\x00{b}",  # /proc/PID/cmdline: argv joined by NULs
    "http://{a}@proxy:3128 {b}",
    "https://api.internal/v1?a={a}&b={b}&c={c}",                # an &-joined query string
    "url={a}://{b}@{c}",
    "{a}{s}{b}", "{a}{s}{b}{s}{c}", "{a}{b}{c}",                 # adjacent tokens
    "{a}={b}={c}", "{a}/{b}/{c}",
    "[{a}]({b})", '{{"{a}": "{b}"}}',
]
_NAMES = ["HF_TOKEN=", "--api-key ", "--api-key=", "sig=", "password: ", "Bearer ", "AccountKey=", "/", "-----"]


def _token(r) -> str:
    from security_corpus import SAMPLES

    k = r.random()
    if k < 0.3:
        return r.choice(SAMPLES)[2]  # a secret alone
    if k < 0.55:
        return r.choice(SAMPLES)[1]  # a secret in its line
    if k < 0.7:
        return r.choice(_NAMES) + _token(r)
    alphabet = r.choice(["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
                         "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                         "0123456789abcdef", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"])
    return "".join(r.choice(alphabet) for _ in range(r.randint(16, 48))) + "=" * r.randint(0, 1)


def compositions(seed: int, n: int):
    """`n` texts composed from the secret formats (tests/security/security_corpus.py), random tokens and names,
    joined by the separators where one pass of the patterns judges a match in a context its neighbour's replacement
    changes; the same texts for the same seed."""
    import random

    r = random.Random(seed)
    for _ in range(n):
        if r.random() < 0.5:
            yield r.choice(_TEMPLATES).format(a=_token(r), b=_token(r), c=_token(r), s=r.choice(_SEPARATORS))
        else:
            parts = [_token(r) for _ in range(r.randint(2, 4))]
            yield "".join(p + r.choice(_SEPARATORS) for p in parts)


def test_redaction_is_a_fixed_point_over_compositions_of_every_secret_format():
    """One pass of the patterns is not a fixed point (`https://TOKEN@hooks.internal/v1/push?sig=SECRET`, argv joined
    by NULs, `&`-joined queries, adjacent tokens): redact() passes again until nothing changes."""
    moved = []
    for text in compositions(seed=38, n=4000):
        once = redact(text)
        if redact(once) != once:
            moved.append((text, once, redact(once)))
    assert not moved, f"{len(moved)} of 4000 change on a second redaction, e.g. {moved[:3]!r}"


@pytest.mark.parametrize("text,kept", [
    ("https://Tok3nAbCdEf0123456789xyZ@hooks.internal/v1/push?sig=Q8KCHxYk7953Lx7KlyfHoSMR13IuWNiIO",
     "https://[REDACTED]@hooks.internal/v1/push?sig=[REDACTED]"),
    ("git\x00clone\x00https://Tok3nAbCdEf0123456789xyZ@git.internal/x.git\x00--seed\x00Q8KCHxYk7953Lx7KlyfHoSMR13IuWNiIO",
     "git\x00clone\x00https://[REDACTED]@git.internal/x.git\x00--seed\x00[REDACTED]"),
    ("https://h/x?a=Q8KCHxYk7953Lx7KlyfHoSMR13IuWNiIO&b=R9KCHxYk7953Lx7KlyfHoSMR13IuWNiIO,S7KCHxYk7953Lx7KlyfHoSMR13IuW",
     "https://h/x?a=[REDACTED]&b=[REDACTED],[REDACTED]"),
    ("HTTPS_PROXY=http://Tok3nAbCdEf0123456789xyZ@proxy:3128", "HTTPS_PROXY=http://[REDACTED]@proxy:3128"),
    ("HTTPS_PROXY=http://t0k@proxy:3128", "HTTPS_PROXY=http://[REDACTED]@proxy:3128"),  # any user name: a URL's is a secret
    # a segment of a URL's path is an id, not a key
    ("https://www.youtube.com/channel/UCq8Xz2LmN4vB7kR1tY9wE3uI6o", None),
    ("see https://example.com/@alice and alice@example.com", None),
])
def test_urls_keep_their_path_ids_and_lose_their_user_names_and_query_tokens(text, kept):
    assert redact(text) == (text if kept is None else kept)


# Host text can be shaped against the patterns: each of these took time growing with the square (or cube) of its
# length (`token_` x 8,000 = 48 kB: 403 s; `a.` x 8,000 before `://`: 1 s and x4 per doubling; 224 kB of BEGIN lines:
# 16 s; `mysql ` x 20,000 on one line: 11 s). At 128 kB a quadratic shape takes tens of seconds, a linear one a few tens of milliseconds.
HOSTILE_SHAPES = {
    "a scheme of many dots": lambda n: "a." * (n // 2) + "a://x",
    "one long name of stems": lambda n: "token_" * (n // 6),
    "one long name of stems and an =": lambda n: "token_" * (n // 6) + "= x",
    "stems between dots, then =": lambda n: "token." * (n // 6) + "x= ",
    "flags run together": lambda n: "--x-token" * (n // 9),
    "key headers without an end": lambda n: "-----BEGIN PRIVATE KEY-----\n" * (n // 28),
    "schemes without an @": lambda n: "a://:" * (n // 5),
    "a colon then no @ in one word": lambda n: "http://:" + "a://b" * (n // 5),
    "pgpass-like": lambda n: "a:1:" * (n // 4),
    "assignments": lambda n: "a_key:" * (n // 6),
    "base64 runs": lambda n: ("A" * 23 + "/") * (n // 24),
    "a program's name many times on a line": lambda n: "mysql " * (n // 6) + "sshpass " * (n // 8),
}


@pytest.mark.parametrize("shape", sorted(HOSTILE_SHAPES))
def test_redaction_time_grows_linearly_with_hostile_text(shape):
    import time

    text = HOSTILE_SHAPES[shape](128_000)
    t = time.perf_counter()
    redact(text + " ")  # (a new string: not answered from the digest of an earlier run)
    took = time.perf_counter() - t
    assert took < 2.0, f"{shape}: {took:.2f} s for {len(text) // 1000} kB"


def test_the_linear_matchers_find_what_the_plain_patterns_find():
    """The patterns run at anchors (stems of secret names, `://`, BEGIN lines) to stay linear; over compositions of
    every format and fragments at the anchors' edges, each finds the same matches as `re.sub` with its pattern."""
    import random
    import re

    from orchestrator import redact as redact_mod

    patterns = {name: (p, repl) for name, p, repl in redact_mod._PATTERNS}
    plain = {
        "pem-private-key": re.compile(redact_mod._KEY_BEGIN + r".*?-----END \1-----|"
                                      + patterns["pem-private-key"][0].open_block.pattern, re.S),
        "url-credentials": patterns["url-credentials"][0].pattern,
        # the atomic name groups only stop backtracking that cannot succeed
        "secret-named-value": re.compile(patterns["secret-named-value"][0].pattern.pattern.replace("(?>", "(?:")),
        "secret-assignment": patterns["secret-assignment"][0].pattern,
        "mysql-p-flag": patterns["mysql-p-flag"][0].pattern,
        "sshpass-p-flag": patterns["sshpass-p-flag"][0].pattern,
    }
    edges = ["-----BEGIN RSA PRIVATE KEY-----\nAAAAAAAAAAAAAAAAAAAAAAAA\n", "-----END RSA PRIVATE KEY-----",
             "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----", "a.b+c-d://", "\u017f://", "\u212a://",
             "1a://u:p@h", "x_http://u@h", "://", "http://a:b@c@d e@f", "u@\u017fx", "x\u00e9_token=1", "Ftoken.x=2",
             "--my-token x", "a.b.password: 3", "tokens/s", "PASS", "\x00--api-key\x00v", "'", '"', "@", ":", " ",
             "mysql", "MariaDB -u x", " -p", "-pX", " -p -", "\n-pY", "sshpass", "\x00-p\x00", "-p\n\n z"]
    r = random.Random(7)
    texts = list(compositions(seed=7, n=1500))
    for i in range(1500):
        parts = texts[i:i + r.randint(0, 2)] + [r.choice(edges) for _ in range(r.randint(1, 6))]
        r.shuffle(parts)
        text = "".join(p + r.choice(["", " ", "\n", ".", "@", ":"]) for p in parts)
        for name, pattern in plain.items():
            anchored, repl = patterns[name]
            assert anchored.sub(repl, text) == pattern.sub(repl, text), (name, text)


def test_a_short_text_finds_the_same_guards_in_one_scan():
    """Short texts look for every guard literal in one regex pass; the patterns that run are those `lit in text`
    per literal would run."""
    from orchestrator import redact as redact_mod

    for text in [*compositions(seed=11, n=3000), "sk-ant-x", "SK-ANT-", "hvs.hvb.", "github_pat_ghp_", "password"]:
        low = text.lower()
        one_scan: set[str] = set()
        for found in {m.group(1) for m in redact_mod._LITERAL_SCAN.finditer(low)}:
            one_scan |= redact_mod._GUARDED_BY[found]
        assert one_scan == {name for name, lits in redact_mod._LITERAL_GUARDS if any(lit in low for lit in lits)}


@pytest.mark.parametrize("fingerprint", [
    "SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s",           # ssh-keygen -l, ed25519
    "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU",           # with + and /
    "SHA1:Zm9vYmFyQmF6UXV4MTIzNDU2Nzg",
    "SHA512:" + "q8Xz2LmN4vB7kR1tY9wE3uI6oP0aSdFgHj" * 2 + "q8Xz2LmN4vB7kR1tY9",
])
def test_a_host_key_fingerprint_shown_for_the_user_to_check_is_kept(fingerprint):
    """A fingerprint is public: the user compares it before trusting a host (NEWCOMER #7)."""
    line = f"host key for [127.0.0.1]:2222 is not known (ssh-ed25519 {fingerprint}); check it and add it"
    assert redact(line) == line


@pytest.mark.parametrize("text", [
    "key q8Xz2LmN4vB7kR1tY9wE3uI6oP0aSdFgHjKlZxCvBnM ok",                      # the same shape with no SHA256:
    "SHA256:q8Xz2LmN4vB7kR1tY9wE3uI6oP0aSdFgHjKlZxCvBnMq ok",                # 44 characters: not a SHA256 digest
    "XSHA256:q8Xz2LmN4vB7kR1tY9wE3uI6oP0aSdFgHjKlZxCvBnM ok",                # not the word SHA256
])
def test_only_a_fingerprint_of_its_digest_length_is_let_through(text):
    assert "[REDACTED]" in redact(text)


def test_the_run_id_is_shown_but_a_32_hex_secret_elsewhere_is_not():
    """The run id is not a secret (NEWCOMER #14): kept under a `run_id` key or field; the same digits elsewhere are
    redacted as any long hex."""
    from orchestrator.redact import scrub_model, scrub_obj
    from orchestrator.render.timeline import AgentSpan, Timeline

    rid = "0749061bf917490ea75e4bffdc1cc196"
    out = scrub_model(Timeline(run_id=rid, question=f"token {rid}", agents=[AgentSpan(agent_id="lead", error=rid)]))
    assert out.run_id == rid and rid not in out.question and rid not in out.agents[0].error
    assert scrub_obj({"run_id": rid, "token": rid, "list": [rid]}) == {"run_id": rid, "token": "[REDACTED]",
                                                                          "list": ["[REDACTED]"]}
    assert scrub_obj({"run_id": "Q8KCHxYk7953Lx7KlyfHoSMR13IuWNiIO"})["run_id"] == "[REDACTED]"  # not a run id's form


def test_show_prints_the_run_id_in_text_and_json(tmp_path):
    import json
    from pathlib import Path

    from support.cli import investigate

    seed = Path(__file__).resolve().parents[2] / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl"
    rid = json.loads(seed.read_text().splitlines()[0])["run_id"]
    text = investigate("show", seed, tmp_path=tmp_path)
    assert text.returncode == 0 and text.stdout.splitlines()[0].startswith(f"run {rid} "), text.stdout[:200]
    as_json = investigate("show", seed, "--json", tmp_path=tmp_path)
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["run_id"] == rid


def test_a_count_of_tokens_is_not_a_token() -> None:
    """A diagnosis's "KV per token = 52,973 bytes" keeps its number (it came out as "[REDACTED],973"); a value under
    the name `token` that is not a plain count, and any number under a password's name, stay redacted."""
    from orchestrator.redact import redact

    assert redact("KV cache per token = 52,973 bytes") == "KV cache per token = 52,973 bytes"
    assert redact("decode time per token: 1.5 ms") == "decode time per token: 1.5 ms"
    assert redact("per token = 4096 bytes") == "per token = 4096 bytes"
    assert "123456789" not in redact("token=123456789")
    assert "ab12cd34ef" not in redact("token=ab12cd34ef")
    assert "123456" not in redact("password=123456")
    assert "52,973" not in redact("password = 52,973")


def test_a_password_line_with_spaces_around_the_equals_sign_is_redacted() -> None:
    """`password = X` at the start of a line was read as netrc's `password X` with `=` for the secret: the `=` went and
    X stayed in clear."""
    from orchestrator.redact import redact

    for line in ("password = hunter2", "password = hunter2,x", "  password : hunter2", "password =hunter2"):
        assert "hunter2" not in redact(line), line
    assert "p4ss" not in redact("machine h login u password p4ss")
