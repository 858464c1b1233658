"""Issue 30 item 8: "`investigate QUESTION --host user@gpu-box`" is advised only when this machine was investigated;
with `--host gpu-box` given, the advice is to check that host (the catalog's `if: local` / `if: remote` fixes)."""

from __future__ import annotations

from orchestrator.analysis.templates import entry_words


def test_the_host_advice_depends_on_whether_a_host_was_given():
    local = " ".join(entry_words("no-gpu-on-host", flags={"local"})["recommendations"])
    remote = " ".join(entry_words("no-gpu-on-host", flags={"remote"})["recommendations"])
    assert "--host user@gpu-box" in local and "--host user@gpu-box" not in remote
    assert "Check that unknown, the host given, is the GPU server" in remote  # no host value: the template's default


async def test_a_remote_host_without_a_gpu_gets_the_remote_advice(tmp_path):
    from orchestrator.analysis.rules import no_gpu_on_host
    from orchestrator.api import investigate
    from orchestrator.analysis.evidence_view import EvidenceView
    from support.sshd import start_sshd
    from support.staged_host import stage_host

    staged = stage_host(tmp_path, variant="no-nvidia-smi")
    sshd = start_sshd(tmp_path, name="gpu-box", env=staged.env)
    try:
        result = await investigate("why slow", host=sshd.alias, ssh_config=str(sshd.ssh_config), offline=True,
                                   transcript=False)
    finally:
        sshd.stop()
        staged.cleanup()
    from orchestrator.events import ToolResult
    from orchestrator.evidence import Evidence

    evidence = [Evidence(id=e.evidence_id, agent_id=e.agent_id, tool=e.tool, host=e.host, text=e.content, data=e.data,
                         is_error=e.is_error) for e in result.events if isinstance(e, ToolResult)]
    findings = no_gpu_on_host(EvidenceView(evidence, None))
    assert findings, "the host has no nvidia-smi"
    recs = " ".join(findings[0].recommendations)
    # the host as the user named it (the ssh alias, with the user ssh logs in as)
    assert "--host user@gpu-box" not in recs and f"Check that {findings[0].claim.split('(')[1].split(')')[0]}, the host given, is the GPU server" in recs
    assert f"@{sshd.alias}" in recs
