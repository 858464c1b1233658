"""`--trace host:` reads a serving process's torch-profiler directory only as that process's user could (REDTEAM
round 3, m3): another Unix user's fake vLLM whose VLLM_TORCH_PROFILER_DIR is root's directory (or root's file) gets
nothing of it listed or copied; in the tenant's own directory only the tenant's files are; and a trace that does not
parse is reported by its host path, without the parser's quote of its text."""

from __future__ import annotations

import os
import uuid

import pytest

from orchestrator.hosts.ssh import SshHost
from orchestrator.settings import Settings
from orchestrator.tools.base import execute
from support.security import REGISTRY, make_ctx
from support.tenant import stage

pytestmark = pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="needs sshd")

ROOT_CANARY = "ROOT-TRACE-CANARY-91xQ"
TENANT_CANARY = "TENANT-TRACE-QUOTE-5c2e"
NAME = "dp0_pp0_tp0_rank0.1764600000000000000.pt.trace.json"


def _trace(canary: str) -> str:
    """A Kineto-looking file that yajl refuses at a comment, quoting the text around it in its error."""
    return '{"traceEvents": [{"name": "x", "ph": "X", "ts": 1, "dur": 2, "breakglass": "%s" // rotate\n}]}' % canary


@pytest.mark.parametrize("named", ["root_dir", "root_file", "tenant_dir"])
async def test_a_local_users_profiler_dir_gets_nothing_of_roots_into_the_report(named, sshd_factory):
    s = stage(uuid.uuid4().hex)
    try:
        root_dir = s.root_only / "prof"
        root_dir.mkdir()
        (root_dir / NAME).write_text(_trace(ROOT_CANARY))
        mine = s.mine / "prof"
        mine.mkdir()
        s.give(mine)
        (mine / NAME).write_text(_trace(TENANT_CANARY))
        s.give(mine / NAME)
        (mine / "dp0_pp0_tp0_rank1.1764600000000000000.pt.trace.json").write_text(_trace(ROOT_CANARY))  # root's file
        target = {"root_dir": root_dir, "root_file": root_dir / NAME, "tenant_dir": mine}[named]
        s.fake_server("--model", "m", env={"VLLM_TORCH_PROFILER_DIR": str(target)})
        host = await SshHost(sshd_factory(env={"INVESTIGATE_STAGED_TAG": s.tag}).target(), Settings()).connect()
        try:
            out = (await execute(REGISTRY.get("trace_analysis"), "trace_analysis", {"paths": ["host:"]},
                                 make_ctx(host))).output
        finally:
            await host.aclose()
    finally:
        s.stop()
    assert out.is_error, out.text  # nothing readable was found, or the tenant's file does not parse
    assert ROOT_CANARY not in out.text and "rank1" not in out.text, out.text
    if named == "tenant_dir":
        # the tenant's own file was copied and read; its error names the host's file, not the temporary copy, and
        # does not quote the file
        assert TENANT_CANARY not in out.text and "rotate" not in out.text, out.text
        assert f"{mine / NAME}" in out.text and "investigate-traces-" not in out.text, out.text
    else:  # refused before anything about root's directory (what is in it, whether a name exists there) is looked at
        assert "not listed" in out.text and "may not be searched" in out.text, out.text
        assert "not a directory" not in out.text and (named == "root_file" or NAME not in out.text), out.text
