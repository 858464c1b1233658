"""The discover probe, like the node and engine probes, sees only its own staged host's servers when tagged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import orchestrator.probes.scripts as scripts

SCRIPT = scripts.load("discover")  # what the runner sends: the script with its shared parts


def _server(tmp_path: Path, name: str, tag: str | None) -> subprocess.Popen:
    bindir = tmp_path / name
    bindir.mkdir()
    exe = bindir / "vllm"
    exe.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    exe.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "INVESTIGATE_STAGED_TAG"}
    if tag:
        env["INVESTIGATE_STAGED_TAG"] = tag
    return subprocess.Popen([str(exe), "serve", f"model-{name}"], env=env)


def test_a_tagged_probe_sees_only_servers_with_its_tag(tmp_path):
    mine, other = _server(tmp_path, "mine", "tag-a"), _server(tmp_path, "other", "tag-b")
    try:
        time.sleep(0.5)
        env = dict(os.environ, INVESTIGATE_STAGED_TAG="tag-a")
        out = subprocess.run([sys.executable, "-", "{}"], input=SCRIPT, env=env, capture_output=True, text=True,
                             check=True)
        cmdlines = [s["cmdline"] for s in json.loads(out.stdout)["servers"]]
        assert any("model-mine" in c for c in cmdlines)
        assert not any("model-other" in c for c in cmdlines)
        env.pop("INVESTIGATE_STAGED_TAG")  # a real host: every server counts
        out = subprocess.run([sys.executable, "-", "{}"], input=SCRIPT, env=env, capture_output=True, text=True,
                             check=True)
        cmdlines = [s["cmdline"] for s in json.loads(out.stdout)["servers"]]
        assert any("model-mine" in c for c in cmdlines) and any("model-other" in c for c in cmdlines)
    finally:
        for p in (mine, other):
            p.kill()
            p.wait()
