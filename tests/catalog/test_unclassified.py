"""Log lines nothing classified reach the diagnosis: counted, deduplicated, capped, errors first."""

from __future__ import annotations

from orchestrator.analysis.evidence_view import EvidenceView
from orchestrator.analysis.signals import catalog_findings
from orchestrator.analysis.synthesis import synthesize
from orchestrator.evidence import Evidence
from orchestrator.knowledge import log_signatures
from orchestrator.probes.logscan import scan_text
from orchestrator.probes.results import GpuInfo, GpuInventory, LogScan, UnclassifiedLine
from orchestrator.probes.scripts import logscan as script
from support.cli import ROOT

LOG = """\
INFO 03-02 10:00:01 [api_server.py:1] vLLM API server version 0.11.2
WARNING 03-02 10:00:05 [cuda.py:412] Unknown thing happened on rank 3
WARNING 03-02 10:00:06 [cuda.py:412] Unknown thing happened on rank 5
(EngineCore pid=2) ERROR 03-02 10:01:00 [core.py:700] EngineCore hit an exception: boom
INFO 03-02 10:01:02 [flashinfer_utils.py:9] FlashInfer sampling kernels unavailable, falling back to PyTorch sampling
INFO 03-02 10:01:03 [gpu_model_runner.py:2] Graph capturing finished in 12 secs
WARNING 03-02 10:01:09 [fused_moe.py:727] Using default MoE config. Performance might be sub-optimal! Config file not found at ['/x/E=8,N=14336,device_name=NVIDIA_L40S.json']
"""


def test_scan_keeps_what_no_signature_matched_deduplicated_and_counted():
    u = script.Unclassified(50)
    n, matches = scan_text("/var/log/vllm.log", LOG, log_signatures(), unclassified=u)
    assert n == 7 and [m.signature_id for m in matches] == ["vllm-default-moe-config"]
    rows = u.out()
    assert [(r["line_no"], r["count"], r["level"]) for r in rows] == [(2, 2, "warning"), (4, 1, "error"), (5, 1, "library")]
    assert u.total == 4  # INFO lines without trouble words are not kept


def test_the_cap_keeps_counting():
    u = script.Unclassified(2)
    for i in range(10):
        u.add("/l", i, f"WARNING distinct message {'abcdefghij'[i]}", "warning", 400)
    assert len(u.out()) == 2 and u.total == 10


def _view(*scans, cc="12.0"):
    inv = GpuInventory(gpus=[GpuInfo(index=0, name="NVIDIA RTX PRO 6000 Blackwell Server Edition", compute_cap=cc)])
    evs = [Evidence(id="ev-1.1", agent_id="a", tool="gpu_inventory", data=inv.model_dump(mode="json"))]
    evs += [Evidence(id=f"ev-1.{i + 2}", agent_id="a", tool="log_scan", data=s.model_dump(mode="json"))
            for i, s in enumerate(scans)]
    return EvidenceView(evs)


def test_unclassified_lines_become_one_secondary_finding_errors_first():
    u = script.Unclassified(50)
    _, matches = scan_text("/var/log/vllm.log", LOG, log_signatures(), unclassified=u)
    scan = LogScan(files=["/var/log/vllm.log"], matches=matches,
                   unclassified=[UnclassifiedLine(**r) for r in u.out()], unclassified_total=u.total)
    found = {f.id: f for f in catalog_findings(_view(scan))}
    assert "vllm-default-moe-config" in found
    f = found["unclassified-log-lines"]
    assert f.secondary and f.confidence < 0.5 and f.evidence == ["ev-1.2"] and f.entry == "unclassified-log-lines"
    assert f.title == "4 unclassified warning/error line(s) in the logs"
    assert f.claim.index("EngineCore hit an exception") < f.claim.index("Unknown thing happened")
    assert "(x2)" in f.claim and "Using default MoE config" not in f.claim  # classified lines are not repeated


