"""Issue 30 item 5: the transcripts shipped in transcripts/ are what a user reads first; none names a temporary path
of the machine that recorded it (a pytest temp dir, a mkdtemp root, a deleted folder). scripts/record_seed.py
re-records the seed case from a clean root (/srv/gpu-box in private namespaces) in one command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.cli import ROOT

SHIPPED = sorted((ROOT / "transcripts").glob("*.jsonl"))

TEMPORARY = re.compile(
    r"pytest-of-|/pytest-\d+/|\(deleted\)|garbage-[0-9a-f]{8}-|/var/folders/|"
    # anything under /tmp but torch inductor's documented default cache dir, /tmp/torchinductor_<user>, which a real
    # box has (torch/_inductor/runtime/cache_dir_utils.py: default_cache_dir)
    r"/tmp/(?!torchinductor_[A-Za-z0-9_.-]+(?:[/:,\"\\ )]|$))"
)


def temporary_paths(text: str) -> list[str]:
    return sorted({text[max(0, m.start() - 20):m.end() + 40] for m in TEMPORARY.finditer(text)})


def test_there_are_shipped_transcripts():
    assert any(p.name.startswith("seed-") for p in SHIPPED), SHIPPED


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_no_shipped_transcript_names_a_temporary_path(path: Path):
    assert temporary_paths(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("line", [
    '"env: TORCHINDUCTOR_CACHE_DIR=/tmp/pytest-of-root/pytest-352/test_x0/staged/torchinductor"',
    '"looked in: /tmp/investigate-seed-3nsyg5t7/staged/site-packages/vllm"',
    '"/proc/1/cwd -> /srv/garbage-f0cfd9cb-8549-4794-878e-1cf5495c5956/t0/staged (deleted)"',
    '"cache /tmp/tmpab12cd34/x"',
])
def test_the_check_finds_what_an_earlier_seed_showed(line):
    assert temporary_paths(line)


def test_the_real_default_inductor_cache_dir_is_not_temporary():
    assert temporary_paths('"inductor: /tmp/torchinductor_root: 3 entries", "/tmp/torchinductor_root"') == []
