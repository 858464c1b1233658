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
