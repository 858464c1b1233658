"""Issue 43 item 3, end to end: a host-key fingerprint is public and the user must compare it, so it is printed
whole (it read `SHA256:[REDACTED]`); the run id joins `show` to its transcript, so `show` and `show --json` print it
(they printed `[REDACTED]`). Redaction itself is redact.py's (tests/security/test_redaction.py); this is what the
user sees."""

from __future__ import annotations

import json

from support.cli import ROOT, investigate, one_line

SEED = "transcripts/seed-rtx-pro-6000-fp4.jsonl"

def test_an_unknown_host_key_is_shown_whole(sshd_factory, tmp_path):
    sshd = sshd_factory(name="nokey-box", trust=False)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    proc = investigate("why slow", "--host", sshd.dest, "--offline", tmp_path=tmp_path, env={"HOME": str(home)})
    line = one_line(proc, 2, "is not known")
    assert f"ssh-ed25519 {sshd.fingerprint()}" in line, line


def test_show_prints_the_run_id(tmp_path):
    run_id = json.loads((ROOT / SEED).read_text().splitlines()[1])["run_id"]
    text = investigate("show", SEED, tmp_path=tmp_path, cwd=ROOT)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0].startswith(f"run {run_id} ")
    doc = json.loads(investigate("show", "--json", SEED, tmp_path=tmp_path, cwd=ROOT).stdout)
    assert doc["run_id"] == run_id
