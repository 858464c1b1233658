"""Issue 43 item 6: an API key but no network (the API refuses connections): the run stops within seconds with the
`--offline` hint (it retried five times with back-off, 13-15 s, and said nothing of --offline), and the transcript of
the failed attempt replays: exactly, to the same failure (it said "replay diverged: agent lead turn 1 was not
recorded"), and re-synthesized with --offline."""

from __future__ import annotations

import json
import time

from support.cli import investigate
from support.fake_messages import FakeMessagesAPI


def _refusing_url() -> str:
    api = FakeMessagesAPI().start()
    url = api.base_url
    api.stop()  # the port is closed now: every connection is refused, as with no route to the API
    return url


def test_a_key_without_network_fails_fast_and_its_transcript_replays(tmp_path):
    transcript = tmp_path / "nonet.jsonl"
    env = {"ANTHROPIC_API_KEY": "sk-ant-api03-" + "x" * 40, "ANTHROPIC_BASE_URL": _refusing_url()}
    t0 = time.monotonic()
    proc = investigate("why is FP4 slow", "--transcript", transcript, "--no-progress", tmp_path=tmp_path, env=env)
    took = time.monotonic() - t0
    assert proc.returncode == 1, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "cannot reach" in line and "--offline" in line, line
    events = [json.loads(x) for x in transcript.read_text().splitlines()[1:]]
    (error,) = [e for e in events if e["type"] == "model_error"]
    # five attempts and their back-off (13-15 s) before any word; now one retry after at most a second's wait (the
    # wall time is checked loosely: the machine running the tests may be loaded)
    assert len(error["attempts"]) == 2 and error["fatal"], error
    assert sum(a.get("wait_s") or 0 for a in error["attempts"]) <= 1.5, error["attempts"]
    assert took < 30, took

    exact = investigate("replay", transcript, tmp_path=tmp_path)  # no key, no network: answered from the file
    assert exact.returncode == 1, exact.stderr
    assert "diverged" not in exact.stderr and "cannot reach" in exact.stderr, exact.stderr
    offline = investigate("replay", transcript, "--offline", "--json", tmp_path=tmp_path)
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout)["question"] == "why is FP4 slow"