def test_a_signature_match_whose_entry_does_not_apply_here_is_unclassified():
    # flashinfer PR #4013's line: only the SM120-scoped entry knows it; seen on CC 9.0 nothing applies
    line = "RuntimeError: [MXFP8 SM120 gemm Runner] Failed to initialize cutlass MXFP8 gemm on sm120. Error: Error Internal"
    from orchestrator.probes.results import LogMatch

    scan = LogScan(files=["/l"], matches=[LogMatch(path="/l", line_no=3, line=line, signature_id="flashinfer-sm89-tactics-on-sm120")])
    on = {f.id for f in catalog_findings(_view(scan))}
    off = {f.id: f for f in catalog_findings(_view(scan, cc="9.0"))}
    assert "flashinfer-sm89-tactics-on-sm120" in on and "unclassified-log-lines" not in on
    assert set(off) == {"unclassified-log-lines"} and "MXFP8 SM120 gemm Runner" in off["unclassified-log-lines"].claim


def test_unclassified_warnings_reach_the_diagnosis():
    scan = LogScan(files=["/l"], unclassified=[UnclassifiedLine(path="/l", line_no=9, line="ERROR something new", level="error")],
                   unclassified_total=1)
    d = synthesize("why slow?", None, _view(scan).evidence, [])
    c = next(c for c in d.causes if "unclassified" in c.title)
    assert "ERROR something new" in c.explanation and c.evidence == ["ev-1.2"]


def test_a_clean_log_draws_no_unclassified_finding():
    scan = LogScan(files=["/l"], lines_scanned=100)
    assert "unclassified-log-lines" not in {f.id for f in catalog_findings(_view(scan))}


def test_an_engine_dumping_its_configuration_is_not_trouble():
    """vLLM's start-up line "Initializing a V1 LLM engine ... with config: ..." names disable_fallback=False among
    its settings; it was kept as library trouble and ranked as "1 unclassified warning/error line(s)" in a
    diagnosis of eager-mode decode. A library line that reports a fallback is still kept."""
    config = (ROOT / "tests/engine/data/logs/vllm-0.11-eager.log").read_text().splitlines()
    dump = next(ln for ln in config if "Initializing a V1 LLM engine" in ln)
    assert script.level_of(dump) is None
    assert script.level_of("INFO 03-02 [utils.py:9] non-default args: {'model': 'x', 'enforce_eager': True, "
                           "'guided_decoding_backend': 'xgrammar', 'disable_fallback': False}") is None
    assert script.level_of("INFO [flashinfer_utils.py:9] FlashInfer sampling kernels unavailable, falling back to "
                           "PyTorch sampling") == "library"
    assert script.level_of("(EngineCore pid=2) ERROR 03-02 [core.py:700] failed with config: x") == "error"


def test_a_long_line_is_quoted_with_a_mark_that_it_was_cut_and_reads_as_staged_in_the_case_words():
    """UCX's 165-character warning: the finding quotes its first 160 characters and says it cut it (an ellipsis), not
    a silently shortened line; the scenario harness cuts that quote out of the words it matches (a quote of the input
    satisfies no expectation) and says so in words, not as a bare '<input>' that reads like a placeholder."""
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "scenarios"))
    from harness import STAGED, diagnosis_words

    from orchestrator.diagnosis import Cause, Diagnosis

    line = ("[1759396451.201934] [decode-0:452  :0]    ucp_context.c:1153 UCX  WARN  network device 'mlx5_0:1' is "
            "not available, please use one or more of: 'eth0'(tcp), 'lo'(tcp)")
    assert len(line) > 160
    scan = LogScan(files=["/l"], unclassified=[UnclassifiedLine(path="/l", line_no=6, line=line, count=2,
                                                                level="warning")], unclassified_total=2)
    f = {x.id: x for x in catalog_findings(_view(scan, cc="9.0"))}["unclassified-log-lines"]
    assert repr(line[:160]) + "\u2026 (x2)" in f.claim
    d = Diagnosis(question="q", verdict="v", bound="unknown", bound_reasoning="r", causes=[Cause(title=f.title, explanation=f.claim,
                                                                                  confidence=0.3, evidence=["ev-1"])])
    words = diagnosis_words(d, [line])
    assert STAGED in words and "mlx5_0" not in words and "<input>" not in words
