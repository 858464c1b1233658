"""Record the shipped seed-case transcript in one command: a staged 8 x RTX PRO 6000 host behind a real sshd,
investigated offline.

    python3 scripts/record_seed.py            # writes transcripts/seed-rtx-pro-6000-fp4.jsonl

The staged host (fake nvidia-smi built from real captures, FlashInfer installed with no persisted autotune results)
and the sshd come from the test suite's helpers in tests/support; the observations are the seed case's
(examples/seed-observations.yaml).

What the transcript shows must read as a real box, not as a test run: the script re-executes itself in private
mount and network namespaces (`unshare -m -n`, root only), where

- an empty tmpfs is mounted on /srv and the host is staged at /srv/gpu-box (no /tmp, pytest or temp-dir names);
- an empty tmpfs is mounted on /tmp, so nothing another process left there (inductor caches, other tests' staged
  hosts) can be found by the probes;
- loopback is a fresh one, so sshd listens on port 22 and the host is `root@gpu-box`, as on a real box;
- no other process of the machine is visible to the probes' /proc walk beyond what the staged host tags.

Nothing outside the namespaces is written except the transcript and, for the default transcript, the README's
quoted verdict and cause count (`update_readme`), which tests/cli/test_readme_quotes_the_replay.py compares with what
`investigate replay` prints. A test (tests/cli/test_shipped_transcripts_paths.py) refuses a shipped transcript that
names a temporary path.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "transcripts" / "seed-rtx-pro-6000-fp4.jsonl"
OBSERVATIONS = REPO / "examples" / "seed-observations.yaml"
QUESTION = "why is FP4 slow?"
BOX = Path("/srv/gpu-box")
INSIDE = "INVESTIGATE_RECORD_SEED_INSIDE"


README = REPO / "README.md"
QUOTE = re.compile(r"(investigate replay transcripts/seed-rtx-pro-6000-fp4\.jsonl\n```\n\n)> [^\n]*\n\n"
                   r"followed by \d+ ranked causes")


def update_readme(transcript: Path) -> None:
    """Quote the replayed verdict and the number of ranked causes in the README's Quick start."""
    from orchestrator.api import replay_sync
    from orchestrator.render.diagnosis import said_once

    diagnosis = replay_sync(transcript).diagnosis
    assert diagnosis is not None, "the seed transcript replays to no diagnosis"
    verdict = said_once(diagnosis)[0]  # as `investigate replay` prints it
    text = README.read_text(encoding="utf-8")
    new, n = QUOTE.subn(lambda m: f"{m.group(1)}> {verdict}\n\n"
                                  f"followed by {len(diagnosis.causes)} ranked causes", text)
    if n != 1:
        raise SystemExit("record_seed: the README's quoted replay block was not found; update it by hand")
    README.write_text(new, encoding="utf-8")


def _reexec(out: Path) -> int:
    """Run this script again inside private mount and network namespaces (see the module docstring)."""
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        sys.stderr.write("record_seed: needs root and util-linux's unshare (private mount and network namespaces "
                         "keep the staging root off the machine); run it as root on a Linux box\n")
        return 2
    env = {**os.environ, INSIDE: "1", "PYTHONPATH": os.pathsep.join(
        [str(REPO)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}
    env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.call([unshare, "-m", "-n", "--propagation", "private", sys.executable, __file__, str(out)],
                           env=env)


def _inside(out: Path) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for where in ("/srv", "/tmp"):
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", where], check=True)
    os.chmod("/tmp", 0o1777)
    sys.path.insert(0, str(REPO / "tests"))
    import anyio

    import support.sshd as sshd_support
    from orchestrator.api import investigate
    from orchestrator.settings import Settings
    from support.staged_host import stage_host

    sshd_support.free_port = lambda: 22  # a fresh loopback of our own: the port a real box listens on

    async def main() -> int:
        staged = stage_host(BOX.parent, root_name=BOX.name)
        sshd = sshd_support.start_sshd(Path("/srv/sshd"), name="gpu-box", env=staged.env)
        try:
            result = await investigate(QUESTION, host=sshd.alias, ssh_config=str(sshd.ssh_config),
                                       observations=OBSERVATIONS, offline=True, transcript=out,
                                       settings=Settings(power_sample_s=1.0))
        finally:
            sshd.stop()
            staged.cleanup()
        print(result.status, result.transcript_path)
        return 0 if result.status == "ok" else 1

    return anyio.run(main)


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT).resolve()
    if os.environ.get(INSIDE) != "1":
        if target.exists():
            target.unlink()  # a transcript is appended to: start from an empty file
        rc = _reexec(target)
        if rc == 0 and target == DEFAULT_OUT.resolve():
            sys.path.insert(0, str(REPO))
            update_readme(target)
        sys.exit(rc)
    sys.exit(_inside(target))
