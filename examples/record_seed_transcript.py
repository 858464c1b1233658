"""Record the shipped seed-case transcript: a staged 8 x RTX PRO 6000 host behind a real sshd, investigated offline.

    python examples/record_seed_transcript.py transcripts/seed-rtx-pro-6000-fp4.jsonl

The staged host (fake nvidia-smi built from real captures, FlashInfer installed with no persisted autotune results)
and the sshd come from the test suite's helpers in tests/support; the observations are the seed case's.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from orchestrator.api import investigate  # noqa: E402
from orchestrator.settings import Settings  # noqa: E402
from support.sshd import start_sshd  # noqa: E402
from support.staged_host import stage_host  # noqa: E402

OBSERVATIONS = REPO / "examples" / "seed-observations.yaml"


async def main(out: Path) -> int:
    root = Path(tempfile.mkdtemp(prefix="investigate-seed-"))
    try:
        staged = stage_host(root)
        sshd = start_sshd(root, name="gpu-box", env=staged.env)
        try:
            result = await investigate("why is FP4 slow?", host=sshd.alias, ssh_config=str(sshd.ssh_config),
                                       observations=OBSERVATIONS, offline=True, transcript=out,
                                       settings=Settings(power_sample_s=1.0))
        finally:
            sshd.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(result.status, result.transcript_path)
    return 0 if result.status == "ok" else 1


if __name__ == "__main__":
    sys.exit(anyio.run(main, Path(sys.argv[1] if len(sys.argv) > 1 else "transcripts/seed-rtx-pro-6000-fp4.jsonl")))
