"""Run every probe through the package on this machine (LocalHost) and print their models as JSON (capture.sh)."""
import json
import os
import sys

sys.path.insert(0, os.getcwd())

import anyio  # noqa: E402

from orchestrator.inputs import RunInputs  # noqa: E402
from orchestrator.hosts.local import LocalHost  # noqa: E402
from orchestrator.probes import run_probes  # noqa: E402
from orchestrator.settings import Settings  # noqa: E402


async def main():
    models = await run_probes(LocalHost(), RunInputs(question="capture"), Settings(power_sample_s=2.0))
    print(json.dumps([m.model_dump(mode="json") for m in models]))


anyio.run(main)
